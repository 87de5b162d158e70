# %% [markdown]
# # 05 · Local updates
#
# **Learning goals**
# - answer "why can't the local gradients be applied without the server?": each worker *can* update
#   its own copy, but then each copy only fits that worker's shard;
# - use Downpour's knobs (Dean et al. 2012): `push_every` and `fetch_every`;
# - see periodic averaging (`push_every=5` under sync) trade pushes against drift, and why non-IID
#   shards make the drift obvious;
# - explain why the server applies a late gradient to its current version v1, not to v0.

# %% [markdown] slide
# ## Downpour's two knobs
# In every run so far a worker pushed after each gradient and pulled right after. Downpour SGD
# loosens both:
# - `push_every=n`: the worker applies each gradient to its **own copy** and pushes the *sum* of its
#   last n gradients every n local steps;
# - `fetch_every=m`: it pulls every m local steps (default: right after each push);
# - `push_every=None`: it never pushes. Each worker pulls v0 once and then works alone.
#
# The last one is the question from the lecture: *why not just apply the gradients locally?*

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

# %%
alone = aps.simulate(problem, workers=4, lr=0.1, steps=300, push_every=None, partition="iid")
print(alone)
print(f"pulls: {len(alone.trace.pulls)} (each worker pulled v0 once); pushes: {len(alone.trace.pushes)}")

# %% [markdown] fragment
# The server never moved: it is still at v0. All the work is in the four local copies,
# `run.worker_params`. How far apart are they, and how good is each?

# %%
def describe(run, problem):
    """Distances between the local copies, and how well each one fits its shard and all the data."""
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


describe(alone, problem)

# %% [markdown] fragment
# Each copy sits at the best fit of **its own shard** (gradient 0 there), not of the whole data set
# (gradient ≠ 0, loss above the best 0.4949). With IID shards the four best fits are close, so the
# copies are too.

# %% [markdown] slide
# ## Non-IID shards: `partition="sorted"`
# Now the examples are sorted by their target before they are split: worker 0 gets the quarter with
# the smallest targets, worker 3 the largest.

# %%
apart = aps.simulate(problem, workers=4, lr=0.1, steps=300, push_every=None, partition="sorted")
describe(apart, problem)

# %% [markdown] fragment
# The copies drift more than twice as far apart (up to 1.29 instead of 0.54), and workers 1 and 2
# end near loss 1.0 — twice the best. Each shard still has its own best fit, but now those best fits
# differ: nothing pulls a copy towards the data it never sees.

# %% [markdown] slide
# ## Why the noise matters
# Without noise every shard is fitted exactly by the same `w_true`, so even sorted copies head for
# the same point (after 300 steps they are still 0.02 apart, closing in):

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

# %% [markdown] fragment
# For IID shards one average at the end is almost the best fit. For sorted shards it is not: each
# copy went far down its own road, and the average of those ends is not the best fit of all the data.
# So: average *while* they work.

# %% [markdown] slide
# ## Periodic averaging: `push_every=5` under sync
# Each worker takes 5 local steps from the version it pulled, then pushes the sum of its 5 gradients;
# the sync server averages the four sums and applies them with the same lr. That is exactly the
# **average of the four local copies**:

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


for partition in ("iid", "sorted"):
    for push_every in (1, 5, 20):
        run = periodic(push_every, partition)
        longer = periodic(push_every, partition, gradients=2000)
        print(f"{partition:6s} push_every={push_every:2d}: {len(run.trace.pushes):3d} pushes, "
              f"loss {run.losses[-1]:.4f}; after 10x longer {longer.losses[-1]:.4f}")

# %% [markdown] fragment
# Pushing every 5 steps needs 5 times fewer messages and, with IID shards, costs almost nothing.
# With sorted shards the copies drift apart between averages, and the run settles *above* the best
# loss — the longer the interval, the higher (0.4960 for 5, 0.5148 for 20), and running longer does
# not remove it.

# %% [markdown] slide
# ## When messages cost time
# `comm_delay=1`: a pull and a push each take as long as one gradient. Time to reach loss 0.50:

