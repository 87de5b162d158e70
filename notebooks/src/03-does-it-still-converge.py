# %% [markdown]
# # 03 · Does it still converge?
#
# **Learning goals**
# - measure the claim "the gradients on each node are similar": the cosine similarity of two
#   workers' gradients, and how it depends on the split of the data, the batch size and the phase
#   of training;
# - measure the claim "we throw more compute at it and accept more iterations": time and gradients
#   to reach a target loss, sync versus async, each at its own best lr, over several seeds, with a
#   straggler and without;
# - see, on a 1-D quadratic, where a stale gradient makes the run diverge, and why staleness needs a
#   smaller lr;
# - use the staleness-aware lr (`lr_schedule="divide_by_staleness"`), and know what it buys
#   (a wider range of usable lr) and what it costs (more bias with non-IID shards and a straggler).

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
# This notebook measures both. Every sentence below that quotes a measured number is printed by the
# cell that measures it.

# %% [markdown]
# ## Claim A: are the workers' gradients similar?
# A small MLP on 4 classes, split across 4 workers. With `"iid"` shards every worker gets a shuffled
# quarter of the data; with `"by_label"` each worker gets the examples of one class.
# At the same parameters we compute each worker's gradient on its **whole shard**, and compare the
# directions with the cosine similarity (1: same direction, 0: unrelated, −1: opposite).

# %%
import math

import numpy as np
from IPython.display import HTML, Markdown, display

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


at_v0 = {}
for partition in ["iid", "by_label"]:
    pairwise, to_full = at_v0[partition] = similarity(mlp, mlp.x0, partition)
    print(f"{partition:>8} shards at v0: worker vs worker {pairwise:6.3f}   worker vs full gradient {to_full:6.3f}")
display(Markdown(
    f"With IID shards the four whole-shard gradients nearly coincide (cosine {at_v0['iid'][0]:.2f}): "
    f"any worker's gradient is a good stand-in for the full gradient. With one class per worker they "
    f"are close to unrelated ({at_v0['by_label'][0]:.2f}): each worker pulls the model towards its own class."))

# %% [markdown]
# ## Does that stay true during training?
# The same measurement at the parameters reached after a few full-gradient steps (one worker
# with all the data: the path every sync run with whole-shard gradients takes, whatever the shards).

# %%
during = {}
for steps in [0, 5, 20, 100]:
    run = aps.simulate(mlp, workers=1, policy="sync", lr=0.5, steps=steps)
    iid, _ = similarity(mlp, run.params, "iid")
    non_iid, _ = similarity(mlp, run.params, "by_label")
    during[steps] = iid, non_iid
    print(f"v{steps:<3} loss {run.losses[-1]:.4f}   worker vs worker: iid {iid:6.3f}   by_label {non_iid:6.3f}")
display(Markdown(
    f"Whole-shard IID gradients stay similar ({during[0][0]:.2f} at v0, {during[100][0]:.2f} at v100: "
    f"they drift apart slowly as the full gradient shrinks). By-label gradients go from "
    f"{during[0][1]:.2f} to {during[100][1]:.2f}: unrelated, then slightly opposed."))

# %% [markdown]
# ## With minibatches: split × batch size × phase
# Every run above used whole-shard gradients (`batch_size=None`): the only difference between two
# workers was their data. Real workers compute on **minibatches**, and the sampling noise is a
# second source of difference. Logistic regression (2048 examples, 2 workers), the cosine between
# one minibatch gradient of worker 0 and one of worker 1 (`"by_label"`: each worker holds one of
# the two classes), averaged over 200 draws, at three phases
# of full-gradient descent: v0, v20, and v3000 (near the optimum: the full gradient's norm is printed).

# %%
logistic = aps.problems.Logistic(n=2048, dim=10, seed=0)
phases, w = {}, logistic.x0.copy()
for v in range(3001):
    if v in (0, 20, 3000):
        phases[f"v{v}"] = w.copy()
    w = w - 1.0 * logistic.gradient(w)

batches = [8, 32, 512, None]
draws = np.random.default_rng(0)
cos_table = {}
print("share of class 1 in each worker's shard:",
      {split: [round(float(logistic.labels[s].mean()), 3) for s in logistic.shards(2, split, seed=0)]
       for split in ["iid", "by_label"]})
