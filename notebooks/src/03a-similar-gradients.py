# %% [markdown]
# # 03a · Does it still converge? Claim A: similar gradients
#
# **Learning goals**
# - state the two answers to "why does a stale update still converge?" (claim A: the gradients are
#   similar; claim B: more compute, more iterations);
# - measure claim A: the cosine similarity of two workers' gradients, and how it depends on the
#   split of the data, the batch size and the phase of training;
# - know what the convergence proofs of async SGD assume instead of similar gradients;
# - separate the two effects that hurt an async run: non-IID shards and a straggler.
#
# Lecture 03 comes in three parts: **03a** claim A (this notebook), **03b** claim B, **03c** why
# staleness needs a smaller lr.

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
# Notebooks 03a and 03b measure them, one each. Every sentence below that quotes a measured number is printed by the
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
#
# **Predict, then run.** With IID shards, are two minibatch gradients of 8 examples more or less
# similar than two whole-shard gradients? And near the optimum?

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
# noise and the delay). What the proofs do assume is similarity of two other kinds.
# Hogwild! (Recht et al. 2011) and asynchronous SGD for non-convex problems (Lian et al. 2015)
# assume that each gradient is an **unbiased estimate** of the full gradient with **bounded
# variance** — every worker's gradient is close to the full gradient on average, a similarity
# between workers that IID sampling provides and one-class shards do not; analyses of
# heterogeneous data add a bound on how far each shard's gradient is from the full one (Koloskova
# et al. 2022). And they use similarity **in time**: by smoothness, a gradient computed τ versions
# ago differs from the fresh one by at most L × (how far the parameters moved), at most
# L · lr · τ · G for gradients of norm at most G — which is why the lr must shrink with the delay
# (Mishchenko et al. 2022; notebook 03c). So claim A is half right: a small minibatch's cosine with
# another can be near 0 and the run still converges, but the stale gradient must be close to the
# fresh one and every worker's data close to all of it — where these fail, async ends elsewhere
# (last section; 03c and 09 measure where).

# %% [markdown]
# ## Does it matter for the run?
# Two effects can hurt async: **non-IID shards** (each push moves the model towards one class) and a
# **straggler** (worker 3, four times slower, pushes a quarter as often, so *its* class is
# under-sampled). We separate them: async, versions to reach loss 0.05, each combination, over
# 10 seeds (`jitter=0.3` makes every compute time random, so the order of pushes differs from seed
# to seed): median [min–max]. (Sync does not care about the shards: with whole-shard gradients the
# average of a round is the full gradient whatever the split.)

# %%
SEEDS = range(10)
COMBINATIONS = [("iid", "no straggler", [1, 1, 1, 1]), ("iid", "straggler", [1, 1, 1, 4]),
                ("by_label", "no straggler", [1, 1, 1, 1]), ("by_label", "straggler", [1, 1, 1, 4])]


def median_spread(values):
    values = np.array([math.inf if x is None else x for x in values])
    if not np.all(np.isfinite(values)):
        return f"reached {int(np.isfinite(values).sum())}/{values.size}"
    return f"{np.median(values):.0f} [{values.min():.0f}–{values.max():.0f}]"


versions = {}
for lr in [0.1, 0.5]:
    for partition, name, times in COMBINATIONS:
        versions[lr, partition, name] = [
            aps.simulate(mlp, workers=4, policy="async", lr=lr, steps=80, compute_times=times,
                         jitter=0.3, partition=partition, seed=seed).versions_to_reach(0.05)
            for seed in SEEDS]
    print(f"async lr={lr}: versions to reach 0.05: " + ",  ".join(
        f"{partition}, {name}: {median_spread(versions[lr, partition, name])}"
        for partition, name, _ in COMBINATIONS))
