# %% [markdown]
# # Assignment 2 · The asynchronous push
#
# In an asynchronous parameter server a worker pulls the parameters at version `computed_on`,
# computes a gradient, and pushes it. By then the server may have moved on. You will write the
# server's half of that: **apply the gradient to the current parameters** and **record how stale
# it is**. Then the real server runs your function, and you watch it in the Timeline.
#
# Lecture notebook: `notebooks/02-asynchronous-ps.ipynb`. Run every cell from the top; a cell that
# says `NotImplementedError` is waiting for your code.

# %%
import numpy as np

import asyncps as aps

quadratic = aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0])

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
new_params, new_version, staleness = async_push(params, 1, np.array([0.0, 1.0]), 0, 0.5)
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
    assert np.allclose(got[0], p - 0.1 * g) and got[1] == v + 1 and got[2] == v - c
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
assert same_as_builtin(mine) is True
### BEGIN HIDDEN TESTS
wrong = aps.simulate(quadratic, workers=2, policy="async", lr=0.2, steps=8, compute_times=[1, 1.5])
assert same_as_builtin(wrong) is False
### END HIDDEN TESTS

# %% [markdown]
# ## Think about it (not graded)
# With 4 equal workers, what staleness do you expect for most pushes? Run
# `aps.simulate(quadratic, workers=4, steps=40, apply=async_push)` and look at
# `run.trace.staleness_histogram()`.