print("split      phase   |full grad|  " + "".join(f"batch {b or 'shard':<6}" for b in batches))
for split in ["iid", "by_label"]:
    shard0, shard1 = logistic.shards(2, split, seed=0)
    for phase, params in phases.items():
        row = []
        for b in batches:
            if b is None:
                row.append(cosine(logistic.gradient(params, shard0), logistic.gradient(params, shard1)))
            else:
                row.append(np.mean([cosine(logistic.gradient(params, draws.choice(shard0, b, replace=False)),
                                           logistic.gradient(params, draws.choice(shard1, b, replace=False)))
                                    for _ in range(200)]))
        cos_table[split, phase] = row
        print(f"{split:<9} {phase:<6}  {np.linalg.norm(logistic.gradient(params)):9.1e}   "
              + "".join(f"{c:<12.2f}" for c in row))

iid = {phase: cos_table["iid", phase] for phase in phases}
display(Markdown(
    f"- **Batch size.** With IID shards at v0 the cosine rises from {iid['v0'][0]:.2f} (batch 8) to "
    f"{iid['v0'][1]:.2f} (32) and {iid['v0'][2]:.2f} (512): a small minibatch gradient is mostly noise.\n"
    f"- **Phase.** At v20 the same batches give {iid['v20'][0]:.2f} / {iid['v20'][1]:.2f} / "
    f"{iid['v20'][2]:.2f}, and near the optimum {iid['v3000'][0]:.2f} / {iid['v3000'][1]:.2f} / "
    f"{iid['v3000'][2]:.2f}: as the full gradient vanishes, what is left is sampling noise. The two "
    f"whole-shard gradients are then exactly opposed ({iid['v3000'][3]:.2f}), since they sum to the "
    f"full gradient, ≈ 0.\n"
    f"- **Split.** Here one class per worker changes little at v0 ({cos_table['by_label', 'v0'][3]:.2f} "
    f"whole-shard): both classes pull the weights the same way from 0. On the MLP above it made the "
    f"gradients unrelated. How much the split matters depends on the model and the data."))

# %% [markdown] fragment
# So "the gradients are similar" depends on the split, the batch size and the phase of training:
# with small minibatches, or near the optimum, two workers' gradients are nearly unrelated even
# with IID data, and async SGD is still proven to converge there (with an lr small enough for the
# noise and the delay). The proofs do not assume similar gradients:
# Hogwild! (Recht et al. 2011) and asynchronous SGD for non-convex problems (Lian et al. 2015)
# assume that each gradient is an **unbiased estimate** of the full gradient with bounded
# variance, that the delay is bounded, and that the lr is small enough for that delay (Hogwild!
# also assumes sparse updates). Similarity decides how much a stale or noisy step is worth (speed),
# not whether the run converges. The unbiasedness assumption is what non-IID shards break: a worker
# that only sees class 0 gives a biased estimate (last section).

# %% [markdown]
# ## Does it matter for the run?
# Two effects can hurt async: **non-IID shards** (each push moves the model towards one class) and a
# **straggler** (worker 3, four times slower, pushes a quarter as often, so *its* class is
# under-sampled). We separate them: async, versions to reach loss 0.05, each combination.
# (Sync does not care about the shards: with whole-shard gradients the average of a round is the
# full gradient whatever the split.)

# %%
versions = {}
for lr in [0.1, 0.5]:
    row = []
    for partition in ["iid", "by_label"]:
        for name, times in [("no straggler", [1, 1, 1, 1]), ("straggler", [1, 1, 1, 4])]:
            run = aps.simulate(mlp, workers=4, policy="async", lr=lr, steps=80,
                               compute_times=times, partition=partition, seed=0)
            versions[lr, partition, name] = v = run.versions_to_reach(0.05)
            row.append(f"{partition}, {name}: {v}")
    print(f"async lr={lr}: versions to reach 0.05:  " + ",  ".join(row))
v = versions
display(Markdown(
    f"- **Non-IID alone** (no straggler): {v[0.1, 'iid', 'no straggler']} → "
    f"{v[0.1, 'by_label', 'no straggler']} versions at lr 0.1, {v[0.5, 'iid', 'no straggler']} → "
    f"{v[0.5, 'by_label', 'no straggler']} at lr 0.5.\n"
    f"- **Straggler alone** (IID): {v[0.1, 'iid', 'no straggler']} → {v[0.1, 'iid', 'straggler']} "
    f"at lr 0.1, {v[0.5, 'iid', 'no straggler']} → {v[0.5, 'iid', 'straggler']} at lr 0.5: with IID "
    f"shards it does not matter whose gradient arrives.\n"
    f"- **Both**: {v[0.1, 'by_label', 'straggler']} at lr 0.1, {v[0.5, 'by_label', 'straggler']} at "
    f"lr 0.5. The cost comes mostly from the combination: non-IID shards *and* one class pushed less "
    f"often than the others."))

