"""Plausible wrong answers to assignment 06 (real engines); see tests/wrong/README.md."""
WRONG = [
    dict(cell="staleness-by-worker", loses=["check-staleness-by-worker"],
         why="the largest staleness of each worker's pushes, not the mean",
         code='''
def staleness_by_worker(trace):
    by_worker = {}
    for push in trace.pushes:
        by_worker[push.worker] = max(by_worker.get(push.worker, 0), push.staleness)
    return by_worker
'''),
    dict(cell="staleness-by-worker", loses=["check-staleness-by-worker"],
         why="gives every worker an entry, 0.0 for one that never pushed",
         code='''
def staleness_by_worker(trace):
    out = {}
    for worker in range(trace.workers):
        values = [p.staleness for p in trace.pushes if p.worker == worker]
        out[worker] = float(np.mean(values)) if values else 0.0
    return out
'''),
    dict(cell="staleness-by-worker", loses=["check-staleness-by-worker"],
         why="divides each worker's total staleness by the number of all pushes, not its own",
         code='''
def staleness_by_worker(trace):
    totals = {}
    for push in trace.pushes:
        totals[push.worker] = totals.get(push.worker, 0) + push.staleness
    return {w: t / len(trace.pushes) for w, t in totals.items()}
'''),
    dict(cell="predict-straggler", loses=["check-predict-straggler"],
         why="takes the ratio of compute times (3) as the staleness",
         code='''
predicted_straggler_staleness = 3
'''),
    dict(cell="predict-straggler", loses=["check-predict-straggler"],
         why="counts one push per other worker, as if they waited for the straggler",
         code='''
predicted_straggler_staleness = 2
'''),
    dict(cell="predicted-speedup", loses=["check-predicted-speedup"],
         why="the ratio of the slowest to the mean compute time, not of the rates",
         code='''
def predicted_speedup(compute_times):
    # wrong: the ratio of the slowest to the mean compute time, not of the rates
    times = np.asarray(compute_times, dtype=float)
    return float(times.max() / times.mean())
'''),
    dict(cell="predicted-speedup", loses=["check-predicted-speedup"],
         why="sync rate without the slowest worker: N gradients per mean compute time",
         code='''
def predicted_speedup(compute_times):
    times = np.asarray(compute_times, dtype=float)
    return float(np.sum(1.0 / times) / (times.size / times.mean()))
'''),
    dict(cell="predicted-speedup", loses=["check-predicted-speedup"],
         why="one gradient per round for sync (the slowest worker's), not N",
         code='''
def predicted_speedup(compute_times):
    times = np.asarray(compute_times, dtype=float)
    return float(np.sum(1.0 / times) / (1.0 / times.max()))
'''),
    dict(cell="fair-apply", loses=["check-fair-apply"],
         why="divides by staleness + 1 (the staleness-aware lr): gives the straggler's shard even less say",
         code='''
def fair_apply(params, version, grad, computed_on, lr):
    staleness = version - computed_on
    return params - lr / (staleness + 1) * grad, version + 1, staleness
'''),
    dict(cell="fair-apply", loses=["check-fair-apply"],
         why="weights by staleness + 1 without normalising: steps up to 13× the plain one oscillate",
         code='''
def fair_apply(params, version, grad, computed_on, lr):
    staleness = version - computed_on
    return params - lr * (staleness + 1) * grad, version + 1, staleness
'''),
    dict(cell="fair-apply", loses=["check-fair-apply"],
         why="the plain push: nothing weighted, the bias stays",
         code='''
def fair_apply(params, version, grad, computed_on, lr):
    return params - lr * grad, version + 1, version - computed_on
'''),
    dict(cell="busiest-link", loses=["check-busiest-link"],
         why="N/k for dedicated shards: forgets that each worker's own link carries a whole model, "
             "so more shards than workers seem to help",
         code='''
def busiest_link(workers, servers, colocated=False):
    if colocated:
        return (workers + servers - 2) / servers
    return workers / servers
'''),
    dict(cell="busiest-link", loses=["check-busiest-link"],
         why="ring all-reduce's 2(N-1)/N whatever the shards and where they sit",
         code='''
def busiest_link(workers, servers, colocated=False):
    return 2 * (workers - 1) / workers
'''),
    dict(cell="busiest-link", loses=["check-busiest-link"],
         why="counts shards on the workers' machines as if they had machines of their own",
         code='''
def busiest_link(workers, servers, colocated=False):
    return max(1.0, workers / servers)
'''),
    dict(cell="busiest-link", loses=["check-busiest-link"],
         why="shards on workers as N/k: drops the worker's own gradient to the other shards, and "
             "sends the shard's parameters to its own machine",
         code='''
def busiest_link(workers, servers, colocated=False):
    if colocated:
        return workers / servers
    return max(1.0, workers / servers)
'''),
    dict(cell="busiest-link", loses=["check-busiest-link"],
         why="shards on workers: the machine sends its whole gradient out, its own shard's part too "
             "(1 + (N-1)/k)",
         code='''
def busiest_link(workers, servers, colocated=False):
    if colocated:
        return 1 + (workers - 1) / servers
    return max(1.0, workers / servers)
'''),
]
