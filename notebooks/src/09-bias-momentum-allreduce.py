# %% [markdown]
# # 09 · Where asynchrony costs: bias, implicit momentum, and all-reduce
#
# **Learning goals**
# - see where an asynchronous server *settles* when the shards are non-IID and one worker is
#   slow, and fix it by weighting each push — where the staleness-aware lr makes it worse;
# - see asynchrony act like momentum (Mitliagkas et al. 2016), so that explicit momentum must
#   come down as workers are added;
# - compare a parameter server with ring all-reduce when communication costs bytes, and say why
#   dense training moved to all-reduce and where an asynchronous server still wins.

# %% [markdown] slide
# ## 1 · Non-IID shards and a straggler: where async settles
# Least squares (convex), four workers, shards **sorted** by the target (each worker holds a
# different part of the data), whole-shard gradients, worker 3 four times slower, ten seeds
# (jitter 0.3 on every compute time). The server hears workers 0–2 about four times as often as
# worker 3, so the point it settles at is pulled towards their data. We measure the **excess loss**
# at the end: the full-data loss minus its minimum (0 at the least-squares solution).

# %%
import numpy as np
from IPython.display import Markdown, display

import asyncps as aps

problem = aps.problems.LeastSquares(n=512, dim=10, noise=0.1, seed=0)
optimum = problem.loss(np.linalg.lstsq(problem.A, problem.b, rcond=None)[0])
times = [1, 1, 1, 4]
settings = dict(workers=4, compute_times=times, partition="sorted", jitter=0.3, lr=0.05,
                loss_every=100)


def weighted(seed, weights=times, partition="sorted"):
    """Each push weighted by its worker's time per gradient. The weights follow the run's shards,
    so build it with the run's seed: IID shards change with the seed."""
    return aps.problems.weighted(problem, weights=weights, workers=4, partition=partition, seed=seed)


def excess(run):
    return run.losses[-1] - optimum


variants = {
    "sync": lambda seed: aps.simulate(problem, policy="sync", steps=400, seed=seed, **settings),
    "async": lambda seed: aps.simulate(problem, policy="async", steps=1500, seed=seed, **settings),
    "async, divide_by_staleness": lambda seed: aps.simulate(
        problem, policy="async", steps=1500, seed=seed, lr_schedule="divide_by_staleness", **settings),
    "async, pushes weighted by time per gradient": lambda seed: aps.simulate(
        weighted(seed), policy="async", steps=1500, seed=seed, **settings),
}
settled = {name: [excess(run(seed)) for seed in range(10)] for name, run in variants.items()}
print(f"{'excess loss at the end, seeds 0-9':46s} median      min      max")
for name, values in settled.items():
    print(f"{name:46s} {np.median(values):.2e} {min(values):.2e} {max(values):.2e}")

# %%
ratio = np.median(settled["async, pushes weighted by time per gradient"]) / np.median(settled["async"])
worse = np.median(settled["async, divide_by_staleness"]) / np.median(settled["async"])
display(Markdown(
    f"Weighting each push by its worker's time per gradient leaves **{ratio:.2f}×** the median "
    f"excess loss of plain async; the staleness-aware lr leaves **{worse:.2f}×** it"
    + (" — it makes the bias worse." if worse > 1 else " — here it does not make the bias worse.")))

# %% [markdown] fragment
# Why: sync averages one gradient of every shard per version, so it goes to the solution of the
# whole data set. Async applies every push as it comes: per unit of time the fast workers' shards
# speak more often, and the server settles where *their* data pull it. Weighting worker k's push
# by its time per gradient gives every shard the same say per unit of time again. The
# staleness-aware lr divides the straggler's pushes — the stalest — by the most, so it gives worker
# 3's shard even less say.
#
# Which ingredient does what? The same measurement with IID shards, and without the straggler:

