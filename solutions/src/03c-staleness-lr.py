# %% [markdown]
# # Assignment 3c · The staleness-aware learning rate
#
# In an asynchronous server a gradient computed on version `computed_on` is applied to version
# `applied_to`; it is stale by `staleness = applied_to - computed_on` versions. Zhang et al. (2016)
# apply such a gradient with a smaller step: **lr / (staleness + 1)**. You will write that rule, plug
# it into the real server, and then measure on the delayed quadratic at which lr async with N
# workers stops converging — with a constant lr, with your staleness-aware lr, and against sync.
#
# Lecture notebook: `notebooks/03c-staleness-and-the-lr.ipynb`. Run every cell from the top; a
# cell that says `NotImplementedError` is waiting for your code.

# %%
import math

import numpy as np
from IPython.display import Markdown, display

import asyncps as aps

# f(x) = x²/2 in one dimension: the gradient at x is x; start at x = 1 (loss 0.5 at v0)
quad = aps.problems.Quadratic(curvature=[1.0], x0=[1.0])
LRS = np.round(np.arange(0.05, 2.01, 0.05), 2)          # 0.05, 0.10, ..., 2.00
WORKERS = [1, 2, 4, 8]

# %% [markdown]
# ## Task 3c.1 · the rate
# Write `staleness_lr(lr, staleness)`: the learning rate the server uses for a push that is stale
# by `staleness` versions, `lr / (staleness + 1)`. A fresh gradient (staleness 0) gets the full lr.

# %% solution id=staleness-lr task="Task 3c.1: the staleness-aware lr"
def staleness_lr(lr, staleness):
    """The step size for a gradient that is `staleness` versions stale."""
    ### BEGIN SOLUTION
    return lr / (staleness + 1)
    ### END SOLUTION

# %% tests id=check-staleness-lr points=2
assert math.isclose(staleness_lr(0.6, 0), 0.6), "a fresh gradient gets the full lr"
assert math.isclose(staleness_lr(0.6, 1), 0.3), "stale by 1: lr / 2"
assert math.isclose(staleness_lr(0.6, 3), 0.15), "stale by 3: lr / 4"
mine = aps.simulate(quad, workers=4, policy="async", lr=0.6, steps=300, lr_schedule=staleness_lr)
builtin = aps.simulate(quad, workers=4, policy="async", lr=0.6, steps=300,
                       lr_schedule="divide_by_staleness")
assert mine.trace.events == builtin.trace.events, "the same pushes as the built-in schedule"
assert np.allclose(mine.losses, builtin.losses, rtol=1e-9, atol=0), "the same losses"
### BEGIN HIDDEN TESTS
rng = np.random.default_rng(5)
for _ in range(50):
    lr, s = float(rng.uniform(0.01, 2.0)), int(rng.integers(0, 40))
    assert math.isclose(staleness_lr(lr, s), lr / (s + 1)), (lr, s)
for workers, times, jitter in ((3, None, 0.0), (4, [1, 1, 1, 4], 0.0), (8, None, 1.0)):
    settings = dict(workers=workers, policy="async", lr=0.5, steps=200, compute_times=times,
                    jitter=jitter, seed=2)
    mine = aps.simulate(quad, lr_schedule=staleness_lr, **settings)
    builtin = aps.simulate(quad, lr_schedule="divide_by_staleness", **settings)
    assert mine.trace.events == builtin.trace.events, workers
    assert np.allclose(mine.losses, builtin.losses, rtol=1e-9, atol=0), workers
### END HIDDEN TESTS

# %% [markdown]
# ## Your rate in the real server
# `aps.simulate(..., lr_schedule=staleness_lr)` makes the server call your function for every
# push. Three equal workers at lr 0.9: from the second round on, every push is stale by 2, so it is
# applied with 0.9 / 3 = 0.3. The Timeline opens at the first stale push.

# %%
mine = aps.simulate(quad, workers=3, policy="async", lr=0.9, steps=9, lr_schedule=staleness_lr)
timeline = aps.widgets.Timeline(mine, frame="stale")
display(timeline)
print(timeline.state)
for push in mine.trace.pushes[:4]:
    print(f"worker {push.worker}: computed on v{push.computed_on}, applied to v{push.applied_to}, "
          f"stale by {push.staleness} -> rate {staleness_lr(0.9, push.staleness):.4f}")

