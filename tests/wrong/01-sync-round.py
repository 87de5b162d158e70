"""Plausible wrong answers to assignment 01 (the synchronous round); see tests/wrong/README.md."""
WRONG = [
    dict(cell="average",
         loses=["check-average", "check-gap"],
         why="no barrier: the first gradient goes through at once",
         code='''
def average(grads, workers):
    # wrong: no barrier, the first gradient goes through at once
    return sum(grads.values()) / len(grads)
'''),
    dict(cell="average",
         loses=["check-average", "check-gap"],
         why="the sum of the round's gradients, not their mean (an lr 4 times too large)",
         code='''
def average(grads, workers):
    if len(grads) < workers:
        return None
    return sum(grads.values())
'''),
    dict(cell="average",
         loses=["check-average", "check-gap"],
         why="divides by workers + 1 (an off-by-one in the mean)",
         code='''
def average(grads, workers):
    if len(grads) < workers:
        return None
    return sum(grads.values()) / (workers + 1)
'''),
    dict(cell="average",
         loses=["check-average", "check-gap"],
         why="np.mean of everything: one number, not one gradient (np.allclose broadcasts it)",
         code='''
def average(grads, workers):
    if len(grads) < workers:
        return None
    return np.mean(list(grads.values()))
'''),
    dict(cell="predict-idle",
         loses=["check-predict-idle"],
         why="a straggler 3 times slower: thinks the fast workers wait a third of the time",
         code='''
predicted_idle_share = 1 / 3
'''),
    dict(cell="predict-idle",
         loses=["check-predict-idle"],
         why="answers in percent, not as a fraction",
         code='''
predicted_idle_share = 67
'''),
    dict(cell="gap",
         loses=["check-gap"],
         why="the largest signed difference, without the absolute value",
         code='''
def gap_to_one_worker(run):
    one = aps.simulate(problem, workers=1, policy="sync", lr=0.05, steps=30)
    return float(np.max(run.params - one.params))
'''),
    dict(cell="gap",
         loses=["check-gap"],
         why="the mean absolute difference, not the largest",
         code='''
def gap_to_one_worker(run):
    one = aps.simulate(problem, workers=1, policy="sync", lr=0.05, steps=30)
    return float(np.mean(np.abs(run.params - one.params)))
'''),
    dict(cell="robust-average",
         loses=["check-robust-average"],
         why="the plain mean: one broken worker wrecks the run",
         code='''
def robust_average(grads, workers):
    if len(grads) < workers:
        return None
    return sum(grads.values()) / workers
'''),
    dict(cell="robust-average",
         loses=["check-robust-average"],
         why="always leaves out worker 3: survives only when worker 3 is the broken one",
         code='''
def robust_average(grads, workers):
    if len(grads) < workers:
        return None
    kept = [g for w, g in grads.items() if w != workers - 1]
    return sum(kept) / len(kept)
'''),
    dict(cell="robust-average",
         loses=["check-robust-average"],
         why="drops the smallest gradient, not the outlier: keeps the blown-up one",
         code='''
def robust_average(grads, workers):
    if len(grads) < workers:
        return None
    stacked = np.array(list(grads.values()))
    smallest = int(np.argmin(np.linalg.norm(stacked, axis=1)))
    return np.delete(stacked, smallest, axis=0).mean(axis=0)
'''),
]
