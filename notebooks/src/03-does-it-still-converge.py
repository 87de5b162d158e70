# %% [markdown]
# # 03 · Does it still converge?
#
# **Learning goals**
# - measure the claim "the gradients on each node are similar": the cosine similarity of the
#   workers' gradients at the same parameters, with IID and with non-IID shards;
# - measure the claim "we throw more compute at it and accept more iterations": versions and time
#   to reach a target loss, sync versus async, with a straggler and without;
# - see, on a 1-D quadratic, where a stale gradient makes the run diverge, and why staleness needs a
#   smaller lr;
# - use the staleness-aware lr (`lr_schedule="divide_by_staleness"`) and know when it helps.

# %% [markdown]
# ## The debate
# In the asynchronous server a worker that pulled **v0** may push after the server moved to **v1**:
# the server applies a gradient computed on v0 to v1. Why does that still converge? Two answers
# come up in every lecture:
#
# - **A.** "The gradients on each node are similar": a gradient from another worker, or from a
#   slightly older version, points roughly the same way as the one we would compute now.
# - **B.** "We throw more compute at it and accept more iterations": stale updates are worse, so we
#   need more of them, but nobody waits, so we get them sooner.
#
# This notebook measures both.

# %% [markdown]
# ## Claim A: are the workers' gradients similar?
# A small MLP on 4 classes, split across 4 workers. With `"iid"` shards every worker gets a shuffled
# quarter of the data; with `"by_label"` each worker gets the examples of one class.
# At the same parameters we compute each worker's gradient on its whole shard, and compare the
# directions with the cosine similarity (1: same direction, 0: unrelated, −1: opposite).

# %%
import math

import numpy as np
from IPython.display import HTML, display

import asyncps as aps

mlp = aps.problems.MLP(n=2048, dim=16, hidden=32, classes=4, seed=0)


def cosine(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def similarity(problem, params, partition, workers=4):
    """Mean cosine between pairs of workers' gradients, and mean cosine to the full gradient."""
    grads = [problem.gradient(params, shard) for shard in problem.shards(workers, partition, seed=0)]
    full = problem.gradient(params)
    pairs = [cosine(grads[i], grads[j]) for i in range(workers) for j in range(i + 1, workers)]
    return np.mean(pairs), np.mean([cosine(g, full) for g in grads])


for partition in ["iid", "by_label"]:
    pairwise, to_full = similarity(mlp, mlp.x0, partition)
    print(f"{partition:>8} shards at v0: worker vs worker {pairwise:6.3f}   worker vs full gradient {to_full:6.3f}")

# %% [markdown] fragment
# With IID shards the four gradients nearly coincide (cosine 0.98): any worker's gradient is a good
# stand-in for the full gradient. With one class per worker they are close to unrelated (0.03):
# each worker pulls the model towards its own class.

# %% [markdown]
# ## Does that stay true during training?
# The same measurement at the parameters reached after a few full-gradient steps (one worker
# with all the data: the path every sync run with whole-shard gradients takes, whatever the shards).

# %%
for steps in [0, 5, 20, 100]:
    run = aps.simulate(mlp, workers=1, policy="sync", lr=0.5, steps=steps)
    iid, _ = similarity(mlp, run.params, "iid")
    non_iid, _ = similarity(mlp, run.params, "by_label")
    print(f"v{steps:<3} loss {run.losses[-1]:.4f}   worker vs worker: iid {iid:6.3f}   by_label {non_iid:6.3f}")

# %% [markdown] fragment
# IID gradients stay similar (0.98 → 0.86: they drift apart slowly as training goes on).
# By-label gradients are slightly *opposed* after the first few steps.

# %% [markdown]
# ## Does it matter for the run?
# Async applies each worker's gradient on its own; sync averages a round of them. Versions to reach
# loss 0.05 (4 workers, worker 3 four times slower):

# %%
for policy in ["sync", "async"]:
    for lr in [0.1, 0.5]:
        row = []
        for partition in ["iid", "by_label"]:
            run = aps.simulate(mlp, workers=4, policy=policy, lr=lr, steps=60,
                               compute_times=[1, 1, 1, 4], partition=partition, seed=0)
            row.append(f"{partition} {run.versions_to_reach(0.05)}")
        print(f"{policy:>5} lr={lr}: versions to reach 0.05:", ",  ".join(row))

# %% [markdown] fragment
# - **sync** does not care about the shards: the average of the four whole-shard gradients is the
#   full gradient either way.
# - **async** needs about 2× (lr 0.1) to 3× (lr 0.5) more versions with by-label shards: each
#   push moves the model towards one class, and the next push from another worker partly undoes it.
#
# So claim A is a claim about the *data*: it holds for IID shards, not for non-IID ones.

# %% [markdown]
# ## Claim B: more iterations, less time
# Least squares, 4 workers, worker 3 is a straggler (`compute_times=[1, 1, 1, 4]`).
# Sync waits for it at the barrier every round; async never waits.

# %%
problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)
straggler = [1, 1, 1, 4]
target = 0.01                       # the minimum of this loss is about 0.005
sync = aps.simulate(problem, workers=4, policy="sync", lr=0.1, steps=60, compute_times=straggler)
async_ = aps.simulate(problem, workers=4, policy="async", lr=0.1, steps=60, compute_times=straggler)

