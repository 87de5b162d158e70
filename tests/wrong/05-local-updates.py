"""Plausible wrong answers to assignment 05 (local updates); see tests/wrong/README.md."""
WRONG = [
    dict(cell="drift", loses=["check-drift"],
         why="the mean distance between the copies, not the largest",
         code='''
def drift(copies):
    # wrong: the mean distance, not the largest
    distances = [float(np.linalg.norm(copies[i] - copies[j]))
                 for i in range(len(copies)) for j in range(i + 1, len(copies))]
    return float(np.mean(distances)) if distances else 0.0
'''),
    dict(cell="drift", loses=["check-drift"],
         why="the largest distance of a copy from their average, not between two copies",
         code='''
def drift(copies):
    centre = np.mean(copies, axis=0)
    return max(float(np.linalg.norm(c - centre)) for c in copies)
'''),
    dict(cell="drift", loses=["check-drift"],
         why="compares neighbours only (copy i with copy i + 1): misses the farthest pair",
         code='''
def drift(copies):
    return max((float(np.linalg.norm(copies[i] - copies[i + 1])) for i in range(len(copies) - 1)),
               default=0.0)
'''),
    dict(cell="average-copies", loses=["check-average-copies"],
         why="np.mean without an axis: one number, the mean of every entry of every copy",
         code='''
def average_copies(copies):
    return np.mean(copies)
'''),
    dict(cell="average-copies", loses=["check-average-copies"],
         why="averages along the wrong axis: one mean per copy instead of one per parameter",
         code='''
def average_copies(copies):
    return np.mean(np.asarray(copies, dtype=float), axis=1)
'''),
    dict(cell="predict-drift", loses=["check-predict-drift"],
         why="thinks the drift is set by the shards alone, whatever n is",
         code='''
predicted_drift_ratio = 1.0
'''),
    dict(cell="predict-drift", loses=["check-predict-drift"],
         why="thinks the drift grows with the square of n",
         code='''
predicted_drift_ratio = (10 / 5) ** 2
'''),
    dict(cell="choose-push-every", loses=["check-choose-push-every"],
         why="async with a large n: each push applies n summed stale gradients at once and the run "
             "blows up (and it still sends more than 100 messages)",
         code='''
chosen_policy, chosen_push_every = "async", 16
'''),
    dict(cell="choose-push-every", loses=["check-choose-push-every"],
         why="stays with a safe n = 10: the loss is fine but 160 messages are over the limit",
         code='''
chosen_policy, chosen_push_every = "sync", 10
'''),
    dict(cell="choose-push-every", loses=["check-choose-push-every"],
         why="minimises messages without looking at the loss: 4 rounds of 50 local steps drift too far",
         code='''
chosen_policy, chosen_push_every = "sync", 50
'''),
]