# %% [markdown]
# ## Claim B: more iterations, less time
# Least squares, 4 workers, with a straggler (`compute_times=[1, 1, 1, 4]`) and without. To compare
# two policies fairly, each gets **its own best lr** from the same small sweep, and every setting runs
# with 10 seeds: `jitter=0.3` makes each gradient's compute time random (lognormal), so the seeds
# differ. Time to reach loss 0.01 (just above the minimum of this loss, printed below): median [min–max] over
# the seeds, or how many seeds reached it within the run (60 sync rounds, 240 async versions).

# %%
problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)
target = 0.01
LRS = [0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 1.5]
SEEDS = range(10)
SCENARIOS = {"straggler": [1, 1, 1, 4], "no straggler": [1, 1, 1, 1]}


def race_runs(policy, lr, compute_times, **kw):
    steps = 60 if policy == "sync" else 240
    return [aps.simulate(problem, workers=4, policy=policy, lr=lr, steps=steps, compute_times=compute_times,
                         jitter=0.3, seed=seed, **kw) for seed in SEEDS]


def reached(runs):
    times = [r.time_to_reach(target) for r in runs]
    return np.array([math.inf if t is None else t for t in times])


def spread(values, fmt="5.1f"):
    values = np.asarray(values)
    if not np.all(np.isfinite(values)):
        return f"{'reached ' + str(int(np.isfinite(values).sum())) + '/' + str(values.size):>19}"
    return f"{np.median(values):{fmt}} [{values.min():{fmt}}–{values.max():{fmt}}]"


def gradients_to_target(run):
    v = run.versions_to_reach(target)
    return sum(1 for p in run.trace.pushes if p.applied_to < v)


print(f"minimum of this loss: {problem.loss(np.linalg.lstsq(problem.A, problem.b, rcond=None)[0]):.4f}")
race, best = {}, {}
for scenario, times in SCENARIOS.items():
    print(f"{scenario} {times}:   sync time           async time")
    for lr in LRS:
        for policy in ["sync", "async"]:
            race[scenario, policy, lr] = race_runs(policy, lr, times)
        print(f"  lr={lr:<4}  " + "   ".join(spread(reached(race[scenario, p, lr])) for p in ["sync", "async"]))
    for policy in ["sync", "async"]:
        best[scenario, policy] = min(LRS, key=lambda lr: np.median(reached(race[scenario, policy, lr])))
    print("  best lr (median time): " + ",  ".join(f"{p} {best[scenario, p]}" for p in ["sync", "async"]))

# %% [markdown]
# At each policy's best lr, per seed: the speedup of async (sync time / async time; > 1: async is
# faster) and the gradients computed before the target (a sync version costs 4 gradients, one per
# worker; an async version costs 1, so versions are not comparable across the two).

# %%
speedup = {}
for scenario in SCENARIOS:
    sync_runs = race[scenario, "sync", best[scenario, "sync"]]
    async_runs = race[scenario, "async", best[scenario, "async"]]
    speedup[scenario] = reached(sync_runs) / reached(async_runs)
    same_lr = reached(race[scenario, "sync", 0.1]) / reached(race[scenario, "async", 0.1])
    speedup[scenario, "lr 0.1"] = same_lr
    print(f"{scenario:>12}: speedup of async {spread(speedup[scenario], '.2f')}   "
          f"(both at lr 0.1: {spread(same_lr, '.1f')})   gradients: "
          f"sync {spread([gradients_to_target(r) for r in sync_runs], '.0f')}, "
          f"async {spread([gradients_to_target(r) for r in async_runs], '.0f')}")
idle = race["straggler", "sync", best["straggler", "sync"]][0].trace
idle_share = idle.idle_time_per_worker()[:3].sum() / (3 * idle.duration)
print(f"sync with the straggler (seed 0, {len(idle.pushes) // 4} rounds): idle time per worker "
      f"{[round(t) for t in idle.idle_time_per_worker()]} of a run that lasted {idle.duration:.0f}")