for name, run in [("sync", sync), ("async", async_)]:
    v = run.versions_to_reach(target)
    gradients = sum(1 for p in run.trace.pushes if p.applied_to < v)
    print(f"{name:>5}: versions {v:3d}   time {run.time_to_reach(target):5.1f}   gradients computed {gradients:3d}")
print(f"sync: idle time per worker {[round(t) for t in sync.trace.idle_time_per_worker()]} "
      f"of a run that lasted {sync.trace.duration:.0f}")
print(f"worker vs worker cosine at v0 (iid shards): {similarity(problem, problem.x0, 'iid')[0]:.3f}")

# %% [markdown] fragment
# At this small lr async needs *no more* versions than sync (23 versus 30): a sync version averages
# four gradients, but they are IID and similar (cosine 0.94, claim A), so the average buys
# little.
# In time async wins by 15×: workers 0–2 spend three quarters of the sync run waiting for worker 3.

# %% [markdown]
# ## The same runs, by version and by time

# %%
display(HTML(aps.widgets.loss_curves({"sync": sync, "async": async_}, by="version")))
display(HTML(aps.widgets.loss_curves({"sync": sync, "async": async_}, by="time")))

# %% [markdown]
# ## Where "more iterations" shows up: a larger lr
# The same race over a range of lr, with the straggler and without it.

# %%
def race(compute_times):
    best = {}
    print(f"compute_times={compute_times}     sync: versions  time     async: versions  time")
    for lr in [0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 1.5]:
        cells = []
        for policy, steps in [("sync", 300), ("async", 1200)]:
            run = aps.simulate(problem, workers=4, policy=policy, lr=lr, steps=steps,
                               compute_times=compute_times)
            t = run.time_to_reach(target)
            if t is None:
                cells.append(f"{'diverged' if run.diverged else 'not reached':>18}")
            else:
                cells.append(f"{run.versions_to_reach(target):11d} {t:6.1f}")
            if t is not None and t < best.get(policy, (math.inf,))[0]:
                best[policy] = (t, lr)
        print(f"  lr={lr:<4}        {cells[0]}        {cells[1]}")
    print("  best time:", ",  ".join(f"{p} {t:.1f} (lr {lr})" for p, (t, lr) in best.items()))


race([1, 1, 1, 4])
race([1, 1, 1, 1])

# %% [markdown] fragment
# - As the lr grows, async needs **more** versions than sync (lr 0.3: 21 versus 9), and from lr 0.5
#   on it diverges, while sync is fine up to lr 1.5. Staleness costs iterations, then stability.
# - Each policy at its best lr: with the straggler async still wins (6.0 versus 8.0) — claim B.
#   Without a straggler sync wins (2.0 versus 4.0): there is little waiting to save, and sync can
#   use the larger lr.

# %% [markdown]
# ## Why staleness needs a smaller lr
# The simplest problem: f(x) = x²/2 in one dimension, gradient x, start at x = 1.
# With equal compute times, N async workers push in turn, and each pulls right after its push:
# in steady state every push is N − 1 versions stale.

# %%
quad = aps.problems.Quadratic(curvature=[1.0], x0=[1.0])
run = aps.simulate(quad, workers=4, policy="async", lr=0.3, steps=400)
print("staleness histogram (count of pushes stale by 0, 1, 2, 3):", run.trace.staleness_histogram().tolist())
display(HTML(aps.widgets.histogram_svg(run.trace.staleness_histogram())))

# %% [markdown]
# ## Watch it with three workers
# Each compute bar is labelled with the version it read. Open at the first stale push, then press
# **▶** or drag the slider: from the second round on every push is stale by 2.

