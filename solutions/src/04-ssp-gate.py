# %% [markdown]
# # Assignment 4 · The SSP gate
#
# Stale Synchronous Parallel (SSP, Ho et al. 2013) sits between sync and async. Each worker has a
# **clock**: the number of gradients it has pushed. Before a worker starts its next iteration (pull,
# compute, push), the server asks the **SSP gate**: is this worker at most **s** clocks ahead of the
# slowest worker? If not, the worker waits until the slowest one pushes. You will write that gate;
# then the real server runs your function, and you watch the waits in the Timeline.
#
# Lecture notebook: `notebooks/04-stale-synchronous-parallel.ipynb`. Run every cell from the top;
# a cell that says `NotImplementedError` is waiting for your code.

# %%
import math

import numpy as np

import asyncps as aps

problem = aps.problems.LeastSquares(n=256, dim=5, seed=0)

# %% [markdown]
# ## Task 4.1 · the gate
# Write `gate(clock, clocks, max_ahead)`. A worker whose clock is `clock` asks whether it may start
# its next iteration; `clocks` is the list of every live worker's clock (its own included) and
# `max_ahead` is the SSP threshold s (`max_clocks_ahead`: how many clocks a worker may run ahead of
# the slowest worker). Return `True` when the worker may start — when its clock is at most
# `max_ahead` clocks ahead of the **slowest** worker's clock — and `False` when it must wait.
# - s = 0: nobody may start clock c + 1 before everyone has finished clock c (a barrier per clock);
# - s = ∞ (`math.inf`): the gate never closes (async).

# %% solution id=ssp-gate task="Task 4.1: the SSP gate"
def gate(clock, clocks, max_ahead):
    """May a worker whose clock is `clock` start its next iteration, given all live clocks and s?"""
    ### BEGIN SOLUTION
    return clock - min(clocks) <= max_ahead
    ### END SOLUTION

# %% tests id=check-ssp-gate points=3
assert gate(0, [0, 0, 0], 0), "every clock is 0: everyone may start"
assert not gate(1, [1, 0, 1], 0), "s = 0: worker 1 has not pushed yet, so the others must wait"
assert gate(2, [2, 1, 1], 1), "1 clock ahead of the slowest, s = 1: it may start"
assert not gate(3, [3, 1, 2], 1), "2 clocks ahead of the slowest, s = 1: it must wait"
assert gate(1, [3, 1, 2], 1), "the slowest worker itself may always start"
assert gate(7, [7, 0], math.inf), "s = infinity is async: the gate never closes"
### BEGIN HIDDEN TESTS
rng = np.random.default_rng(11)
for _ in range(200):
    clocks = [int(c) for c in rng.integers(0, 6, size=int(rng.integers(1, 5)))]
    clock, max_ahead = clocks[int(rng.integers(0, len(clocks)))], int(rng.integers(0, 4))
    assert bool(gate(clock, clocks, max_ahead)) == (clock - min(clocks) <= max_ahead), (clock, clocks, max_ahead)
for s in (0, 1, 2, 4):
    for seed in (0, 1, 2):
        settings = dict(workers=4, policy="ssp", max_clocks_ahead=s, lr=0.05, steps=60,
                        compute_times=[1, 1, 1, 3], jitter=0.5, seed=seed)
        mine = aps.simulate(problem, gate=gate, **settings)
        assert aps.violations(mine.trace) == [], (s, seed)
        assert mine.trace.to_json() == aps.simulate(problem, **settings).trace.to_json(), (s, seed)
### END HIDDEN TESTS

# %% [markdown]
# ## Your gate in the real server
# `aps.simulate(..., policy="ssp", max_clocks_ahead=s, gate=gate)` makes the server ask your
# function every time a worker wants to start an iteration. Four workers; worker 3 needs 4 time
# units per gradient, the others 1; s = 1. The Timeline opens at the first wait (grey): a Wait event
# is recorded when the wait *ends*, so this frame shows the moment the gate opens again.

# %%
mine = aps.simulate(problem, workers=4, policy="ssp", max_clocks_ahead=1, lr=0.05, steps=16,
                    compute_times=[1, 1, 1, 4], gate=gate)
timeline = aps.widgets.Timeline(mine)
timeline.frame = mine.trace.events.index(mine.trace.waits[0])
display(timeline)
print(timeline.state)
print(mine.trace.waits[0])

