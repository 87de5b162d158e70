# %% [markdown]
# # 01 · The synchronous parameter server
#
# **Learning goals**
# - name the parts: workers, the server, its parameters and their **version**; pull and push;
# - follow one synchronous (BSP) round: everyone pulls v0, everyone pushes, the server averages;
# - measure what the **barrier** costs when one worker is slow (a straggler);
# - state the simulator's **cost model**, and see where the speed-up of data parallelism comes from.

# %% [markdown] slide
# ## The parts
# The **server** keeps the parameters and a version counter: v0, v1, v2, … A **worker** *pulls* a
# copy of the parameters (and learns their version), computes a gradient on its share of the data,
# and *pushes* the gradient back. Let us drive a server by hand.

# %%
import asyncps as aps

server = aps.ParameterServer([1.0, 1.0], workers=2, policy="sync", lr=0.5)
params_0, version_0 = server.pull(0)
params_1, version_1 = server.pull(1)
print(f"both workers read v{version_0} and v{version_1}: {params_0}")

# %% [markdown] fragment
# Each worker computes a gradient on what it read and pushes it. Under `policy="sync"` the server
# waits until **every** worker of the round has pushed, then applies their average once.

# %%
server.push(0, [1.0, 0.0], computed_on=version_0)
print("after worker 0's push: server at", f"v{server.version}", "- it waits for worker 1")
server.push(1, [0.0, 1.0], computed_on=version_1)
print("after worker 1's push: server at", f"v{server.version}", "with parameters", server.params)

# %% [markdown] fragment
# The average of `[1, 0]` and `[0, 1]` is `[0.5, 0.5]`; times `lr = 0.5` that is a step of `0.25`:
# one round, one new version.

# %% [markdown] slide
# ## One round, animated
# The simulator runs the same server with a virtual clock. Its cost model, for every notebook:
# worker k needs `compute_times[k]` time units per gradient (default 1), **whatever the size of its
# shard**; pulls and pushes are free unless `comm_delay` says otherwise. Three workers, each needs
# one time unit per gradient.

# %%
problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)
equal = aps.simulate(problem, workers=3, policy="sync", lr=0.05, steps=3, compute_times=[1, 1, 1])
aps.widgets.Timeline(equal)

# %%
for push in equal.trace.pushes[:3]:
    print(push)

# %% [markdown] fragment
# All three gradients of round 1 were computed on v0 and applied to v0: **staleness 0**. The server
# moves to v1 only when the last of them arrives.

# %% [markdown] slide
# ## A straggler
# Now worker 3 needs 4 time units per gradient. Everyone else finishes after 1 and then waits at the
# barrier (grey).
#
# **Predict, then run.** What share of the run do workers 0–2 spend waiting?

# %%
straggler = aps.simulate(problem, workers=4, policy="sync", lr=0.05, steps=20,
                         compute_times=[1, 1, 1, 4])
timeline = aps.widgets.Timeline(straggler)
timeline.frame = straggler.trace.events.index(straggler.trace.waits[0])
timeline

# %%
print(timeline.state)

# %% [markdown] slide
# ## What the barrier costs, measured

# %%
duration = straggler.trace.duration
idle = straggler.trace.idle_time_per_worker()
for worker, seconds in enumerate(idle):
    print(f"worker {worker}: idle {seconds:5.1f} of {duration:.0f} time units ({seconds / duration:.0%})")
rate = len(straggler.trace.pushes) / duration
print(f"gradients per time unit: {rate:.2f} (without the barrier the four could make {3 + 1 / 4:.2f})")

# %%
from IPython.display import Markdown, display

display(Markdown(f"Workers 0–2 sit idle {idle[:3].mean() / duration:.0%} of the time: a synchronous "
                 f"round is as slow as its slowest worker. Notebook 02 removes the barrier."))

# %% [markdown] slide
# ## Synchronous = one big batch
# With equal shards and whole-shard gradients, averaging the 4 workers' gradients *is* the full-data
# gradient: 4 synchronous workers take exactly the steps of one worker doing gradient descent.

# %%
four = aps.simulate(problem, workers=4, policy="sync", lr=0.05, steps=100)
one = aps.simulate(problem, workers=1, policy="sync", lr=0.05, steps=100)
gap = abs(four.params - one.params).max()
print(f"largest difference after 100 versions: {'below 1e-12' if gap < 1e-12 else gap}")
print(f"loss v0 {four.losses[0]:.4f} -> v100 {four.losses[-1]:.4f}")

