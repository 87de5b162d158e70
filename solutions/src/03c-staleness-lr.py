# %% [markdown]
# # Assignment 3c · The staleness-aware learning rate
#
# In an asynchronous server a gradient computed on version `computed_on` is applied to version
# `applied_to`; it is stale by `staleness = applied_to - computed_on` versions. Zhang et al. (2016)
# apply such a gradient with a smaller step: **lr / (staleness + 1)**. You will write that rule, plug
# it into the real server, and then measure on the delayed quadratic at which lr async with N
# workers stops converging — with a constant lr, with your staleness-aware lr, and against sync.
#
# Lecture notebook: [03c · Why staleness needs a smaller
# lr](../notebooks/03c-staleness-and-the-lr.ipynb). Run every cell from the top; a cell that says
# `NotImplementedError` is waiting for your code.
#
# **Check your work** at any time: save (Ctrl+S), then run `aps.check()` in a cell (the
# notebook's last cell holds one). It shows your points per task (the visible tests).

# %%
import math

import numpy as np
from IPython.display import Markdown, display

import asyncps as aps

# f(x) = x²/2 in one dimension: the gradient at x is x; start at x = 1 (loss 0.5 at v0)
quad = aps.problems.Quadratic(curvature=[1.0], x0=[1.0])
LRS = np.round(np.arange(0.05, 2.01, 0.05), 2)          # 0.05, 0.10, ..., 2.00
WORKERS = [1, 2, 4, 8]


def your(name):
    """The answer you wrote in a cell above (NotImplementedError while it is still missing)."""
    if name not in globals():
        raise NotImplementedError(f"{name} is not set yet: run your answer's cell above first")
    return globals()[name]

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
# ## Task 3c.2 · did it converge?
# Write `converges(run)`: given a finished run of the quadratic, return `True` when it converged
# and `False` otherwise. A converged run did not diverge (`run.diverged`) and its loss has
# **settled** below 1e-6. Careful: a loss that is below 1e-6 on the last version is not enough. At
# the edge of stability a run can cycle for ever, and the version it stops on may be the one
# where x happens to pass through 0:

# %%
edge = aps.simulate(quad, workers=2, policy="async", lr=1.0, steps=400)
print("last 9 losses of 2 async workers at lr 1.0:", [f"{x:.4f}" for x in edge.losses[-9:]])

# %% [markdown]
# Decide how to tell a settled loss from one that passes through a small value (look at more than
# one version), using only `run.diverged` and `run.losses`. The tests give your function runs that
# clearly converged, clearly diverged, were too slow, or cycle like the one above.

# %% solution id=converges task="Task 3c.2: did it converge?"
def converges(run):
    """True when `run` did not diverge and its loss has settled below 1e-6."""
    ### BEGIN SOLUTION
    return not run.diverged and max(run.losses[-10:]) < 1e-6
    ### END SOLUTION

# %% tests id=check-converges points=2
assert converges(aps.simulate(quad, workers=1, policy="sync", lr=0.5, steps=400)), "x halves each version"
assert not converges(aps.simulate(quad, workers=1, policy="sync", lr=2.5, steps=400)), "lr 2.5 > 2 diverges"
assert not converges(edge), "a cycle is not convergence, even if its last loss is 0"
### BEGIN HIDDEN TESTS
def settled(run):
    return not run.diverged and max(run.losses[-10:]) < 1e-6


cases = [(1, "sync", 0.05, "constant"), (1, "sync", 2.0, "constant"), (4, "sync", 1.9, "constant"),
         (8, "async", 0.15, "constant"), (4, "async", 0.4, "constant"), (4, "async", 0.45, "constant"),
         (2, "async", 0.9, "constant"), (2, "async", 1.2, "constant"), (3, "async", 0.6, "constant"),
         (8, "async", 0.05, "divide_by_staleness"), (8, "async", 1.3, "divide_by_staleness"),
         (8, "async", 1.5, "divide_by_staleness"), (4, "async", 1.6, "divide_by_staleness")]
for workers, policy, lr, schedule in cases:
    run = aps.simulate(quad, workers=workers, policy=policy, lr=lr, steps=400, lr_schedule=schedule)
    assert bool(converges(run)) == settled(run), (workers, policy, lr, schedule, settled(run))
### END HIDDEN TESTS