v = {key: median_spread(value) for key, value in versions.items()}
display(Markdown(
    f"- **Non-IID alone** (no straggler): {v[0.1, 'iid', 'no straggler']} → "
    f"{v[0.1, 'by_label', 'no straggler']} versions at lr 0.1, {v[0.5, 'iid', 'no straggler']} → "
    f"{v[0.5, 'by_label', 'no straggler']} at lr 0.5.\n"
    f"- **Straggler alone** (IID): {v[0.1, 'iid', 'no straggler']} → {v[0.1, 'iid', 'straggler']} "
    f"at lr 0.1, {v[0.5, 'iid', 'no straggler']} → {v[0.5, 'iid', 'straggler']} at lr 0.5: with IID "
    f"shards it hardly matters whose gradient arrives.\n"
    f"- **Both**: {v[0.1, 'by_label', 'straggler']} at lr 0.1, {v[0.5, 'by_label', 'straggler']} at "
    f"lr 0.5. The cost comes mostly from the combination: non-IID shards *and* one class pushed less "
    f"often than the others. (One MLP, whole-shard gradients; the 10 seeds vary the compute times.)"))

# %% [markdown]
# ## What claim A says, and what it does not

# %%
display(Markdown(
    f"- **\"The gradients are similar\"** is a statement about the split, the batch size and the "
    f"phase: whole-shard IID gradients had cosine {during[100][0]:.2f}–{at_v0['iid'][0]:.2f} on the MLP, "
    f"one class per worker {at_v0['by_label'][0]:.2f}; two IID minibatches of 8 only "
    f"{iid['v0'][0]:.2f} at v0 and {iid['v3000'][0]:.2f} near the optimum.\n"
    f"- The convergence analyses of async SGD do not need two workers' minibatch gradients to point "
    f"the same way, but they do assume similarity of two kinds: every worker's gradient is an "
    f"unbiased, bounded-variance (and, for non-IID shards, bounded-heterogeneity) estimate of the "
    f"full gradient (Lian et al. 2015; Koloskova et al. 2022), and a stale gradient stays close to "
    f"the fresh one because the lr is small for the delay (smoothness: at most L · lr · τ · G apart; "
    f"Mishchenko et al. 2022).\n"
    f"- What non-IID shards break is unbiasedness, and it costs most together with a straggler "
    f"(here {v[0.1, 'by_label', 'straggler']} versions against {v[0.1, 'iid', 'no straggler']} at "
    f"lr 0.1, median [min–max] of 10 seeds). Notebook 09 measures where such a run settles, and a fix."))

# %% [markdown]
# ## References
# - B. Recht, C. Ré, S. Wright, F. Niu (2011). Hogwild!: A lock-free approach to parallelizing
#   stochastic gradient descent. *NeurIPS*.
# - X. Lian, Y. Huang, Y. Li, J. Liu (2015). Asynchronous parallel stochastic gradient for nonconvex
#   optimization. *NeurIPS*.
# - A. Koloskova, S. U. Stich, M. Jaggi (2022). Sharper convergence guarantees for asynchronous SGD
#   for distributed and federated learning. *NeurIPS*.
# - K. Mishchenko, F. Bach, M. Even, B. Woodworth (2022). Asynchronous SGD beats minibatch SGD under
#   arbitrary delays. *NeurIPS*.

# %% [markdown]
# ## Check your understanding
# 1. Why does the shard partition not change a sync run with whole-shard gradients, but change an
#    async run? Which of the two effects in "Does it matter for the run?" needs the other?
# 2. Why does the cosine between two IID minibatch gradients fall towards 0 near the optimum, while
#    the cosine between the two whole-shard gradients goes to −1?
# 3. A colleague says "our data is IID, so the gradients are similar and async is safe at any lr".
#    Which two measurements above contradict the first half, and which notebook the second?
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
# 3. IID minibatch gradients are far from similar with small batches and near the optimum (the
#    batch-size and phase rows of the table). And similar gradients do not make any lr safe: a
#    stale gradient diverges on a problem where every worker sees the same function (03c).
# </details>
#
# Next: [03b · Claim B: more iterations, less time](03b-more-iterations.ipynb). Assignment:
# [03a · gradient similarity](../exercises/03a-gradient-similarity.ipynb) (IID versus non-IID, and
# what the numbers support).
