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
]
