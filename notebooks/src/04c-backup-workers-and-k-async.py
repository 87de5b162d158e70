# %% [markdown]
# # 04c · Backup workers and K-async: a fair opponent for async
#
# **Learning goals**
# - state two more rules between sync and async: **K-sync** (sync with backup workers, Chen et al.
#   2016) closes a round on the first k fresh gradients and drops the rest; **K-async** (Dutta et
#   al. 2018) closes a round on the first k gradients, fresh or stale;
# - model random stragglers with exponential compute times and check the simulator against Dutta
#   et al.'s expected time of a round;
# - race async against sync, K-sync and K-async, each at its own best lr and k, on time and over
#   seeds — and say in which setting the result holds.
#
# Part 3 of 3 on the policies between sync and async, after [04a](04a-stale-synchronous-parallel.ipynb)
# and [04b](04b-when-ssp-pays.ipynb). Claim B ("more compute, more iterations", [03b](03b-more-iterations.ipynb))
# compared async with a full barrier that waits for the slowest worker every round. A full barrier
# is not the only way to synchronise: here are two that do not wait for the slowest.

# %% [markdown] slide
# ## Two rules
# Both average a **round** of k pushes into one new version, and a worker that pushed waits until
# its round closes (it then pulls the new version). They differ in what a late gradient is worth:
#
# | policy | a round closes on | a gradient computed on an older version | k = N | k = 1 |
# |---|---|---|---|---|
# | `ksync` (K-sync, backup workers) | the first k gradients computed on the current version | **dropped** (a `Drop` event) | sync | one fresh gradient per version |
# | `kasync` (K-async) | the first k gradients, whatever version they were computed on | averaged in, stale | sync | async |
#
# In code: `policy="ksync", wait_for=k` or `policy="kasync", wait_for=k`. Chen et al. (2016,
# *Revisiting Distributed Synchronous SGD*) ran sync with N − k **backup workers**; Dutta et al.
# (2018, *Slow and Stale Gradients Can Win the Race*, AISTATS) analysed K-sync and K-async.
#
# **Predict, then run.** Four workers, worker 3 needs 2.5 time units per gradient, the others 1, and
# k = 3. Under `ksync`, how many of worker 3's gradients are applied? Under `kasync`?

# %%
import numpy as np
from IPython.display import Markdown, display

import asyncps as aps

problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)
N = 4
STRAGGLER = [1, 1, 1, 2.5]
small = dict(workers=N, lr=0.2, steps=30, compute_times=STRAGGLER)
runs = {"sync": aps.simulate(problem, policy="sync", **small),
        "ksync k=3": aps.simulate(problem, policy="ksync", wait_for=3, **small),
        "kasync k=3": aps.simulate(problem, policy="kasync", wait_for=3, **small)}
print(f"{'':11s} {'versions/time':>13s} {'applied':>8s} {'dropped':>8s} {'from worker 3':>14s} "
      f"{'largest staleness':>18s}")
for label, r in runs.items():
    t = r.trace
    print(f"{label:11s} {(len(r.losses) - 1) / t.duration:13.2f} {len(t.pushes):8d} {len(t.drops):8d} "
          f"{sum(p.worker == 3 for p in t.pushes):14d} {max(p.staleness for p in t.pushes):18d}")

# %% fragment
ks, ka = runs["ksync k=3"].trace, runs["kasync k=3"].trace
assert sum(p.worker == 3 for p in ks.pushes) == 0 and len(ks.drops) > 0
assert sum(p.worker == 3 for p in ka.pushes) > 0 and max(p.staleness for p in ka.pushes) > 0
display(Markdown(
    f"Under `ksync` none of worker 3's gradients is applied: each arrives after the three fast "
    f"workers closed its round, computed on a version the server has left, and is dropped "
    f"({len(ks.drops)} drops). Under `kasync` the rounds still close on the first three, but a late "
    f"gradient counts in the next round: worker 3 contributes "
    f"{sum(p.worker == 3 for p in ka.pushes)} gradients, up to {max(p.staleness for p in ka.pushes)} "
    f"version(s) stale. Both make versions faster than sync, which waits for worker 3 every round."))

