# %% [markdown]
# # Assignment 2 · The asynchronous push
#
# In an asynchronous parameter server a worker pulls the parameters at version `computed_on`,
# computes a gradient, and pushes it. By then the server may have moved on. You will write the
# server's half of that: **apply the gradient to the current parameters** and **record how stale
# it is**. Then the real server runs your function, and you watch it in the Timeline.
#
# Lecture notebook: [02 · The asynchronous parameter server](../notebooks/02-asynchronous-ps.ipynb).
# Run every cell from the top; a cell that says `NotImplementedError` is waiting for your code.
#
# **Check your work** at any time: save (Ctrl+S), then run `aps.check()` in a cell (the
# notebook's last cell holds one). It shows your points per task (the visible tests).

# %%
import numpy as np

import asyncps as aps

quadratic = aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0])


def your(name):
    """The answer you wrote in a cell above (NotImplementedError while it is still missing)."""
    if name not in globals():
        raise NotImplementedError(f"{name} is not set yet: run your answer's cell above first")
    return globals()[name]

# %% [markdown]
# ## Task 2.1 · the push
# Write `async_push(params, version, grad, computed_on, lr)`. The server is at `version` with
# parameters `params`; a worker pushes `grad`, computed on version `computed_on`. Return a tuple
# `(new_params, new_version, staleness)`:
# - the step is applied to the **current** parameters: `params - lr * grad` (not to the parameters
#   of version `computed_on` — the server no longer has them, and other workers' steps would be lost);
# - every push makes one new version;
# - `staleness` is how many versions the server moved between the pull and this push.
# Do not change `params` in place: return new arrays.

# %% solution id=async-push task="Task 2.1: the asynchronous push"
def async_push(params, version, grad, computed_on, lr):
    """Apply `grad`, computed on version `computed_on`, to the server's parameters at `version`."""
    ### BEGIN SOLUTION
    staleness = version - computed_on
    return params - lr * grad, version + 1, staleness
    ### END SOLUTION

# %% tests id=check-async-push points=3
params = np.array([1.0, 1.0])
pushed = async_push(params, 1, np.array([0.0, 1.0]), 0, 0.5)
assert isinstance(pushed, tuple) and len(pushed) == 3, \
    f"async_push must return a tuple (new_params, new_version, staleness); it returned {pushed!r:.60}"
new_params, new_version, staleness = pushed
assert np.shape(new_params) == (2,), \
    f"new_params has shape {np.shape(new_params)}: it must have the shape of params, (2,)"
assert np.allclose(new_params, [1.0, 0.5]), "the step lands on the current parameters"
assert new_version == 2, "the push computed on v0, applied to v1, makes v2"
assert staleness == 1, "computed on v0, applied to v1: stale by 1"
assert np.allclose(params, [1.0, 1.0]), "params must not be changed in place"
### BEGIN HIDDEN TESTS
rng = np.random.default_rng(7)
for _ in range(20):
    p, g = rng.standard_normal(3), rng.standard_normal(3)
    v = int(rng.integers(0, 50))
    c = int(rng.integers(0, v + 1))
    got = async_push(p.copy(), v, g, c, 0.1)
    assert np.shape(got[0]) == (3,) and np.allclose(got[0], p - 0.1 * g)
    assert got[1] == v + 1 and got[2] == v - c
### END HIDDEN TESTS

# %% [markdown]
# ## Your push in the real server
# `aps.simulate(..., apply=async_push)` makes the server call your function for every push.
# The server checks what you return and says what is wrong, in these terms.

# %%
mine = aps.simulate(quadratic, workers=2, policy="async", lr=0.1, steps=8, compute_times=[1, 1.5],
                    apply=async_push)
timeline = aps.widgets.Timeline(mine, frame="stale")
display(timeline)
print(timeline.state)

# %% [markdown]
# ## Task 2.2 · the same run as the built-in server?
# A correct push reproduces the built-in server exactly: the same trace, event for event.
# Write `same_as_builtin(run)` that returns `True` when `run.trace` equals the trace of the same
# `aps.simulate` call without `apply=` (hint: `run.trace.to_json()` compares exactly; the run's
# arguments are in `run.trace.meta`, but here you may simply re-run the call above).

# %% solution id=same-as-builtin task="Task 2.2: compare with the built-in server"
def same_as_builtin(run):
    ### BEGIN SOLUTION
    builtin = aps.simulate(quadratic, workers=2, policy="async", lr=0.1, steps=8,
                           compute_times=[1, 1.5])
    return run.trace.to_json() == builtin.trace.to_json()
    ### END SOLUTION

