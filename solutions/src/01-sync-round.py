# %% [markdown]
# # Assignment 1 · The synchronous round
#
# In a synchronous (BSP) parameter server every worker pushes a gradient computed on the same
# version, the server **waits at a barrier** until all of them have arrived, then applies their
# **average** once: one round, one new version. You will write that rule; the real server will run
# it.
#
# Lecture notebook: [01 · The synchronous parameter server](../notebooks/01-synchronous-ps.ipynb).
#
# **Check your work** at any time: save (Ctrl+S), then run `aps.check()` in a cell (the
# notebook's last cell holds one). It shows your points per task (the visible tests).

# %%
import numpy as np

import asyncps as aps

problem = aps.problems.LeastSquares(n=256, dim=5, seed=0)


def your(name):
    """The answer you wrote in a cell above (NotImplementedError while it is still missing)."""
    if name not in globals():
        raise NotImplementedError(f"{name} is not set yet: run your answer's cell above first")
    return globals()[name]

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
assert got is not None, "both pushed: the barrier opens (return their average, not None)"
assert np.shape(got) == (2,), f"both pushed: average returned {got!r:.40} of shape {np.shape(got)}; " \
    "it must return one gradient of shape (2,), like each worker's, averaged entry by entry " \
    "(np.mean(..., axis=0); without axis=0 np.mean averages everything into one number)"
assert np.allclose(got, [0.5, 0.5]), "both pushed: their average"
### BEGIN HIDDEN TESTS
rng = np.random.default_rng(3)
for n in (1, 3, 5):
    g = {k: rng.standard_normal(4) for k in range(n)}
    assert np.shape(average(g, n)) == (4,), "one gradient, shaped like each worker's"
    assert np.allclose(average(g, n), np.mean(list(g.values()), axis=0))
    if n > 1:
        assert average({k: g[k] for k in range(n - 1)}, n) is None
### END HIDDEN TESTS

# %% [markdown]
# ## Task 1.2 · predict the wait, then measure it
# Below, your round runs with 4 workers, compute times `[1, 1, 1, 3]` (no jitter) and 30 versions.
# **Before you run it**: what fraction of the run's duration does each of workers 0–2 spend
# waiting at your barrier? Set `predicted_idle_share` to a number between 0 and 1 (a fraction, not
# a percentage). It is graded against the value measured from the trace, within ±0.05.

# %% solution id=predict-idle task="Task 1.2: predict the wait"
### BEGIN SOLUTION
predicted_idle_share = 2 / 3      # each round lasts 3 time units; the fast workers compute for 1
### END SOLUTION

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

# %% tests id=check-predict-idle points=1
guess = your("predicted_idle_share")
assert isinstance(guess, (int, float, np.integer, np.floating)) and not isinstance(guess, bool) \
    and 0 <= guess <= 1, f"predicted_idle_share={guess!r}: a fraction between 0 and 1, please"
### BEGIN HIDDEN TESTS
builtin = aps.simulate(problem, workers=4, policy="sync", lr=0.05, steps=30, compute_times=[1, 1, 1, 3])
measured = builtin.trace.idle_time_per_worker()[:3].mean() / builtin.trace.duration
assert abs(guess - measured) <= 0.05, \
    f"you predicted {guess:.2f}; the trace says {measured:.2f}. Where does a round's time go?"
### END HIDDEN TESTS

# %% [markdown]
# ## Task 1.3 · one big batch
# With equal shards and whole-shard gradients, 4 synchronous workers take exactly the steps of one
# worker doing full-batch gradient descent. Write `gap_to_one_worker(run)`: the largest absolute
# difference between `run.params` and the parameters of a 1-worker sync run with the same
# `problem`, `lr` and `steps` (here: `lr=0.05, steps=30`).

# %% solution id=gap task="Task 1.3: one big batch"
def gap_to_one_worker(run):
    ### BEGIN SOLUTION
    one = aps.simulate(problem, workers=1, policy="sync", lr=0.05, steps=30)
    return float(np.max(np.abs(run.params - one.params)))
    ### END SOLUTION

# %% tests id=check-gap points=1
mine = aps.simulate(problem, workers=4, policy="sync", lr=0.05, steps=30, average=average)
gap = gap_to_one_worker(mine)
assert gap < 1e-12, f"gap_to_one_worker(mine) returned {gap!r}: 4 sync workers with your round take " \
    "exactly the steps of 1 worker, so the gap is 0 (up to rounding)"
### BEGIN HIDDEN TESTS
early = aps.simulate(problem, workers=4, policy="sync", lr=0.05, steps=29, average=average)
assert gap_to_one_worker(early) > 1e-6
from types import SimpleNamespace

one = aps.simulate(problem, workers=1, policy="sync", lr=0.05, steps=30)
for offset in ([0, 0, 0, 0, -0.5], [0.25, 0, -0.5, 0, 0]):
    moved = SimpleNamespace(params=one.params + np.array(offset), trace=mine.trace)
    assert abs(gap_to_one_worker(moved) - 0.5) < 1e-9, "the largest absolute difference"
### END HIDDEN TESTS