# %%
small = aps.simulate(quad, workers=3, policy="async", lr=0.3, steps=9)
timeline = aps.widgets.Timeline(small, frame="stale")
timeline

# %%
print(timeline.state)
timeline.frame = small.trace.events.index(small.trace.pushes[-1])   # the last push
print(timeline.state)

# %% [markdown] fragment
# So after the first round the server computes x<sub>t+1</sub> = x<sub>t</sub> − lr · x<sub>t−τ</sub>
# with τ = N − 1: the gradient it applies was measured τ versions ago.

# %% [markdown]
# ## Where does it diverge?
# Versions to reach loss 10⁻⁶ (`-`: not within 3000 versions, `diverges`: the run blew up).

# %%
lrs = [0.05, 0.1, 0.3, 0.6, 0.9, 1.2, 1.8]
print("workers  τ  " + "".join(f"lr={lr:<7}" for lr in lrs))
for workers in [1, 2, 4, 8]:
    cells = []
    for lr in lrs:
        run = aps.simulate(quad, workers=workers, policy="async", lr=lr, steps=3000)
        v = run.versions_to_reach(1e-6)
        cells.append("diverges" if run.diverged else "-" if v is None else str(v))
    print(f"{workers:7d} {workers - 1:2d}  " + "".join(f"{c:<10}" for c in cells))

# %% [markdown] fragment
# One worker (τ = 0) converges at every lr here, even 1.8 (the limit without delay is 2).
# Each extra worker lowers the limit: τ = 1 diverges from lr 1.2 on, τ = 3 from 0.6, τ = 7 already
# at 0.3. (At a small lr the delay even helps a little — lr 0.05: 128 versions alone, 107 with
# τ = 3 — because the stale gradient belongs to an older, larger x, so each step is a bit longer.)

# %% [markdown]
# ## The theory, checked against the simulator
# For x<sub>t+1</sub> = x<sub>t</sub> − a · x<sub>t−τ</sub> the known result is: it converges iff
# 0 < a < 2 sin(π / (2(2τ + 1))) (a classical result on delay difference equations).
# Here a = lr × curvature = lr. We find the largest lr that still
# converges by bisection, each test a 2000-version run.

# %%
def converges(workers, lr, policy="async", lr_schedule="constant"):
    run = aps.simulate(quad, workers=workers, policy=policy, lr=lr, lr_schedule=lr_schedule, steps=2000)
    return not run.diverged and run.losses[-1] < run.losses[0]


def largest_lr(workers, **kw):
    lo, hi = 0.0, 2.5
    for _ in range(12):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if converges(workers, mid, **kw) else (lo, mid)
    return lo


print("workers  τ   measured   2 sin(π/(2(2τ+1)))")
for workers in [1, 2, 3, 4, 8]:
    tau = workers - 1
    print(f"{workers:7d} {tau:2d}   {largest_lr(workers):8.3f}   {2 * math.sin(math.pi / (2 * (2 * tau + 1))):8.3f}")
print(f"sync, 4 workers: measured {largest_lr(4, policy='sync'):.3f}")

# %% [markdown] fragment
# The simulator agrees with the formula to within about 0.001 (a finite run cannot tell
# "converges very slowly" from "diverges very slowly"). For large τ the limit is about
# π / (2τ + 1) = π / (2N − 1): **the usable lr falls like 1/N**.
# Sync keeps the limit 2 for any number of workers: its four gradients are all fresh.
#
# Why: between the moment a gradient is measured and the moment it lands, τ other steps have
# moved x. If lr · τ is of order 1, those steps already crossed the minimum, and the stale
# gradient then pushes further the wrong way; the overshoot grows every round.

# %% [markdown]
# ## The staleness-aware lr
# `lr_schedule="divide_by_staleness"` applies a push that is s versions stale with lr / (s + 1)
# (Zhang et al. 2016). At lr 0.6 with 4 workers plain async diverges on the quadratic:

# %%
for schedule in ["constant", "divide_by_staleness"]:
    run = aps.simulate(quad, workers=4, policy="async", lr=0.6, lr_schedule=schedule, steps=300)
    print(f"{schedule:>19}: diverged={run.diverged}  final loss {run.losses[-1]:.3g}")
print(f"largest lr with the divide_by_staleness schedule, 4 workers: "
      f"{largest_lr(4, lr_schedule='divide_by_staleness'):.3f}")

# %% [markdown] fragment
# With the schedule the usable lr is back to 1.78, near the no-delay limit 2. But be honest about
# why: here every push is stale by 3, so lr / (s + 1) is simply lr / 4 — the same as choosing a
# smaller constant lr (4 × 0.445 = 1.78).