# %% [markdown]
# ## Task 3c.3 · the largest stable lr
# Write `largest_stable_lr(workers, policy, lrs, lr_schedule="constant")`: the largest lr in the
# list `lrs` whose run `aps.simulate(quad, workers=workers, policy=policy, lr=lr,
# lr_schedule=lr_schedule, steps=400)` (every other argument at its default) `converges`, or `None`
# if there is none. `lrs` need not be sorted, and the lrs that converge need not be next to each
# other (a very small lr may be too slow to settle below 1e-6 in 400 versions). Tip: try the
# largest lr first and stop at the first one that converges — it saves many runs.

# %% solution id=largest-stable-lr task="Task 3c.3: the largest stable lr"
def largest_stable_lr(workers, policy, lrs, lr_schedule="constant"):
    """The largest lr in `lrs` whose 400-version run converges, or None."""
    ### BEGIN SOLUTION
    for lr in sorted(lrs, reverse=True):
        run = aps.simulate(quad, workers=workers, policy=policy, lr=float(lr), lr_schedule=lr_schedule,
                           steps=400)
        if converges(run):
            return float(lr)             # the first from the top that converges
    return None
    ### END SOLUTION

# %% tests id=check-largest-stable-lr points=2
largest = largest_stable_lr(2, "async", [0.5, 0.9, 1.5])
assert largest == 0.9, f'largest_stable_lr(2, "async", [0.5, 0.9, 1.5]) returned {largest!r}: 0.9 ' \
    "converges and 1.5 does not"
assert largest_stable_lr(2, "async", [1.5, 3.0]) is None, "none of them converges"
### BEGIN HIDDEN TESTS
def reference_converges(lr, workers, policy, lr_schedule="constant"):
    run = aps.simulate(quad, workers=workers, policy=policy, lr=lr, lr_schedule=lr_schedule,
                       steps=400)
    return not run.diverged and max(run.losses[-10:]) < 1e-6


def reference_largest(workers, policy, lrs, lr_schedule="constant"):
    good = [lr for lr in lrs if reference_converges(lr, workers, policy, lr_schedule)]
    return max(good) if good else None


for workers, policy, lrs, schedule in (
        (4, "async", [0.3, 0.6, 0.45, 0.4, 0.1], "constant"),
        (8, "async", [0.05, 1.3, 0.5, 1.4, 1.0], "divide_by_staleness"),
        (8, "async", [0.01, 0.02], "divide_by_staleness"),
        (4, "sync", [2.1, 1.9, 2.0, 0.5], "constant"),
        (3, "async", [0.2, 0.5, 0.55], "constant")):
    assert largest_stable_lr(workers, policy, lrs, schedule) == \
        reference_largest(workers, policy, lrs, schedule), (workers, policy, lrs, schedule)
### END HIDDEN TESTS

# %% [markdown]
# ## Task 3c.4 · predict, then measure
# The experiment below finds, among other things, the largest constant lr in `LRS` (0.05, 0.10,
# …, 2.00) at which **4 async workers** converge. **Before you run it**, predict that lr from the
# lecture's theory of the delayed update (with N equal workers, every push is stale by τ = N − 1).
# Set `predicted_lr_4_workers` to a number; it is graded against the measured value within ±0.05.

# %% solution id=predict-lr task="Task 3c.4: predict the largest stable lr"
### BEGIN SOLUTION
predicted_lr_4_workers = 0.40     # the limit 2 sin(pi / 14) is about 0.445: the grid's 0.40
### END SOLUTION

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

# %% tests id=check-predict-lr points=1
guess = your("predicted_lr_4_workers")
assert isinstance(guess, (int, float, np.integer, np.floating)) and not isinstance(guess, bool) \
    and guess > 0, f"predicted_lr_4_workers={guess!r}: a learning rate (a number > 0), please"
### BEGIN HIDDEN TESTS
measured = table[4][1]                              # 4 workers, async, constant lr
assert abs(guess - measured) <= 0.05 + 1e-9, \
    f"you predicted {guess!r}; 4 async workers are stable up to lr {measured:.2f} in LRS"
### END HIDDEN TESTS

# %% [markdown]
# ## What the numbers say
# Rendered from the table above (columns: sync, async, sync + your lr, async + your lr).