eigenvalues = np.linalg.eigvalsh(problem.A.T @ problem.A / problem.n)
print(f"Hessian eigenvalues of this loss: {eigenvalues.min():.2f} to {eigenvalues.max():.2f}")

s, n = speedup["straggler"], speedup["no straggler"]
display(Markdown(
    f"- At the **same lr 0.1** async looked {np.median(speedup['straggler', 'lr 0.1']):.0f}× faster "
    f"with the straggler and still {np.median(speedup['no straggler', 'lr 0.1']):.0f}× faster without "
    f"one: most of that gap is not waiting. A sync step averages four gradients but takes one step of "
    f"size lr, so at lr 0.1 sync is far below its best lr ({best['straggler', 'sync']}); an async "
    f"server takes four steps of size lr for the same four gradients.\n"
    f"- At **each policy's best lr** (sync {best['straggler', 'sync']}, async {best['straggler', 'async']}), "
    f"with the straggler async is faster by {np.median(s):.2f}× (median; "
    f"{s.min():.2f}–{s.max():.2f} over {s.size} seeds; async faster in {int((s > 1).sum())} of them): "
    f"workers 0–2 of the sync run spend {idle_share:.0%} of it waiting (seed 0). Without a straggler the ranking "
    f"flips: {np.median(n):.2f}× ({n.min():.2f}–{n.max():.2f}; async faster in {int((n > 1).sum())}), "
    f"sync is faster. This loss is well conditioned (Hessian eigenvalues "
    f"{eigenvalues.min():.2f}–{eigenvalues.max():.2f}), so sync at lr {best['straggler', 'sync']} needs "
    f"very few rounds; a worse-conditioned problem would need more, and the numbers would move.\n"
    f"- Async computes more gradients to get there, and gets them sooner: that is claim B. It holds "
    f"when waiting is expensive, here when one worker is four times slower."))

# %% [markdown]
# ## The same runs, by time
# Seed 0, each policy at its best lr, with the straggler. (A plot by version would put one sync
# version, four gradients, next to one async version, one gradient.)

# %%
sync = race["straggler", "sync", best["straggler", "sync"]][0]
async_ = race["straggler", "async", best["straggler", "async"]][0]
display(HTML(aps.widgets.loss_curves({"sync": sync, "async": async_}, by="time")))

# %% [markdown] fragment
# The sweep also shows what staleness costs: async stops reaching the target at a smaller lr than
# sync (the tables above, "reached 0/10"). The next sections explain why.

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
grid = {}
print("workers  τ  " + "".join(f"lr={lr:<7}" for lr in lrs))
for workers in [1, 2, 4, 8]:
    cells = []
    for lr in lrs:
        run = aps.simulate(quad, workers=workers, policy="async", lr=lr, steps=3000)
        v = run.versions_to_reach(1e-6)
        grid[workers, lr] = "diverges" if run.diverged else "-" if v is None else v
        cells.append(str(grid[workers, lr]))
    print(f"{workers:7d} {workers - 1:2d}  " + "".join(f"{c:<10}" for c in cells))


def first_divergent(workers):
    return next((lr for lr in lrs if grid[workers, lr] == "diverges"), None)


display(Markdown(
    (f"One worker (τ = 0) converges at every lr here, even {lrs[-1]} " if first_divergent(1) is None else
     f"One worker (τ = 0) diverges from lr {first_divergent(1)} on ")
    + f"(the limit without delay is 2). Each extra worker lowers the limit: τ = 1 diverges from lr {first_divergent(2)} on, "
    f"τ = 3 from {first_divergent(4)}, τ = 7 already at {first_divergent(8)}. (At a small lr the delay "
    f"even helps a little — lr 0.05: {grid[1, 0.05]} versions alone, {grid[4, 0.05]} with τ = 3 — "
    f"because the stale gradient belongs to an older, larger x, so each step is a bit longer.)"))