# %% [markdown] slide
# ## A drop in the Timeline
# The Timeline of the `ksync` run opens at its first drop: worker 3's gradient arrives, the
# server has moved on, and it is not applied.

# %%
timeline = aps.widgets.Timeline(runs["ksync k=3"])
timeline.frame = ks.events.index(ks.drops[0])
timeline

# %%
print(ks.drops[0])

# %% [markdown] slide
# ## Random stragglers
# A worker that is *always* slow is one kind of straggler. In a shared cluster slowness comes and
# goes: any worker may be the slow one this round. Dutta et al. model a gradient's compute time as
# **exponential** (or shifted exponential: a fixed time plus an exponential one). In the simulator:
# `random_delay=m` adds a seeded exponential time of mean m to every gradient (`compute_times` is
# the fixed part, and may be 0).
#
# With pure exponential times of mean 1/μ, the time until the first k of n running workers finish
# is (H_n − H_{n−k})/μ, where H_n = 1 + 1/2 + … + 1/n (Dutta et al. 2018). Under sync, K-async and
# async (K-async with k = 1) every round starts with all N workers computing, so that is the
# expected time of a version. The cell measures it over 1000 versions and 4 seeds.

# %%
def harmonic(n):
    return sum(1.0 / i for i in range(1, n + 1))


exponential = dict(workers=N, compute_times=[0] * N, random_delay=1.0, lr=0.01, steps=1000,
                   loss_every=1000)
rules = {"sync": dict(policy="sync"), **{f"kasync k={k}": dict(policy="kasync", wait_for=k)
                                         for k in (1, 2, 3)},
         "ksync k=2": dict(policy="ksync", wait_for=2), "ksync k=3": dict(policy="ksync", wait_for=3)}
measured = {label: [aps.simulate(problem, seed=seed, **exponential, **rule).trace.pushes[-1].time / 1000
                    for seed in range(4)] for label, rule in rules.items()}
formula = {label: harmonic(N) - harmonic(N - rule.get("wait_for", N)) for label, rule in rules.items()}
print(f"{'':11s} {'time per version: simulated (4 seeds)':>38s} {'(H_N - H_(N-k))/μ':>18s}")
for label in rules:
    print(f"{label:11s} {np.mean(measured[label]):22.3f} [{min(measured[label]):.3f} - "
          f"{max(measured[label]):.3f}] {formula[label]:18.3f}")

# %% fragment
close = [label for label in rules if not label.startswith("ksync")]
assert all(abs(np.mean(measured[label]) / formula[label] - 1) < 0.04 for label in close)
slower = {label: np.mean(measured[label]) / formula[label] for label in rules if label.startswith("ksync")}
assert min(slower.values()) > 1.2
display(Markdown(
    f"Sync, K-async and async match the formula within "
    f"{max(abs(np.mean(measured[label]) / formula[label] - 1) for label in close):.0%}. K-sync "
    f"does not: its rounds take {min(slower.values()):.2f}–{max(slower.values()):.2f}× the formula. "
    f"Dutta et al.'s K-sync **cancels** the late workers' computation when a round closes; here, as "
    f"in Chen et al.'s implementation, a late worker finishes its gradient, which is then dropped, "
    f"and only then pulls the new version — so it misses the next round's start. The formula is "
    f"for the cancelling server."))

# %% [markdown] slide
# ## The race, with fair opponents
# Claim B on time, again (as in [03b](03b-more-iterations.ipynb)), but async now races the
# policies that do not wait for the slowest. The setting: least squares (convex), IID shards,
# minibatches of 16, four workers with shifted-exponential compute times (0.5 fixed + an exponential
# of mean 1). Time to reach a loss of 0.006, just above the minimum.
#
# **The protocol.** Each policy and k is tuned — its own best lr from a grid, by the median over
# seeds 0–9 — and then raced on **20 fresh seeds** (10–29) it was not tuned on. Sync averages k
# gradients per version and tolerates a larger lr; the grid is wide enough that no best lr sits at
# its edge (the cell checks).
#
# **Predict, then run.** Which reaches the target first at its best lr: async, or the best of
# K-sync and K-async?

