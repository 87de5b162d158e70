# %% [markdown]
# # 04 · Stale Synchronous Parallel (SSP)
#
# **Learning goals**
# - state the SSP rule (Ho et al. 2013): a **clock** is one push, and a worker may start an
#   iteration only if its clock is at most **s** ahead of the slowest worker's clock;
# - place SSP between sync (BSP, `s = 0` is a barrier per clock) and async (ASP, `s = ∞`);
# - read the SSP gate's waits in the Timeline and the staleness it allows in the histogram;
# - sweep the threshold s and explain the time to a target loss with two numbers: gradients needed
#   and gradients per time unit.

# %% [markdown] slide
# ## The rule
# Each worker has a **clock**: the number of gradients it has pushed. Before it starts an iteration
# (pull, compute, push), worker k checks the **SSP gate**:
#
# > clock of worker k − clock of the slowest worker ≤ s
#
# If the check fails, it waits until the slowest worker pushes. Pushes are applied at once, one
# version each, as in async.
# - `s = 0`: nobody may start clock c + 1 before everyone has finished clock c — a barrier per clock.
# - `s = ∞`: the gate never closes — async.
#
# In code: `policy="ssp", max_clocks_ahead=s` — s is the SSP threshold, counted in clocks ahead of
# the slowest worker.

# %% [markdown] slide
# ## The gate at work
# Four workers; worker 3 needs 4 time units per gradient, the others 1. The threshold is s = 1.
# The Timeline opens at the first wait (grey bars).

# %%
import asyncps as aps

problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)
STRAGGLER = [1, 1, 1, 4]

run = aps.simulate(problem, workers=4, policy="ssp", max_clocks_ahead=1, lr=0.2, steps=16,
                   compute_times=STRAGGLER)
first_wait = run.trace.waits[0]
timeline = aps.widgets.Timeline(run)
timeline.frame = run.trace.events.index(first_wait)
timeline

# %%
print(timeline.state)
print(first_wait)

# %% [markdown] fragment
# A Wait event is recorded when the wait *ends*, so the server is already at v7 in this frame.
# Why did worker 0 stop at t = 2? Count each worker's pushes up to then — its clock:

# %%
def clocks_at(trace, t):
    """Each worker's clock (pushes so far) at time t."""
    return [sum(1 for p in trace.pushes if p.worker == k and p.time <= t) for k in range(trace.workers)]

for t in (first_wait.start, first_wait.end):
    clocks = clocks_at(run.trace, t)
    ahead = clocks[0] - min(clocks)
    print(f"t={t:g}: clocks {clocks}; worker 0 is {ahead} ahead of the slowest -> "
          f"{'may start' if ahead <= 1 else 'waits'} (s = 1)")

# %% [markdown] fragment
# At t = 2 worker 0 has pushed twice and worker 3 not at all: 2 − 0 > 1, so the gate closes. At t = 4
# worker 3 pushes, the slowest clock becomes 1, and 2 − 1 ≤ 1 opens the gate for workers 0, 1 and 2.
# Press **▶** or drag the slider to watch the same pattern repeat every 4 time units.

# %% [markdown] slide
# ## How stale does SSP let a push get?
# The threshold s is in **clocks**, staleness is in **versions**. The same straggler, 200 versions,
# for s = 0, 1, 2, 4, 8 and for async:

# %%
THRESHOLDS = [0, 1, 2, 4, 8]
settings = dict(workers=4, lr=0.2, steps=200, compute_times=STRAGGLER)
straggler_runs = {f"ssp s={s}": aps.simulate(problem, policy="ssp", max_clocks_ahead=s, **settings)
                  for s in THRESHOLDS}
straggler_runs["async"] = aps.simulate(problem, policy="async", **settings)

for label, r in straggler_runs.items():
    hist = r.trace.staleness_histogram()
    print(f"{label:9s} max staleness {hist.size - 1:2d}   histogram {hist.tolist()}")

# %% [markdown] fragment
# Side by side, s = 1 and async:

# %%
from IPython.display import HTML

HTML(aps.widgets.histogram_svg(straggler_runs["ssp s=1"].trace.staleness_histogram(),
                               title="ssp s=1: staleness of each push")
     + aps.widgets.histogram_svg(straggler_runs["async"].trace.staleness_histogram(),
                                 title="async: staleness of each push"))

# %% [markdown] slide
# ## Reading the histograms: the straggler's pushes
# While worker 3 (the slowest) computes one gradient, each of the other three workers may push at
# most s + 1 times before the gate stops it. So worker 3's push is stale by at most 3(s + 1) versions.

# %%
for s in THRESHOLDS:
    stale = [p.staleness for p in straggler_runs[f"ssp s={s}"].trace.pushes if p.worker == 3]
    print(f"s={s}: bound 3(s+1) = {3 * (s + 1):2d}; worker 3's first pushes {stale[:4]}, "
          f"its last push {stale[-1]}")
