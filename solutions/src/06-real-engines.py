# %% [markdown]
# # Assignment 6 · Real engines: what a straggler costs, measured
#
# The simulator predicts; real threads and processes measure. You will write two small functions —
# the staleness each worker's pushes carry, and the speed-up the simulator's cost model predicts for
# async over sync — predict how stale a straggler's pushes are, check all of it against real runs on
# this machine, and finally write your own push rule that removes the bias a straggler causes.
#
# Lecture notebook: [06 · Threads, processes and
# GPUs](../notebooks/06-threads-processes-gpus.ipynb). Run every cell from the top; a cell that says
# `NotImplementedError` is waiting for your code.

# %%
import numpy as np

import asyncps as aps

problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)

# %% [markdown]
# ## Task 6.1 · whose pushes are stale?
# Write `staleness_by_worker(trace)`: a dict `{worker: mean staleness of that worker's pushes}` for
# every worker that pushed at least once (`trace.pushes`; each push has `.worker` and
# `.staleness`). Workers that never pushed are left out.

# %% solution id=staleness-by-worker task="Task 6.1: staleness by worker"
def staleness_by_worker(trace):
    """{worker: mean staleness of its pushes}, for every worker with at least one push."""
    ### BEGIN SOLUTION
    by_worker = {}
    for push in trace.pushes:
        by_worker.setdefault(push.worker, []).append(push.staleness)
    return {worker: float(np.mean(values)) for worker, values in sorted(by_worker.items())}
    ### END SOLUTION

# %% tests id=check-staleness-by-worker points=2
run = aps.simulate(problem, workers=3, policy="async", lr=0.05, steps=60, compute_times=[1, 1, 3])
got = staleness_by_worker(run.trace)
assert sorted(got) == [0, 1, 2], "one entry per worker that pushed"
assert got[2] > got[0] and got[2] > got[1], "the slow worker's gradients wait longest"
### BEGIN HIDDEN TESTS
for times, policy in (([1, 2], "async"), ([1, 1, 1, 4], "async"), ([1, 1, 2], "sync"),
                      ([0.5, 1, 1.5, 2, 2.5], "ssp")):
    gate = {"max_clocks_ahead": 1} if policy == "ssp" else {}
    run = aps.simulate(problem, workers=len(times), policy=policy, lr=0.05, steps=50,
                       compute_times=times, jitter=0.5, seed=3, **gate)
    expected = {}
    for p in run.trace.pushes:
        expected.setdefault(p.worker, []).append(p.staleness)
    answer = staleness_by_worker(run.trace)
    assert set(answer) == set(expected), (times, policy)
    for worker, values in expected.items():
        assert abs(answer[worker] - np.mean(values)) < 1e-12, (times, policy, worker)
silent = aps.simulate(problem, workers=3, policy="async", lr=0.05, steps=3, compute_times=[1, 1, 10])
assert 2 not in staleness_by_worker(silent.trace), "a worker that never pushed has no entry"
### END HIDDEN TESTS

# %% [markdown]
# ## Task 6.2 · predict, then measure: how stale is the straggler?
# Three async workers; worker 2 needs three times as long per gradient as workers 0 and 1
# (simulator: `compute_times=[1, 1, 3]`, 150 versions, no jitter). **Before you run the next cells**,
# predict the mean staleness of worker 2's pushes, in versions. Set
# `predicted_straggler_staleness` to a number; it is graded within 1 version of what the simulator
# measures. (While worker 2 computes one gradient, how many pushes do the others make?)

# %% solution id=predict-straggler task="Task 6.2: predict the straggler's staleness"
predicted_straggler_staleness = None   # versions: mean staleness of worker 2's pushes
### BEGIN SOLUTION
# while worker 2 computes for 3 time units, workers 0 and 1 push 3 times each
predicted_straggler_staleness = 2 * 3
### END SOLUTION

# %%
simulated = aps.simulate(problem, workers=3, policy="async", lr=0.05, steps=150, compute_times=[1, 1, 3])
by_worker = staleness_by_worker(simulated.trace)
print("simulator, mean staleness by worker:", {w: round(s, 2) for w, s in by_worker.items()})

# %% tests id=check-predict-straggler points=2
if predicted_straggler_staleness is None:
    raise NotImplementedError("Task 6.2: write your prediction in the cell above first")
assert isinstance(predicted_straggler_staleness, (int, float, np.integer, np.floating)), \
    "predicted_straggler_staleness must be a number of versions"