# %% [markdown]
# ## Task 3c.2 · does it converge?
# Write `converges(lr, workers, policy, lr_schedule="constant")`. Run
#
# `aps.simulate(quad, workers=workers, policy=policy, lr=lr, lr_schedule=lr_schedule, steps=400)`
#
# (equal compute times, every other argument at its default) and return `True` when the run did not
# diverge (`run.diverged` is False) **and** its last loss `run.losses[-1]` is below `1e-6`;
# otherwise `False`. Keep these settings exactly: the tests compare with them.

# %% solution id=converges task="Task 3c.2: does it converge?"
def converges(lr, workers, policy, lr_schedule="constant"):
    """True when 400 versions of `policy` with `workers` workers bring the quadratic below 1e-6."""
    ### BEGIN SOLUTION
    run = aps.simulate(quad, workers=workers, policy=policy, lr=lr, lr_schedule=lr_schedule,
                       steps=400)
    return not run.diverged and run.losses[-1] < 1e-6
    ### END SOLUTION

# %% tests id=check-converges points=1
assert converges(0.5, 1, "sync"), "one worker, lr 0.5: x shrinks by half each version"
assert not converges(2.5, 1, "sync"), "lr 2.5 > 2 diverges even without staleness"
assert not converges(0.9, 4, "async"), "4 async workers: lr 0.9 is too large"
### BEGIN HIDDEN TESTS
def reference(lr, workers, policy, lr_schedule="constant"):
    run = aps.simulate(quad, workers=workers, policy=policy, lr=lr, lr_schedule=lr_schedule,
                       steps=400)
    return not run.diverged and run.losses[-1] < 1e-6


cases = [(0.05, 1, "sync"), (2.0, 1, "sync"), (1.9, 4, "sync"), (0.2, 8, "async"),
         (0.15, 8, "async"), (0.4, 4, "async"), (0.45, 4, "async"), (0.9, 2, "async"),
         (1.2, 2, "async")]
for lr, workers, policy in cases:
    assert bool(converges(lr, workers, policy)) == reference(lr, workers, policy), (lr, workers, policy)
for lr, workers in ((0.05, 8), (1.3, 8), (1.5, 8), (1.6, 4), (1.7, 4)):
    assert bool(converges(lr, workers, "async", "divide_by_staleness")) == \
        reference(lr, workers, "async", "divide_by_staleness"), (lr, workers)
### END HIDDEN TESTS

# %% [markdown]
# ## Task 3c.3 · the largest stable lr
# Write `largest_stable_lr(workers, policy, lrs, lr_schedule="constant")`: the largest lr in the
# list `lrs` for which `converges(lr, workers, policy, lr_schedule)` is `True`, or `None` if there is
# none. `lrs` need not be sorted, and the lrs that converge need not be next to each other (a very
# small lr may be too slow to get below 1e-6 in 400 versions). Tip: try the largest lr first and stop
# at the first one that converges — it saves many runs.

# %% solution id=largest-stable-lr task="Task 3c.3: the largest stable lr"
def largest_stable_lr(workers, policy, lrs, lr_schedule="constant"):
    """The largest lr in `lrs` at which `converges` holds, or None."""
    ### BEGIN SOLUTION
    for lr in sorted(lrs, reverse=True):
        if converges(float(lr), workers, policy, lr_schedule):
            return float(lr)
    return None
    ### END SOLUTION

# %% tests id=check-largest-stable-lr points=2
assert largest_stable_lr(2, "async", [0.5, 0.9, 1.5]) == 0.9
assert largest_stable_lr(2, "async", [1.5, 3.0]) is None, "none of them converges"
### BEGIN HIDDEN TESTS
def reference_converges(lr, workers, policy, lr_schedule="constant"):
    run = aps.simulate(quad, workers=workers, policy=policy, lr=lr, lr_schedule=lr_schedule,
                       steps=400)
    return not run.diverged and run.losses[-1] < 1e-6


def reference_largest(workers, policy, lrs, lr_schedule="constant"):
    good = [lr for lr in lrs if reference_converges(lr, workers, policy, lr_schedule)]
    return max(good) if good else None


for workers, policy, lrs, schedule in (
        (4, "async", [0.3, 0.6, 0.45, 0.4, 0.1], "constant"),
        (8, "async", [0.05, 1.3, 0.5, 1.4, 1.0], "divide_by_staleness"),
        (8, "async", [0.01, 0.02], "divide_by_staleness"),
        (4, "sync", [2.1, 1.9, 2.0, 0.5], "constant")):
    assert largest_stable_lr(workers, policy, lrs, schedule) == \
        reference_largest(workers, policy, lrs, schedule), (workers, policy, lrs, schedule)
### END HIDDEN TESTS

