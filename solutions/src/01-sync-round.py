# %% [markdown]
# # Assignment 1 · The synchronous round
#
# In a synchronous (BSP) parameter server every worker pushes a gradient computed on the same
# version, the server **waits at a barrier** until all of them have arrived, then applies their
# **average** once: one round, one new version. You will write that rule; the real server will run
# it.
#
# Lecture notebook: `notebooks/01-synchronous-ps.ipynb`.

# %%
import numpy as np

import asyncps as aps

problem = aps.problems.LeastSquares(n=256, dim=5, seed=0)

# %% [markdown]
# ## Task 1.1 · barrier and average
# Write `average(grads, workers)`. `grads` maps each worker that has pushed in this round to its
# gradient (a numpy array); `workers` is how many workers there are. Return `None` while the
# barrier must stay closed (not everyone has pushed), and the average gradient once everyone has.

# %% solution id=average task="Task 1.1: barrier and average"
def average(grads, workers):
    """None until all `workers` have pushed; then the mean of their gradients."""
    ### BEGIN SOLUTION
    if len(grads) < workers:
        return None
    return sum(grads.values()) / workers
    ### END SOLUTION

# %% tests id=check-average points=3
assert average({0: np.array([1.0, 0.0])}, 2) is None, "one of two pushed: the barrier stays closed"
got = average({0: np.array([1.0, 0.0]), 1: np.array([0.0, 1.0])}, 2)
assert got is not None and np.allclose(got, [0.5, 0.5]), "both pushed: their average"
### BEGIN HIDDEN TESTS
rng = np.random.default_rng(3)
for n in (1, 3, 5):
    g = {k: rng.standard_normal(4) for k in range(n)}
    assert np.allclose(average(g, n), np.mean(list(g.values()), axis=0))
    if n > 1:
        assert average({k: g[k] for k in range(n - 1)}, n) is None
### END HIDDEN TESTS

# %% [markdown]
# ## Your round in the real server
# `aps.simulate(..., policy="sync", average=average)`: with a straggler, the other workers wait
# at your barrier (grey in the Timeline).

# %%
mine = aps.simulate(problem, workers=4, policy="sync", lr=0.05, steps=30, compute_times=[1, 1, 1, 3],
                    average=average)
timeline = aps.widgets.Timeline(mine)
timeline.frame = mine.trace.events.index(mine.trace.waits[0])
display(timeline)
print(timeline.state)

# %% [markdown]
# ## Task 1.2 · one big batch
# With equal shards and whole-shard gradients, 4 synchronous workers take exactly the steps of one
# worker doing full-batch gradient descent. Write `gap_to_one_worker(run)`: the largest absolute
# difference between `run.params` and the parameters of a 1-worker sync run with the same
# `problem`, `lr` and `steps` (here: `lr=0.05, steps=30`).

# %% solution id=gap task="Task 1.2: one big batch"
def gap_to_one_worker(run):
    ### BEGIN SOLUTION
    one = aps.simulate(problem, workers=1, policy="sync", lr=0.05, steps=30)
    return float(np.max(np.abs(run.params - one.params)))
    ### END SOLUTION

# %% tests id=check-gap points=1
mine = aps.simulate(problem, workers=4, policy="sync", lr=0.05, steps=30, average=average)
assert gap_to_one_worker(mine) < 1e-12
### BEGIN HIDDEN TESTS
early = aps.simulate(problem, workers=4, policy="sync", lr=0.05, steps=29, average=average)
assert gap_to_one_worker(early) > 1e-6
### END HIDDEN TESTS

# %% [markdown]
# ## Think about it (not graded)
# What fraction of the time do workers 0–2 wait with compute times `[1, 1, 1, 3]`?
# (`mine.trace.idle_time_per_worker()` and `mine.trace.duration`.)