stale = [p.staleness for p in straggler_runs["async"].trace.pushes if p.worker == 3]
print(f"async: worker 3's first pushes {stale[:4]}, its last push {stale[-1]}")

# %% [markdown] fragment
# The large staleness happens only at the start. Once the fast workers are s clocks ahead, the gate
# lets them push **once** per slow gradient: from then on worker 3's pushes are 3 versions stale,
# whatever s is. In async the fast workers never stop: from its second push on, every slow gradient
# is 12 versions stale.

# %% [markdown] slide
# ## Who sets the pace?

# %%
for label, r in straggler_runs.items():
    rate = len(r.trace.pushes) / r.trace.duration
    idle = r.trace.idle_time_per_worker()[:3].mean() / r.trace.duration
    print(f"{label:9s} {rate:.2f} gradients per time unit; workers 0-2 idle {idle:.0%}")

sync = aps.simulate(problem, policy="sync", **settings)
print(f"{'sync':9s} {len(sync.trace.pushes) / sync.trace.duration:.2f} gradients per time unit; "
      f"workers 0-2 idle {sync.trace.idle_time_per_worker()[:3].mean() / sync.trace.duration:.0%}")

# %% [markdown] fragment
# With a straggler that is **always** slow, every finite threshold ends at the straggler's pace —
# one gradient per time unit, like sync. The threshold s only decides how long the fast workers may
# run ahead before the gate catches them.

# %% [markdown] slide
# ## s = 0 is the barrier
# With s = 0, all four workers read the same version, push in turn and wait for each other: a
# synchronous round whose four gradients are *added* one by one instead of averaged. So SSP with
# s = 0 and lr equals sync with lr × 4, version for version of the round:

# %%
import numpy as np

ssp0 = straggler_runs["ssp s=0"]
sync_x4 = aps.simulate(problem, policy="sync", **{**settings, "lr": 4 * settings["lr"], "steps": 50})
print("ssp s=0 at v4, v8, ... == sync (lr x 4) at v1, v2, ...:",
      np.allclose(ssp0.losses[::4], sync_x4.losses),
      "| same times:", np.array_equal(ssp0.trace.version_times()[::4], sync_x4.trace.version_times()))

# %% [markdown] fragment
# Keep this in mind when you compare versions: a sync version averages 4 gradients, an SSP or async
# version applies one. Compare **gradients** or **time**, not versions, across that line.

# %% [markdown] slide
# ## Time to a target loss: the straggler
# The loss starts at 2.40; the best this noisy problem allows is about 0.0049. Target: 0.006.
# For each run: the first version at or below the target, the gradients the server applied up to
# it, and the time it was made.

# %%
TARGET = 0.006


def to_target(r):
    v = r.versions_to_reach(TARGET)
    if v is None:
        return "never reached"
    gradients = sum(1 for p in r.trace.pushes if p.applied_to < v)
    return f"v{v:<4d} {gradients:4d} gradients  t = {r.time_to_reach(TARGET):5.1f}"


table = {"sync": sync, "sync lr x 4": sync_x4, **straggler_runs}
for label, r in table.items():
    print(f"{label:12s} {to_target(r)}")
print(f"ssp s=8: the gate first closes at t = {straggler_runs['ssp s=8'].trace.waits[0].start:g}")

# %% [markdown] fragment
# Sync at lr 0.2 is slow mostly because it *averages*: each version turns 4 gradients into one step
# of size lr, so its 76 gradients buy 19 steps. With lr × 4 it matches s = 0 exactly. Larger
# thresholds reach the target sooner (t = 12 → 9 → 7) although they need more gradients (12 for
# s ≤ 1, 17 to 23 for s ≥ 2): they get there during their head start, before the gate has caught the
# fast workers.
# With s = 8 the gate first closes at t = 11, after the target: up to there it *is* async.

# %% [markdown] slide
# ## Where SSP pays: everyone is sometimes slow
# SSP was designed for slowness that comes and goes: a worker that is slow now and fast later.
# `jitter=1.0` gives every gradient a random (seeded) lognormal compute time, median 1. A sync round
# waits for the slowest of four draws; a threshold s lets the others use the time.

# %%
def sweep(lr, jitter=1.0):
    """sync, ssp for each threshold s, async: on four equal workers with random compute times."""
    common = dict(workers=4, lr=lr, steps=200, jitter=jitter)
    runs = {"sync": aps.simulate(problem, policy="sync", **common)}
    runs.update({f"ssp s={s}": aps.simulate(problem, policy="ssp", max_clocks_ahead=s, **common)
                 for s in THRESHOLDS})
    runs["async"] = aps.simulate(problem, policy="async", **common)
    return runs


def report(runs):
    for label, r in runs.items():
        rate = len(r.trace.pushes) / r.trace.duration
        print(f"{label:9s} {rate:.2f} gradients/time  max staleness "
              f"{r.trace.staleness_histogram().size - 1:2d}  {to_target(r)}")


report(sweep(lr=0.1))

