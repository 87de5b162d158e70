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
weighted = aps.problems.weighted(problem, weights=times, workers=4, partition="sorted")


def excess(run):
    return run.losses[-1] - optimum


variants = {
    "sync": lambda seed: aps.simulate(problem, policy="sync", steps=400, seed=seed, **settings),
    "async": lambda seed: aps.simulate(problem, policy="async", steps=1500, seed=seed, **settings),
    "async, divide_by_staleness": lambda seed: aps.simulate(
        problem, policy="async", steps=1500, seed=seed, lr_schedule="divide_by_staleness", **settings),
    "async, pushes weighted by time per gradient": lambda seed: aps.simulate(
        weighted, policy="async", steps=1500, seed=seed, **settings),
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
        fair = aps.problems.weighted(problem, weights=compute, workers=4, partition=partition)
        plain = np.median([excess(aps.simulate(problem, policy="async", steps=1500, seed=s, **case))
                           for s in range(10)])
        fixed = np.median([excess(aps.simulate(fair, policy="async", steps=1500, seed=s, **case))
                           for s in range(10)])
        cells[partition, label] = plain, fixed
        print(f"{partition + ' shards, ' + label:34s}{plain:10.2e}{fixed:10.2e}")

plain, fixed = cells["iid", "straggler"]
display(Markdown(
    "With IID shards and the straggler, weighting "
    + (f"made the excess loss **worse** ({fixed / plain:.2f}×): it multiplies the stalest pushes, "
       "which can cost more than the bias it removes."
       if fixed > plain else f"left **{fixed / plain:.2f}×** of it.")))

# %% [markdown] fragment
# Read the table row by row. Unequal push rates are what opens the gap (compare the rows with and
# without the straggler). IID shards are not identical either — each holds a different quarter of
# 512 examples, with its own least-squares solution — so a straggler moves async away from the
# solution there too (compare the two straggler rows). Weighting by push rate targets the
# disagreement between shards; the sentence above says what it did where they barely disagree.
# The bias does
# not come from noise: the gradients here are whole-shard, exact (try `lr=0.0125` with four times
# the steps).

# %% [markdown] slide
# ## 2 · Asynchrony as implicit momentum
# Mitliagkas et al. (2016) show that N asynchronous workers whose compute times are random
# (exponential, in their model) make the server's updates behave, on average, like SGD with
# momentum μ ≈ 1 − 1/N, added to any explicit momentum. Then the best explicit momentum must
# fall as workers are added. Here: least squares, async, lr 0.02, compute times with lognormal
# jitter (σ = 1, not exponential), versions until the loss has fallen 99 % of the way to its
# minimum, median over ten seeds, for a grid of explicit momenta:

# %%
target = optimum + 0.01 * (problem.loss(problem.x0) - optimum)
MOMENTA = [0.0, 0.5, 0.8, 0.9, 0.95]


def versions(workers, momentum, seed):
    run = aps.simulate(problem, workers=workers, policy="async", lr=0.02, momentum=momentum,
                       steps=600, jitter=1.0, seed=seed, loss_every=5)
    v = run.versions_to_reach(target)
    return np.inf if v is None or run.diverged else v


best = {}
print("workers  " + "".join(f"m={m:<9}" for m in MOMENTA) + "best m")
for workers in (1, 8):
    seeds = [0] if workers == 1 else range(10)     # one worker: nothing random to vary
    medians = [np.median([versions(workers, m, s) for s in seeds]) for m in MOMENTA]
    best[workers] = MOMENTA[int(np.argmin(medians))]
    print(f"{workers:7d}  " + "".join(f"{'never' if v == np.inf else f'{v:g}':<11}" for v in medians)
          + f"{best[workers]}")

# %%
display(Markdown(
    f"The best explicit momentum is **{best[1]}** with one worker and **{best[8]}** with eight"
    + (": asynchrony supplied part of the momentum itself, and momentum tuned on one machine is "
       "too much for eight asynchronous workers." if best[8] < best[1] else
       ": in this setting the best did not fall (try a larger lr or more workers).")))

# %% [markdown] fragment
# Read the rows for more than the best column: with eight workers the largest momenta slow the run
# down or never reach the target, where one worker still converges. This is a statement about a
# convex problem, with a fixed lr; Mitliagkas et al.'s result is about the expected update, and
# the match to "1 − 1/N" needs their exponential compute times.

# %% [markdown] slide
# ## 3 · A parameter server against all-reduce, when bytes cost time
# So far communication was free (or a fixed `comm_delay`). Real links carry bytes per second.
# `asyncps.costs` is a small model of it: a server's own link carries every worker's gradient in
# and parameters out; in ring all-reduce (Patarasuk & Yuan 2009) every worker sends and receives
# 2(N−1)/N of the model, all links at once. Eight workers, 0.1 s per gradient, 10 Gbit/s links,
# float32 parameters:

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
# carries more than twice the model, whatever N. An asynchronous parameter server still wins where
# all-reduce must wait or move dense tensors: **stragglers** (all-reduce is a barrier), **sparse
# updates** (a server moves only the rows a gradient touches — embeddings, Li et al. 2014), and
# **elastic workers** that come and go (a ring must be rebuilt). Two things the model leaves out:
# a sharded server (Dean et al. 2012; Li et al. 2014) splits the bottleneck link over many machines,
# and "gradients per second" says nothing about what a stale gradient is worth (sections 1 and 2,
# notebooks 03 and 04).

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
#
# Answers
# <details><summary>show</summary>
#
# 1. Unequal push rates (the straggler) combined with shards whose solutions differ — strongly
#    when sorted, slightly when IID (each shard is a different sample). 2. It divides the straggler's (stalest) pushes the most, so its shard gets
#    even less weight. 3. Little or none by the difference; the table's best is below the
#    one-worker best but not zero: momenta do not simply add, the prediction is for the expected
#    update, and the compute times here are lognormal, not exponential. 4. When 2·N·size·4 bytes / bandwidth
#    passes the compute time: N ≈ 0.1 s · 1.25e9 / (8 · 25e6) ≈ 0.6 — already at one worker for
#    25M parameters.
# </details>
#
# Back to: [03c · Why staleness needs a smaller lr](03c-staleness-and-the-lr.ipynb) ·
# [04 · Stale Synchronous Parallel](04-stale-synchronous-parallel.ipynb) · Assignment:
# [03c · the staleness-aware lr](../exercises/03c-staleness-lr.ipynb).
