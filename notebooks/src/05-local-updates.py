# %% [markdown]
# # 05 · Local updates
#
# **Learning goals**
# - answer "why can't the local gradients be applied without the server?": each worker *can* update
#   its own copy, but then each copy only fits that worker's shard;
# - use the two local-update knobs `push_every` and `fetch_every` — Downpour SGD's n_push and
#   n_fetch (Dean et al. 2012) when the server is asynchronous;
# - see **periodic averaging** — `push_every=5` under sync, i.e. local SGD (Stich 2019), the scheme
#   FedAvg (McMahan et al. 2017) runs — trade pushes against drift, and why non-IID shards with a
#   constant lr leave it above the best loss;
# - explain why a push is a *delta*: why applying a late push to the current version loses nothing.

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
# ## Periodic averaging (local SGD): `push_every=5` under sync
# Each worker takes 5 local steps from the version it pulled, then pushes the sum of its 5 gradients;
# the sync server averages the four sums and applies them with the same lr. That is exactly the
# **average of the four local copies** — local SGD, FedAvg's averaging step with all clients taking
# part:

# %%
one_round = aps.simulate(problem, workers=4, policy="sync", lr=0.1, steps=1, push_every=5,
                         partition="sorted")
print("server's v1 == average of the 4 copies:",
      np.allclose(one_round.params, np.mean(one_round.worker_params, axis=0)))

# %% [markdown] fragment
# The Timeline shows 5 compute bars per worker between a pull and a push. (The caption says
# "gradient": here it is the sum of the 5 local gradients.)

# %%
rounds = aps.simulate(problem, workers=4, policy="sync", lr=0.1, steps=3, push_every=5,
                      partition="sorted")
timeline = aps.widgets.Timeline(rounds)
timeline.frame = rounds.trace.events.index(rounds.trace.pushes[3])
timeline

# %%
print(timeline.state)

# %% [markdown] slide
# ## How often to average?
# Every run below computes the same 200 gradients per worker; only the push interval differs. The
# last column runs 10 times longer (2000 gradients per worker) to see where each one settles.

# %%
def periodic(push_every, partition, gradients=200, comm_delay=0.0):
    return aps.simulate(problem, workers=4, policy="sync", lr=0.1, steps=gradients // push_every,
                        push_every=push_every, partition=partition, comm_delay=comm_delay)


settles = {}
for partition in ("iid", "sorted"):
    for push_every in (1, 5, 20):
        run = periodic(push_every, partition)
        longer = periodic(push_every, partition, gradients=2000)
        settles[partition, push_every] = longer.losses[-1]
        print(f"{partition:6s} push_every={push_every:2d}: {len(run.trace.pushes):3d} pushes, "
              f"loss {run.losses[-1]:.4f}; after 10x longer {longer.losses[-1]:.4f}")

# %%
display(Markdown(
    f"Pushing every 5 steps needs 5 times fewer messages and, with IID shards, costs almost nothing "
    f"(it settles at {settles['iid', 5]:.4f}, best {best:.4f}). With sorted shards the copies "
    f"drift apart between averages, and the run settles *above* the best loss — the longer the "
    f"interval, the higher ({settles['sorted', 5]:.4f} for 5, {settles['sorted', 20]:.4f} for 20, "
    f"best {best:.4f}), and running 10 times longer does not remove it."))

# %% [markdown] slide
# ## The plateau is the constant lr's
# Between two averages each copy takes n steps towards *its own* shard's fit; with a constant lr
# those steps have a fixed size, so the averaged model settles at a fixed point that is not the
# best fit. Make the lr decay and the plateau goes: below, the same 8000 gradients per worker
# (sorted shards, `push_every=20`), once at the constant lr 0.1, and once in four stages of 2000 that
# halve the lr, each stage starting from the server's parameters at the end of the last.

# %%
import copy as copying

constant_lr = aps.simulate(problem, workers=4, policy="sync", lr=0.1, steps=8000 // 20, push_every=20,
                           partition="sorted")
print(f"constant lr=0.1       : settles {constant_lr.losses[-1] - best:.4f} above the best loss")
start, gaps = problem.x0, {}
for lr in (0.1, 0.05, 0.025, 0.0125):
    stage = copying.copy(problem)
    stage.x0 = start                                     # continue from where the last stage ended
    run = aps.simulate(stage, workers=4, policy="sync", lr=lr, steps=2000 // 20, push_every=20,
                       partition="sorted")
    start, gaps[lr] = run.params, run.losses[-1] - best
    print(f"decaying, stage lr={lr:<6}: {gaps[lr]:.4f} above the best loss")

