# %% [markdown]
# # Assignment 6 · Real engines: what a straggler costs, measured
#
# The simulator predicts; real threads and processes measure. You will write two small functions —
# the staleness each worker's pushes carry, and the speed-up the simulator's cost model predicts for
# async over sync — predict how stale a straggler's pushes are, check all of it against real runs on
# this machine, write your own push rule that removes the bias a straggler causes, and finally
# count what the busiest link of a sharded server carries when bytes cost time (lecture 09,
# section 3), and at how many shards it keeps up with ring all-reduce.
#
# Lecture notebook: [06 · Threads, processes and
# GPUs](../notebooks/06-threads-processes-gpus.ipynb). Run every cell from the top; a cell that says
# `NotImplementedError` is waiting for your code.
#
# **Check your work** at any time: save (Ctrl+S), then run `aps.check()` in a cell (the
# notebook's last cell holds one). It shows your points per task (the visible tests).

# %%
import numpy as np
from IPython.display import Markdown, display

import asyncps as aps
from asyncps import costs

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
# ## Task 6.5 · a sharded server's busiest link
# Lecture 09, section 3, and `asyncps.costs`: every link is full duplex (it carries the same
# bandwidth in each direction at once), and the communication of a synchronous round takes as long
# as the models through its **busiest link, in one direction**. A single server's link takes all N
# gradients in while it sends N copies of the parameters out: N models. Li et al. (2014, OSDI) split
# the keys over k **server shards**, each holding 1/k of them: a worker pushes to each shard the
# 1/k of its gradient that the shard holds and pulls from it the same 1/k of the parameters, so its
# own link still carries one whole model out and one in.
#
# Write `busiest_link(workers, servers, colocated=False)`: the number of models (a float) through
# the busiest link in one direction in one round of a synchronous server with N = `workers`
# workers and k = `servers` shards,
#
# - `colocated=False`: each shard on a machine of its own (any k of 1 or more, also more than N);
# - `colocated=True`: the k shards on k of the workers' machines (k from 1 to N), as BytePS (Jiang
#   et al. 2020, OSDI) counts them. Such a machine computes a gradient *and* serves a shard; the
#   part of its gradient its own shard holds never leaves the machine, and it does not send its
#   shard's parameters to itself.
#
# Count what goes out of each kind of machine (what comes in is the same), then take the largest.

# %% solution id=busiest-link task="Task 6.5: a sharded server's busiest link"
def busiest_link(workers, servers, colocated=False):
    """Models through the busiest link, one direction, per round of a sync PS with k shards."""
    ### BEGIN SOLUTION
    if colocated:
        # out of a shard's machine: the (k-1)/k of its gradient that the other shards hold, and its
        # shard's 1/k of the parameters to each of the N-1 other workers; a plain worker sends 1
        return (workers - 1) / servers + (servers - 1) / servers
    # a shard's link: 1/k of the model to each of N workers; a worker's link: its whole gradient
    return max(1.0, workers / servers)
    ### END SOLUTION

# %% tests id=check-busiest-link points=2
one = busiest_link(4, 1)
assert one is not None and abs(one - 4) < 1e-9, \
    f"busiest_link(4, 1) returned {one!r}; one server's link carries 4 models each way"
assert abs(busiest_link(4, 4) - 1) < 1e-9, "4 shards for 4 workers: every link carries one model"
### BEGIN HIDDEN TESTS
for _n in range(2, 17):
    for _k in range(1, 2 * _n + 1):
        _want = costs.busiest_link_models("sync_ps", _n, servers=_k)
        _got = busiest_link(_n, _k)
        assert abs(_got - _want) < 1e-9, f"N = {_n}, k = {_k} dedicated shards: {_got!r}, not {_want:g}"
        if _k <= _n:
            _want = costs.busiest_link_models("sync_ps", _n, servers=_k, colocated=True)
            _got = busiest_link(_n, _k, colocated=True)
            assert abs(_got - _want) < 1e-9, f"N = {_n}, k = {_k} shards on workers: {_got!r}, not {_want:g}"
    _ring = costs.busiest_link_models("allreduce", _n)
    assert abs(busiest_link(_n, _n, colocated=True) - _ring) < 1e-9, \
        f"N = {_n}: shards on all N workers move what ring all-reduce moves, {_ring:g} models"
