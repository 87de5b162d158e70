# %% [markdown]
# # 08b · Real digits: where the race stops holding, and claim A
#
# **Learning goals**
# - see where the straggler race of 08a stops holding: without a straggler, and with a very large lr;
# - compare IID with by-label shards under async, and find which digits suffer;
# - measure how similar two workers' gradients are, and see that it depends on the split of the
#   data, the batch size and the phase of training;
# - say what these measurements support about claim A, and what the theory of async SGD assumes
#   instead.
#
# Part 2 of 2, after [08a](08a-digits-race.ipynb). The setting is 08a's; the cell below rebuilds
# it, and tunes sync's and async's lr on the same tuning seed (08a's table, without ssp).

# %%
import copy
import math

import numpy as np
import torch
from IPython.display import Markdown, display

import asyncps as aps

SETTING = dict(workers=4, batch_size=32, compute_times=[1, 1, 1, 4], partition="iid")
PLAN = {"sync": dict(steps=100, loss_every=2), "async": dict(steps=390, loss_every=26)}
TARGET, SEEDS, GRID = 0.9, range(10), [0.1, 0.2, 0.4, 0.8, 1.6]
problems = {}


def digits(seed):
    if seed not in problems:
        problems[seed] = aps.problems.Digits(model="cnn", seed=seed)
    return problems[seed]


def race(policy, lr, seed, **changes):
    """One simulated run of `policy` on the digits of `seed` (08a's setting, unless changed)."""
    return aps.simulate(digits(seed), policy=policy, lr=lr, seed=seed,
                        **{**SETTING, **PLAN[policy], **changes})


def time_to(run, target=TARGET):
    """When the server first scored `target` test accuracy (None: not within the run)."""
    hit = np.flatnonzero(np.asarray(run.metrics["accuracy"]) >= target)
    return float(run.trace.version_times()[hit[0]]) if hit.size else None


def final_accuracy(run):
    accuracy = np.asarray(run.metrics["accuracy"])
    return float(accuracy[~np.isnan(accuracy)][-1])


def show(t):
    return "–" if t is None else f"{t:g}"


best = {}
print("tuning seed: time to 90 % (final accuracy)")
for policy in PLAN:
    tuning = [race(policy, lr, seed=100) for lr in GRID]
    times = [math.inf if time_to(run) is None else time_to(run) for run in tuning]
    best[policy] = GRID[int(np.argmin(times))]
    print(f"{policy:>5}  " + "".join(f"lr {lr}: {show(time_to(run))} ({final_accuracy(run):.2f})   "
                                     for lr, run in zip(GRID, tuning)) + f"→ lr {best[policy]}")
iid_async = [race("async", best["async"], seed) for seed in SEEDS]      # 08a's async runs, seeds 0–9
print(f"the CNN: {digits(0).dim} weights; {len(digits(0).y)} training images, {len(digits(0).y_test)} held out")

# %% [markdown] slide
# ## Where the result stops holding
# The ranking of 08a belongs to its setting: IID shards, minibatch 32, this non-convex CNN, one
# worker four times slower, simulated time with free communication. Two changes:
#
# - **No straggler.** Then sync loses nothing at the barrier, and the question is only whether four
#   averaged gradients per version beat four single-gradient, stale versions. Same seeds, the lrs
#   tuned above (not re-tuned), every worker 1 time unit per gradient, 110 time units each.
#
#   **Predict, then run.** In how many of the 10 seeds does async reach 90 % before sync now?

# %%
EVEN = {"sync": dict(steps=110, loss_every=8), "async": dict(steps=440, loss_every=32)}
even_times = {policy: [time_to(race(policy, best[policy], seed, compute_times=[1, 1, 1, 1],
                                    **EVEN[policy])) for seed in SEEDS]
              for policy in EVEN}
for policy, ts in even_times.items():
    values = [math.inf if t is None else t for t in ts]
    print(f"{policy:>5} (lr {best[policy]}): time to 90 % median {show(float(np.median(values)))}, "
          f"range {show(min(values))}–{show(max(values))}, "
          f"reached in {sum(t is not None for t in ts)}/10")
faster = sum(a is not None and (s is None or a < s)
             for a, s in zip(even_times["async"], even_times["sync"]))
print(f"without the straggler, async before sync in {faster} of 10 seeds")

