# %% [markdown]
# # 05a · Local updates: why can't a worker just update its own copy?
#
# **Learning goals**
# - answer "why can't the local gradients be applied without the server?": each worker *can* update
#   its own copy, but then each copy only fits that worker's shard;
# - use the two local-update knobs `push_every` and `fetch_every` — Downpour SGD's n_push and
#   n_fetch (Dean et al. 2012) when the server is asynchronous;
# - say when one average at the end is enough, and why it can fail for a neural network.
#
# Part 1 of 2; [05b](05b-periodic-averaging.ipynb) averages periodically and reads a push as a delta.

# %% [markdown] slide
# ## Two knobs: `push_every` and `fetch_every`
# In every run so far a worker pushed after each gradient and pulled right after. Two knobs loosen
# both:
# - `push_every=n`: the worker applies each gradient to its **own copy** and pushes the *sum* of its
#   last n gradients every n local steps;
# - `fetch_every=m`: it pulls every m local steps (default: right after each push);
# - `push_every=None`: it never pushes. Each worker pulls v0 once and then works alone.
#
# The last one is the question from the lecture: *why not just apply the gradients locally?*
#
# Where the names come from: Downpour SGD (Dean et al. 2012) has workers push accumulated gradients
# every n_push steps and fetch every n_fetch steps, **asynchronously**, to a server sharded over many
# machines, which in its best runs applies them with per-coordinate Adagrad rates. Here there is one
# server with plain SGD, and the same
# knobs also work under `policy="sync"`, where `push_every=n` is no longer Downpour: it is periodic
# averaging, or **local SGD** (Stich 2019, "Local SGD converges fast and communicates little"); FedAvg
# (McMahan et al. 2017) is the same scheme run on a sample of clients each round, their copies
# weighted by how much data each holds.

# %% [markdown] slide
# ## A problem where the shards disagree
# Least squares with noisy targets (`noise=1.0`). With 4 workers each shard has 128 of the 512
# examples. First, the best loss the whole data set allows (one worker, plain gradient descent):

# %%
import itertools

import numpy as np

import asyncps as aps

problem = aps.problems.LeastSquares(n=512, dim=10, noise=1.0, seed=0)
best = aps.simulate(problem, workers=1, lr=0.5, steps=400).losses[-1]
print(f"loss at v0: {problem.loss(problem.x0):.4f}; best loss: {best:.4f}")

# %% [markdown] slide
# ## No server at all: `push_every=None`
# Four workers, 300 local steps each, IID shards.
#
# **Predict, then run.** After 300 local steps, where is the server, and how far apart are the four
# copies?

# %%
alone = aps.simulate(problem, workers=4, lr=0.1, steps=300, push_every=None, partition="iid")
print(alone)
print(f"pulls: {len(alone.trace.pulls)} (each worker pulled v0 once); pushes: {len(alone.trace.pushes)}")

# %% [markdown] fragment
# The server never moved: it is still at v0. All the work is in the four local copies,
# `run.worker_params`. How far apart are they, and how good is each?

# %%
def describe(run, problem):
    """Distances between the local copies, and how well each one fits its shard and all the data;
    returns the largest distance and the copies' losses."""
    copies = run.worker_params
    shards = problem.shards(run.trace.workers, run.trace.meta["partition"], run.trace.meta["seed"])
    print("distance between copies:")
    for i in range(len(copies)):
        print("   ", " ".join(f"{np.linalg.norm(copies[i] - copies[j]):5.3f}" for j in range(len(copies))))
    for k, (copy, shard) in enumerate(zip(copies, shards)):
        own = np.linalg.norm(problem.gradient(copy, shard))
        everyone = np.linalg.norm(problem.gradient(copy))
        print(f"worker {k}: loss {problem.loss(copy):.4f}; gradient on its own shard {own:.4f}, "
              f"on all the data {everyone:.4f}")
    widest = max(np.linalg.norm(a - b) for a, b in itertools.combinations(copies, 2))
    return widest, [problem.loss(c) for c in copies]


iid_widest, iid_losses = describe(alone, problem)

# %%
from IPython.display import Markdown, display

display(Markdown(
    f"Each copy sits at the best fit of **its own shard** (gradient ≈ 0 there), not of the whole "
    f"data set (gradient ≠ 0, losses {min(iid_losses):.4f}–{max(iid_losses):.4f}, above the best "
    f"{best:.4f}). With IID shards the four best fits are close, so the copies are too (at most "
    f"{iid_widest:.2f} apart)."))

# %% [markdown] slide
# ## Non-IID shards: `partition="sorted"`
# Now the examples are sorted by their target before they are split: worker 0 gets the quarter with
# the smallest targets, worker 3 the largest.

