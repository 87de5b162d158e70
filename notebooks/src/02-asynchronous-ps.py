# %% [markdown]
# # 02 · The asynchronous parameter server
#
# **Learning goals**
# - remove the barrier and see what changes: nobody waits, every push makes a new version;
# - walk through the slide: two workers pull **v0**, one pushes (**v1**), the other's gradient —
#   computed on v0 — is applied to v1 → **v2**, *stale by 1*;
# - predict the staleness of N workers, and of a straggler.

# %% [markdown] slide
# ## v0, v1 and the stale push, by hand
# On the slide the workers are called 1 and 2; in code we count from 0: worker 0 and worker 1.
# Both pull v0.

# %%
import numpy as np
from IPython.display import Markdown, display

import asyncps as aps

server = aps.ParameterServer([1.0, 1.0], workers=2, policy="async", lr=0.5)
read_0, v_0 = server.pull(0)
read_1, v_1 = server.pull(1)
print(f"worker 0 read v{v_0}, worker 1 read v{v_1}")

# %% [markdown] fragment
# Worker 0 is faster. It pushes its gradient; the server applies it at once: **v0 → v1**.

# %%
first = server.push(0, [1.0, 0.0], computed_on=v_0)
print(first)
print(f"server at v{server.version}: {server.params}")

# %% [markdown] fragment
# Now worker 1 pushes. Its gradient was computed on v0 — but the server is at v1. It is applied to
# **v1**, making v2: stale by one version.

# %%
second = server.push(1, [0.0, 1.0], computed_on=v_1)
print(second)
print(f"server at v{server.version}: {server.params}")

# %% [markdown] slide
# ## Why v1, not v0?
# A push is a **delta**, not a copy of the parameters: the server adds `−lr·g` to whatever it
# holds. Addition commutes, so applying worker 1's gradient to v1 loses nothing:
#
# v2 = v1 − lr·g1 = (v0 − lr·g0) − lr·g1 = v0 − lr·(g0 + g1)
#
# — exactly what "both gradients applied to v0" would give. Nothing is overwritten and no step is
# lost. The only error is *where* g1 was evaluated: at v0, while it is applied to v1. That gap is
# what **staleness** measures.

# %%
print(f"staleness = applied_to - computed_on = {second.applied_to} - {second.computed_on} = {second.staleness}")
print(f"v0 - lr*(g0 + g1) = {(np.array([1.0, 1.0]) - 0.5 * (np.array([1.0, 0.0]) + np.array([0.0, 1.0]))).tolist()}"
      f"; the server's v2 = {server.params.tolist()}")

# %% [markdown] slide
# ## The same walk-through, animated
# The simulator with worker 1 taking 1.5 time units per gradient, worker 0 taking 1.
# The Timeline opens at the first stale push; step back and forth to replay the slide.

# %%
quadratic = aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0])
run = aps.simulate(quadratic, workers=2, policy="async", lr=0.1, steps=12, compute_times=[1, 1.5])
timeline = aps.widgets.Timeline(run, frame="stale")
timeline

# %%
print(timeline.state)

# %% [markdown] slide
# ## In parameter space
# The same run on the 2-D quadratic: the orange dashed arrow is the gradient step *as computed* at
# v0; the red arrow is the step actually taken from v1; green is what a fresh gradient at v1 would
# do. The two views share one frame slider.

# %%
view = aps.widgets.ParameterView(run, quadratic, timeline=timeline)
view

# %%
timeline.frame = 25
print(timeline.state)
print(view.state)

# %% [markdown] slide
# ## The delta algebra, read from the trace
# On this quadratic the run keeps every version's parameters (`run.trace.params[v]`). Take the
# first stale push: its gradient g was computed on version `computed_on` and applied to version
# `applied_to`. The server's next version must be `params[applied_to] − lr·g`, with g the gradient
# *at* `params[computed_on]`.

# %%
lr = run.trace.meta["lr"]
push = next(p for p in run.trace.pushes if p.staleness > 0)
v, u = push.computed_on, push.applied_to
g = quadratic.gradient(run.trace.params[v])                   # what the worker computed, on v
print(push)
print(f"v{v} = {run.trace.params[v].round(4).tolist()}, v{u} = {run.trace.params[u].round(4).tolist()}, "
      f"g (at v{v}) = {g.round(4).tolist()}")
print(f"v{u} - lr*g = {(run.trace.params[u] - lr * g).round(4).tolist()}; "
      f"the server's v{u + 1} = {run.trace.params[u + 1].round(4).tolist()}")
assert np.allclose(run.trace.params[u + 1], run.trace.params[u] - lr * g)

# %% [markdown] fragment
# Two other things the server could have done with this push, measured against the same v0, v1:
# - **overwrite** the server with the worker's own copy (v0 − lr·g): worker 0's step is gone;
# - apply a **fresh** gradient, evaluated at v1: what a gradient with no staleness would give.