# %% tests id=check-same-as-builtin points=1
mine = aps.simulate(quadratic, workers=2, policy="async", lr=0.1, steps=8, compute_times=[1, 1.5],
                    apply=async_push)
same = same_as_builtin(mine)
assert same is True, f"same_as_builtin(mine) returned {same!r}: your push is correct, so this run is " \
    "the built-in one, and the answer must be True"
### BEGIN HIDDEN TESTS
wrong = aps.simulate(quadratic, workers=2, policy="async", lr=0.2, steps=8, compute_times=[1, 1.5])
assert same_as_builtin(wrong) is False


def half_step(params, version, grad, computed_on, lr):       # same lr, same events, other params
    return params - 0.5 * lr * grad, version + 1, version - computed_on


other_push = aps.simulate(quadratic, workers=2, policy="async", lr=0.1, steps=8, compute_times=[1, 1.5],
                          apply=half_step)
assert same_as_builtin(other_push) is False, "a different push with the same lr is not the same run"
### END HIDDEN TESTS

# %% [markdown]
# ## Task 2.3 · predict the staleness
# Four workers with equal compute times, no jitter: `aps.simulate(quadratic, workers=4, steps=40,
# apply=async_push)`. **Before you run it**: which staleness will most pushes have? Set
# `predicted_staleness` to that integer. It is graded exactly against the most common staleness
# in the run's `staleness_histogram()`.

# %% solution id=predict-staleness task="Task 2.3: predict the staleness"
### BEGIN SOLUTION
predicted_staleness = 3       # each worker's pull is followed by the 3 other workers' pushes
### END SOLUTION

# %%
four = aps.simulate(quadratic, workers=4, steps=40, apply=async_push)
print("pushes stale by 0, 1, 2, ...:", four.trace.staleness_histogram().tolist())

# %% tests id=check-predict-staleness points=1
guess = your("predicted_staleness")
assert isinstance(guess, (int, np.integer)) and not isinstance(guess, bool) and guess >= 0, \
    f"predicted_staleness={guess!r}: a whole number of versions (0, 1, 2, ...), please"
### BEGIN HIDDEN TESTS
histogram = aps.simulate(quadratic, workers=4, steps=40).trace.staleness_histogram()
assert guess == int(np.argmax(histogram)), \
    f"you predicted {guess!r}; most pushes are stale by {int(np.argmax(histogram))}"
### END HIDDEN TESTS

# %% [markdown]
# ## Task 2.4 · a push that copes with a straggler
# Now worker 3 is four times slower (`compute_times=[1, 1, 1, 4]`) and every compute time varies
# by about 30 % (`jitter=0.3`): the staleness is no longer the same for every push, and the
# straggler's pushes are very stale. Very stale gradients are what makes async diverge at a
# large lr (lecture 03c measures it).
#
# Design `careful_push(params, version, grad, computed_on, lr)`: a push with the same signature
# and the same versions and staleness as `async_push`, but free to move the parameters less — or
# not at all — for a push it does not trust. It is graded by what it does, over the seeds 0–4:
#
# - **wider**: the largest lr in `GRID` at which the run still converges (not diverged, final loss
#   below 1e-6 after 200 versions), averaged over the seeds (geometric mean), must be at least
#   1.25 times that of plain `async_push`;
# - **not slower**: at lr 0.05, where plain async converges comfortably, the mean number of
#   versions to reach loss 1e-6 may be at most 1.6 times that of plain async;
# - **fresh pushes are trusted**: a push with staleness 0 is the plain step `params - lr * grad`,
#   at every lr — what your rule does must depend on the staleness, not on the lr alone.
#
# Shrinking every step, capping the lr, or dropping every stale push fails one of the three. `stable_lr` and
# `versions_at` below measure both for you: try a few designs.

# %%
GRID = np.round(0.05 * 1.1 ** np.arange(26), 4)         # 0.05 ... about 0.54
STRAGGLER = dict(workers=4, policy="async", compute_times=[1, 1, 1, 4], jitter=0.3)


def stable_lr(push, seed):
    """The largest lr in GRID at which the straggler run with `push` converges (None: none does)."""
    for lr in sorted(GRID, reverse=True):
        run = aps.simulate(quadratic, lr=float(lr), steps=200, seed=seed, apply=push, **STRAGGLER)
        if not run.diverged and run.losses[-1] < 1e-6:
            return float(lr)
    return None