# %%
apart = aps.simulate(problem, workers=4, lr=0.1, steps=300, push_every=None, partition="sorted")
sorted_widest, sorted_losses = describe(apart, problem)

# %%
display(Markdown(
    f"The copies drift {sorted_widest / iid_widest:.1f} times as far apart (up to "
    f"{sorted_widest:.2f} instead of {iid_widest:.2f}), and the worst copy ends at loss "
    f"{max(sorted_losses):.4f} — {max(sorted_losses) / best:.1f}x the best. Each shard still has its "
    f"own best fit, but now those best fits differ: nothing pulls a copy towards the data it never "
    f"sees."))

# %% [markdown] slide
# ## Why the noise matters
# Without noise every shard is fitted exactly by the same `w_true`, so even sorted copies head for
# the same point:

# %%
clean = aps.problems.LeastSquares(n=512, dim=10, noise=0.0, seed=0)
clean_apart = aps.simulate(clean, workers=4, lr=0.1, steps=300, push_every=None, partition="sorted")
copies = clean_apart.worker_params
widest = max(np.linalg.norm(a - b) for a, b in itertools.combinations(copies, 2))
print(f"largest distance between copies: {widest:.3f}; losses "
      + ", ".join(f"{clean.loss(c):.4f}" for c in copies))

# %% [markdown] fragment
# Drift comes from shards whose best fits differ. Real non-IID data (one label per worker, one
# user's photos per phone) is like the noisy case, only worse.

# %% [markdown] slide
# ## Average once, at the end?
# The cheapest fix: let the server average the four copies after they are done.

# %%
for name, run in (("iid", alone), ("sorted", apart)):
    average = np.mean(run.worker_params, axis=0)
    print(f"{name:6s}: loss of the average {problem.loss(average):.4f} (best {best:.4f})")

# %%
once = {name: problem.loss(np.mean(run.worker_params, axis=0)) for name, run in (("iid", alone), ("sorted", apart))}
display(Markdown(
    f"For IID shards one average at the end is within {once['iid'] - best:.4f} of the best loss; for "
    f"sorted shards it is {once['sorted'] - best:.4f} above it: each copy went far down its own road, "
    f"and the average of those ends is not the best fit of all the data. So: average *while* they "
    f"work."))

# %% [markdown] fragment
# Where the IID result holds: this loss is a **convex** quadratic (least squares), and every copy
# started from the same v0. Each copy converges to its shard's least-squares fit; with IID shards
# those fits scatter around the full-data fit and their mean lands close to it (one-shot averaging;
# Zhang, Duchi & Wainwright 2013 analyse it for convex problems). It stops holding for
# **non-convex** models: copies trained apart can end in different minima — a neural network's hidden
# units can be permuted without changing what it computes — and the average of two good networks can
# be a bad one. McMahan et al. (2017, Fig. 1) show both sides for two MNIST networks: trained from
# different initialisations, their average is worse than either; from a shared initialisation (our
# case: every copy starts at v0) it is better. A shared start is no guarantee for non-convex
# losses, though: Frankle, Dziugaite, Roy & Carbin (2020, *Linear mode connectivity and the
# lottery ticket hypothesis*) find that copies of a ResNet trained apart from the same point
# average well only once training is past its early phase (a small MNIST network from the start).

# %% [markdown] slide
# ## Check your understanding
# 1. With `push_every=None`, what does the server hold at the end, and where is the work?
# 2. Why do the local copies drift much further apart with sorted shards than with IID shards? Why
#    did they not drift with `noise=0`?
# 3. Why does "one average at the end" work for IID least squares, and why can it fail for a
#    neural network?
#
# <details><summary>Answers</summary>
#
# 1. The server still holds v0: nobody pushed, so no version was made. All the work is in the four
#    local copies (`run.worker_params`), each at the best fit of its own shard — gradient ≈ 0 on
#    its shard, not on all the data.
# 2. Sorting by target gives each shard a different region of the data, so the shards' own
#    least-squares fits differ and each copy heads for its own; IID shards are samples of the same
#    data, so their fits lie close together. With `noise=0` every shard is fitted exactly by the
#    same `w_true`, so all shard optima coincide and even sorted copies meet there.
# 3. One average at the end works for IID least squares because the loss is convex, every copy
#    starts from v0 and the shard fits scatter around the full-data fit; a neural network is
#    non-convex, copies trained apart can reach different minima (hidden units permuted), and the
#    average of two good networks can be a bad one.
# </details>
#
# Next: [05b · Periodic averaging, and a push as a delta](05b-periodic-averaging.ipynb).
