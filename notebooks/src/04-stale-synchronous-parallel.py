# %% [markdown]
# # 04 · Stale Synchronous Parallel (SSP)
#
# **Learning goals**
# - state the SSP rule (Ho et al. 2013): a **clock** is one push, and a worker may start an
#   iteration only if its clock is at most **s** ahead of the slowest worker's clock;
# - place SSP between sync (BSP, `s = 0` is a barrier per clock) and async (ASP, `s = ∞`);
# - read the SSP gate's waits in the Timeline and the staleness it allows in the histogram;
# - derive how stale a push can get under the gate — (N − 1)(2s + 1) versions — and check it;
# - sweep the threshold s over many seeds and explain the time to a target loss with two numbers:
#   gradients needed and gradients per time unit — and say what one seed cannot tell you.

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
# ## Time to a target loss: the straggler
# Target: a loss of 0.006, just above the least-squares minimum (the cell prints both). For each run:
# the first version at or below the target, the gradients the server applied up to it, and the time
# it was made. No jitter and whole-shard gradients: these runs are the same for every seed.

# %%
TARGET = 0.006
best_loss = problem.loss(np.linalg.lstsq(problem.A, problem.b, rcond=None)[0])
print(f"loss at v0 {problem.loss(problem.x0):.4f}; least-squares minimum {best_loss:.4f}; target {TARGET}")


def gradients_to(r, target=TARGET):
    """The gradients the server applied before the first version at or below the target (None: never)."""
    v = r.versions_to_reach(target)
    return None if v is None else sum(1 for p in r.trace.pushes if p.applied_to < v)


def to_target(r):
    v = r.versions_to_reach(TARGET)
    if v is None:
        return "never reached"
    return f"v{v:<4d} {gradients_to(r):4d} gradients  t = {r.time_to_reach(TARGET):5.1f}"


table = {"sync": sync, "sync lr x 4": sync_x4, **straggler_runs}
for label, r in table.items():
    print(f"{label:12s} {to_target(r)}")
print(f"ssp s=8: the gate first closes at t = {straggler_runs['ssp s=8'].trace.waits[0].start:g}")

# %% fragment
times = {label: r.time_to_reach(TARGET) for label, r in straggler_runs.items()}
grads = {label: gradients_to(r) for label, r in straggler_runs.items()}
order = list(straggler_runs)
assert all(times[a] >= times[b] for a, b in zip(order, order[1:]))        # never slower with larger s
assert all(grads[k] >= grads["ssp s=0"] for k in order)
assert sync_x4.time_to_reach(TARGET) == times["ssp s=0"] and gradients_to(sync_x4) == grads["ssp s=0"]
closes = {s: straggler_runs[f"ssp s={s}"].trace.waits[0].start for s in THRESHOLDS}
gate_closes = closes[8]
display(Markdown(
    f"Sync at lr 0.2 is slow mostly because it *averages*: each version turns 4 gradients into one step "
    f"of size lr, so its {gradients_to(sync)} gradients buy {sync.versions_to_reach(TARGET)} steps. "
    f"With lr × 4 it matches s = 0. A larger threshold is never slower here "
    f"(t = {', '.join(f'{times[k]:g}' for k in order)} for s = 0, 1, 2, 4, 8 and async) although it "
    f"needs at least as many gradients as s = 0 ({', '.join(str(grads[k]) for k in order)}): a larger "
    f"threshold lets the fast workers push longer before the gate first stops them (at t = "
    f"{', '.join(f'{closes[s]:g}' for s in THRESHOLDS)} for s = 0, 1, 2, 4, 8), and that head start "
    f"outweighs the extra gradients. With s = 8 the gate first closes at t = {gate_closes:g}"
    + (", after the target: up to there it *is* async." if gate_closes > times["ssp s=8"] else ".")))

# %% [markdown] slide
# ## Does SSP pay when everyone is sometimes slow?
# SSP was designed for slowness that comes and goes: a worker that is slow now and fast later.
# `jitter=1.0` gives every gradient a random (seeded) lognormal compute time, median 1. A sync round
# waits for the slowest of four draws; a threshold s lets the others use the time.
#
# One seed is one draw of those compute times, and the ranking of the thresholds changes from seed
# to seed. So: **10 seeds** per setting, and each policy at **its own best lr** from a small sweep,
# the lr with the lowest median over these same seeds (sync averages 4 gradients per step, so its
# lr is 4 × the one in the row).