# %% [markdown]
# ## Where the schedule does more than a smaller lr
# With a straggler the staleness varies from push to push: the fast workers' pushes (stale by 2
# or 3) get lr/3 or lr/4, the straggler's (mostly stale by 12) get lr/13. Least squares,
# `compute_times=[1, 1, 1, 4]`:

# %%
for lr, schedule in [(0.5, "constant"), (0.2, "constant"), (0.5, "divide_by_staleness")]:
    run = aps.simulate(problem, workers=4, policy="async", lr=lr, lr_schedule=schedule, steps=1200,
                       compute_times=straggler)
    t = run.time_to_reach(target)
    print(f"lr={lr} {schedule:>19}: " + ("diverged" if run.diverged else f"versions {run.versions_to_reach(target)}   time {t:.1f}"))
print("staleness histogram of the last run:", run.trace.staleness_histogram().tolist())

# %% [markdown] fragment
# lr 0.5 diverges with a constant lr; 0.2 was the best constant lr in the race above (time 6.0);
# the divide_by_staleness schedule at lr 0.5 gets there in 5.0. A modest gain, on this problem.

# %% [markdown]
# ## Try it yourself: first with fixed values
# `aps.compare` runs sync, async and ssp with the same settings (the Playground's last
# worker is the straggler; `straggler=1.0` means no straggler).

# %%
runs, note = aps.compare(problem=quad, workers=4, lr=0.6, straggler=1.0, steps=300)
for name, r in runs.items():
    print(f"{name:>5}: diverged={r.diverged}  versions={len(r.losses) - 1}  "
          f"idle time={r.trace.idle_time_per_worker().sum():.0f}")

# %% [markdown] fragment
# Sync is fine at lr 0.6; async diverges at v193. ssp (notebook 04) never had to hold a worker
# back here (idle time 0: all workers are equally fast), so it ran exactly like async.

# %% [markdown]
# ## Then interactively
# Move **lr** and **workers** and find where async stops converging; switch **lr schedule** to
# `divide_by_staleness`; give the last worker a slowdown. (The quadratic has no data, so "sorted"
# shards only show a message.)

# %%
playground = aps.widgets.Playground(problem=quad, workers=4, lr=0.6, steps=300)
playground

# %%
print(playground.state)
playground.controls["lr_schedule"].value = "divide_by_staleness"   # what clicking it does
print(playground.state)

# %% [markdown] fragment
# With the divide_by_staleness schedule the message is empty: all three runs converge at lr 0.6.

# %% [markdown]
# ## The answer to the debate
# Both are partly right, each under its own condition.
#
# - **A, "the gradients are similar"**, holds for **IID** shards: the workers' gradients at the same
#   parameters have cosine 0.86–0.98 here. With **non-IID** shards (one class per worker) they are
#   unrelated or opposed, and async needs 2–3× more versions.
# - But A is about *workers*, not about *time*. Even when every worker sees the same function (the
#   quadratic), a gradient that is τ versions old makes the run diverge unless lr < 2 sin(π/(2(2τ+1))),
#   roughly π/(2τ+1). On the quadratic, async converges only with an lr scaled down with the number
#   of workers — by hand, or with `lr_schedule="divide_by_staleness"`.
# - **B, "more compute, more iterations"**, holds when **waiting is expensive**: with a straggler,
#   async needs more versions at a large lr, but reaches the target sooner. Without a straggler,
#   sync at its best lr was faster on this problem.

# %% [markdown]
# ## Check your understanding
# 1. Why does the shard partition not change a sync run with whole-shard gradients, but change an
#    async run?
# 2. With 3 async workers of equal speed, what is the staleness of a push in steady state, and what
#    is the largest lr at which the quadratic still converges?
# 3. In the race without a straggler, sync at its best lr beat async. Which number in the trace
#    (`idle_time_per_worker`, `staleness_histogram`) explains why async had little to gain?
# 4. When is `lr_schedule="divide_by_staleness"` the same as a smaller constant lr, and when is it
#    not?
#
# Next: [04 · Stale Synchronous Parallel (SSP)](04-stale-synchronous-parallel.ipynb). Exercises:
# [04 · the staleness-aware lr](../exercises/04-staleness-lr.ipynb) (where async diverges on the
# delayed quadratic) and [05 · gradient similarity](../exercises/05-gradient-similarity.ipynb)
# (IID versus non-IID).