# %%
print(f"{'median excess loss, seeds 0-9':34s}{'async':>10s}{'weighted':>10s}")
cells = {}
for partition in ("sorted", "iid"):
    for label, compute in (("straggler", times), ("no straggler", [1, 1, 1, 1])):
        case = {**settings, "partition": partition, "compute_times": compute}
        plain = np.median([excess(aps.simulate(problem, policy="async", steps=1500, seed=s, **case))
                           for s in range(10)])
        fixed = np.median([excess(aps.simulate(weighted(s, compute, partition), policy="async",
                                               steps=1500, seed=s, **case)) for s in range(10)])
        cells[partition, label] = plain, fixed
        print(f"{partition + ' shards, ' + label:34s}{plain:10.2e}{fixed:10.2e}")

plain, fixed = cells["iid", "straggler"]
share = plain / cells["sorted", "straggler"][0]
display(Markdown(
    f"With IID shards and the straggler, plain async already has **{share:.0%}** of the sorted "
    f"shards' excess loss"
    + (": on this problem most of the bias comes from the straggler, not from sorting the data. "
       if share > 0.5 else ". ")
    + f"Weighting leaves **{fixed / plain:.2f}×** of the IID excess"
    + (", about what it leaves with sorted shards "
       f"({cells['sorted', 'straggler'][1] / cells['sorted', 'straggler'][0]:.2f}×)."
       if fixed < plain else " — here it does not help.")))

# %% [markdown] fragment
# Read the table row by row. Unequal push rates are what opens the gap (compare the rows with and
# without the straggler). IID shards are not identical either — each holds a different quarter of
# 512 examples, 128 points in 10 dimensions with noise, so each has its own least-squares solution
# — and a straggler moves async away from the solution there too (compare the two straggler rows).
# Weighting by push rate gives every shard the same say per unit of time whatever the split, so it
# removes most of the bias in both (the ratios above). The bias does not come from noise in the gradients: they are
# whole-shard, exact (try `lr=0.0125` with four times the steps). With more examples per shard,
# IID shards would agree more and the IID row would shrink; sorted shards would not.

# %% [markdown] slide
# ## 2 · Asynchrony as implicit momentum
# Mitliagkas et al. (2016, Theorem 2) model N asynchronous workers whose compute times are
# exponential (a queueing model) and show that, in expectation, the server's update is that of
# SGD with **momentum 1 − 1/N**, its step scaled by 1/N:
# E[x<sub>t+1</sub> − x<sub>t</sub>] = (1 − 1/N) E[x<sub>t</sub> − x<sub>t−1</sub>] − (lr/N) E[∇f(x<sub>t</sub>)].
# Their theorem has no explicit momentum; with it, they find experimentally that the best explicit
# momentum falls as workers are added — asynchrony already supplies some. Here: least squares,
# async, lr 0.02, exponential compute times of mean 1 as in their model (`random_delay=1.0`); the
# first version from which the loss **stays** 99 % of the way down to its minimum (a run that
# oscillates may touch the target early and leave it again), every version scored; median and
# [min – max] over ten seeds, for a grid of explicit momenta:

# %%
target = optimum + 0.01 * (problem.loss(problem.x0) - optimum)
MOMENTA = [0.0, 0.5, 0.8, 0.9, 0.95]


def versions(workers, momentum, seed):
    """The first version from which the loss stays below the target (inf: never, or diverged)."""
    run = aps.simulate(problem, workers=workers, policy="async", lr=0.02, momentum=momentum,
                       steps=600, compute_times=[0] * workers, random_delay=1.0, seed=seed,
                       loss_every=1)
    below = np.asarray(run.losses) <= target
    stays = np.logical_and.accumulate(below[::-1])[::-1]      # below here and at every later version
    return np.inf if run.diverged or not stays[-1] else int(np.argmax(stays))


def shown(v):
    return "never" if v == np.inf else f"{v:g}"


