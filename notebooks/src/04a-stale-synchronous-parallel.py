# %% [markdown]
# # 04a · Stale Synchronous Parallel (SSP): the gate and its bounds
#
# **Learning goals**
# - state the SSP rule (Ho et al. 2013): a **clock** is one push, and a worker may start an
#   iteration only if its clock is at most **s** ahead of the slowest worker's clock;
# - place SSP between sync (BSP, `s = 0` is a barrier per clock) and async (ASP, `s = ∞`);
# - read the SSP gate's waits in the Timeline and the staleness it allows in the histogram;
# - derive how stale a push can get under the gate — (N − 1)(2s + 1) versions — and check it.
#
# Part 1 of 3; [04b](04b-when-ssp-pays.ipynb) asks when SSP pays, [04c](04c-backup-workers-and-k-async.ipynb)
# races async against backup workers and K-async.

# %% [markdown] slide
# ## The rule
# Each worker has a **clock**: the number of gradients it has pushed. Before it starts an iteration
# (pull, compute, push), worker k checks the **SSP gate**:
#
# > clock of worker k − clock of the slowest worker ≤ s
#
# If the check fails, it waits until the slowest worker pushes. Pushes are applied at once, one
# version each, as in async.
# - `s = 0`: nobody may start clock c + 1 before everyone has finished clock c — a barrier per clock.
# - `s = ∞`: the gate never closes — async.
#
# In code: `policy="ssp", max_clocks_ahead=s` — s is the SSP threshold, counted in clocks ahead of
# the slowest worker.

# %% [markdown] fragment
# **What this simulator leaves out.** In Ho et al. (2013, *More Effective Distributed ML via a Stale
# Synchronous Parallel Parameter Server*, NIPS) a worker reads from a **client-side cache**: if its
# cached parameters are fresh enough for the threshold, it reads them locally and does not fetch from
# the server. That is where SSP saves communication. `aps.simulate` does not model the cache —
# every iteration pulls from the server — so here SSP saves only *waiting*, and what we measure is
# the gate: how far clocks drift apart and the staleness that allows.

# %% [markdown] slide
# ## The gate at work
# Four workers; worker 3 needs 4 time units per gradient, the others 1. The threshold is s = 1.
# The Timeline opens at the first wait (grey bars).

# %%
import asyncps as aps
import numpy as np
from IPython.display import Markdown, display

problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)
STRAGGLER = [1, 1, 1, 4]

run = aps.simulate(problem, workers=4, policy="ssp", max_clocks_ahead=1, lr=0.2, steps=16,
                   compute_times=STRAGGLER)
first_wait = run.trace.waits[0]
timeline = aps.widgets.Timeline(run)
timeline.frame = run.trace.events.index(first_wait)
timeline

# %%
print(timeline.state)
print(first_wait)

# %% [markdown] fragment
# A Wait event is recorded when the wait *ends*, so this frame shows the server as it was at the end
# of the wait, not at its start. Why did worker 0 stop? Count each worker's pushes up to then — its
# clock:

# %%
def clocks_at(trace, t):
    """Each worker's clock (pushes so far) at time t."""
    return [sum(1 for p in trace.pushes if p.worker == k and p.time <= t) for k in range(trace.workers)]

for t in (first_wait.start, first_wait.end):
    clocks = clocks_at(run.trace, t)
    ahead = clocks[0] - min(clocks)
    print(f"t={t:g}: clocks {clocks}; worker 0 is {ahead} ahead of the slowest -> "
          f"{'may start' if ahead <= 1 else 'waits'} (s = 1)")

# %% fragment
before, after = clocks_at(run.trace, first_wait.start), clocks_at(run.trace, first_wait.end)
assert before[0] - min(before) > 1 >= after[0] - min(after)
display(Markdown(
    f"At t = {first_wait.start:g} worker 0's clock is {before[0]} and worker 3's is {before[3]}: "
    f"{before[0]} − {min(before)} > 1, so the gate closes. At t = {first_wait.end:g} worker 3 pushes, "
    f"the slowest clock becomes {min(after)}, and {after[0]} − {min(after)} ≤ 1 opens the gate for "
    f"workers 0, 1 and 2. Press **▶** or drag the slider to watch the same pattern repeat each time "
    f"worker 3 pushes."))

# %% [markdown] slide
# ## How stale does SSP let a push get?
# The threshold s is in **clocks**, staleness is in **versions**. The same straggler, 200 versions,
# for s = 0, 1, 2, 4, 8 and for async:
#
# **Predict, then run.** With s = 1, can a push be more than 1 version stale?

# %%
THRESHOLDS = [0, 1, 2, 4, 8]
settings = dict(workers=4, lr=0.2, steps=200, compute_times=STRAGGLER)
straggler_runs = {f"ssp s={s}": aps.simulate(problem, policy="ssp", max_clocks_ahead=s, **settings)
                  for s in THRESHOLDS}