# %% [markdown]
# ## The theory, checked against the simulator
# For the delay equation x<sub>t+1</sub> = x<sub>t</sub> − a · x<sub>t−τ</sub> the classical
# result (Levin & May 1976; Kuruklis 1994) is: it converges iff
# 0 < a < 2 sin(π / (2(2τ + 1))) (written there as 2 cos(τπ / (2τ + 1)), the same number).
# On a quadratic ½ xᵀHx the τ-delayed gradient step x<sub>t+1</sub> = x<sub>t</sub> − lr · H x<sub>t−τ</sub>
# splits into one such equation per eigenvalue λ of H, with a = lr · λ; the largest, a = lr · λ<sub>max</sub>,
# sets the limit. Here H = 1, so a = lr. We find the largest lr that still converges by bisection,
# each test a 2000-version run.

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


gaps = []
print("workers  τ   measured   2 sin(π/(2(2τ+1)))")
for workers in [1, 2, 3, 4, 8]:
    tau = workers - 1
    measured, theory = largest_lr(workers), 2 * math.sin(math.pi / (2 * (2 * tau + 1)))
    gaps.append(abs(measured - theory))
    print(f"{workers:7d} {tau:2d}   {measured:8.3f}   {theory:8.3f}")
sync_limit = largest_lr(4, policy="sync")
print(f"sync, 4 workers: measured {sync_limit:.3f}")
display(Markdown(
    f"The simulator agrees with the formula to within {max(gaps):.4f}; the bisection's resolution is "
    f"{2.5 / 2 ** 12:.4f} (and a finite run cannot tell \"converges very slowly\" from \"diverges very "
    f"slowly\"). For large τ the limit is about π / (2τ + 1) = π / (2N − 1): **the usable lr falls "
    f"like 1/N**. Sync with 4 workers keeps the no-delay limit ({sync_limit:.3f} measured, 2 in "
    f"theory): its gradients are all fresh, whatever the number of workers."))

# %% [markdown] fragment
# Why: between the moment a gradient is measured and the moment it lands, τ other steps have
# moved x. If lr · τ is of order 1, those steps already crossed the minimum, and the stale
# gradient then pushes further the wrong way; the overshoot grows every round.

# %% [markdown]
# ## The staleness-aware lr
# `lr_schedule="divide_by_staleness"` applies a push that is s versions stale with lr / (s + 1),
# using each push's own staleness. This is the idea of Zhang et al. (2016), not their exact rule:
# they use α₀ / τ for a gradient τ ≥ 1 versions stale (α₀ when τ = 0); lr / (s + 1) is the shifted
# variant, which also halves a push stale by 1. At lr 0.6 with 4 workers plain async diverges on
# the quadratic:

# %%
for schedule in ["constant", "divide_by_staleness"]:
    run = aps.simulate(quad, workers=4, policy="async", lr=0.6, lr_schedule=schedule, steps=300)
    print(f"{schedule:>19}: diverged={run.diverged}  final loss {run.losses[-1]:.3g}")
with_schedule, plain = largest_lr(4, lr_schedule="divide_by_staleness"), largest_lr(4)
print(f"largest lr with the divide_by_staleness schedule, 4 workers: {with_schedule:.3f}")
display(Markdown(
    f"With the schedule the usable lr is {with_schedule:.2f}, near the no-delay limit 2. But here every "
    f"push is stale by 3, so lr / (s + 1) is simply lr / 4: the same as choosing a smaller constant "
    f"lr (4 × {plain:.3f} = {4 * plain:.2f})."))

# %% [markdown]
# ## What the schedule buys: a wider range of lr
# With a straggler the staleness varies from push to push, so the schedule is not a constant
# rescaling any more. Is it *faster*? That depends on the lr grid one compares on. What it does
# reliably is make the run **robust to the choice of lr**. Least squares, async, straggler,
# 10 seeds with `jitter=0.3`: time to reach 0.01, median [min–max], for each lr.

# %%
SWEEP = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0]
robust = {}
print("  lr      constant                divide_by_staleness")
for lr in SWEEP:
    for schedule in ["constant", "divide_by_staleness"]:
        robust[schedule, lr] = reached(race_runs("async", lr, SCENARIOS["straggler"], lr_schedule=schedule))
    print(f"  {lr:<5} " + "   ".join(spread(robust[s, lr]) for s in ["constant", "divide_by_staleness"]))
print("staleness histogram (seed 0, lr 0.5, divide_by_staleness):",
      race_runs("async", 0.5, SCENARIOS["straggler"], lr_schedule="divide_by_staleness")[0]
      .trace.staleness_histogram().tolist())