# %%
display(Markdown(
    f"With the constant lr the gap stays at {constant_lr.losses[-1] - best:.4f}; each halving of the "
    f"lr shrinks it, to {gaps[0.0125]:.4f} after the last stage. This is a known result: local SGD / "
    f"FedAvg on non-IID data with a constant lr converges only to a neighbourhood of the optimum "
    f"whose size grows with the lr and the number of local steps, and a decaying lr is needed to "
    f"reach the optimum itself (Li, Huang, Yang, Wang & Zhang 2020, *On the convergence of FedAvg on "
    f"non-IID data*)."))

# %% [markdown] slide
# ## When messages cost time
# `comm_delay=1`: a pull and a push each take as long as one gradient. Time to reach loss 0.50 —
# just above where the runs of the table above settle — and where each run ends after 400
# gradients per worker:

# %%
reach, final = {}, {}
print("                       t to 0.50   final loss")
for partition in ("iid", "sorted"):
    for push_every in (1, 2, 5, 10, 20):
        run = periodic(push_every, partition, gradients=400, comm_delay=1.0)
        t = reach[partition, push_every] = run.time_to_reach(0.50)
        final[partition, push_every] = run.losses[-1]
        print(f"{partition:6s} push_every={push_every:2d}   " + (f"{t:9.1f}" if t is not None else "    never")
              + f"   {run.losses[-1]:.4f}")

# %%
reached = {n: t for (part, n), t in reach.items() if part == "sorted" and t is not None}
missed = [n for (part, n), t in reach.items() if part == "sorted" and t is None]
display(Markdown(
    f"That is what local steps buy — in local SGD, and in Downpour's asynchronous n_push: fewer "
    f"messages, more time computing. With IID shards the time falls from {reach['iid', 1]:.0f} "
    f"(push every step) to {reach['iid', 20]:.0f} (every 20). With sorted shards the drift sets a "
    f"limit: where the sorted runs end rises with the interval ("
    + ", ".join(f"{final['sorted', n]:.4f}" for n in (1, 2, 5, 10, 20))
    + f" for 1, 2, 5, 10, 20), and {min(reached, key=reached.get)} is the fastest interval to 0.50. "
    + (f"Which intervals \"never\" reach it depends on where the target sits: "
       + ", ".join(f"{n} ends at {final['sorted', n]:.4f}, {100 * (final['sorted', n] / 0.5 - 1):.1f} % above it"
                   for n in missed)
       + ". The robust statement is the rising floor, not the cut-off." if missed else "")))

# %% [markdown] slide
# ## `fetch_every`: pull less often
# Async, pushing after every gradient but pulling only every 5 steps — this one *is* Downpour's
# n_fetch (without its sharded server and Adagrad). In between, the worker keeps
# applying its own gradients to its copy, so it computes on "the version it pulled plus its own
# steps" — and the trace counts the staleness from the version it pulled.

# %%
every_step = aps.simulate(problem, workers=4, policy="async", lr=0.1, steps=200, partition="sorted")
rarely = aps.simulate(problem, workers=4, policy="async", lr=0.1, steps=200, partition="sorted",
                      fetch_every=5)
for name, run in (("fetch after each push", every_step), ("fetch_every=5", rarely)):
    hist = run.trace.staleness_histogram()
    print(f"{name:21s}: {len(run.trace.pulls):3d} pulls, max staleness {hist.size - 1:2d}, "
          f"final loss {run.losses[-1]:.4f}")

# %%
display(Markdown(
    f"{len(every_step.trace.pulls) / len(rarely.trace.pulls):.1f} times fewer pulls, a staleness of "
    f"up to {rarely.trace.staleness_histogram().size - 1} versions, and a final loss of "
    f"{rarely.losses[-1]:.4f} instead of {every_step.losses[-1]:.4f}. Each worker still works on its "
    f"own copy between pulls — it only hears of the others' steps when it pulls."))

# %% [markdown] slide
# ## Why the late push goes to v1, not v0: a push is a delta
# So why can't a worker just update its own copy? It can — that is `push_every=None` above, and
# each copy then fits only its own shard. What the server adds is that every worker sends a
# **delta**, `copy − version it pulled` (here: −lr times the sum of its local gradients), and the
# server *adds* it to its current version. Addition commutes, so nothing anyone pushed is lost:
# with pushes d0 and d1 both computed from v0, v2 = v1 + d1 = v0 + d0 + d1. The only error of a late
# push is *where* its gradients were evaluated (from v0, not v1): that is staleness.
#
# Read it from a trace: two workers, 5 local steps per push, asynchronous, on the 2-D quadratic of
# notebook 02 (which keeps every version's parameters, `run.trace.params[v]`).