# %%
SEEDS = range(10)
LRS = [0.1, 0.2, 0.3, 0.4]
POLICIES = {"sync": dict(policy="sync"),
            **{f"ssp s={s}": dict(policy="ssp", max_clocks_ahead=s) for s in THRESHOLDS},
            "async": dict(policy="async")}


def jitter_run(label, lr, seed, steps=200):
    lr = 4 * lr if label == "sync" else lr
    return aps.simulate(problem, workers=4, lr=lr, steps=steps, jitter=1.0, seed=seed, **POLICIES[label])


results = {}          # (policy, lr) -> one row per seed: time to target, gradients, rate, max staleness
for label in POLICIES:
    for lr in LRS:
        rows = []
        for seed in SEEDS:
            r = jitter_run(label, lr, seed)
            t = r.time_to_reach(TARGET)
            rows.append((np.inf if t is None else t, gradients_to(r) or np.inf,
                         len(r.trace.pushes) / r.trace.duration, r.trace.staleness_histogram().size - 1))
        results[label, lr] = np.array(rows)

print("median time to target over 10 seeds (inf: not reached in 200 versions)")
print(f"{'lr':12s}" + "".join(f"{lr:>8g}" for lr in LRS))
for label in POLICIES:
    print(f"{label:12s}" + "".join(f"{np.median(results[label, lr][:, 0]):8.1f}" for lr in LRS))

# %% fragment
best_lr = {label: min(LRS, key=lambda lr: np.median(results[label, lr][:, 0])) for label in POLICIES}
print(f"{'':9s} {'best lr':>7s}  time to target: median [min - max]   gradients  grad/time  max staleness")
for label in POLICIES:
    rows = results[label, best_lr[label]]
    t, g = rows[:, 0], rows[:, 1]
    lr = 4 * best_lr[label] if label == "sync" else best_lr[label]
    print(f"{label:9s} {lr:7g}  {np.median(t):5.1f} [{t.min():5.1f} - {t.max():5.1f}]"
          f"   {np.median(g):8.0f}  {np.median(rows[:, 2]):9.2f}  {rows[:, 3].max():6.0f}")

# %% fragment
medians = {label: np.median(results[label, best_lr[label]][:, 0]) for label in POLICIES}
lows = {label: results[label, best_lr[label]][:, 0].min() for label in POLICIES}
highs = {label: results[label, best_lr[label]][:, 0].max() for label in POLICIES}
labels = list(POLICIES)
overlap = max(lows.values()) < min(highs.values())
per_seed = [[results[label, best_lr[label]][i, 0] for label in labels] for i in range(len(SEEDS))]
winners = {label: int(sum(times[j] == min(times) for times in per_seed)) for j, label in enumerate(labels)}
best = min(labels, key=medians.get)
print("fastest on how many of the 10 seeds (ties count for each):", {k: v for k, v in winners.items() if v})
assert overlap and max(winners.values()) < len(SEEDS) / 2
sync_rows, async_rows = results["sync", best_lr["sync"]], results["async", best_lr["async"]]
assert np.median(sync_rows[:, 2]) < np.median(async_rows[:, 2])            # fewer gradients per time
assert np.median(sync_rows[:, 1]) < np.median(async_rows[:, 1])            # but fewer needed
display(Markdown(
    f"**No policy is reliably fastest here.** At their best lr the medians of sync, s = 0 … 8 and async "
    f"lie between {min(medians.values()):.1f} and {max(medians.values()):.1f} time units, all their "
    f"min–max ranges overlap, and the fastest changes from seed to seed (none is fastest on more "
    f"than {max(winners.values())} of the {len(SEEDS)}). The lowest median is {best}'s "
    f"({medians[best]:.1f}), but with spreads this wide a single seed's ranking says little. Even "
    f"sync keeps up once its lr is tuned (median {medians['sync']:.1f}): it makes fewer gradients per "
    f"time unit than async, but needs fewer of them."))

# %% [markdown] slide
# ## What s does change: throughput, staleness, and what a stale gradient costs

# %%
ssp_labels = [label for label in POLICIES if label != "sync"]
for label in ssp_labels:
    print(f"{label:9s} " + "  ".join(
        f"lr {lr:g}: {np.median(results[label, lr][:, 1]):4.0f} gradients" for lr in (0.1, 0.3))
        + f"   at lr 0.1: {np.median(results[label, 0.1][:, 2]):.2f} gradients/time, "
          f"max staleness {results[label, 0.1][:, 3].max():.0f}")