def usable(schedule):
    """The lrs of the sweep at which every seed reaches the target."""
    return [lr for lr in SWEEP if np.all(np.isfinite(robust[schedule, lr]))]


def best_time(schedule):
    lr = min(SWEEP, key=lambda lr: np.median(robust[schedule, lr]))
    return lr, np.median(robust[schedule, lr])


c, d = usable("constant"), usable("divide_by_staleness")
display(Markdown(
    f"Every seed reaches the target for lr {c[0]}–{c[-1]} with a constant lr ({len(c)} of {len(SWEEP)} "
    f"values) and for lr {d[0]}–{d[-1]} with the schedule ({len(d)} of {len(SWEEP)}): a too-large lr is "
    f"damped on exactly the pushes that are most stale, so a wider range of lr works. The price: it "
    f"shrinks every push, so at a small lr it is slower (lr {SWEEP[0]}: {np.median(robust['divide_by_staleness', SWEEP[0]]):.1f} "
    f"versus {np.median(robust['constant', SWEEP[0]]):.1f}), and its lr must be chosen larger. The best median "
    f"times on this grid: constant {best_time('constant')[1]:.1f} at lr {best_time('constant')[0]}, "
    f"schedule {best_time('divide_by_staleness')[1]:.1f} at lr {best_time('divide_by_staleness')[0]}. "
    f"That is one problem, one grid and one straggler; the range of usable lr is the claim we make, "
    f"not a speedup."))

# %% [markdown]
# ## A caveat: non-IID shards and a straggler bias the result
# With whole-shard gradients, async settles (up to a small cycle that shrinks with the lr) where
# the steps it applies cancel over a round of pushes: each worker's gradient counts in proportion
# to how often it pushes times the lr its pushes get, so a worker that pushes a quarter as often
# counts a quarter as much. If the shards differ, that point is not the full-data optimum w\*. The schedule
# gives the straggler's pushes (the most stale) an even smaller lr, so it should make that bias
# worse. We measure it on a noisier least-squares problem (`noise=1.0`), whose `"sorted"` shards
# (sorted by the target) have clearly different optima: the distance of the final parameters from
# w\* after 800 versions, 10 seeds, at lr 0.05 constant and lr 0.2 with the schedule (so the
# fast workers' pushes, mostly stale by 1 to 3 as in the histogram above, get a similar step). Then, to separate bias from noise, the
# same settings without jitter at two lrs: noise shrinks with the lr, bias does not.

# %%
noisy = aps.problems.LeastSquares(n=512, dim=10, noise=1.0, seed=0)
w_star = np.linalg.lstsq(noisy.A, noisy.b, rcond=None)[0]
for split in ["iid", "sorted"]:
    shard_optima = [np.linalg.lstsq(noisy.A[s], noisy.b[s], rcond=None)[0] for s in noisy.shards(4, split, seed=0)]
    print(f"{split:>6} shards: each shard's own optimum is at distance "
          f"{[round(float(np.linalg.norm(w - w_star)), 2) for w in shard_optima]} from w*")

bias = {}
print("shards  compute_times     constant lr 0.05        divide_by_staleness lr 0.2")
for split, times in [("iid", [1, 1, 1, 4]), ("sorted", [1, 1, 1, 1]), ("sorted", [1, 1, 1, 4])]:
    for schedule, lr in [("constant", 0.05), ("divide_by_staleness", 0.2)]:
        runs = [aps.simulate(noisy, workers=4, policy="async", lr=lr, lr_schedule=schedule, steps=800,
                             compute_times=times, jitter=0.3, partition=split, seed=seed) for seed in SEEDS]
        bias[split, tuple(times), schedule] = [np.linalg.norm(r.params - w_star) for r in runs]
    print(f"{split:<7} {str(times):<14}" + "".join(
        f"{spread(bias[split, tuple(times), s], '.3f'):>26}" for s in ["constant", "divide_by_staleness"]))