# %%
smallest = min(lr for lr in LRS if converges(aps.simulate(quad, workers=8, policy="async", lr=float(lr),
                                                          lr_schedule=staleness_lr, steps=400)))
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
    f"({', '.join(f'{x:.2f}' for x in edge.losses[-3:])}): a final loss of 0 that your `converges` "
    f"rightly rejects; and for 8 workers lr {', '.join(f'{lr:.2f}' for lr in slow)} "
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
# ## Task 3c.5 · compensate the delay instead of shrinking the step
# The staleness-aware lr buys stability by taking smaller steps, so it is slower wherever a
# constant lr was already stable. DC-ASGD (Zheng et al. 2017) corrects the stale gradient
# instead: a gradient g computed at the parameters w<sub>then</sub> (version `computed_on`) is
# applied at w<sub>now</sub>, and a first-order Taylor expansion says the gradient there is about
# g + H (w<sub>now</sub> − w<sub>then</sub>), with H the curvature (the Hessian). DC-ASGD replaces H
# by the cheap λ · g ⊙ g. Your `apply` can remember the parameters of every version it has seen in
# a closure: every version v is the current one exactly once, when the push that makes v + 1 lands.
#
# Design `make_compensated_push()`: it returns a **fresh** push function `push(params, version,
# grad, computed_on, lr)` (the same contract as `async_push` in assignment 2) that corrects `grad`
# for the delay. Which H to use is your design: try DC-ASGD's λ · g ⊙ g, measure, and think about
# what H is for f(x) = x²/2. It is graded by what it does, with 4 async workers and `jitter=0.3`,
# over the seeds 0–4:
#
# - a fresh push (`computed_on == version`) is the plain step `params - lr * grad`;
# - **it corrects**: for a stale push, the gradient your push applies, (params − new_params) / lr,
#   must be closer to the fresh gradient at the parameters it is applied to than the stale
#   gradient is — within a quarter of the stale gradient's error — in each of four situations on
#   `quad` (stale by 1 and by 2, at lr 0.5 and 1.5). Capping the lr of stale pushes does not
#   correct them;
# - **more stable**: the largest lr in `GRID` at which the run converges (your `converges`, 300
#   versions) must be at least 2 times that of the plain push, on average over the seeds (geometric
#   mean);
# - **not slower**: at lr 0.2 the mean number of versions after which the loss stays below 1e-6
#   may be at most 1.1 times that of the plain push (the staleness-aware lr fails this one).

# %%
GRID = np.round(0.2 * 1.1 ** np.arange(20), 4)        # 0.2 ... about 1.2
JITTERED = dict(workers=4, policy="async", jitter=0.3)


def plain_push(params, version, grad, computed_on, lr):
    return params - lr * grad, version + 1, version - computed_on


def largest_in_grid(make_push, seed):
    """The largest lr in GRID at which a run with a fresh `make_push()` converges (None: none)."""
    for rate in sorted(GRID, reverse=True):
        trial = aps.simulate(quad, lr=float(rate), steps=300, seed=seed, apply=make_push(), **JITTERED)
        if converges(trial):
            return float(rate)
    return None

# %% solution id=compensated-push task="Task 3c.5: delay compensation"
def make_compensated_push():
    """A fresh push that corrects a stale gradient for the parameters' move since its pull."""
    ### BEGIN SOLUTION
    seen = {}                                  # version -> the parameters the server had then
    curvature = quad.curvature                 # H of f(x) = x²/2 is 1 (x²·g⊙g is no stand-in here)

    def push(params, version, grad, computed_on, lr):
        seen[version] = params.copy()
        corrected = grad + curvature * (params - seen[computed_on])
        return params - lr * corrected, version + 1, version - computed_on
    return push
    ### END SOLUTION

# %%
for seed in range(2):
    print(f"seed {seed}: largest stable lr plain {largest_in_grid(lambda: plain_push, seed)}, "
          f"compensated {largest_in_grid(make_compensated_push, seed)}")

# %% tests id=check-compensated-push points=4
push = make_compensated_push()
assert callable(push), f"make_compensated_push() must return a push function; it returned {push!r:.60}"
pushed = push(np.array([2.0]), 0, np.array([0.5]), 0, 0.1)
assert isinstance(pushed, tuple) and len(pushed) == 3, \
    f"your push must return a tuple (new_params, new_version, staleness); it returned {pushed!r:.60}"
new_params, new_version, staleness = pushed
assert np.shape(new_params) == (1,), \
    f"new_params has shape {np.shape(new_params)}: it must have the shape of params, (1,)"