# %% fragment
need = {lr: {label: np.median(results[label, lr][:, 1]) for label in ssp_labels} for lr in (0.1, 0.3)}
rate = {label: np.median(results[label, 0.1][:, 2]) for label in ssp_labels}
tail = {label: results[label, 0.1][:, 3].max() for label in ssp_labels}
assert need[0.3]["async"] / need[0.3]["ssp s=0"] > need[0.1]["async"] / need[0.1]["ssp s=0"]
assert rate["ssp s=0"] < rate["ssp s=4"] < rate["async"] and tail["ssp s=4"] < tail["async"]
display(Markdown(
    f"Medians over the 10 seeds (the largest staleness: over all of them). The throughput rises with "
    f"s (at lr 0.1: {rate['ssp s=0']:.2f} gradients per time unit at s = 0, {rate['ssp s=4']:.2f} at "
    f"s = 4, {rate['async']:.2f} async), and the staleness tail grows with it (largest staleness "
    f"{tail['ssp s=0']:.0f}, {tail['ssp s=4']:.0f}, {tail['async']:.0f}): small s cut the tail. "
    f"What a stale gradient costs depends on the step: "
    f"from s = 0 to async the gradients needed go from {need[0.1]['ssp s=0']:.0f} to "
    f"{need[0.1]['async']:.0f} at lr 0.1, but from {need[0.3]['ssp s=0']:.0f} to "
    f"{need[0.3]['async']:.0f} at lr 0.3."))

# %% [markdown] slide
# ## The trade-off
# Time to target is set by two numbers that s pulls in opposite directions:
# - **gradients per time unit** — rises with s: less waiting at the gate;
# - **gradients needed** — can rise with s when staleness hurts (here: the larger lr), and does not
#   when it doesn't (small lr: the parameters move little between versions, so a stale gradient is
#   almost as good as a fresh one).
#
# Under random slowness a moderate threshold recovers much of async's throughput and cuts the
# staleness tail. Which s gets to the target first is a close race here, decided by the draw of
# compute times as much as by s: rank thresholds over many seeds, never on one. Against a worker that
# is *always* slow, no finite s helps for long: the gate hands the pace to the straggler.

# %% [markdown] slide
# ## Loss against time
# lr = 0.3 with random compute times (seed 0), the number of versions chosen so that each run lasts
# about the same virtual time (the cell prints it):

# %%
lr3 = dict(workers=4, lr=0.3, jitter=1.0)
curves = {"sync": aps.simulate(problem, policy="sync", steps=12, **lr3),
          "ssp": aps.simulate(problem, policy="ssp", max_clocks_ahead=1, steps=62, **lr3),
          "async": aps.simulate(problem, policy="async", steps=104, **lr3)}
for label, r in curves.items():
    print(f"{label:5s} {len(r.losses) - 1:3d} versions in {r.trace.duration:.1f} time units, "
          f"final loss {r.losses[-1]:.4f}")

# %%
aps.widgets.Picture(aps.widgets.loss_curves(curves, by="version"), aps.widgets.loss_curves(curves, by="time"))

# %% [markdown] fragment
# The ssp and async curves jump *up* now and then. Is every jump a stale gradient landing? Count the
# push that made each upward step, fresh (staleness 0) or stale:

# %%
def upward_jumps(r):
    """(loss before, rise factor, staleness of the push that made it) for every version whose loss rose."""
    made_by = {p.applied_to + 1: p for p in r.trace.pushes}
    losses = np.array(r.losses)
    return [(losses[v - 1], losses[v] / losses[v - 1], made_by[v].staleness)
            for v in range(1, len(losses)) if losses[v] > losses[v - 1]]


jumps = {label: upward_jumps(curves[label]) for label in ("ssp", "async")}
for label, js in jumps.items():
    fresh = [rise for _, rise, st in js if st == 0]
    stale = [rise for _, rise, st in js if st > 0]
    print(f"{label:5s} {len(js)} upward jumps: {len(stale)} from stale pushes (largest x{max(stale):.1f}), "
          f"{len(fresh)} from fresh pushes (largest x{max(fresh):.2f}, all from a loss <= "
          f"{max(before for before, _, st in js if st == 0):.4f})")