best = {}
print("workers  " + "".join(f"m={m:<15}" for m in MOMENTA) + "best m")
for workers in (1, 8):
    seeds = [0] if workers == 1 else range(10)     # one worker: nothing random to vary
    rows = [[versions(workers, m, s) for s in seeds] for m in MOMENTA]
    medians = [np.median(r) for r in rows]
    best[workers] = MOMENTA[int(np.argmin(medians))]
    print(f"{workers:7d}  " + "".join(f"{shown(v):<17}" for v in medians) + f"{best[workers]}")
    if len(seeds) > 1:
        print("  range  " + "".join(f"{'[' + shown(min(r)) + ' - ' + shown(max(r)) + ']':<17}"
                                    for r in rows))

# %%
display(Markdown(
    f"The best explicit momentum is **{best[1]}** with one worker and **{best[8]}** with eight"
    + (": asynchrony supplied part of the momentum itself, and momentum tuned on one machine is "
       "too much for eight asynchronous workers." if best[8] < best[1] else
       ": in this setting the best did not fall (try a larger lr or more workers).")))

# %% [markdown] fragment
# Read the rows for more than the best column: with eight workers the largest momenta slow the run
# down or never settle below the target, where one worker still converges. This is a statement
# about a convex problem, with a fixed lr; Mitliagkas et al.'s result is about the expected update
# under their exponential compute times (the ones used here); with other time distributions the
# implicit momentum differs.

# %% [markdown] slide
# ## 3 · A parameter server against all-reduce, when bytes cost time
# So far communication was free (or a fixed `comm_delay`). Real links carry bytes per second.
# `asyncps.costs` is a small model of it, which counts both architectures the same way: every
# link is full duplex (10 Gbit/s in each direction at once), and a round takes as long as the bytes
# through its busiest link in one direction. A server's own link takes every worker's gradient in
# while it sends every worker's parameters out: N models each way. In ring all-reduce (Patarasuk
# & Yuan 2009) every worker sends and receives 2(N−1)/N of the model, all links at once. Eight
# workers, 0.1 s per gradient, float32 parameters:

# %%
from asyncps import costs

bandwidth = 1.25e9                                   # bytes per second: 10 Gbit/s
cases = {"25M parameters, dense": (25e6, 1.0), "1M parameters, dense": (1e6, 1.0),
         "25M parameters, 1 % touched per gradient": (25e6, 0.01)}
stragglers = {"no straggler": [0.1] * 8, "worker 7 4× slower": [0.1] * 7 + [0.4]}
print(f"{'gradients per second':44s}{'':20s}sync PS  all-reduce  async PS")
table = {}
for case, (size, density) in cases.items():
    for label, compute in stragglers.items():
        row = [costs.gradients_per_second(p, compute, size, bandwidth, density=density)
               for p in ("sync_ps", "allreduce", "async_ps")]
        table[case, label] = row
        print(f"{case:44s}{label:20s}" + "".join(f"{v:9.1f}" for v in row))

# %%
dense = table["25M parameters, dense", "no straggler"]
small = table["1M parameters, dense", "worker 7 4× slower"]
display(Markdown(
    f"A dense 25M-parameter model without a straggler: all-reduce makes **{dense[1] / dense[0]:.1f}×** "
    f"the gradients per second of a synchronous server, and **{dense[1] / dense[2]:.1f}×** those of an "
    f"asynchronous one, whose single link is the bottleneck. A 1M-parameter model with one slow "
    f"worker: the asynchronous server makes **{small[2] / small[1]:.1f}×** all-reduce's."))

# %% [markdown] fragment
# This is why dense training on a cluster moved to all-reduce (Horovod, PyTorch DDP): no link
# carries more than twice the model in either direction, whatever N, where a single server's link
# carries N. An asynchronous parameter server still wins where
# all-reduce must wait or move dense tensors: **stragglers** (all-reduce is a barrier), **sparse
# updates** (a server moves only the rows a gradient touches — embeddings, Li et al. 2014), and
# **elastic workers** that come and go (a ring must be rebuilt). The server so far is one machine;
# a sharded server (Dean et al. 2012; Li et al. 2014) splits its link over many, next. What the
# model leaves out throughout: the latency of each message, and what a stale gradient is worth —
# "gradients per second" says nothing about it (sections 1 and 2, notebooks 03 and 04).

