"""Plausible wrong answers to assignment 03c (the staleness-aware lr); see tests/wrong/README.md."""
WRONG = [
    dict(cell="staleness-lr",
         loses=["check-staleness-lr"],
         why="divides by the staleness, not by staleness + 1",
         code='''
def staleness_lr(lr, staleness):
    # wrong: divides by the staleness, not by staleness + 1
    return lr / staleness if staleness else lr
'''),
    dict(cell="staleness-lr",
         loses=["check-staleness-lr"],
         why="multiplies by the staleness + 1 instead of dividing",
         code='''
def staleness_lr(lr, staleness):
    return lr * (staleness + 1)
'''),
    dict(cell="converges",
         loses=["check-converges"],
         why="trusts the last loss alone: a cycle that passes through 0 counts as converged",
         code='''
def converges(run):
    return not run.diverged and run.losses[-1] < 1e-6
'''),
    dict(cell="converges",
         loses=["check-converges"],
         why="forgets the divergence: a run stopped as diverged may end on a small loss",
         code='''
def converges(run):
    return max(run.losses[-10:]) < 1e-6 or run.losses[-1] < 1e-12
'''),
    dict(cell="largest-stable-lr",
         loses=["check-largest-stable-lr"],
         why="stops at the first lr that fails, from the smallest up (assumes the good lrs are contiguous)",
         code='''
def largest_stable_lr(workers, policy, lrs, lr_schedule="constant"):
    best = None
    for lr in sorted(lrs):
        run = aps.simulate(quad, workers=workers, policy=policy, lr=float(lr), lr_schedule=lr_schedule,
                           steps=400)
        if not converges(run):
            break
        best = float(lr)
    return best
'''),
    dict(cell="predict-lr",
         loses=["check-predict-lr"],
         why="predicts the limit of plain gradient descent, lr < 2, divided by the 4 workers",
         code='''
predicted_lr_4_workers = 0.5
'''),
    dict(cell="compensated-push",
         loses=["check-compensated-push"],
         why="the correction with the wrong sign: w_then - w_now",
         code='''
def make_compensated_push():
    seen = {}

    def push(params, version, grad, computed_on, lr):
        seen[version] = params.copy()
        corrected = grad + (seen[computed_on] - params)
        return params - lr * corrected, version + 1, version - computed_on
    return push
'''),
    dict(cell="compensated-push",
         loses=["check-compensated-push"],
         why="DC-ASGD's lambda g*g taken on trust: no more stable on this quadratic",
         code='''
def make_compensated_push():
    seen = {}

    def push(params, version, grad, computed_on, lr):
        seen[version] = params.copy()
        corrected = grad + 1.0 * grad * grad * (params - seen[computed_on])
        return params - lr * corrected, version + 1, version - computed_on
    return push
'''),
    dict(cell="compensated-push",
         loses=["check-compensated-push"],
         why="shrinks the step by staleness + 1 instead of correcting it: slower at a small lr",
         code='''
def make_compensated_push():
    def push(params, version, grad, computed_on, lr):
        staleness = version - computed_on
        return params - lr / (staleness + 1) * grad, version + 1, staleness
    return push
'''),
    dict(cell="compensated-push",
         loses=["check-compensated-push"],
         why="caps the lr of stale pushes instead of correcting them: stable, but nothing corrected",
         code='''
def make_compensated_push():
    def push(params, version, grad, computed_on, lr):
        staleness = version - computed_on
        rate = min(lr, 0.2) if staleness else lr
        return params - rate * grad, version + 1, staleness
    return push
'''),
    dict(cell="compensated-push",
         loses=["check-compensated-push"],
         why="ignores the pushed gradient and computes a fresh one from the problem",
         code='''
def make_compensated_push():
    def push(params, version, grad, computed_on, lr):
        return params - lr * quad.gradient(params), version + 1, version - computed_on
    return push
'''),
]