### BEGIN HIDDEN TESTS
_slow = [p.staleness for p in aps.simulate(problem, workers=3, policy="async", lr=0.05, steps=150,
                                           compute_times=[1, 1, 3]).trace.pushes if p.worker == 2]
assert abs(predicted_straggler_staleness - np.mean(_slow)) <= 1.0, \
    f"predicted {predicted_straggler_staleness:g}, the simulator measures {np.mean(_slow):.2f}"
### END HIDDEN TESTS

# %% [markdown]
# The same on real threads: worker 2 sleeps three times as long per gradient as workers 0 and 1.

# %% tags=nbval-ignore-output
real = aps.train(problem, workers=3, policy="async", lr=0.05, steps=150, engine="threads",
                 slowdown=[0.01, 0.01, 0.03])
measured = staleness_by_worker(real.trace)
print("threads, mean staleness by worker:", {w: round(s, 2) for w, s in measured.items()})
assert aps.violations(real.trace) == [] and measured[2] > max(measured[0], measured[1])

# %% [markdown]
# ## Task 6.3 · the speed-up the cost model predicts
# In the simulator a worker needs `compute_times[k]` per gradient and messages are free. Async makes
# each worker push as fast as it can; sync makes everybody wait for the slowest worker every round.
# Write `predicted_speedup(compute_times)`: async's gradients per unit of time divided by sync's.

# %% solution id=predicted-speedup task="Task 6.3: the predicted speed-up"
def predicted_speedup(compute_times):
    """Gradients per unit time of async over sync, for these per-worker compute times."""
    ### BEGIN SOLUTION
    times = np.asarray(compute_times, dtype=float)
    async_rate = np.sum(1.0 / times)              # each worker at its own pace
    sync_rate = times.size / times.max()          # N gradients per round of the slowest worker
    return float(async_rate / sync_rate)
    ### END SOLUTION

# %% tests id=check-predicted-speedup points=2
assert abs(predicted_speedup([1, 1, 1, 1]) - 1.0) < 1e-12, "equal workers: nobody waits"
speedup = predicted_speedup([1, 1, 1, 4])
assert speedup is not None and abs(speedup - 3.25) < 1e-12, \
    f"predicted_speedup([1, 1, 1, 4]) returned {speedup!r}; the cost model gives 3.25"
### BEGIN HIDDEN TESTS
assert abs(predicted_speedup([2, 2]) - 1.0) < 1e-12, "equal but slow: still no gain"
assert abs(predicted_speedup([1, 3]) - (1 + 1 / 3) / (2 / 3)) < 1e-12
rng = np.random.default_rng(5)
for _ in range(10):
    times = rng.uniform(0.5, 4.0, size=int(rng.integers(2, 8)))
    sync = aps.simulate(problem, workers=times.size, policy="sync", lr=0.01, steps=60,
                        compute_times=times.tolist())
    async_ = aps.simulate(problem, workers=times.size, policy="async", lr=0.01, steps=1200,
                          compute_times=times.tolist())
    measured = (len(async_.trace.computes) / async_.trace.duration) / (len(sync.trace.computes) / sync.trace.duration)
    assert abs(predicted_speedup(times) - measured) < 0.05 * measured, (times, measured)
### END HIDDEN TESTS

# %% [markdown]
# ## Your prediction against real threads
# Gradients per second, sync and async, with the last of 4 workers four times slower (each
# gradient sleeps 10 ms, the straggler's 40 ms), measured on this machine.

# %% tags=nbval-ignore-output
rate = {}
for policy, steps in (("sync", 25), ("async", 100)):
    run = aps.train(problem, workers=4, policy=policy, lr=0.05, steps=steps, engine="threads",
                    slowdown=[0.01, 0.01, 0.01, 0.04])
    assert aps.violations(run.trace) == []
    rate[policy] = len(run.trace.pushes) / run.trace.duration
print(f"measured speed-up {rate['async'] / rate['sync']:.2f}, "
      f"predicted {predicted_speedup([1, 1, 1, 4]):.2f}")
assert rate["async"] > rate["sync"]