# %% [markdown] fragment
# Compare this count with the one in 08a's straggler race: the advantage async had came from the
# time sync spent waiting, and with equal compute times (and free communication) sync does not
# wait at all.
# (With equal compute times the simulator runs the workers in lockstep — four pushes at every time
# unit — which real machines never do; `jitter=` breaks the lockstep.)
#
# - **A very large lr.** In the tuning table, look at the largest lrs: async, which applies each
#   gradient on its own, stale, stops reaching 90 % at a smaller lr than sync, which averages four
#   per step (08a's table shows the same for ssp). Part of that is staleness, which lowers the largest usable lr (notebook 03c
#   isolates it on a quadratic, where the limit can be computed exactly); part is that the same lr
#   is a different step: sync takes one step per four gradients. At such an lr the ranking is not
#   "async first" but "async does not get there".

# %% [markdown] slide
# ## IID against by-label shards
# Claim A depends on the data each worker sees. With `partition="by_label"` the training images are
# sorted by digit and cut into four: each worker sees a few digits only.

# %%
by_label = digits(0).shards(4, "by_label", seed=0)
for k, shard in enumerate(by_label):
    print(f"worker {k}: digits {sorted(set(digits(0).y[shard].tolist()))}, {len(shard)} images")

# %% [markdown] fragment
# The async race of 08a (its lr, seeds 0–9, the straggler), with by-label shards:

# %%
async_by_label = [race("async", best["async"], seed, partition="by_label") for seed in SEEDS]
for name, group in [("iid", iid_async), ("by_label", async_by_label)]:
    accuracy = [final_accuracy(run) for run in group]
    reached = sum(time_to(run) is not None for run in group)
    print(f"async, {name:>8} shards: final test accuracy median {np.median(accuracy):.3f}, "
          f"range {min(accuracy):.3f}–{max(accuracy):.3f}; reached 90 % in {reached}/10")

# %% [markdown] fragment
# Besides the dissimilar gradients there is a simpler mechanism to check. Each push moves the model
# along a minibatch gradient of one worker's shard, and worker 3 pushes a quarter as often as each
# other worker, with the stalest pushes. With IID shards that does not matter: every shard is a
# sample of the same digits. With by-label shards the straggler's digits get fewer updates than
# their share of the data. If that matters, the by-label runs do worst on the digits only worker 3
# holds — and the **control**, by-label shards without the straggler, does not.
#
# Two details decide whether the measurement means anything. The last version alone is a bad
# witness: with by-label shards each push drags the model towards one worker's digits, so the
# per-digit accuracy swings from version to version with whoever pushed last. So we average it
# over the last 26 versions (about two of the straggler's pushes). And with equal compute times
# and no jitter the simulator runs the workers in lockstep, in the same order every round; the
# runs of this comparison therefore all get `jitter=0.3`. Test accuracy on the digits only
# worker 3 holds and on the digits it never sees, medians over the 10 seeds (the IID runs, which
# learn every digit from every worker, show how hard the same digits are without the effect):

# %%
def correct(model, problem, params):
    """For each held-out image: does the model with `params` classify it right?"""
    torch.nn.utils.vector_to_parameters(torch.from_numpy(np.array(params)), model.parameters())
    with torch.no_grad():
        return model(torch.from_numpy(problem.X_test)).argmax(dim=1).numpy() == problem.y_test


def worker_3_digits(problem):
    """The digits only worker 3 holds in the by-label split, and the digits it never sees."""
    held = [set(problem.y[shard].tolist()) for shard in problem.shards(4, "by_label")]
    return sorted(held[3] - set().union(*held[:3])), sorted(set(range(10)) - held[3])


WINDOW = 26


def last_versions(seed, **changes):
    """08a's async race (jitter 0.3), keeping the parameters of its last WINDOW versions: a push
    rule that applies the plain step and keeps a copy near the end."""
    kept, steps = [], PLAN["async"]["steps"]

    def apply(params, version, grad, computed_on, lr):
        new = params - lr * grad
        if version + 1 > steps - WINDOW:
            kept.append(new.copy())
        return new, version + 1, version - computed_on
    race("async", best["async"], seed, apply=apply, jitter=0.3, **changes)
    return kept


def per_digit(seed, **changes):
    """(accuracy on worker 3's own digits, on the digits it never sees), averaged over the window."""
    problem, model = digits(seed), copy.deepcopy(digits(seed).model)
    groups = [np.isin(problem.y_test, labels) for labels in worker_3_digits(problem)]
    right = [correct(model, problem, params) for params in last_versions(seed, **changes)]
    return tuple(float(np.mean([r[group].mean() for r in right])) for group in groups)