def versions_at(push, seed, lr=0.05):
    """Versions the straggler run with `push` needs to reach loss 1e-6 at `lr` (None: not in 400)."""
    run = aps.simulate(quadratic, lr=lr, steps=400, seed=seed, apply=push, **STRAGGLER)
    return run.versions_to_reach(1e-6)

# %% solution id=careful-push task="Task 2.4: a push that copes with a straggler"
def careful_push(params, version, grad, computed_on, lr):
    """Like async_push, but a push it does not trust moves the parameters less (or not at all)."""
    ### BEGIN SOLUTION
    staleness = version - computed_on
    if staleness > 3:             # older than a round of the 4 workers: drop it, keep the version
        return params.copy(), version + 1, staleness
    return params - lr * grad, version + 1, staleness
    ### END SOLUTION

# %%
for seed in range(2):
    print(f"seed {seed}: largest stable lr plain {stable_lr(async_push, seed)}, yours "
          f"{stable_lr(careful_push, seed)}; versions at lr 0.05 plain {versions_at(async_push, seed)}, "
          f"yours {versions_at(careful_push, seed)}")

# %% tests id=check-careful-push points=4
pushed = careful_push(np.array([1.0, 1.0]), 5, np.array([0.5, 0.0]), 5, 0.1)
assert isinstance(pushed, tuple) and len(pushed) == 3, \
    f"careful_push must return a tuple (new_params, new_version, staleness); it returned {pushed!r:.60}"
new_params, new_version, staleness = pushed
assert new_version == 6 and staleness == 0, "the same versions and staleness as async_push"
assert np.allclose(new_params, [0.95, 1.0]), "a fresh push (staleness 0) is the plain step"
for _rate in (0.05, 0.3, float(GRID.max())):
    _moved, _, _ = careful_push(np.array([1.0, -2.0]), 7, np.array([0.5, 0.25]), 7, _rate)
    assert np.allclose(_moved, [1.0 - 0.5 * _rate, -2.0 - 0.25 * _rate]), \
        f"at lr {_rate} a fresh push (staleness 0) must be the plain step; yours gave {_moved}"
### BEGIN HIDDEN TESTS
def reference_push(params, version, grad, computed_on, lr):
    return params - lr * grad, version + 1, version - computed_on   # the built-in push


def reference_stable_lr(push, seed):
    for rate in reversed(sorted(GRID)):
        ran = aps.simulate(quadratic, steps=200, lr=float(rate), apply=push, seed=seed, **STRAGGLER)
        if ran.losses[-1] < 1e-6 and not ran.diverged:
            return float(rate)   # the largest converging rate
    return None


def reference_versions(push, seed):
    ran = aps.simulate(quadratic, steps=400, lr=0.05, apply=push, seed=seed, **STRAGGLER)
    return ran.versions_to_reach(1e-6)


plain_lr = [reference_stable_lr(reference_push, seed) for seed in range(5)]
yours_lr = [reference_stable_lr(careful_push, seed) for seed in range(5)]
assert None not in yours_lr, f"your push converges at no lr of GRID for some seed: {yours_lr}"
gain = np.exp(np.mean(np.log(yours_lr)) - np.mean(np.log(plain_lr)))
assert gain >= 1.25, f"largest stable lr {yours_lr}, plain {plain_lr}: only {gain:.2f} times wider"
plain_versions = [reference_versions(reference_push, seed) for seed in range(5)]
yours_versions = [reference_versions(careful_push, seed) for seed in range(5)]
assert None not in yours_versions, f"at lr 0.05 your push does not reach 1e-6 in 400 versions"
assert np.mean(yours_versions) <= 1.6 * np.mean(plain_versions), \
    f"at lr 0.05 your push needs {yours_versions} versions, plain async {plain_versions}: too slow"
### END HIDDEN TESTS

# %% [markdown]
# ## Think about it (not graded)
# 1. Your `careful_push` was tuned for 4 workers. What happens to it with 8 equal workers, where
#    every push is stale by 7? What would you change?
# 2. Lecture 03c divides every push's lr by staleness + 1. Where would that rule land on the two
#    measures above, and why?

# %% [markdown]
# ## Check your work
# Save first (Ctrl+S): `aps.check()` runs this notebook **as last saved**, top to bottom in a fresh
# kernel, and shows the points per task of the tests you can see (your grade also runs hidden
# tests) and the first thing to fix. In a terminal: `python -m asyncps.check
# exercises/02-async-push.ipynb`.

# %%
import asyncps as aps   # this cell runs alone too: after a restart, or as the first cell you run

aps.check()