straggler_runs["async"] = aps.simulate(problem, policy="async", **settings)

for label, r in straggler_runs.items():
    hist = r.trace.staleness_histogram()
    print(f"{label:9s} max staleness {hist.size - 1:2d}   histogram {hist.tolist()}")

# %% [markdown] fragment
# Side by side, s = 1 and async:

# %%
aps.widgets.Picture(aps.widgets.histogram_svg(straggler_runs["ssp s=1"].trace.staleness_histogram(),
                                              title="ssp s=1: staleness of each push"),
                    aps.widgets.histogram_svg(straggler_runs["async"].trace.staleness_histogram(),
                                              title="async: staleness of each push"))

# %% [markdown] slide
# ## Two bounds on staleness
# Worker k pulls at clock c. The gate let it start, so every clock was then ≥ c − s. Until k pushes,
# its clock stays c, so the slowest clock stays ≤ c, and another worker j may start an iteration
# only at a clock ≤ c + s, which ends at clock ≤ c + s + 1. Between k's pull and its push, j
# therefore pushes at most (c + s + 1) − (c − s) = **2s + 1** times, and with N workers:
#
# > staleness of any push ≤ (N − 1)(2s + 1) versions.
#
# If k *was* the slowest when it pulled (every clock ≥ c), each other worker pushes at most s + 1
# times in between: **(N − 1)(s + 1)** — with 4 workers, **3(s + 1)**. That is the case of worker 3
# here, the straggler, which is always the slowest. The fast workers' pushes are only bounded by
# (N − 1)(2s + 1).

# %%
for s in THRESHOLDS:
    pushes = straggler_runs[f"ssp s={s}"].trace.pushes
    slow = [p.staleness for p in pushes if p.worker == 3]
    fast = max(p.staleness for p in pushes if p.worker != 3)
    assert max(slow) <= 3 * (s + 1) and fast <= 3 * (2 * s + 1)
    print(f"s={s}: worker 3's pushes: first {slow[:4]}, last {slow[-1]}, max {max(slow):2d} "
          f"<= 3(s+1) = {3 * (s + 1):2d} | workers 0-2: max {fast} <= 3(2s+1) = {3 * (2 * s + 1)}")
async_slow = [p.staleness for p in straggler_runs["async"].trace.pushes if p.worker == 3]
print(f"async: worker 3's pushes: first {async_slow[:4]}, last {async_slow[-1]}")

# %% fragment
slow_pushes = {s: [p.staleness for p in straggler_runs[f"ssp s={s}"].trace.pushes if p.worker == 3]
               for s in THRESHOLDS}
last_slow = {s: stale[-1] for s, stale in slow_pushes.items()}
assert len(set(last_slow.values())) == 1                             # whatever s is
assert all(x == stale[-1] for stale in slow_pushes.values() for x in stale[3:])   # after a few pushes
display(Markdown(
    f"The large staleness happens only at the start. Once the fast workers are s clocks ahead, the gate "
    f"lets them push **once** per slow gradient: from then on worker 3's pushes are "
    f"{last_slow[0]} versions stale (one push by each fast worker), whatever s is. In async the fast "
    f"workers never stop: worker 3's last push is {async_slow[-1]} versions stale."))

# %% [markdown] slide
# ## Checking the bound: seeds, jitter, worker counts
# For s ≥ 1 the straggler runs stay well below (N − 1)(2s + 1) (the cell above prints their largest
# staleness). Random compute times, where every worker is sometimes the slow one, come closer. Below:
# N = 2, 3, 4, 6 workers (the last one 3× slower), s = 0, 1, 2, 4, no jitter and `jitter` = 0.5, 1, 2
# over 5 seeds each; for every (N, s), the largest staleness of any push against the bound.

# %%
def bound_check(ns=(2, 3, 4, 6), thresholds=(0, 1, 2, 4), jitters=(0.0, 0.5, 1.0, 2.0), seeds=range(5),
                steps=200):
    """(N, s) -> (largest staleness of any push over all the runs, (N - 1)(2s + 1), runs)."""
    out = {}
    for n in ns:
        for s in thresholds:
            worst, runs = 0, 0
            for jitter in jitters:
                for seed in (seeds if jitter else [0]):   # no jitter: every seed gives the same run
                    r = aps.simulate(problem, workers=n, policy="ssp", max_clocks_ahead=s, lr=0.05,
                                     steps=steps, compute_times=[1] * (n - 1) + [3], jitter=jitter,
                                     seed=seed)
                    worst, runs = max(worst, max(p.staleness for p in r.trace.pushes)), runs + 1
            out[n, s] = worst, (n - 1) * (2 * s + 1), runs
    return out


