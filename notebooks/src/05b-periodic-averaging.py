# %% [markdown]
# # 05b · Local updates: periodic averaging, and a push as a delta
#
# **Learning goals**
# - see **periodic averaging** — `push_every=5` under sync, i.e. local SGD (Stich 2019), the scheme
#   FedAvg (McMahan et al. 2017) runs — trade pushes against drift, and why non-IID shards with a
#   constant lr leave it above the best loss;
# - use `fetch_every` (Downpour's n_fetch) and read the cost of messages in time;
# - explain why a push is a *delta*: why applying a late push to the current version loses nothing.
#
# Part 2 of 2, after [05a](05a-local-updates.ipynb). The same problem as 05a: least squares with
# noisy targets (`noise=1.0`), 512 examples, 4 workers; first its best loss (one worker, plain
# gradient descent).

# %%
import numpy as np
from IPython.display import Markdown, display

import asyncps as aps

problem = aps.problems.LeastSquares(n=512, dim=10, noise=1.0, seed=0)
best = aps.simulate(problem, workers=1, lr=0.5, steps=400).losses[-1]
print(f"loss at v0: {problem.loss(problem.x0):.4f}; best loss: {best:.4f}")

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
# 1. Under sync, why is `push_every=5` the same as averaging the four local copies every 5 steps?
#    What does a longer interval save, and what does it cost on non-IID shards?
# 2. Worker 1's push was computed from v0 and arrives when the server is at v1. Why does adding it
#    to v1 lose nothing, what would writing worker 1's copy into the server lose, and what is the
#    only error of the late push?
# 3. Why does periodic averaging on sorted shards settle above the best loss, and what removes that?
#
# <details><summary>Answers</summary>
#
# 1. Every copy starts from the same pulled version v and ends at v − lr·(sum of its 5 gradients);
#    the sync server applies v − lr·(mean of the 4 sums), which is the mean of the 4 copies (the
#    `np.allclose` cell checks it). A longer interval saves messages (n times fewer pushes, and
#    their time when `comm_delay` > 0); on non-IID shards the copies drift apart between averages,
#    so the run settles higher above the best loss: in the `comm_delay` table the longest
#    intervals end highest, and miss a target set close to the floor.
# 2. A push is a delta (copy − version pulled), and the server *adds* it: addition commutes, so
#    v2 = v0 + d0 + d1 keeps both workers' steps. Writing worker 1's copy into the server would
#    erase the other worker's push since v0. The only error is where the late gradients were
#    evaluated — along a path from v0, not v1: staleness.
# 3. With a constant lr each copy takes fixed-size steps towards its own shard's fit between two
#    averages, so the averaged model settles at a fixed point off the optimum, in a neighbourhood
#    that grows with the lr and the interval; a decaying lr removes it (the staged run's gap shrinks
#    with each halving).
# </details>
#
# Back to [05a · a worker alone](05a-local-updates.ipynb). Assignment: [05 · local
# updates](../exercises/05-local-updates.ipynb) — push_every, periodic averaging and drift.
# Next: [06 · Threads, processes and GPUs](06-threads-processes-gpus.ipynb).
