# %% [markdown]
# # 04b · Stale Synchronous Parallel (SSP): when does it pay?
#
# **Learning goals**
# - sweep the threshold s over many seeds and explain the time to a target loss with two numbers:
#   gradients needed and gradients per time unit — and say what one seed cannot tell you;
# - say when a larger s helps (slowness that comes and goes) and when it cannot (a persistent
#   straggler).
#
# Part 2 of 3, after [04a](04a-stale-synchronous-parallel.ipynb) (the rule, the gate, the bounds).
# The cell below rebuilds 04a's runs: least squares, four workers, worker 3 four times slower,
# lr 0.2, 200 versions, for s = 0, 1, 2, 4, 8, async, sync, and sync with lr × 4 (= ssp s = 0).

# %%
import numpy as np
from IPython.display import Markdown, display

import asyncps as aps

problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)
STRAGGLER, THRESHOLDS = [1, 1, 1, 4], [0, 1, 2, 4, 8]
settings = dict(workers=4, lr=0.2, steps=200, compute_times=STRAGGLER)
straggler_runs = {f"ssp s={s}": aps.simulate(problem, policy="ssp", max_clocks_ahead=s, **settings)
                  for s in THRESHOLDS}
straggler_runs["async"] = aps.simulate(problem, policy="async", **settings)
sync = aps.simulate(problem, policy="sync", **settings)
sync_x4 = aps.simulate(problem, policy="sync", **{**settings, "lr": 4 * settings["lr"], "steps": 50})

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
# 1. With compute times `[1, 1, 1, 4]`, why do s = 1 and s = 8 end up at the same pace, one gradient
#    per time unit? When does a larger s still help?
# 2. On one seed, one threshold reaches the target first. Why is that not enough to call it the
#    fastest? What would you report instead?
#
# <details><summary>Answers</summary>
#
# 1. Once the fast workers are s clocks ahead of the straggler, which is always the slowest, the
#    gate lets them push only once per straggler push: 4 gradients per 4 time units, whatever
#    finite s. A larger s only lengthens the head start before the gate first closes (see the
#    times under the time-to-target table), which can reach the target sooner and lifts a short
#    run's average a little above that pace (04a, "Who sets the pace?"); s pays for good only when
#    slowness moves between workers, as with `jitter`, where the gradients per time unit
#    rise with s.
# 2. One seed is one draw of the compute times, and the ranking of thresholds changes from draw to
#    draw: the 10-seed table shows overlapping min–max ranges and no policy fastest on most seeds.
#    Report, over many seeds and with each policy at its own tuned lr, the median time to target
#    with its spread (min–max or quantiles), ideally with its two factors: gradients needed and
#    gradients per time unit.
# </details>
#
# Back to [04a · the gate and its bounds](04a-stale-synchronous-parallel.ipynb). Assignment:
# [04 · the SSP gate](../exercises/04-ssp-gate.ipynb). Next: [04c · Backup workers and
# K-async](04c-backup-workers-and-k-async.ipynb), the other ways to not wait for the slowest.