checked = bound_check()
for (n, s), (worst, bound, runs) in checked.items():
    print(f"N={n} s={s}: max staleness {worst:2d}  bound (N-1)(2s+1) = {bound:2d}  "
          f"{'REACHED' if worst == bound else 'below' if worst < bound else 'VIOLATED'}")

# %% fragment
violated = [(n, s) for (n, s), (worst, bound, _) in checked.items() if worst > bound]
reached = [(n, s) for (n, s), (worst, bound, _) in checked.items() if worst == bound]
runs = sum(r for _, _, r in checked.values())
display(Markdown(
    f"Over {runs} runs, "
    f"{'no push exceeded the bound' if not violated else f'the bound FAILED for {violated}'}; "
    f"the largest staleness equals it in {len(reached)} of the {len(checked)} (N, s) pairs, so it "
    f"cannot be tightened in general. With 4 workers and s = 1 that is "
    f"{checked[4, 1][0]} versions (bound {checked[4, 1][1]}), not 3(s + 1) = 6: that smaller bound "
    f"holds only for pushes by the worker that was slowest when it pulled."))

# %% [markdown] slide
# ## Who sets the pace?

# %%
for label, r in straggler_runs.items():
    rate = len(r.trace.pushes) / r.trace.duration
    idle = r.trace.idle_time_per_worker()[:3].mean() / r.trace.duration
    print(f"{label:9s} {rate:.2f} gradients per time unit; workers 0-2 idle {idle:.0%}")

sync = aps.simulate(problem, policy="sync", **settings)
print(f"{'sync':9s} {len(sync.trace.pushes) / sync.trace.duration:.2f} gradients per time unit; "
      f"workers 0-2 idle {sync.trace.idle_time_per_worker()[:3].mean() / sync.trace.duration:.0%}")

# %% [markdown] fragment
# With a straggler that is **always** slow, every finite threshold ends at the straggler's pace —
# four gradients (one from each worker) per 4 time units, like sync; over 200 versions the head
# start lifts the average only a little above that. The threshold s only decides how long the fast
# workers may run ahead before the gate catches them.

# %% [markdown] slide
# ## s = 0 is the barrier
# With s = 0, all four workers read the same version, push in turn and wait for each other: a
# synchronous round whose four gradients are *added* one by one instead of averaged. So SSP with
# s = 0 and lr equals sync with lr × 4, version for version of the round:

# %%
ssp0 = straggler_runs["ssp s=0"]
sync_x4 = aps.simulate(problem, policy="sync", **{**settings, "lr": 4 * settings["lr"], "steps": 50})
print("ssp s=0 at v4, v8, ... == sync (lr x 4) at v1, v2, ...:",
      np.allclose(ssp0.losses[::4], sync_x4.losses),
      "| same times:", np.array_equal(ssp0.trace.version_times()[::4], sync_x4.trace.version_times()))

# %% [markdown] fragment
# Keep this in mind when you compare versions: a sync version averages 4 gradients, an SSP or async
# version applies one. Compare **gradients** or **time**, not versions, across that line.

# %% [markdown] slide
# ## Check your understanding
# 1. Under SSP with s = 1, worker 0 has pushed 3 times and worker 3 once. May worker 0 start its
#    next iteration? What if worker 3 had pushed twice?
# 2. Why is s = 0 the same as a synchronous round with 4 × the learning rate?
# 3. With 6 workers and s = 2, how many versions stale can a push be? And a push by the worker that
#    was the slowest when it pulled?
#
# <details><summary>Answers</summary>
#
# 1. No, if worker 3 is the slowest: 3 − 1 = 2 > s = 1, so the gate closes and worker 0 waits
#    until the slowest worker pushes. Had worker 3 pushed twice, and no worker stood below 2
#    pushes, 3 − 2 = 1 ≤ 1 and worker 0 may start.
# 2. With s = 0 no worker may start clock c + 1 before every worker has finished clock c, so all
#    four gradients of a round are computed on the same version; pushes are deltas that add, so
#    after the round's four pushes the server holds v − lr·(g0 + g1 + g2 + g3) =
#    v − (4·lr)·mean(g), exactly one synchronous step with lr × 4. The intermediate versions
#    differ, which is why the cell compares SSP's every 4th version with sync's every version (and
#    the times match too).
# 3. At most (N − 1)(2s + 1) = 5 · 5 = 25 versions, since each of the 5 others can push up to
#    2s + 1 times between a worker's pull and its push. A worker that was the slowest when it
#    pulled sees each other worker push at most s + 1 times: (N − 1)(s + 1) = 5 · 3 = 15 versions.
# </details>
#
# Assignment: [04 · the SSP gate](../exercises/04-ssp-gate.ipynb) — write the gate yourself.
# Next: [04b · When SSP pays](04b-when-ssp-pays.ipynb).