# %%
for partition in ("iid", "sorted"):
    for push_every in (1, 2, 5, 10, 20):
        run = periodic(push_every, partition, gradients=400, comm_delay=1.0)
        t = run.time_to_reach(0.50)
        print(f"{partition:6s} push_every={push_every:2d}: "
              + (f"t = {t:5.1f}" if t is not None else "never (settles at "
                 f"{run.losses[-1]:.4f})"))

# %% [markdown] fragment
# That is why Downpour pushes every n steps: fewer messages, more time computing. With IID shards
# longer intervals keep paying (90 → 44). With sorted shards the drift sets a limit: 5 is the best
# here, and 10 or 20 never reach the target.

# %% [markdown] slide
# ## `fetch_every`: pull less often
# Async, pushing after every gradient but pulling only every 5 steps. In between, the worker keeps
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

# %% [markdown] fragment
# Five times fewer pulls, a staleness of up to 19 versions, and a final loss barely worse. Each worker
# still works on its own copy between pulls — it only hears of the others' steps every 5 steps.

# %% [markdown] slide
# ## Why the late gradient goes to v1, not v0
# Back to the smallest case, driven by hand. Both workers pull **v0**; worker 0's shard pulls on the
# first coordinate, worker 1's on the second.

# %%
server = aps.ParameterServer([1.0, 1.0], workers=2, policy="async", lr=0.5)
copy_0, v_0 = server.pull(0)
copy_1, v_1 = server.pull(1)
g_0, g_1 = np.array([1.0, 0.0]), np.array([0.0, 1.0])

server.push(0, g_0, computed_on=v_0)
print(f"worker 0 pushes: server at v{server.version} = {server.params.tolist()}")
late = server.push(1, g_1, computed_on=v_1)
print(late)
print(f"worker 1 pushes: server at v{server.version} = {server.params.tolist()}")

# %% [markdown] fragment
# Applied to v1, both steps are kept: each coordinate moved by 0.5. Now apply worker 1's gradient to
# **v0** instead — that is also exactly what worker 1's *own copy* would be after one local step:

# %%
on_v0 = copy_1 - 0.5 * g_1
print(f"applied to v0: {on_v0.tolist()} (worker 0's step is gone)")
print(f"applied to v1: {server.params.tolist()} (both steps kept)")

# %% [markdown] fragment
# Applying a late gradient to v0 throws away every update made since v0 — the other worker's work.
# A worker that only updates its own copy does just that, all the time: that is why the copies above
# drifted. The server keeps **one** current version and adds every worker's step to it; the price is
# that worker 1's gradient describes the slope at v0, not at v1 — it is stale.

# %% [markdown] slide
# ## Try it: the push interval
# A plain function first: sorted shards, messages cost 1 time unit …

# %%
def interval_summary(push_every):
    run = periodic(push_every, "sorted", gradients=400, comm_delay=1.0)
    t = run.time_to_reach(0.50)
    return (f"push_every={push_every}: {len(run.trace.pushes)} pushes, final loss {run.losses[-1]:.4f}, "
            + (f"loss 0.50 at t = {t:.1f}" if t is not None else "never reaches 0.50"))

print(interval_summary(5))

# %% [markdown] fragment
# … then with a slider (move it; the line follows).

# %%
import ipywidgets as widgets

interval = widgets.IntSlider(value=5, min=1, max=25, description="push every")
answer = widgets.HTML(interval_summary(interval.value))
interval.observe(lambda _: setattr(answer, "value", interval_summary(interval.value)), "value")
widgets.VBox([interval, answer])

# %%
interval.value = 8
print(answer.value)

# %% [markdown] slide
# ## Check your understanding
# 1. With `push_every=None`, what does the server hold at the end, and where is the work?
# 2. Why do the local copies drift much further apart with sorted shards than with IID shards? Why
#    did they not drift with `noise=0`?
# 3. Under sync, why is `push_every=5` the same as averaging the four local copies every 5 steps?
#    What does a longer interval save, and what does it cost on non-IID shards?
# 4. Worker 1's gradient was computed on v0 and arrives when the server is at v1. What is lost if the
#    server applies it to v0?
#
# Exercise: [06 · local updates](../exercises/06-local-updates.ipynb) — push_every, periodic
# averaging and drift. Next: [06 · Threads, processes and GPUs](06-threads-processes-gpus.ipynb).
