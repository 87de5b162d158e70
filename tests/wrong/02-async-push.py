"""Plausible wrong answers to assignment 02 (the asynchronous push); see tests/wrong/README.md."""
WRONG = [
    dict(cell="async-push",
         loses=["check-async-push", "check-same-as-builtin"],
         why="applies the step to the version the gradient was computed on",
         code='''
def async_push(params, version, grad, computed_on, lr):
    # wrong: as if the gradient were applied to the version it was computed on
    return params - lr * grad, computed_on + 1, 0
'''),
    dict(cell="async-push",
         loses=["check-async-push", "check-same-as-builtin"],
         why="staleness off by one: counts the new version too",
         code='''
def async_push(params, version, grad, computed_on, lr):
    return params - lr * grad, version + 1, version - computed_on + 1
'''),
    dict(cell="async-push",
         loses=["check-async-push"],
         why="changes params in place",
         code='''
def async_push(params, version, grad, computed_on, lr):
    params -= lr * grad
    return params, version + 1, version - computed_on
'''),
    dict(cell="same-as-builtin",
         loses=["check-same-as-builtin"],
         why="trivial: only checks the run's lr",
         code='''
def same_as_builtin(run):
    return run.trace.meta["lr"] == 0.1
'''),
    dict(cell="same-as-builtin",
         loses=["check-same-as-builtin"],
         why="compares only the events, not the losses",
         code='''
def same_as_builtin(run):
    builtin = aps.simulate(quadratic, workers=2, policy="async", lr=0.1, steps=8, compute_times=[1, 1.5])
    return run.trace.events == builtin.trace.events
'''),
    dict(cell="predict-staleness",
         loses=["check-predict-staleness"],
         why="thinks a push is stale by one version per other worker, plus itself",
         code='''
predicted_staleness = 4
'''),
    dict(cell="predict-staleness",
         loses=["check-predict-staleness"],
         why="equal workers: thinks nothing is stale",
         code='''
predicted_staleness = 0
'''),
    dict(cell="careful-push",
         loses=["check-careful-push"],
         why="drops every stale push: the run hardly moves",
         code='''
def careful_push(params, version, grad, computed_on, lr):
    staleness = version - computed_on
    if staleness > 0:
        return params.copy(), version + 1, staleness
    return params - lr * grad, version + 1, staleness
'''),
    dict(cell="careful-push",
         loses=["check-careful-push"],
         why="shrinks every step by 10: the same range of lr, only shifted",
         code='''
def careful_push(params, version, grad, computed_on, lr):
    return params - 0.1 * lr * grad, version + 1, version - computed_on
'''),
    dict(cell="careful-push",
         loses=["check-careful-push"],
         why="divides every push's lr by staleness + 1: wider, but too slow at a small lr",
         code='''
def careful_push(params, version, grad, computed_on, lr):
    staleness = version - computed_on
    return params - lr / (staleness + 1) * grad, version + 1, staleness
'''),
    dict(cell="careful-push",
         loses=["check-careful-push"],
         why="caps the lr for every push: stable at a large lr, but it does not look at the staleness",
         code='''
def careful_push(params, version, grad, computed_on, lr):
    return params - min(lr, 0.12) * grad, version + 1, version - computed_on
'''),
    dict(cell="careful-push",
         loses=["check-careful-push"],
         why="drops only the extremely stale pushes (staleness > 8): no wider",
         code='''
def careful_push(params, version, grad, computed_on, lr):
    staleness = version - computed_on
    if staleness > 8:
        return params.copy(), version + 1, staleness
    return params - lr * grad, version + 1, staleness
'''),
]