print("worker 3 only, never worker 3 (seed 0):", *worker_3_digits(digits(0)))
CASES = {"iid, straggler": dict(partition="iid"),
         "by_label, straggler": dict(partition="by_label"),
         "by_label, no straggler": dict(partition="by_label", compute_times=[1, 1, 1, 1])}
digit_table = {}
print(f"{'async, jitter 0.3':26s}  worker 3's own digits   digits it never sees")
for name, changes in CASES.items():
    own, never = zip(*[per_digit(seed, **changes) for seed in SEEDS])
    digit_table[name] = own, never
    print(f"{name:26s}  {np.median(own):8.3f} [{min(own):.2f}–{max(own):.2f}]   "
          f"{np.median(never):8.3f} [{min(never):.2f}–{max(never):.2f}]")

# %%
straggler_own = np.median(digit_table["by_label, straggler"][0])
control_own = np.median(digit_table["by_label, no straggler"][0])
display(Markdown(
    f"With by-label shards and the straggler, worker 3's own digits reach **{straggler_own:.2f}** "
    f"(median over the last {WINDOW} versions and the seeds); without the straggler, the control, "
    f"**{control_own:.2f}**. "
    + f"With IID shards, the same digits reach {np.median(digit_table['iid, straggler'][0]):.2f}. "
    + ("Both ingredients cost: the split alone leaves worker 3's digits behind, and the straggler's "
       "fewer, staler pushes leave them further behind — the control supports the explanation."
       if straggler_own < control_own - 0.1 else
       "The control does not separate the two: the split alone leaves worker 3's digits about as "
       "far behind, so the push rates are not the explanation here.")))

# %% [markdown] slide
# ## How similar are two workers' gradients?
# At the same parameters, each worker computes a gradient on a minibatch of its own shard; we
# compare directions with the cosine similarity (1: same direction, 0: unrelated). Three
# comparisons, each averaged over 20 draws of minibatches and over all pairs of workers:
#
# - **same worker**: two minibatches of one worker's shard — how much minibatch noise alone
#   separates two gradients;
# - **two workers**: minibatches of two different shards;
# - **two whole shards**: each worker's gradient on its whole shard (no minibatch noise).
#
# At v0 and at a trained version (the end of the IID async run of seed 0).