assert np.allclose(new_params, [1.95]) and new_version == 1 and staleness == 0, \
    "a fresh push is the plain step"
### BEGIN HIDDEN TESTS
fresh = make_compensated_push()
params = np.array([1.0])
for version in range(6):                       # fresh pushes with made-up gradients
    grad = np.array([0.3 * (version - 2)])
    got, new_version, staleness = fresh(params.copy(), version, grad, version, 0.5)
    assert np.shape(got) == (1,) and np.allclose(got, params - 0.5 * grad)
    assert new_version == version + 1 and staleness == 0
    params = got


def correction_error(rate, stale_by):
    """|applied − fresh| / |stale − fresh| for a push stale by `stale_by` at lr `rate` on quad."""
    push, x = make_compensated_push(), np.array([1.0])
    stale_grad = quad.gradient(x)                 # computed on v0 by a worker that pushes late
    for version in range(stale_by):               # other workers' fresh pushes move the server
        x, _, _ = push(x.copy(), version, quad.gradient(x), version, rate)
    new, new_version, staleness = push(x.copy(), stale_by, stale_grad, 0, rate)
    assert new_version == stale_by + 1 and staleness == stale_by, "the versions and staleness"
    applied, fresh = (x - new) / rate, quad.gradient(x)
    return float(np.abs(applied - fresh)[0] / np.abs(stale_grad - fresh)[0])


for _rate in (0.5, 1.5):
    for _stale_by in (1, 2):
        _error = correction_error(_rate, _stale_by)
        assert _error <= 0.25, (f"lr {_rate}, a push stale by {_stale_by}: the gradient you apply is "
                                f"{_error:.2f} of the stale gradient's error away from the fresh one")


def reference_largest_in_grid(make_push, seed):
    for rate in reversed(sorted(GRID)):
        ran = aps.simulate(quad, steps=300, lr=float(rate), apply=make_push(), seed=seed, **JITTERED)
        if max(ran.losses[-10:]) < 1e-6 and not ran.diverged:
            return round(float(rate), 4)
    return None


def reference_versions(make_push, seed):
    """The version from which on the loss stays below 1e-6 (None: not within 400 versions)."""
    run = aps.simulate(quad, lr=0.2, steps=400, seed=seed, apply=make_push(), **JITTERED)
    above = np.nonzero(np.asarray(run.losses) >= 1e-6)[0]
    if run.diverged or (above.size and above[-1] == len(run.losses) - 1):
        return None
    return int(above[-1]) + 1 if above.size else 0


plain = [reference_largest_in_grid(lambda: plain_push, seed) for seed in range(5)]
yours = [reference_largest_in_grid(make_compensated_push, seed) for seed in range(5)]
assert None not in yours, f"your push converges at no lr of GRID for some seed: {yours}"
gain = np.exp(np.mean(np.log(yours)) - np.mean(np.log(plain)))
assert gain >= 2, f"largest stable lr {yours}, plain {plain}: only {gain:.2f} times larger"
plain_versions = [reference_versions(lambda: plain_push, seed) for seed in range(5)]
your_versions = [reference_versions(make_compensated_push, seed) for seed in range(5)]
assert None not in your_versions, "at lr 0.2 your push does not settle below 1e-6 in 400 versions"
assert np.mean(your_versions) <= 1.1 * np.mean(plain_versions), \
    f"at lr 0.2 your push needs {your_versions} versions, plain {plain_versions}: slower"
### END HIDDEN TESTS

# %% [markdown]
# ## Think about it (not graded)
# 1. Your compensation knew H. Real models do not: how could the server estimate it from the
#    gradients and parameters it has seen? Why does DC-ASGD's λ · g ⊙ g fail on this quadratic?
# 2. Give the last of 4 workers a straggler (`compute_times=[1, 1, 1, 4]`). The staleness now varies
#    from push to push. Is the staleness-aware lr still the same as a smaller constant lr?

# %% [markdown]
# ## Check your work
# Save first (Ctrl+S): `aps.check()` runs this notebook **as last saved**, top to bottom in a fresh
# kernel, and shows the points per task of the tests you can see (your grade also runs hidden
# tests) and the first thing to fix. In a terminal: `python -m asyncps.check
# exercises/03c-staleness-lr.ipynb`.

# %%
import asyncps as aps   # this cell runs alone too: after a restart, or as the first cell you run

aps.check()