print("without jitter (one run each), at two lrs per schedule:")
settled = {}
for split, times in [("iid", [1, 1, 1, 4]), ("sorted", [1, 1, 1, 1]), ("sorted", [1, 1, 1, 4])]:
    for schedule, lr, steps in [("constant", 0.05, 800), ("constant", 0.02, 2000),
                                ("divide_by_staleness", 0.2, 800), ("divide_by_staleness", 0.08, 2000)]:
        r = aps.simulate(noisy, workers=4, policy="async", lr=lr, lr_schedule=schedule, steps=steps,
                         compute_times=times, partition=split)
        settled[split, tuple(times), schedule, lr] = np.linalg.norm(r.params - w_star)
    print(f"{split:<7} {str(times):<14}" + "".join(
        f"   {s} lr {lr}: {settled[split, tuple(times), s, lr]:.3f}"
        for s, lr in [("constant", 0.05), ("constant", 0.02), ("divide_by_staleness", 0.2), ("divide_by_staleness", 0.08)]))

med = {key: np.median(value) for key, value in bias.items()}
z = settled
display(Markdown(
    f"- Over the 10 seeds, median distance from w\\* (constant / schedule): sorted shards without a "
    f"straggler {med['sorted', (1, 1, 1, 1), 'constant']:.3f} / {med['sorted', (1, 1, 1, 1), 'divide_by_staleness']:.3f}; "
    f"IID shards with the straggler {med['iid', (1, 1, 1, 4), 'constant']:.3f} / "
    f"{med['iid', (1, 1, 1, 4), 'divide_by_staleness']:.3f}; sorted shards with the straggler "
    f"{med['sorted', (1, 1, 1, 4), 'constant']:.3f} / {med['sorted', (1, 1, 1, 4), 'divide_by_staleness']:.3f}.\n"
    f"- Part of that is noise from the jitter and from the step size. Without jitter, a smaller lr "
    f"shrinks the distance when nothing biases the run (sorted, no straggler: "
    f"{z['sorted', (1, 1, 1, 1), 'constant', 0.05]:.3f} → {z['sorted', (1, 1, 1, 1), 'constant', 0.02]:.3f}), "
    f"but not the bias (sorted, straggler: constant {z['sorted', (1, 1, 1, 4), 'constant', 0.05]:.3f} → "
    f"{z['sorted', (1, 1, 1, 4), 'constant', 0.02]:.3f}, schedule "
    f"{z['sorted', (1, 1, 1, 4), 'divide_by_staleness', 0.2]:.3f} → "
    f"{z['sorted', (1, 1, 1, 4), 'divide_by_staleness', 0.08]:.3f}).\n"
    f"- So non-IID shards with a straggler make async settle away from the full-data optimum, and the "
    f"staleness-aware lr, which gives the straggler's pushes an even smaller share, moves it further. "
    f"(Even IID shards of 128 examples have optima of their own, hence the smaller bias in the IID row.)"))

# %% [markdown]
# ## Try it yourself: first with fixed values
# `aps.compare` runs sync, async and ssp with the same settings (the Playground's last
# worker is the straggler; `straggler=1.0` means no straggler).

# %%
runs, note = aps.compare(problem=quad, workers=4, lr=0.6, straggler=1.0, steps=300)
for name, r in runs.items():
    print(f"{name:>5}: diverged={r.diverged}  versions={len(r.losses) - 1}  "
          f"idle time={r.trace.idle_time_per_worker().sum():.0f}")
display(Markdown(
    f"Sync is fine at lr 0.6; async diverges at v{len(runs['async'].losses) - 1}. ssp (notebook 04) "
    f"never had to hold a worker back here (idle time {runs['ssp'].trace.idle_time_per_worker().sum():.0f}: "
    f"all workers are equally fast), so it ran exactly like async."))

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

# %%
display(Markdown(
    f"- **A, \"the gradients are similar\"**, is a statement about the split, the batch size and the "
    f"phase: whole-shard IID gradients had cosine {during[100][0]:.2f}–{at_v0['iid'][0]:.2f} on the MLP, "
    f"one class per worker {at_v0['by_label'][0]:.2f}; two IID minibatches of 8 only "
    f"{iid['v0'][0]:.2f} at v0 and {iid['v3000'][0]:.2f} near the optimum. The convergence analyses of "
    f"async SGD do not assume it (Recht et al. 2011; Lian et al. 2015): they assume unbiased gradients "
    f"with bounded variance, a bounded delay and an lr small enough for that delay.\n"
    f"- A is about *workers*, not about *time*. Even when every worker sees the same function (the "
    f"quadratic), a gradient τ versions old makes the run diverge unless lr · λ<sub>max</sub> < "
    f"2 sin(π/(2(2τ+1))) ≈ π/(2τ+1) (Levin & May 1976): the lr must shrink with the number of workers, "
    f"by hand or with `lr_schedule=\"divide_by_staleness\"` (the rule of Zhang et al. 2016 in its "
    f"lr / (s + 1) form). Measured here, its gain is a wider range of usable lr, and its cost is more "
    f"bias with non-IID shards and a straggler.\n"
    f"- **B, \"more compute, more iterations\"**, holds when **waiting is expensive**: each policy at "
    f"its best lr, async computed more gradients and reached the target {np.median(speedup['straggler']):.2f}× "
    f"sooner (median of 10 seeds) with the straggler; without one sync was faster (async's speedup "
    f"{np.median(speedup['no straggler']):.2f}×). Comparing both at one lr overstates async's "
    f"advantage, because sync's best lr is larger."))