# %%
def cosine(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def similarity(problem, params, partition, draws=20, batch_size=32, seed=0):
    shards = problem.shards(4, partition, seed=seed)
    rng = np.random.default_rng(seed)
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    same, two = [], []
    for _ in range(draws):
        g = [[problem.gradient(params, np.sort(rng.choice(s, batch_size, replace=False)), rng)
              for s in shards] for _ in range(2)]
        same += [cosine(g[0][k], g[1][k]) for k in range(4)]
        two += [cosine(g[0][i], g[0][j]) for i, j in pairs]
    whole = [problem.gradient(params, s, rng) for s in shards]
    return np.mean(same), np.mean(two), np.mean([cosine(whole[i], whole[j]) for i, j in pairs])


trained = iid_async[0].params
print(f"trained version: test accuracy {digits(0).metric(trained):.3f}")
print("                      same worker   two workers   two whole shards")
for phase, params in [("v0", digits(0).x0), ("trained", trained)]:
    for partition in ["iid", "by_label"]:
        same, two, whole = similarity(digits(0), params, partition)
        print(f"{phase:>7} {partition:>9}   {same:11.3f}   {two:11.3f}   {whole:16.3f}")

# %% [markdown] fragment
# Read the table above column by column, and compare rows:
# - **The batch.** With IID shards, two workers' gradients on their whole shards point roughly the
#   same way, and their minibatch gradients much less so: at a batch of 32, what separates two IID
#   workers' gradients is mostly minibatch noise, not the split. Even two minibatches of the *same*
#   worker are far from parallel — and plain SGD learns with such gradients.
# - **The split.** With by-label shards, two workers' gradients disagree even without minibatch
#   noise (the whole-shard column is much lower than with IID shards), while two minibatches of one
#   worker, drawn from its few digits, agree more than with IID shards.
# - **The phase.** The numbers at the trained version differ from those at v0, and not in the same
#   direction in every column: a measurement at v0 does not describe the whole run.
# - The IID "two workers" column also lies below "same worker": a shard of a few hundred images has
#   a mean gradient of its own (the whole-shard cosine is below 1), which two minibatches of one
#   shard share.

# %% [markdown] slide
# ## What this says about claim A
# - **A, "the gradients are similar"**, is not one fact: how similar two workers' gradients are
#   depends on the split (IID or by label), on the batch (minibatch or whole shard), and on the
#   phase of training. With by-label shards, async reached a lower accuracy and less reliably (the
#   range); whether the straggler's digits fall short because of its fewer, staler pushes is what
#   the control above (no straggler) tests.
# - Neither A nor identical gradients is what the theory of asynchronous SGD assumes. Hogwild!
#   (Recht et al. 2011) proves convergence of lock-free updates with bounded delay, for sparse
#   updates and a strongly convex objective. Lian et al. 2015 ("Asynchronous parallel stochastic
#   gradient for nonconvex optimization") prove, for smooth non-convex objectives, an ergodic
#   convergence rate O(1/√K) — that of serial SGD — with a linear speedup as long as the number of
#   workers, and with it the delay, is at most about √K for K iterations. They assume that each
#   stale gradient is an unbiased, bounded-variance estimate of the full gradient at the parameters
#   it was computed on: true when every worker samples from all the data, nearly true with IID
#   shards (a random quarter's gradient is close to the full one: the whole-shard column), far from
#   true with by-label shards. And by smoothness, a gradient τ versions old differs from a fresh
#   one by at most L (the Lipschitz constant of the gradient) times the distance the parameters
#   moved in those τ steps — at most lr × τ × the largest gradient norm. That is why a smaller lr,
#   or lr divided by the staleness (Zhang et al. 2016, "Staleness-aware async-SGD for distributed
#   deep learning"; `lr_schedule="divide_by_staleness"`), keeps the error of a stale step small.

# %% [markdown] fragment
# **What this notebook does not show.** One small model and dataset (6,090 weights, 1,348 training
# images); a small lr grid tuned on one seed, plain SGD without momentum or lr decay; one persistent
# straggler and free communication in simulated time (no jitter, no network, no server bottleneck);
# 90 % test accuracy as the only target (not the final
# accuracy a longer run reaches). Nor did we measure here how much a gradient changes between the
# version it was computed on and the version it lands on — the staleness half of claim A; notebook
# 03c measures it on least squares.

# %% [markdown] slide
# ## Check your understanding
# 1. In the similarity table, with IID shards, how far apart are the "two workers" and the "two
#    whole shards" columns? What does that tell you about where the differences between two
#    workers' gradients come from, and how do by-label shards change the answer?
# 2. With by-label shards, why do worker 3's digits suffer more than the others under async, and
#    would sync (which averages one gradient from each worker per version) have the same problem?
# 3. Run `similarity(digits(0), trained, "iid", batch_size=128)`: which columns move, and why?
#
# <details><summary>Answers</summary>
#
# 1. Far apart: with IID shards the whole-shard cosine is much higher than the two-workers one, so
#    what separates two IID workers' minibatch gradients is mostly minibatch noise, not the split.
#    With by-label shards the whole-shard cosine is low even without minibatch noise: the shards'
#    own gradients disagree, so the split itself is a source of difference.
# 2. Under async each push moves the model along one worker's shard, and worker 3 pushes a quarter
#    as often as each of the others, with the stalest pushes: the digits only it holds get the
#    fewest updates, and the other workers' pushes pull the model towards their own digits in
#    between. The control measures how much of it is the straggler's: without it, worker 3's digits
#    still fall behind the IID runs (the split alone costs), but less. Sync would not have this imbalance: each version averages one gradient from every
#    shard, so every digit keeps its share of the data (a minibatch gradient of all the data, at
#    the straggler's pace).
# 3. The minibatch columns ("same worker" and "two workers") rise: a minibatch gradient's variance
#    falls roughly as 1 / batch size (faster still, drawn without replacement from a shard of a few
#    hundred images), so each one lies closer to its shard's mean gradient. The whole-shard column does not depend on the batch size and does not move; by-label
#    shards would still disagree however large the batch.
# </details>
#
# Back to [08a · the race](08a-digits-race.ipynb). Assignments:
# [03a · gradient similarity](../exercises/03a-gradient-similarity.ipynb) (IID versus non-IID) and
# [03c · the staleness-aware lr](../exercises/03c-staleness-lr.ipynb).
#
# Next: [09 · Where asynchrony costs: bias, implicit momentum, and all-reduce](09-bias-momentum-allreduce.ipynb).