# %% [markdown] subslide
# ### A sharded server, and sums in groups
# Li et al. (2014, OSDI) split the keys over k **server shards**: each shard's link carries 1/k of
# every push and every pull, N/k models each way, but each worker's own link still carries its
# whole gradient out and the whole model in. Busiest link: max(1, N/k) models. BytePS (Jiang et al.
# 2020, OSDI) counts the shards on machines of their own and **on the workers' machines**
# (`colocated=True`): a machine then pushes and pulls the (k−1)/k of the model it does not hold and
# serves its 1/k to the N−1 others, (N+k−2)/k models each way. Dive into Deep Learning (Zhang et
# al., §13.7 "Parameter Servers"; §12.7 in earlier editions) adds **hierarchy**: sum within a group
# first, so the server hears g sums instead of N gradients. Here a group's leader sums its N/g
# workers over the same links as everything else, so its link carries N/g models. The same case
# as the first row above:

# %%
compute, size, n = stragglers["no straggler"], 25e6, 8
ring = costs.gradients_per_second("allreduce", compute, size, bandwidth)


def rate(policy="sync_ps", **layout):
    """Gradients per second of this case with the server laid out as `layout` says."""
    return costs.gradients_per_second(policy, compute, size, bandwidth, **layout)


def link(**layout):
    """A sync PS's models through the busiest link, one direction, per round."""
    return costs.busiest_link_models("sync_ps", n, **layout)


def entry(**layout):
    return f"{rate(**layout):9.1f} ({link(**layout):4.2f})"


print("gradients per second (models through the busiest link, one direction)")
print(f"{'':20s}{'dedicated shards':>16s}{'shards on workers':>19s}{'async PS':>10s}")
for k in (1, 2, 4, 8):
    print(f"{f'sync PS, k = {k}':20s}{entry(servers=k)}   {entry(servers=k, colocated=True)}"
          f"{rate('async_ps', servers=k):10.1f}")
print(f"{'ring all-reduce':20s}{ring:9.1f} ({costs.busiest_link_models('allreduce', n):4.2f})")
print(f"\n{'groups of N/g':20s}{'1 server':>16s}{'g dedicated':>19s}{'g on the leaders':>19s}")
for g in (1, 2, 4, 8):
    print(f"{f'sync PS, g = {g}':20s}{entry(groups=g)}   {entry(groups=g, servers=g)}   "
          f"{entry(groups=g, servers=g, colocated=True)}")

# %%
catches_up = next(k for k in range(1, 4 * n) if rate(servers=k) >= ring * (1 - 1e-9))
grouped = [g for g in range(1, n) if n % g == 0]               # groups of 2 or more workers
one_server = min(link(groups=g) for g in grouped)
any_shards = min(link(groups=g, servers=k) for g in grouped for k in range(1, 4 * n))
display(Markdown(
    f"With dedicated shards the synchronous server catches up with ring all-reduce at **k = "
    f"{catches_up}** shards (N²/2(N−1) = {n ** 2 / (2 * (n - 1)):.2f} for N = {n}); at k = N it makes "
    f"**{rate(servers=n) / ring:.2f}×** all-reduce's gradients per second, with {n} more machines. "
    f"With the shards on the workers' machines it only ties, at k = N: "
    f"**{link(servers=n, colocated=True):.2f}** models per link, the ring's 2(N−1)/N = "
    f"{2 * (n - 1) / n:.2f}. Summing in groups on the same links takes a single server's round from "
    f"{link():.0f} models through the busiest link to {one_server:.0f}, and no number of shards takes "
    f"a grouped round below {any_shards:.0f}: the leader's link carries N/g. The asynchronous "
    f"server stops at **{rate('async_ps', servers=n):.1f}** whatever k: each worker's own link "
    f"pushes and then pulls the whole model."))