# %% fragment
n_fresh = {label: sum(st == 0 for _, _, st in js) for label, js in jumps.items()}
fresh_from = max(before for js in jumps.values() for before, _, st in js if st == 0)
assert all(n_fresh.values()) and fresh_from < TARGET
display(Markdown(
    f"Not every jump is a stale gradient: {n_fresh['ssp']} of the {len(jumps['ssp'])} in ssp and "
    f"{n_fresh['async']} of the {len(jumps['async'])} in async come from **fresh** pushes. Each worker "
    f"computes its gradient on its own shard (128 of the 512 examples), not on the full loss, so even a "
    f"fresh step can raise the full loss. Here every fresh one starts from a loss of at most "
    f"{fresh_from:.4f}, next to the minimum ({best_loss:.4f}), where the full gradient is small and the "
    f"shards' gradients disagree. The largest jumps come from stale pushes; the largest in each "
    f"curve:"))

# %%
for label in ("ssp", "async"):
    losses = np.array(curves[label].losses)
    v = int(np.argmax(losses[1:] / losses[:-1])) + 1
    push = next(p for p in curves[label].trace.pushes if p.applied_to == v - 1)
    print(f"{label:5s} v{v - 1} -> v{v}: loss {losses[v - 1]:.4f} -> {losses[v]:.4f}, worker {push.worker}'s "
          f"gradient computed on v{push.computed_on}, stale by {push.staleness}")

# %% [markdown] slide
# ## Try it: move the threshold
# A plain function first: one SSP run with random compute times at lr = 0.3 …

# %%
def ssp_summary(s=1, lr=0.3):
    r = aps.simulate(problem, workers=4, policy="ssp", max_clocks_ahead=s, lr=lr, steps=200, jitter=1.0)
    rate = len(r.trace.pushes) / r.trace.duration
    return (f"s={s}: {rate:.2f} gradients/time, max staleness "
            f"{r.trace.staleness_histogram().size - 1}, {to_target(r)}")

print(ssp_summary(1))

# %% [markdown] fragment
# … then with a slider (move it; the line follows).

# %%
slider = aps.widgets.interactive(ssp_summary, s=(0, 16))
slider

# %%
slider.controls["s"].value = 4          # as if you moved it: the line follows
print(slider.result)

# %% [markdown] fragment
# The Playground (`playground.ipynb`) has the same threshold as a slider ("SSP: clocks ahead"),
# next to sync and async.

# %% [markdown] slide
# ## Check your understanding
# 1. Under SSP with s = 1, worker 0 has pushed 3 times and worker 3 once. May worker 0 start its
#    next iteration? What if worker 3 had pushed twice?
# 2. Why is s = 0 the same as a synchronous round with 4 × the learning rate?
# 3. With compute times `[1, 1, 1, 4]`, why do s = 1 and s = 8 end up at the same pace, one gradient
#    per time unit? When does a larger s still help?
# 4. On one seed, one threshold reaches the target first. Why is that not enough to call it the
#    fastest? What would you report instead?
# 5. With 6 workers and s = 2, how many versions stale can a push be? And a push by the worker that
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
# 3. Once the fast workers are s clocks ahead of the straggler, which is always the slowest, the
#    gate lets them push only once per straggler push: 4 gradients per 4 time units, whatever
#    finite s. A larger s only lengthens the head start before the gate first closes (see the
#    times under the time-to-target table), which can reach the target sooner and lifts a short
#    run's average a little above that pace ("Who sets the pace?"); s pays for good only when
#    slowness moves between workers, as with `jitter`, where the gradients per time unit
#    rise with s.
# 4. One seed is one draw of the compute times, and the ranking of thresholds changes from draw to
#    draw: the 10-seed table shows overlapping min–max ranges and no policy fastest on most seeds.
#    Report, over many seeds and with each policy at its own tuned lr, the median time to target
#    with its spread (min–max or quantiles), ideally with its two factors: gradients needed and
#    gradients per time unit.
# 5. At most (N − 1)(2s + 1) = 5 · 5 = 25 versions, since each of the 5 others can push up to
#    2s + 1 times between a worker's pull and its push. A worker that was the slowest when it
#    pulled sees each other worker push at most s + 1 times: (N − 1)(s + 1) = 5 · 3 = 15 versions.
# </details>
#
# Assignment: [04 · the SSP gate](../exercises/04-ssp-gate.ipynb) — write the gate yourself.
# Next: [05 · Local updates](05-local-updates.ipynb).