# %%
TARGET, TUNE, RACE = 0.006, range(10), range(10, 30)
LRS = [0.1, 0.2, 0.3, 0.4, 0.6, 0.8, 1.2, 1.6]
RACERS = {"sync": dict(policy="sync"),
          "ksync k=2": dict(policy="ksync", wait_for=2), "ksync k=3": dict(policy="ksync", wait_for=3),
          "kasync k=2": dict(policy="kasync", wait_for=2), "kasync k=3": dict(policy="kasync", wait_for=3),
          "async": dict(policy="async")}
RANDOM = dict(workers=N, compute_times=[0.5] * N, random_delay=1.0, batch_size=16)


def race(label, lr, seed):
    """One run: (time to target, gradients applied until then, gradients per time unit); inf: never."""
    k = RACERS[label].get("wait_for", N if label == "sync" else 1)
    r = aps.simulate(problem, lr=lr, steps=400 // k + 40, seed=seed, **RANDOM, **RACERS[label])
    v = r.versions_to_reach(TARGET)
    if v is None:
        return np.inf, np.inf, len(r.trace.pushes) / r.trace.duration
    return (r.time_to_reach(TARGET), sum(1 for p in r.trace.pushes if p.applied_to < v),
            len(r.trace.pushes) / r.trace.duration)


tuning = {(label, lr): np.median([race(label, lr, seed)[0] for seed in TUNE])
          for label in RACERS for lr in LRS}
print("median time to target over seeds 0-9 (inf: not reached)")
print(f"{'lr':11s}" + "".join(f"{lr:>7g}" for lr in LRS))
for label in RACERS:
    print(f"{label:11s}" + "".join(f"{tuning[label, lr]:7.1f}" for lr in LRS))

# %% fragment
best_lr = {label: min(LRS, key=lambda lr: tuning[label, lr]) for label in RACERS}
assert all(LRS[0] < best_lr[label] < LRS[-1] for label in RACERS)       # inside the grid
results = {label: np.array([race(label, best_lr[label], seed) for seed in RACE]) for label in RACERS}
print(f"seeds 10-29   best lr   time to target: median [min - max]   gradients  gradients/time")
for label, rows in results.items():
    t = rows[:, 0]
    print(f"{label:11s} {best_lr[label]:9g}   {np.median(t):6.1f} [{t.min():5.1f} - {t.max():5.1f}]"
          f"            {np.median(rows[:, 1]):6.0f} {np.median(rows[:, 2]):10.2f}")

# %% fragment
median = {label: float(np.median(rows[:, 0])) for label, rows in results.items()}
fastest = min(median, key=median.get)
k_policies = [label for label in RACERS if label.startswith("k")]
best_k = min(k_policies, key=median.get)
beats = int(np.sum(results[best_k][:, 0] < results["async"][:, 0]))
overlap = results[best_k][:, 0].min() < results["async"][:, 0].max() \
    and results["async"][:, 0].min() < results[best_k][:, 0].max()
rate = {label: float(np.median(rows[:, 2])) for label, rows in results.items()}
need = {label: float(np.median(rows[:, 1])) for label, rows in results.items()}
assert fastest != "async" and median[best_k] < median["async"] and overlap
assert rate["async"] > rate[best_k] and need["async"] > need[best_k]
display(Markdown(
    f"**Against fair opponents, async is not the fastest here.** On the 20 fresh seeds the lowest "
    f"median time to target is {fastest}'s ({median[fastest]:.1f}); async's is {median['async']:.1f}, "
    f"sync's {median['sync']:.1f}. The best K-policy, {best_k}, beats async on {beats} of the "
    f"{len(RACE)} seeds (run for run, seed by seed), and their min–max ranges "
    f"overlap: a lead over seeds, not on every seed. The "
    f"two factors explain it: async makes the most gradients per time unit ({rate['async']:.2f} "
    f"against {rate[best_k]:.2f}) but needs more of them ({need['async']:.0f} against "
    f"{need[best_k]:.0f}) — each of its versions is one noisy minibatch gradient, often stale, "
    f"at a small lr; {best_k} averages {RACERS[best_k]['wait_for']} per version at a larger one, "
    f"and waits only for the fastest {RACERS[best_k]['wait_for']} of {N}."))

# %% [markdown] fragment
# **Where this holds.** Convex least squares, IID shards, minibatch gradients (so averaging k of
# them reduces noise), stragglers that come and go (exponential times: any worker may be slow in a
# round), and the compute times of this model — no communication cost, which would add a
# per-round cost to every synchronous policy. Dutta et al. show the same shape in theory (K-sync and
# K-async trade the error of a version against the time to make it; which k wins depends on the
# distribution of compute times) and on CIFAR-10; they also find that no single rule wins for every
# distribution. With a **persistent** straggler the picture changes: see the next cell.

# %% [markdown] slide
# ## What a dropped gradient costs: a persistent straggler
# Under `ksync`, a worker that is *always* last never has a gradient applied (the first cell). Its
# shard then never counts: the server minimises the loss of the other shards. Same four workers,
# worker 3 at 2.5, 300 versions, lr 0.2, five seeds, IID shards; the loss above the minimum at the end:

# %%
best_loss = problem.loss(np.linalg.lstsq(problem.A, problem.b, rcond=None)[0])
persistent = dict(workers=N, lr=0.2, steps=300, compute_times=STRAGGLER, loss_every=300)
excess = {label: [aps.simulate(problem, seed=seed, **persistent, **RACERS[label]).losses[-1] - best_loss
                  for seed in range(5)] for label in ("sync", "ksync k=3", "kasync k=3")}
for label, values in excess.items():
    print(f"{label:11s} excess loss at v300: median {np.median(values):.2e} "
          f"[{min(values):.2e} - {max(values):.2e}]")

# %% fragment
assert all(a > b for a, b in zip(excess["ksync k=3"], excess["kasync k=3"]))
assert np.median(excess["ksync k=3"]) > 2 * np.median(excess["kasync k=3"])
display(Markdown(
    f"`ksync` ends {np.median(excess['ksync k=3']) / np.median(excess['kasync k=3']):.0f}× further "
    f"above the minimum than `kasync`, and further on every seed (median excess {np.median(excess['ksync k=3']):.1e} against "
    f"{np.median(excess['kasync k=3']):.1e}): it converges to the minimum of three shards' loss. "
    f"K-async pays for worker 3's data with staleness, K-sync with bias. With non-IID shards the "
    f"bias is larger: the dropped shard may hold classes nobody else has (as the straggler's digits "
    f"in lecture 08b). Chen et al. count on the slowest workers "
    f"changing from round to round."))

# %% [markdown] slide
# ## Check your understanding
# 1. Why is `kasync` with k = 1 the same as async, while `ksync` with k = 1 is not?
# 2. The simulator matched (H_N − H_{N−k})/μ for K-async but not for K-sync. What does the formula
#    assume that this server does not do, and what would a real server need to do it?
# 3. Your cluster has one machine that is always 2.5× slower. Would you use backup workers? What
#    would you check first?
#
# <details><summary>Answers</summary>
#
# 1. `kasync` with k = 1 applies every gradient at once, stale or not: async. `ksync` with k = 1
#    applies only a gradient computed on the current version; every other worker's gradient, computed
#    on a version that one push has already replaced, is dropped — most of the work is thrown away.
# 2. That the late workers' computation is cancelled when a round closes, so that all N start the
#    next round together. A real server must then interrupt a worker mid-gradient (a message it checks
#    between layers, or a kill and restart); asyncps's ksync, like Chen et al.'s, lets it finish and
#    drops the result.
# 3. Not blindly: K-sync would drop that machine's every gradient, so its shard would never count
#    (the last section: a bias, larger with non-IID shards). Check whether the slowness moves between
#    machines; if it does not, rebalance the data or the work, or use K-async, whose late gradients
#    count, stale.
# </details>
#
# Assignment: [04 · the SSP gate](../exercises/04-ssp-gate.ipynb), Tasks 4.5 and 4.6 (a round's
# expected time; choose a policy and k). Next: [05a · Local updates](05a-local-updates.ipynb).