# %%
quadratic = aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0])
small = aps.simulate(quadratic, workers=2, policy="async", lr=0.05, steps=6, compute_times=[1, 1.5],
                     push_every=5)
late = next(p for p in small.trace.pushes if p.staleness > 0)
v, u = late.computed_on, late.applied_to
copy = small.trace.params[v].copy()
for _ in range(5):                                      # the worker's 5 local steps, from v
    copy -= 0.05 * quadratic.gradient(copy)
delta = copy - small.trace.params[v]
print(late)
print(f"v{u} + delta = {(small.trace.params[u] + delta).round(4).tolist()}; "
      f"the server's v{u + 1} = {small.trace.params[u + 1].round(4).tolist()}")
assert np.allclose(small.trace.params[u + 1], small.trace.params[u] + delta)

# %%
others = small.trace.params[u] - small.trace.params[v]   # the other worker's push since v
display(Markdown(
    f"The server added the late delta {delta.round(4).tolist()} to v{u}. A worker that instead "
    f"wrote its own copy {copy.round(4).tolist()} into the server would erase the other worker's "
    f"push since v{v}, {others.round(4).tolist()}; a worker that never pushes keeps only its own "
    f"shard's steps — the drift above. The server keeps everyone's steps; the price is that the late "
    f"worker's gradients were taken along a path that started at v{v}, not at v{u}."))

# %% [markdown] slide
# ## Try it: the push interval
# A plain function first: sorted shards, messages cost 1 time unit …

# %%
def interval_summary(push_every=5):
    run = periodic(push_every, "sorted", gradients=400, comm_delay=1.0)
    t = run.time_to_reach(0.50)
    return (f"push_every={push_every}: {len(run.trace.pushes)} pushes, final loss {run.losses[-1]:.4f}, "
            + (f"loss 0.50 at t = {t:.1f}" if t is not None else "never reaches 0.50"))

print(interval_summary(5))

# %% [markdown] fragment
# … then with a slider (move it; the line follows).

# %%
slider = aps.widgets.interactive(interval_summary, push_every=(1, 25))
slider

# %%
slider.controls["push_every"].value = 8     # as if you moved it: the line follows
print(slider.result)

# %% [markdown] slide
# ## Check your understanding
# 1. With `push_every=None`, what does the server hold at the end, and where is the work?
# 2. Why do the local copies drift much further apart with sorted shards than with IID shards? Why
#    did they not drift with `noise=0`?
# 3. Under sync, why is `push_every=5` the same as averaging the four local copies every 5 steps?
#    What does a longer interval save, and what does it cost on non-IID shards?
# 4. Worker 1's push was computed from v0 and arrives when the server is at v1. Why does adding it
#    to v1 lose nothing, what would writing worker 1's copy into the server lose, and what is the
#    only error of the late push?
# 5. Why does periodic averaging on sorted shards settle above the best loss, and what removes that?
#    Why does "one average at the end" work for IID least squares, and why can it fail for a
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
# 3. Every copy starts from the same pulled version v and ends at v − lr·(sum of its 5 gradients);
#    the sync server applies v − lr·(mean of the 4 sums), which is the mean of the 4 copies (the
#    `np.allclose` cell checks it). A longer interval saves messages (n times fewer pushes, and
#    their time when `comm_delay` > 0); on non-IID shards the copies drift apart between averages,
#    so the run settles higher above the best loss: in the `comm_delay` table the longest
#    intervals end highest, and miss a target set close to the floor.
# 4. A push is a delta (copy − version pulled), and the server *adds* it: addition commutes, so
#    v2 = v0 + d0 + d1 keeps both workers' steps. Writing worker 1's copy into the server would
#    erase the other worker's push since v0. The only error is where the late gradients were
#    evaluated — along a path from v0, not v1: staleness.
# 5. With a constant lr each copy takes fixed-size steps towards its own shard's fit between two
#    averages, so the averaged model settles at a fixed point off the optimum, in a neighbourhood
#    that grows with the lr and the interval; a decaying lr removes it (the staged run's gap shrinks
#    with each halving). One average at the end works for IID least squares because the loss is
#    convex, every copy starts from v0 and the shard fits scatter around the full-data fit; a
#    neural network is non-convex, copies trained apart can reach different minima (hidden units
#    permuted), and the average of two good networks can be a bad one.
# </details>
#
# Assignment: [05 · local updates](../exercises/05-local-updates.ipynb) — push_every, periodic
# averaging and drift. Next: [06 · Threads, processes and GPUs](06-threads-processes-gpus.ipynb).