# %%
own_copy = run.trace.params[v] - lr * g                         # the worker's copy after its step
fresh = run.trace.params[u] - lr * quadratic.gradient(run.trace.params[u])
taken = run.trace.params[u + 1]
lost = run.trace.params[u] - run.trace.params[v]                # the other workers' steps since v
display(Markdown(
    f"- overwriting the server with the worker's copy v{v} − lr·g = {own_copy.round(4).tolist()} "
    f"would leave it there instead of at {taken.round(4).tolist()}: it throws away the {u - v} "
    f"step(s) the other worker made since v{v}, {lost.round(4).tolist()} in total;\n"
    f"- the stale push gives {taken.round(4).tolist()} and a fresh gradient would give "
    f"{fresh.round(4).tolist()}: they differ by lr·(∇f(v{v}) − ∇f(v{u})) = "
    f"{(fresh - taken).round(4).tolist()} — staleness costs only where g was evaluated."))

# %% [markdown] slide
# ## Many workers: how stale?
# N equal workers; each pushes and then pulls at once, so it computes on the version its own push
# made.
#
# **Predict, then run.** How many versions stale is a typical push with 2, 4 and 8 workers? Write
# your three numbers down before you run the cell.

# %%
problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)
for workers in (2, 4, 8):
    r = aps.simulate(problem, workers=workers, policy="async", lr=0.02, steps=200)
    hist = r.trace.staleness_histogram()
    common = int(hist.argmax())
    print(f"{workers} workers: staleness {common} for {hist[common]} of {hist.sum()} pushes")

# %% [markdown] fragment
# By the time a worker pushes again, the other N−1 have each pushed once: in steady state **every
# push is N−1 versions stale**. The first pushes of a run are fresher (nobody has pushed yet).

# %% [markdown] slide
# ## A straggler in the asynchronous server
# Compute times `[1, 1, 1, 4]` again. Nobody waits now — but the straggler's gradients arrive after
# the others have pushed many times.

# %%
slow = aps.simulate(problem, workers=4, policy="async", lr=0.02, steps=400, compute_times=[1, 1, 1, 4])
aps.widgets.Picture(aps.widgets.histogram_svg(slow.trace.staleness_histogram()))

# %%
by_worker = {w: [p.staleness for p in slow.trace.pushes if p.worker == w] for w in range(4)}
for w, stale in by_worker.items():
    print(f"worker {w}: {len(stale):3d} pushes, mean staleness {sum(stale) / len(stale):5.2f}")
print(f"gradients per time unit: {len(slow.trace.pushes) / slow.trace.pushes[-1].time:.2f} "
      f"(synchronous: 1.00)")

# %%
rate = len(slow.trace.pushes) / slow.trace.pushes[-1].time
display(Markdown(
    f"Asynchrony turned the barrier's idle time into work: {rate:.2f} gradients per time unit "
    f"instead of 1. The bill arrives as staleness — the straggler's gradients are on average "
    f"{np.mean(by_worker[3]):.1f} versions old. Notebooks 03a–03c ask whether that bill is worth paying."))

# %% [markdown] slide
# ## Try it: staleness versus the number of workers
# A plain function first …

# %%
def staleness_of(workers=4):
    r = aps.simulate(problem, workers=workers, policy="async", lr=0.01, steps=200)
    return aps.widgets.Picture(aps.widgets.histogram_svg(r.trace.staleness_histogram(),
                                                         title=f"{workers} workers: staleness of each push"))


staleness_of(4)

# %% [markdown] fragment
# … then the same function behind a slider.

# %%
aps.widgets.interactive(staleness_of, workers=(1, 16))

# %% [markdown] slide
# ## Check your understanding
# 1. Worker 1 pulled v0 and pushed when the server was at v1. Which version does its gradient
#    describe, which version does it change, and which version does it create?
# 2. Pushes are deltas. Why does applying the late gradient to v1 lose nothing, and what exactly
#    is the error of a stale push? What would a worker lose by writing its own copy into the server?
# 3. With 8 equal workers, how stale is a typical push? With compute times `[1, 1, 1, 4]`, roughly
#    how stale are the straggler's pushes, and why?
#
# <details><summary>Answers</summary>
#
# 1. Its gradient describes v0 (it was evaluated at v0's parameters), it changes v1 (what the
#    server holds when it arrives) and it creates v2: staleness = applied_to − computed_on = 1.
# 2. A push is a delta −lr·g added to whatever the server holds, and addition commutes, so
#    v2 = v0 − lr·(g0 + g1): both steps are kept, nothing is overwritten. The only error is where
#    g1 was evaluated — at v0, not v1 — so the step differs from a fresh one by
#    lr·(∇f(v0) − ∇f(v1)); writing its own copy v0 − lr·g into the server would instead throw away
#    every step the other workers made since v0 (worker 0's here), as the comparison cell shows.
# 3. N − 1 = 7 versions: between a worker's pull and its push, each of the other 7 equal workers
#    pushes once (only the first pushes of a run are fresher). The straggler computes for 4 time
#    units while each of the 3 fast workers pushes about once per time unit, so its pushes are
#    about 3 · 4 = 12 versions stale (the fast workers' about 2 + 1/4), as the per-worker printout
#    and the histogram's far bar show.
# </details>
#
# Assignment: [02 · the asynchronous push](../exercises/02-async-push.ipynb) — write the push
# yourself and watch it in the Timeline. Next: [03a · Does it still converge? Claim A: similar
# gradients](03a-similar-gradients.ipynb)