# %% [markdown]
# ## Task 6.4 · a fair push
# Lecture 09, section 1: with **sorted** (non-IID) shards and a straggler, an async server hears the
# fast workers' shards more often than the straggler's, and settles where *their* data pull it —
# away from the least-squares solution of the whole data set. Weighting each push by its worker's
# time per gradient gives every shard the same say again; the staleness-aware lr
# (`lr_schedule="divide_by_staleness"`) does the opposite and makes the bias worse.
#
# Write `fair_apply(params, version, grad, computed_on, lr)`, your own asynchronous push for
# `aps.simulate(..., apply=fair_apply)`. It returns `(new_params, version + 1, staleness)`, the
# staleness being `version - computed_on`; the built-in push returns
# `params - lr * grad, version + 1, version - computed_on`. Your push is not told which worker sent
# the gradient — but what it is told says something about how long that worker took. Keep the steps
# about as large as the plain push's on average, or the run may oscillate.
#
# Graded on measured runs (four workers, sorted shards, `jitter=0.3`, lr 0.05, 800 versions, seeds
# 0–4): the **median distance** of the final parameters to the least-squares solution must be at
# most **half** of plain async's, with worker 3 four times slower (`compute_times=[1, 1, 1, 4]`),
# and also with another straggler profile the grader chooses. No run may diverge.

# %%
solution = np.linalg.lstsq(problem.A, problem.b, rcond=None)[0]
FAIR = dict(workers=4, policy="async", lr=0.05, steps=800, partition="sorted", jitter=0.3, loss_every=800)


def distances(compute_times, **hook):
    """Distance of the final parameters to the least-squares solution, seeds 0-4."""
    return [float(np.linalg.norm(aps.simulate(problem, compute_times=compute_times, seed=seed, **FAIR,
                                              **hook).params - solution)) for seed in range(5)]


plain_distance = np.median(distances([1, 1, 1, 4]))
stale_aware = np.median(distances([1, 1, 1, 4], lr_schedule="divide_by_staleness"))
print(f"plain async: median distance {plain_distance:.4f}; divide_by_staleness: {stale_aware:.4f}")

# %% solution id=fair-apply task="Task 6.4: a fair push"
def fair_apply(params, version, grad, computed_on, lr):
    """Apply `grad` (computed on `computed_on`) to `params` (at `version`), weighted fairly."""
    ### BEGIN SOLUTION
    # a worker's staleness + 1 is about its time per gradient × the pushes per time unit of all:
    # proportional to its time per gradient. Divided by the number of workers (4) the mean weight
    # stays near 1.
    stale = version - computed_on
    return params - lr * (stale + 1) / 4 * grad, version + 1, stale
    ### END SOLUTION

# %% tests id=check-fair-apply points=3
mine = distances([1, 1, 1, 4], apply=fair_apply)
print(f"your push: median distance {np.median(mine):.4f} (plain async {plain_distance:.4f})")
assert np.median(mine) <= 0.5 * plain_distance, "the bias is not halved: weight the stragglers' pushes more"
### BEGIN HIDDEN TESTS
for _times in ([1, 1, 1, 4], [1, 2, 3, 4]):
    _plain, _yours = [], []
    for _s in range(5):
        _kw = dict(workers=4, policy="async", lr=0.05, steps=800, partition="sorted", jitter=0.3, seed=_s,
                   compute_times=_times, loss_every=800)
        _base = aps.simulate(problem, **_kw)
        _run = aps.simulate(problem, apply=fair_apply, **_kw)
        assert not _run.diverged, f"compute_times={_times}, seed {_s}: your push made the run diverge"
        _plain.append(np.linalg.norm(_base.params - np.linalg.lstsq(problem.A, problem.b, rcond=None)[0]))
        _yours.append(np.linalg.norm(_run.params - np.linalg.lstsq(problem.A, problem.b, rcond=None)[0]))
    assert np.median(_yours) <= 0.5 * np.median(_plain), \
        f"compute_times={_times}: median distance {np.median(_yours):.4f}, plain {np.median(_plain):.4f}"
### END HIDDEN TESTS

# %% [markdown]
# ## Think about it (not graded)
# 1. Why is the measured speed-up a little below the prediction? (What does the model leave out:
#    the time of a push itself, the sleep's overshoot, Python's lock around the server?)
# 2. A faster gradient is not a better one. Using `staleness_by_worker`, explain why the straggler's
#    gradients, though fewer, are the stalest — and what that does with non-IID shards (lecture 09).
# 3. Your `fair_apply` gives the stalest pushes the largest steps — the opposite of
#    `divide_by_staleness`. When would that be dangerous? (Try a larger lr, or a slower straggler:
#    its pushes are multiplied by its time per gradient.)