# %% [markdown]
# ## Task 4.2 · how far ahead did a worker start?
# The promise of SSP with threshold s (`max_clocks_ahead=s`): whenever a worker **starts** an
# iteration, its clock is at most s ahead of the slowest worker's clock. A worker starts an
# iteration with a pull, so you can check the promise on any trace.
#
# Write `largest_clock_gap(trace)`. Replay `trace.events` in order, keeping each worker's clock
# (start every clock at 0, for `trace.workers` workers; each Push event adds 1 to its worker's
# clock). At each Pull event, take the pulling worker's clock minus the smallest clock. Return the
# largest of these gaps (an `int`; 0 if the trace has no pulls).
# Only the gap **at a pull** counts: a worker that pushed and now waits at the gate has not
# started anything. (Simulated runs have no Lost events; you may ignore them.)

# %% solution id=clock-gap task="Task 4.2: the largest clock gap"
def largest_clock_gap(trace):
    """The largest (puller's clock - smallest clock) over all Pull events of `trace`."""
    ### BEGIN SOLUTION
    clocks, largest = [0] * trace.workers, 0
    for event in trace.events:
        if event.kind == "pull":
            largest = max(largest, clocks[event.worker] - min(clocks))
        elif event.kind == "push":
            clocks[event.worker] += 1
    return largest
    ### END SOLUTION

# %% tests id=check-clock-gap points=2
# three workers, s = 1: worker 0 pushes twice and then waits at the gate
hand = aps.Trace(events=[aps.Pull(0, 0, 0.0), aps.Pull(1, 0, 0.0), aps.Pull(2, 0, 0.0),
                         aps.Push(0, 0, 0, 0, 1.0), aps.Pull(0, 1, 1.0),
                         aps.Push(0, 1, 1, 0, 2.0),
                         aps.Push(1, 0, 2, 2, 3.0), aps.Pull(1, 3, 3.0)],
                 meta={"workers": 3})
assert largest_clock_gap(hand) == 1, "worker 0 pulled at clock 1 while worker 2 was at 0"
assert largest_clock_gap(aps.Trace(meta={"workers": 2})) == 0, "no pulls: no gap"
### BEGIN HIDDEN TESTS
def reference_gap(trace):
    clocks, largest = [0] * trace.workers, 0
    for event in trace.events:
        if event.kind == "pull":
            largest = max(largest, clocks[event.worker] - min(clocks))
        elif event.kind == "push":
            clocks[event.worker] += 1
    return largest


for s in (0, 1, 2, 3, 5):
    for seed, jitter, times in ((0, 0.0, [1, 1, 1, 4]), (3, 1.0, None)):
        run = aps.simulate(problem, workers=4, policy="ssp", max_clocks_ahead=s, lr=0.05, steps=60,
                           compute_times=times, jitter=jitter, seed=seed)
        got = largest_clock_gap(run.trace)
        assert got == reference_gap(run.trace) and got <= s, (s, seed, got)
straggler = aps.simulate(problem, workers=4, policy="async", lr=0.05, steps=60,
                         compute_times=[1, 1, 1, 5])
assert largest_clock_gap(straggler.trace) == reference_gap(straggler.trace) > 5
### END HIDDEN TESTS

# %% [markdown]
# ## The promise, measured
# SSP for each threshold s, with the straggler, against async (which has no threshold):

# %%
with_straggler = dict(workers=4, lr=0.05, steps=60, compute_times=[1, 1, 1, 4])
for max_ahead in [0, 1, 2, 4]:
    ssp = aps.simulate(problem, policy="ssp", max_clocks_ahead=max_ahead, gate=gate,
                       **with_straggler)
    print(f"ssp s={max_ahead}: largest clock gap at a pull {largest_clock_gap(ssp.trace)}, "
          f"waits {len(ssp.trace.waits)}")
no_threshold = aps.simulate(problem, policy="async", **with_straggler)
print(f"async:   largest clock gap at a pull {largest_clock_gap(no_threshold.trace)}, "
      f"waits {len(no_threshold.trace.waits)}")

# %% [markdown]
# With the straggler every threshold is reached exactly: the fast workers run ahead until the gate
# stops them, s clocks ahead of worker 3. Without a threshold (async) a fast worker started an
# iteration 15 clocks ahead, and nobody ever waited.

# %% [markdown]
# ## Think about it (not graded)
# 1. With s = 1, the gap at a pull is at most 1 — but right after a push, the fastest worker's clock
#    can be 2 ahead of the slowest. Why does that not break the promise?
# 2. The threshold s is in **clocks**, staleness is in **versions**. With 4 workers and s = 1, how
#    stale can the straggler's push be? Check with `run.trace.staleness_histogram()`.