# %% [markdown]
# ## The experiment
# The largest stable lr in `LRS` = 0.05, 0.10, …, 2.00 for 1, 2, 4 and 8 workers: sync and async,
# each with a constant lr and with your staleness-aware lr. With N equal async workers, every push
# after the first round is τ = N − 1 versions stale; the last column is the limit that the theory
# of the delayed update x<sub>t+1</sub> = x<sub>t</sub> − lr · x<sub>t−τ</sub> gives for a constant
# lr: it converges if and only if lr < 2 sin(π / (2(2τ + 1))).

# %%
def cell(lr):
    return "  none" if lr is None else f"{lr:6.2f}"


table, limits = {}, {}
print("workers   sync  async   sync+staleness_lr  async+staleness_lr   limit 2 sin(π/(2(2τ+1)))")
for workers in WORKERS:
    row = table[workers] = [largest_stable_lr(workers, policy, LRS, schedule)
                            for schedule in ("constant", staleness_lr) for policy in ("sync", "async")]
    tau = workers - 1
    limit = limits[workers] = 2 * math.sin(math.pi / (2 * (2 * tau + 1)))
    print(f"{workers:7d} {cell(row[0])} {cell(row[1])}   {cell(row[2]):>17}  {cell(row[3]):>18}"
          f"   {limit:24.4f}")

# %% [markdown]
# ## Look closer at the edge
# 2 workers at lr 1.00 "converge" in the table — exactly at the limit, where the theory says they
# should not. The losses of the last versions tell why:

# %%
edge = aps.simulate(quad, workers=2, policy="async", lr=1.0, steps=400)
print("last 7 losses:", [f"{x:.4f}" for x in edge.losses[-7:]])

# %% [markdown]
# ## What the numbers say
# Rendered from the table above (columns: sync, async, sync + your lr, async + your lr).

# %%
smallest = min(lr for lr in LRS if converges(float(lr), 8, "async", staleness_lr))
print(f"the smallest lr that converges with the staleness-aware lr and 8 workers: {smallest:.2f}")
sync, const, mine = ({w: largest[k] for w, largest in table.items()} for k in (0, 1, 3))
slow = [lr for lr in LRS if limits[8] > lr > (const[8] or 0)]     # below the limit, yet too slow
display(Markdown(
    f"- **Sync** is stable up to lr {cell(min(sync.values())).strip()} for every number of workers: all "
    f"its gradients are fresh (staleness 0), so it has the limit of plain gradient descent, lr < 2 (at "
    f"lr 2 x just flips sign forever). One async worker is the same as sync: nothing is ever stale.\n"
    f"- **Async with a constant lr** loses stability as workers are added: "
    + ", ".join(f"{cell(const[w]).strip()} ({w} worker{'s' if w > 1 else ''})" for w in WORKERS)
    + ". The largest stable lr falls roughly like 1/N, as the limit 2 sin(π / (2(2τ + 1))) ≈ "
    f"π / (2N − 1) predicts. Two caveats, both visible above: with 2 workers lr 1.0 is on the limit "
    f"itself ({limits[2]:.4f}), where the losses cycle with period 3 "
    f"({', '.join(f'{x:.2f}' for x in edge.losses[-3:])}), so one final loss is not proof of "
    f"convergence; and for 8 workers lr {', '.join(f'{lr:.2f}' for lr in slow)} "
    f"{'is' if len(slow) == 1 else 'are'} below the limit {limits[8]:.4f} but "
    f"{'converges' if len(slow) == 1 else 'converge'} too slowly to reach 1e-6 in 400 versions.\n"
    f"- **Async with the staleness-aware lr** gets most of the range back: "
    + ", ".join(f"{cell(mine[w]).strip()} ({w})" for w in WORKERS[1:])
    + f". Every push after the first round is stale by τ, so lr / (τ + 1) is simply a constant lr "
    f"scaled down by N — which is why the small lrs now fail instead (with 8 workers {smallest:.2f} "
    f"is the smallest that converges).\n"
    f"- For sync the staleness-aware lr changes nothing: staleness 0 gives lr / 1.\n\n"
    f"So the staleness-aware lr does not make async as robust as sync: it divides the lr by about N, "
    f"which is what you would have to do by hand with a constant lr."))

# %% [markdown]
# ## Think about it (not graded)
# 1. Make `converges` stricter: ask that the last 10 losses are all below 1e-6. Which entry of the
#    table changes?
# 2. Give the last of 4 workers a straggler (`compute_times=[1, 1, 1, 4]`). The staleness now varies
#    from push to push. Is the staleness-aware lr still the same as a smaller constant lr?