# %% [markdown] fragment
# At lr = 0.1 the throughput rises with s (1.15 → 2.61 gradients per time unit) and the gradients
# needed do not (33 → 27): between two versions the parameters barely move, so a stale gradient is
# almost as good as a fresh one. The largest thresholds win: t = 24.5 for s = 0, 8.2 for s = 8 and
# async.

# %% [markdown] slide
# ## The same sweep with a larger step, lr = 0.3

# %%
report(sweep(lr=0.3))

# %% [markdown] fragment
# Same waiting, same throughput — but now a stale gradient costs: the gradients needed double
# (11 → 22) as s grows. The fastest to the target is **s = 1** (t = 5.3), not async (7.0).

# %% [markdown] slide
# ## The trade-off
# Time to target is set by two numbers that s pulls in opposite directions:
# - **gradients per time unit** — rises with s: less waiting at the gate;
# - **gradients needed** — rises with s when staleness hurts (large lr, many workers), stays flat
#   when it doesn't (small lr: gradients change little between versions).
#
# Under random slowness a moderate threshold recovers much of async's throughput (s = 4: 2.00
# gradients per time unit, async 2.61, s = 0 only 1.15) and cuts the staleness tail (max 18 instead
# of 32). Which s is fastest to the target depends on how much staleness costs: at lr 0.1 the
# largest, at lr 0.3 s = 1. Against a worker that is *always* slow, no finite s helps for long: the
# gate hands the pace to the straggler.

# %% [markdown] slide
# ## Loss against time
# lr = 0.3 with random compute times, each run given about 35 time units: sync makes 12 versions
# in that time, ssp with s = 1 makes 62, async 104.

# %%
lr3 = dict(workers=4, lr=0.3, jitter=1.0)
curves = {"sync": aps.simulate(problem, policy="sync", steps=12, **lr3),
          "ssp": aps.simulate(problem, policy="ssp", max_clocks_ahead=1, steps=62, **lr3),
          "async": aps.simulate(problem, policy="async", steps=104, **lr3)}
for label, r in curves.items():
    print(f"{label:5s} {len(r.losses) - 1:3d} versions in {r.trace.duration:.1f} time units, "
          f"final loss {r.losses[-1]:.4f}")

# %%
HTML(aps.widgets.loss_curves(curves, by="version") + aps.widgets.loss_curves(curves, by="time"))

# %% [markdown] fragment
# Every jump *up* in the ssp and async curves is a stale gradient landing. The largest in each:

# %%
for label in ("ssp", "async"):
    losses = np.array(curves[label].losses)
    v = int(np.argmax(losses[1:] / losses[:-1])) + 1
    push = next(p for p in curves[label].trace.pushes if p.applied_to == v - 1)
    print(f"{label:5s} v{v - 1} -> v{v}: loss {losses[v - 1]:.4f} -> {losses[v]:.4f}, worker {push.worker}'s "
          f"gradient computed on v{push.computed_on}, stale by {push.staleness}")

# %% [markdown] slide
# ## Try it: move the threshold
# A plain function first: one SSP run with random compute times at lr = 0.3 …

# %%
def ssp_summary(s, lr=0.3):
    r = aps.simulate(problem, workers=4, policy="ssp", max_clocks_ahead=s, lr=lr, steps=200, jitter=1.0)
    rate = len(r.trace.pushes) / r.trace.duration
    return (f"s={s}: {rate:.2f} gradients/time, max staleness "
            f"{r.trace.staleness_histogram().size - 1}, {to_target(r)}")

print(ssp_summary(1))

# %% [markdown] fragment
# … then with a slider (move it; the line follows).

# %%
import ipywidgets as widgets

threshold = widgets.IntSlider(value=1, min=0, max=16, description="threshold s")
answer = widgets.HTML(ssp_summary(threshold.value))
threshold.observe(lambda _: setattr(answer, "value", ssp_summary(threshold.value)), "value")
widgets.VBox([threshold, answer])

# %%
threshold.value = 4
print(answer.value)

# %% [markdown] fragment
# The Playground (`playground.ipynb`) has the same threshold as a slider ("SSP: clocks ahead"),
# next to sync and async.

# %% [markdown] slide
# ## Check your understanding
# 1. Under SSP with s = 1, worker 0 has pushed 3 times and worker 3 once. May worker 0 start its
#    next iteration? What if worker 3 had pushed twice?
# 2. Why is s = 0 the same as a synchronous round with 4 × the learning rate?
# 3. With compute times `[1, 1, 1, 4]`, why do s = 1 and s = 8 end up at the same pace, one gradient
#    per time unit? When does a larger s still help?
# 4. At lr = 0.1 async reached the target first, at lr = 0.3 s = 1 did. Which of the two numbers —
#    gradients per time unit or gradients needed — changed between the two sweeps?
#
# Exercise: [03 · the SSP gate](../exercises/03-ssp-gate.ipynb) — write the gate yourself.
# Next: [05 · Local updates](05-local-updates.ipynb).