# %% [markdown]
# ## References
# - S. A. Levin, R. M. May (1976). A note on difference-delay equations. *Theoretical Population
#   Biology* 9, 178–187. (Stability of x<sub>t+1</sub> = x<sub>t</sub> − a x<sub>t−τ</sub>; see also
#   S. A. Kuruklis (1994), *J. Math. Anal. Appl.* 188, 719–731.)
# - B. Recht, C. Ré, S. Wright, F. Niu (2011). Hogwild!: A lock-free approach to parallelizing
#   stochastic gradient descent. *NeurIPS*.
# - X. Lian, Y. Huang, Y. Li, J. Liu (2015). Asynchronous parallel stochastic gradient for nonconvex
#   optimization. *NeurIPS*.
# - W. Zhang, S. Gupta, X. Lian, J. Liu (2016). Staleness-aware async-SGD for distributed deep
#   learning. *IJCAI*.

# %% [markdown]
# ## Check your understanding
# 1. Why does the shard partition not change a sync run with whole-shard gradients, but change an
#    async run? Which of the two effects in "Does it matter for the run?" needs the other?
# 2. Why does the cosine between two IID minibatch gradients fall towards 0 near the optimum, while
#    the cosine between the two whole-shard gradients goes to −1?
# 3. With 3 async workers of equal speed, what is the staleness of a push in steady state, and what
#    is the largest lr at which the quadratic still converges?
# 4. Compared at one lr, async looked many times faster than sync even without a straggler. Why is
#    that comparison unfair, and what does the race at each policy's best lr show instead?
# 5. When is `lr_schedule="divide_by_staleness"` the same as a smaller constant lr, and why does it
#    make the bias of non-IID shards with a straggler worse?
#
# <details><summary>Answers</summary>
#
# 1. A sync round averages one whole-shard gradient of every worker, and the mean of the shard
#    gradients is the full-data gradient whatever the split; async applies each worker's gradient
#    on its own, so a one-sided shard pulls the server its own way. The split costs most when a
#    straggler makes one shard's pushes rarer: the combined row costs more than either effect alone.
# 2. Near the optimum the full gradient is about 0. Two whole-shard gradients sum to it (twice the
#    full gradient, for two equal shards), so they are equal and opposite: cosine −1. A minibatch
#    gradient there is mostly sampling noise, and two independent noises are nearly orthogonal.
# 3. Stale by N − 1 = 2 versions (each of the other two pushes once between a pull and a push). On
#    the quadratic with curvature 1 it converges for lr < 2 sin(π/(2(2τ+1))) with τ = 2, that is
#    2 sin(π/10) ≈ 0.618 (the stability cell measures it).
# 4. A sync step averages four gradients into one step of size lr, so at an lr that suits async, sync
#    moves about four times too slowly; the fair race gives each policy its own best lr. Then async
#    wins only with the straggler (sync waits for it) and loses without one, as the ten-seed table
#    shows.
# 5. When every push has the same staleness s (equal workers in lockstep): then it is the constant
#    lr / (s + 1). With a straggler the stalest pushes are the straggler's, so dividing by the
#    staleness gives its shard even less weight than the push rate already does: the server settles
#    further towards the fast workers' data.
# </details>
#
# Next: [04 · Stale Synchronous Parallel (SSP)](04-stale-synchronous-parallel.ipynb). Exercises:
# [04 · the staleness-aware lr](../exercises/04-staleness-lr.ipynb) (where async diverges on the
# delayed quadratic) and [05 · gradient similarity](../exercises/05-gradient-similarity.ipynb)
# (IID versus non-IID).