# %% [markdown] fragment
# Under the cost model above this is no speed-up at all: each of the 4 workers needs 1 time unit
# per gradient, as the single worker does, so both make one version per time unit.

# %%
display(Markdown(f"Time for 100 versions: 4 workers {four.trace.duration:g}, 1 worker "
                 f"{one.trace.duration:g} time units."))

# %% [markdown] slide
# ## Why a parameter server at all: gradient cost proportional to the shard
# In real data parallelism a whole-shard gradient costs time in proportion to the examples it reads:
# on 1/N of the data it takes 1/N of the time. That is the point of splitting the data. Tell the
# simulator so, `compute_times=[1/N] * N`, and the same versions arrive N times sooner. A pull and a
# push that cost time (`comm_delay`) eat into that gain, and more so as each round's compute shrinks.

# %%
target = 0.05
rows = []
for workers in (1, 2, 4, 8):
    times = []
    for comm_delay in (0.0, 0.05):
        run = aps.simulate(problem, workers=workers, policy="sync", lr=0.05, steps=100,
                           compute_times=[1 / workers] * workers, comm_delay=comm_delay)
        times.append(run.time_to_reach(target))
    rows.append((workers, run.versions_to_reach(target), *times))
    print(f"{workers} worker(s): loss {target} at version {rows[-1][1]}; time {times[0]:6.3f} "
          f"(free messages), {times[1]:6.3f} (comm_delay=0.05)")

# %%
base = rows[0]
display(Markdown(
    f"Every run reaches loss {target} at the same version ({base[1]}): synchronous data parallelism "
    f"takes the steps of gradient descent. With free messages, 8 workers get there "
    f"{base[2] / rows[-1][2]:.1f}x sooner than 1; with `comm_delay=0.05` only "
    f"{base[3] / rows[-1][3]:.1f}x, because every round pays for a pull and a push."))

# %% [markdown] slide
# ## Try it: how slow may the straggler be?
# A plain function first …

# %%
def barrier_cost(slowdown):
    """Fraction of the fast workers' time spent waiting when worker 3 is `slowdown` times slower."""
    run = aps.simulate(problem, workers=4, policy="sync", lr=0.05, steps=20,
                       compute_times=[1, 1, 1, slowdown])
    return run.trace.idle_time_per_worker()[:3].mean() / run.trace.duration

for slowdown in (1, 2, 4, 8):
    print(f"straggler {slowdown}x slower: the others wait {barrier_cost(slowdown):.0%} of the time")

# %% [markdown] fragment
# … then the same function with a slider (move it; the printout follows).

# %%
def others_wait(slowdown=4.0):
    return f"the others wait {barrier_cost(slowdown):.0%}"


aps.widgets.interactive(others_wait, slowdown=(1.0, 10.0, 0.5))

# %% [markdown] slide
# ## Check your understanding
# 1. In a synchronous round, which version is every gradient computed on, and which version is it
#    applied to? What is its staleness?
# 2. With compute times `[1, 1, 1, 4]`, why is the synchronous server limited to one gradient per time
#    unit?
# 3. Why do 4 synchronous workers with equal shards end exactly where 1 worker does? Under which
#    cost model do they get there sooner, and what eats into that speed-up?
#
# <details><summary>Answers</summary>
#
# 1. Every gradient of a round is computed on the version all workers pulled at its start (v0 in
#    round 1) and applied to that same version, because the server makes the next version only
#    after the last push: staleness 0, as the printed pushes show.
# 2. The barrier: a round ends only when the slowest worker has pushed, so each round takes
#    max(compute_times) = 4 time units and yields 4 gradients, 4 / 4 = 1 per time unit. Workers
#    0–2 finish after 1 and sit idle for the rest of every round (the idle printout), instead of
#    making the 3 + 1/4 gradients per time unit they could make without the barrier.
# 3. With equal shards and whole-shard gradients, the average of the N shard gradients *is* the
#    full-data gradient, so every synchronous version is one gradient-descent step with the same
#    lr (the "largest difference" printout). They get there sooner only when a gradient's cost is
#    proportional to the shard (`compute_times=[1/N] * N`, N times fewer time units per version);
#    the pull and push of every round (`comm_delay`) eat into that, more as each round's compute
#    shrinks with N — compare the two time columns of the table (and a straggler would, too).
# </details>
#
# Assignment: [01 · the synchronous round](../exercises/01-sync-round.ipynb) — write the barrier and
# the averaging yourself. Next: [02 · The asynchronous parameter server](02-asynchronous-ps.ipynb).