# %% [markdown]
# ## Task 1.4 · a round that survives a broken worker
# The average trusts every worker. Here one of the four has a broken GPU: every gradient it pushes
# comes back as **−8 times** its true value (sign flipped and blown up). `BrokenWorker(bad, seed)`
# is the least-squares problem of this notebook with worker `bad` broken (for the shards of run
# `seed`). With your `average`, a single broken worker is enough to wreck the run:

# %%
class BrokenWorker(aps.problems.LeastSquares):
    """`problem`, except that worker `bad` (iid shards of 4 workers, run seed `seed`) pushes -8 x its gradient."""

    def __init__(self, bad, seed=0):
        super().__init__(n=256, dim=5, seed=0)
        self.first_of_bad_shard = int(self.shards(4, "iid", seed)[bad][0])

    def gradient(self, params, indices=None, rng=None):
        g = super().gradient(params, indices, rng)
        broken = indices is not None and int(indices[0]) == self.first_of_bad_shard
        return -8 * g if broken else g


wrecked = aps.simulate(BrokenWorker(bad=2), workers=4, policy="sync", lr=0.05, steps=150,
                       average=average)
print(wrecked)

# %% [markdown]
# Design `robust_average(grads, workers)`: the same barrier as Task 1.1 (`None` until all
# `workers` have pushed), then a step that a single broken worker cannot wreck. You do not know
# which worker is broken, and it may be any of them — or none. It is graded by what it does, not by
# a formula: over the seeds 0–4 (with `jitter=0.3`) and with each of the 4 workers broken in turn,
# `aps.simulate(BrokenWorker(bad, seed), workers=4, policy="sync", lr=0.05, steps=150, jitter=0.3,
# seed=seed, average=robust_average)` must not diverge and must reach loss 0.01 within 120
# versions; and with no broken worker (`problem`) it must reach loss 0.01 within 1.5 times the
# versions that plain averaging needs. Measure your design before you submit it.

# %% solution id=robust-average task="Task 1.4: a round that survives a broken worker"
def robust_average(grads, workers):
    """None until all `workers` have pushed; then a step that one broken gradient cannot wreck."""
    ### BEGIN SOLUTION
    if len(grads) < workers:
        return None
    stacked = np.array(list(grads.values()))
    middle = np.median(stacked, axis=0)
    outlier = int(np.argmax(np.linalg.norm(stacked - middle, axis=1)))   # farthest from the median
    return np.delete(stacked, outlier, axis=0).mean(axis=0)
    ### END SOLUTION

# %%
for bad in range(4):
    run = aps.simulate(BrokenWorker(bad), workers=4, policy="sync", lr=0.05, steps=150, jitter=0.3,
                       average=robust_average)
    print(f"worker {bad} broken: diverged {run.diverged}, loss 0.01 at version {run.versions_to_reach(0.01)}")

# %% tests id=check-robust-average points=3
assert robust_average({0: np.array([1.0, 0.0])}, 2) is None, "one of two pushed: the barrier stays closed"
both = robust_average({0: np.array([1.0, 2.0]), 1: np.array([1.0, 2.0]), 2: np.array([1.0, 2.0])}, 3)
assert both is not None and np.shape(both) == (2,) and np.allclose(both, [1.0, 2.0]), \
    f"three equal gradients of shape (2,): that gradient; robust_average returned {both!r:.40}"
### BEGIN HIDDEN TESTS
for seed in range(5):
    settings = dict(workers=4, policy="sync", lr=0.05, steps=150, jitter=0.3, seed=seed)
    for broken in (0, 1, 2, 3):
        run = aps.simulate(BrokenWorker(broken, seed), average=robust_average, **settings)
        assert not run.diverged, f"worker {broken} broken, seed {seed}: the run diverged"
        reached = run.versions_to_reach(0.01)
        assert reached is not None and reached <= 120, \
            f"worker {broken} broken, seed {seed}: loss 0.01 at version {reached}, not within 120"
    healthy = aps.simulate(problem, average=robust_average, **settings)
    plain = aps.simulate(problem, **settings)
    reached = healthy.versions_to_reach(0.01)
    assert reached is not None and reached <= 1.5 * plain.versions_to_reach(0.01), \
        f"no broken worker, seed {seed}: loss 0.01 at version {reached}, far later than plain averaging"
### END HIDDEN TESTS

# %% [markdown]
# ## Think about it (not graded)
# 1. Your robust round still waits for the straggler. Why can this server not simply close the
#    round once 3 of the 4 gradients are in ("backup workers", Chen et al. 2016)? (Hint: where
#    would the fourth gradient land, and what does the barrier look at?)
# 2. How many broken workers out of 4 can your rule survive? Out of 5?

# %% [markdown]
# ## Check your work
# Save first (Ctrl+S): `aps.check()` runs this notebook **as last saved**, top to bottom in a fresh
# kernel, and shows the points per task of the tests you can see (your grade also runs hidden
# tests) and the first thing to fix. In a terminal: `python -m asyncps.check
# exercises/01-sync-round.ipynb`.

# %%
import asyncps as aps   # this cell runs alone too: after a restart, or as the first cell you run

aps.check()