### END HIDDEN TESTS

# %% [markdown]
# ## What the shards buy
# Lecture 09's case: N = 8 workers, 0.1 s per gradient, no straggler, a dense model of 25M float32
# parameters, 10 Gbit/s links. Gradients per second from `costs.gradients_per_second`, with
# your count of the busiest link in parentheses, against ring all-reduce.

# %%
n, size, bandwidth = 8, 25e6, 1.25e9           # workers, parameters, bytes per second: 10 Gbit/s
compute = [0.1] * n                             # seconds per gradient


def sharded(k, colocated=False):
    """Gradients per second of a sync PS with k shards, in this case."""
    return costs.gradients_per_second("sync_ps", compute, size, bandwidth, servers=k,
                                      colocated=colocated)


ring = costs.gradients_per_second("allreduce", compute, size, bandwidth)
print("gradients per second (your models through the busiest link, one direction)")
print(f"{'':18s}{'dedicated shards':>18s}{'shards on workers':>20s}")
for k in (1, 2, 4, 8):
    print(f"{f'sync PS, k = {k}':18s}{sharded(k):11.1f} ({busiest_link(n, k):4.2f})"
          f"{sharded(k, True):13.1f} ({busiest_link(n, k, colocated=True):4.2f})")
print(f"{'ring all-reduce':18s}{ring:11.1f} ({costs.busiest_link_models('allreduce', n):4.2f})")
dedicated_k = next((k for k in range(1, 4 * n) if sharded(k) >= ring * (1 - 1e-9)), None)
colocated_k = next((k for k in range(1, n + 1) if sharded(k, True) >= ring * (1 - 1e-9)), None)
display(Markdown(
    f"One server makes **{sharded(1):.1f}** gradients per second, ring all-reduce **{ring:.1f}**. "
    f"With shards on machines of their own the server reaches the ring at **k = {dedicated_k}** "
    f"(k ≥ N²/2(N−1) = {n ** 2 / (2 * (n - 1)):.2f} for N = {n}), on {n + (dedicated_k or 0)} "
    f"machines where the ring needs {n}. With the shards on the workers' machines it reaches it "
    f"only at **k = {colocated_k}**, and there it ties: your count gives "
    f"{busiest_link(n, n, colocated=True):.2f} models through the busiest link, the ring's "
    f"2(N−1)/N = {2 * (n - 1) / n:.2f}. Sharded over all its workers, a parameter server moves the "
    f"bytes of a reduce-scatter and an all-gather (Li et al. 2014, OSDI; BytePS, Jiang et al. "
    f"2020, OSDI)."))

# %% [markdown]
# ## Think about it (not graded)
# 1. Why is the measured speed-up a little below the prediction? (What does the model leave out:
#    the time of a push itself, the sleep's overshoot, Python's lock around the server?)
# 2. A faster gradient is not a better one. Using `staleness_by_worker`, explain why the straggler's
#    gradients, though fewer, are the stalest — and what that does with non-IID shards (lecture 09).
# 3. Your `fair_apply` gives the stalest pushes the largest steps — the opposite of
#    `divide_by_staleness`. When would that be dangerous? (Try a larger lr, or a slower straggler:
#    its pushes are multiplied by its time per gradient.)
# 4. Dedicated shards catch up with ring all-reduce from k ≥ N²/2(N−1) on, but they are k more
#    machines; on the workers' machines they cost none and only tie at k = N. Which would you
#    choose for N = 8, and what changes when a gradient touches 1 % of the parameters (try
#    `density=0.01` in `costs.gradients_per_second`: the server moves only those rows, the
#    ring the dense tensor)?

# %% [markdown]
# ## Check your work
# Save first (Ctrl+S): `aps.check()` runs this notebook **as last saved**, top to bottom in a fresh
# kernel, and shows the points per task of the tests you can see (your grade also runs hidden
# tests) and the first thing to fix. In a terminal: `python -m asyncps.check
# exercises/06-real-engines.ipynb`.

# %%
import asyncps as aps   # this cell runs alone too: after a restart, or as the first cell you run

aps.check()
