"""Plausible wrong answers to assignment 03a (gradient similarity); see tests/wrong/README.md."""
WRONG = [
    dict(cell="cosine",
         loses=["check-cosine", "check-mean-pairwise"],
         why="not divided by |b|",
         code='''
def cosine(a, b):
    # wrong: not divided by |b|
    return float(np.dot(a, b) / np.linalg.norm(a))
'''),
    dict(cell="cosine",
         loses=["check-cosine", "check-mean-pairwise"],
         why="the dot product without any norm",
         code='''
def cosine(a, b):
    return float(np.dot(a, b))
'''),
    dict(cell="worker-gradients",
         loses=["check-worker-gradients"],
         why="ignores the seed: always the shards of seed 0",
         code='''
def worker_gradients(problem, workers, partition, params, seed=0):
    return [problem.gradient(params, shard) for shard in problem.shards(workers, partition, 0)]
'''),
    dict(cell="mean-pairwise",
         loses=["check-mean-pairwise"],
         why="includes each gradient's cosine with itself",
         code='''
def mean_pairwise_similarity(grads):
    pairs = [cosine(grads[i], grads[j]) for i in range(len(grads)) for j in range(i, len(grads))]
    return float(np.mean(pairs))
'''),
    dict(cell="stale-against-fresh",
         loses=["check-stale-against-fresh"],
         why="compares with the full-data gradient, not the worker's own shard",
         code='''
def stale_against_fresh(problem, run):
    params = run.trace.params
    return [cosine(problem.gradient(params[p.computed_on]), problem.gradient(params[p.applied_to]))
            for p in run.trace.pushes if p.staleness > 0]
'''),
    dict(cell="stale-against-fresh",
         loses=["check-stale-against-fresh"],
         why="splits the data with seed 0 whatever the run's seed (IID shards change with it)",
         code='''
def stale_against_fresh(problem, run):
    meta, params = run.trace.meta, run.trace.params
    shards = problem.shards(meta["workers"], meta["partition"], 0)
    return [cosine(problem.gradient(params[p.computed_on], shards[p.worker]),
                   problem.gradient(params[p.applied_to], shards[p.worker]))
            for p in run.trace.pushes if p.staleness > 0]
'''),
    dict(cell="stale-against-fresh",
         loses=["check-stale-against-fresh"],
         why="compares with the version the push made (applied_to + 1), not the one it landed on",
         code='''
def stale_against_fresh(problem, run):
    meta, params = run.trace.meta, run.trace.params
    shards = problem.shards(meta["workers"], meta["partition"], meta["seed"])
    return [cosine(problem.gradient(params[p.computed_on], shards[p.worker]),
                   problem.gradient(params[p.applied_to + 1], shards[p.worker]))
            for p in run.trace.pushes if p.staleness > 0]
'''),
    dict(cell="stale-against-fresh",
         loses=["check-stale-against-fresh"],
         why="keeps the fresh pushes too (their cosine is 1): the list is too long",
         code='''
def stale_against_fresh(problem, run):
    meta, params = run.trace.meta, run.trace.params
    shards = problem.shards(meta["workers"], meta["partition"], meta["seed"])
    return [cosine(problem.gradient(params[p.computed_on], shards[p.worker]),
                   problem.gradient(params[p.applied_to], shards[p.worker]))
            for p in run.trace.pushes]
'''),
    dict(cell="predict-mlp",
         loses=["check-predict-mlp"],
         why="assumes that gradients of one model are always similar",
         code='''
predicted_mlp = {"iid": "above", "by_label": "above"}
'''),
    dict(cell="batch-size",
         loses=["check-batch-size"],
         why="the largest batch: the most similar gradients, but far too slow",
         code='''
chosen_batch_size = 512
'''),
    dict(cell="batch-size",
         loses=["check-batch-size"],
         why="the cheapest batch: one example per gradient is too noisy to get there",
         code='''
chosen_batch_size = 1
'''),
    dict(cell="claim-b",
         loses=["check-claim-b"],
         why="counts versions instead of time: an async version costs one gradient, a sync version four",
         code='''
def median_time(policy, lr, compute_times, seeds):
    counts = []
    for seed in seeds:
        v = race_run(policy, lr, compute_times, seed).versions_to_reach(RACE_TARGET)
        counts.append(math.inf if v is None else float(v))
    return float(np.median(counts))


def speedup_at_best_lr(compute_times, seeds):
    best = {p: min(median_time(p, lr, compute_times, seeds) for lr in RACE_LRS) for p in ["sync", "async"]}
    return best["sync"] / best["async"]
'''),
    dict(cell="claim-b",
         loses=["check-claim-b"],
         why="races both policies at the same lr: flatters whichever policy that lr suits",
         code='''
def median_time(policy, lr, compute_times, seeds):
    times = [race_run(policy, lr, compute_times, s).time_to_reach(RACE_TARGET) for s in seeds]
    return float(np.median([math.inf if t is None else t for t in times]))


def speedup_at_best_lr(compute_times, seeds):
    return median_time("sync", 0.2, compute_times, seeds) / median_time("async", 0.2, compute_times, seeds)
'''),
    dict(cell="claim-b",
         loses=["check-claim-b"],
         why="leaves out the seeds that never reach the target: a run that fails looks fast",
         code='''
def median_time(policy, lr, compute_times, seeds):
    times = [race_run(policy, lr, compute_times, s).time_to_reach(RACE_TARGET) for s in seeds]
    reached = [t for t in times if t is not None]
    return float(np.median(reached)) if reached else math.inf


def speedup_at_best_lr(compute_times, seeds):
    best = {p: min(median_time(p, lr, compute_times, seeds) for lr in RACE_LRS) for p in ["sync", "async"]}
    return best["sync"] / best["async"]
'''),
    dict(cell="claim-b",
         loses=["check-claim-b"],
         why="one seed stands for all: one draw of the compute times",
         code='''
def median_time(policy, lr, compute_times, seeds):
    t = race_run(policy, lr, compute_times, list(seeds)[0]).time_to_reach(RACE_TARGET)
    return math.inf if t is None else float(t)


def speedup_at_best_lr(compute_times, seeds):
    best = {p: min(median_time(p, lr, compute_times, seeds) for lr in RACE_LRS) for p in ["sync", "async"]}
    return best["sync"] / best["async"]
'''),
]
