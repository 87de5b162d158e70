"""Plausible wrong answers to assignment 04 (the SSP gate); see tests/wrong/README.md."""
WRONG = [
    dict(cell="ssp-gate", loses=["check-ssp-gate"],
         why="off by one: a worker exactly s clocks ahead is held back",
         code='''
def gate(clock, clocks, bound):
    # wrong: off by one, a worker exactly s ahead is held back
    return clock - min(clocks) < bound
'''),
    dict(cell="ssp-gate", loses=["check-ssp-gate"],
         why="compares with the fastest clock instead of the slowest: the gate never closes",
         code='''
def gate(clock, clocks, max_ahead):
    return clock - max(clocks) <= max_ahead
'''),
    dict(cell="ssp-gate", loses=["check-ssp-gate"],
         why="compares with the mean clock instead of the slowest",
         code='''
def gate(clock, clocks, max_ahead):
    return clock - sum(clocks) / len(clocks) <= max_ahead
'''),
    dict(cell="clock-gap", loses=["check-clock-gap"],
         why="takes the spread of all clocks at every event (after pushes too), not the puller's gap",
         code='''
def largest_clock_gap(trace):
    clocks, largest = [0] * trace.workers, 0
    for event in trace.events:
        if event.kind == "push":
            clocks[event.worker] += 1
        largest = max(largest, max(clocks) - min(clocks))
    return largest
'''),
    dict(cell="clock-gap", loses=["check-clock-gap"],
         why="counts the push before reading the gap: the puller's clock is one too high",
         code='''
def largest_clock_gap(trace):
    clocks, largest = [0] * trace.workers, 0
    for event in trace.events:
        if event.kind == "pull":
            largest = max(largest, clocks[event.worker] + 1 - min(clocks))
        elif event.kind == "push":
            clocks[event.worker] += 1
    return largest
'''),
    dict(cell="predict-staleness", loses=["check-predict-staleness"],
         why="uses the slowest-worker bound (N - 1)(s + 1) for every push, and s for the straggler",
         code='''
predicted_largest_staleness = (4 - 1) * (2 + 1)
predicted_straggler_staleness = 2
'''),
    dict(cell="predict-staleness", loses=["check-predict-staleness"],
         why="thinks staleness is bounded by s, the threshold in clocks",
         code='''
predicted_largest_staleness = 2
predicted_straggler_staleness = 5
'''),
    dict(cell="choose-threshold", loses=["check-choose-threshold"],
         why="takes the slowest-worker bound 7(s + 1) <= 35 for every push: s = 4 is too stale",
         code='''
threshold = 4
'''),
    dict(cell="choose-threshold", loses=["check-choose-threshold"],
         why="plays safe with s = 1: the staleness is fine but the 400 versions miss the deadline",
         code='''
threshold = 1
'''),
    dict(cell="choose-threshold", loses=["check-choose-threshold"],
         why="no limit at all (async by another name): far over the staleness limit",
         code='''
threshold = 1000
'''),
    dict(cell="round-time", loses=["check-round-time"],
         why="linear in k (k / n of a gradient's mean): right for k = 1, too short for larger k",
         code='''
def expected_round_time(n, k, mean):
    return mean * k / n
'''),
    dict(cell="round-time", loses=["check-round-time"],
         why="the k-th of k workers (H_k), forgetting that n are running",
         code='''
def expected_round_time(n, k, mean):
    return mean * sum(1.0 / m for m in range(1, k + 1))
'''),
    dict(cell="round-time", loses=["check-round-time"],
         why="the workers that pushed keep running: k of n, each mean / n apart",
         code='''
def expected_round_time(n, k, mean):
    return k * mean / n if k < n else mean * sum(1.0 / m for m in range(1, n + 1))
'''),
    dict(cell="drop-rate", loses=["check-drop-rate"],
         why="divides by every worker's gradients: the shares of the whole run, not of each worker",
         code='''
def drop_rate(trace):
    total = len(trace.drops) + len(trace.pushes)
    return {w: sum(d.worker == w for d in trace.drops) / total for w in range(trace.workers)}
'''),
    dict(cell="drop-rate", loses=["check-drop-rate"],
         why="leaves out the workers that sent nothing",
         code='''
def drop_rate(trace):
    rates = {}
    for w in {e.worker for e in trace.drops + trace.pushes}:
        d = sum(x.worker == w for x in trace.drops)
        rates[w] = d / (d + sum(p.worker == w for p in trace.pushes))
    return rates
'''),
    dict(cell="drop-rate", loses=["check-drop-rate"],
         why="dropped / applied instead of dropped / sent: a worker that is always dropped divides by 0",
         code='''
def drop_rate(trace):
    rates = {}
    for w in range(trace.workers):
        d = sum(x.worker == w for x in trace.drops)
        a = sum(p.worker == w for p in trace.pushes)
        rates[w] = d / a if a else (1.0 if d else 0.0)
    return rates
'''),
]