# %% [markdown] fragment
# So the verdict is about **bytes per link**, not about the idea of a server. A sync PS with k
# dedicated shards moves d·max(1, N/k) models per link (d: the fraction a gradient touches), the
# ring 2(N−1)/N: the server catches up from k ≥ d·N²/(2(N−1)) on — just over N/2 shards when dense,
# fewer when sparse. On the workers' machines it moves d·(N+k−2)/k: dense, it ties at k = N and
# never wins. Sharded over all N machines, a PS *is* a reduce-scatter and an all-gather: the same
# bytes as the ring, in two steps (push, then pull) of N−1 messages at once where the ring takes
# 2(N−1) steps one after the other. Summing in groups relieves a server that has too few shards,
# and moves the load to the leader. This holds in the setting of the model: no latency, full-duplex
# links of equal bandwidth behind a switch that never blocks, sums that cost nothing, dense
# gradients. It stops holding where one of them fails: the ring's 2(N−1) latencies at large N with
# small tensors, a server with a fatter link (fewer shards suffice), an oversubscribed switch, a
# leader whose group is one machine summing over PCIe or NVLink (its network link carries one model,
# as in BytePS and d2l's multi-GPU machines), sparse gradients (the PS moves d of the model, the
# ring all of it, and a sum over a group is up to N/g times denser than one gradient).

# %% [markdown] slide
# ## Check your understanding
# 1. In section 1, what makes async settle away from the solution, and what does the split of the
#    data add? Predict the second table's rows before you read them.
# 2. Why does the staleness-aware lr make the bias *worse* here, although it helps stability?
# 3. Mitliagkas et al. predict an implicit momentum near 1 − 1/N, 0.875 for N = 8. If the total
#    should stay near the one-worker best, how much explicit momentum is left? Compare with the
#    table: why is its best not simply the difference?
# 4. For a dense model, how many workers does it take before the synchronous server's link costs
#    more than the compute? Use `costs.gradients_per_second` to find out.
# 5. A synchronous server with k dedicated shards, dense gradients: how many shards does it need
#    to move no more per link than ring all-reduce, for N = 8 and for N = 100? And if each shard
#    sits on one of the workers' machines?
#
# Answers
# <details><summary>show</summary>
#
# 1. Unequal push rates (the straggler) combined with shards whose solutions differ. Sorting
#    makes them differ more, but here each IID shard is only 128 noisy examples, so the straggler
#    alone opens most of the gap; weighting removes most of it in both. 2. It divides the straggler's (stalest) pushes the most, so its shard gets
#    even less weight. 3. By the difference, little or none; the table's best is below the
#    one-worker best but not zero. The theorem has no explicit momentum, so it does not say that
#    the two add; it is a statement about the expected update, for exponential compute times (as
#    here). 4. When N·size·4 bytes / bandwidth
#    passes the compute time: N ≈ 0.1 s · 1.25e9 / (4 · 25e6) ≈ 1.25 — already at two workers
#    for 25M parameters. 5. max(1, N/k) ≤ 2(N−1)/N: k ≥ N²/(2(N−1)), 4.57 → 5 shards for N = 8,
#    50.5 → 51 for N = 100, about N/2 (plus the machines to run them). On the workers' machines
#    (N+k−2)/k only reaches 2(N−1)/N at k = N, and there it is equal: every machine sends the
#    (N−1)/N of its gradient that others hold and the (N−1)/N of the others' parameters that it
#    holds, as the ring's reduce-scatter and all-gather do.
# </details>
#
# Back to: [03c · Why staleness needs a smaller lr](03c-staleness-and-the-lr.ipynb) ·
# [04 · Stale Synchronous Parallel](04a-stale-synchronous-parallel.ipynb) · Assignments:
# [06 · real engines](../exercises/06-real-engines.ipynb), Task 6.4 (weight each push fairly: section
# 1 on real threads) and [03c · the staleness-aware lr](../exercises/03c-staleness-lr.ipynb).
# Next: [10 · The class is the cluster](10-the-class-is-the-cluster.ipynb).
