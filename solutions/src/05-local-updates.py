# %% [markdown]
# # Assignment 5 · Local updates and periodic averaging
#
# In Downpour SGD (Dean et al. 2012) a worker does not push after every gradient: it applies each
# gradient to its **own local copy** of the parameters and pushes the sum of its last n gradients
# every n local steps (`push_every=n`), then pulls. With `policy="sync"` the server averages each
# round of pushes, which puts it exactly at the **average of the workers' local copies**: periodic
# averaging. With `push_every=None` a worker never pushes: it pulls v0 once and from then on updates
# only its own copy; the server stays at v0.
#
# `run.worker_params` holds each worker's local copy at the end of a run. You will measure how far
# the copies drift apart, predict how the drift grows with n, answer why a worker can't just update
# its own copy without the server, and choose how often to push when every message counts.
#
# Lecture notebooks: [05a · Local updates](../notebooks/05a-local-updates.ipynb) and
# [05b · Periodic averaging](../notebooks/05b-periodic-averaging.ipynb). Run every cell from the
# top; a cell that says `NotImplementedError` is waiting for your code.
#
# **Check your work** at any time: save (Ctrl+S), then run `aps.check()` in a cell (the
# notebook's last cell holds one). It shows your points per task (the visible tests).

# %%
import numpy as np
from IPython.display import Markdown, display

import asyncps as aps

problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)

# %% [markdown]
# ## Task 5.1 · the drift of the local copies
# Write `drift(copies)`: `copies` is a list of parameter vectors (numpy arrays of the same shape),
# one per worker. Return the **largest** Euclidean distance between any two of them, as a Python
# `float` (0.0 when there is only one copy).

# %% solution id=drift task="Task 5.1: the drift of the local copies"
def drift(copies):
    """The largest Euclidean distance between any two copies (0.0 for a single copy)."""
    ### BEGIN SOLUTION
    return max((float(np.linalg.norm(copies[i] - copies[j]))
                for i in range(len(copies)) for j in range(i + 1, len(copies))), default=0.0)
    ### END SOLUTION

# %% tests id=check-drift points=2
two = [np.array([0.0, 0.0]), np.array([3.0, 4.0])]
assert abs(drift(two) - 5.0) < 1e-12, "two copies: their distance"
three = [np.array([0.0, 0.0]), np.array([1.0, 0.0]), np.array([0.0, 3.0])]
assert abs(drift(three) - np.sqrt(10.0)) < 1e-12, "distances 1, 3 and sqrt(10): the largest"
assert drift([np.array([1.0, 2.0])]) == 0.0, "one copy has not drifted"
assert isinstance(drift(three), float), "return a Python float"
### BEGIN HIDDEN TESTS
rng = np.random.default_rng(17)
for n in (2, 4, 7):
    copies = [rng.standard_normal(5) for _ in range(n)]
    expected = max(np.sqrt(np.sum((a - b) ** 2)) for a in copies for b in copies)
    assert abs(drift(copies) - expected) < 1e-12
    assert abs(drift(copies[::-1]) - expected) < 1e-12, "the order of the copies does not matter"
same = [np.ones(3)] * 4
assert drift(same) == 0.0
### END HIDDEN TESTS

# %% [markdown]
# ## Task 5.2 · what periodic averaging computes
# Write `average_copies(copies)`: the mean of the copies, entry by entry — one parameter vector of
# the same shape as each copy.

# %% solution id=average-copies task="Task 5.2: the average of the copies"
def average_copies(copies):
    """The mean of the workers' copies: one parameter vector."""
    ### BEGIN SOLUTION
    return np.mean(np.asarray(copies, dtype=float), axis=0)
    ### END SOLUTION

# %% tests id=check-average-copies points=2
got = average_copies([np.array([0.0, 0.0]), np.array([2.0, 4.0])])
assert np.shape(got) == (2,) and np.allclose(got, [1.0, 2.0]), "the mean, entry by entry"
### BEGIN HIDDEN TESTS
rng = np.random.default_rng(19)
copies = [rng.standard_normal(4) for _ in range(3)]
got = average_copies(copies)
assert np.shape(got) == (4,), "one vector with one entry per parameter"
assert np.allclose(got, (copies[0] + copies[1] + copies[2]) / 3)
averaged = aps.simulate(problem, workers=3, policy="sync", lr=0.05, steps=3, push_every=4)
assert np.allclose(average_copies(averaged.worker_params), averaged.params, rtol=0, atol=1e-12), \
    "the server's last version is the average of the copies it averaged"
### END HIDDEN TESTS

# %% [markdown]
# ## Periodic averaging in the real server
# 4 workers, `push_every=5`, `policy="sync"`: each worker computes 5 gradients on its own copy,
# then pushes their sum; the server waits at the barrier for all 4 and averages them into one new
# version, which every worker pulls. The Timeline opens at the first push: five compute bars, all
# labelled v0, before it.

# %%
run = aps.simulate(problem, workers=4, policy="sync", lr=0.05, steps=4, push_every=5,
                   partition="sorted")
timeline = aps.widgets.Timeline(run)
timeline.frame = run.trace.events.index(run.trace.pushes[0])
timeline

# %%
print(timeline.state)

# %% [markdown]
# The run ends at the server's last averaging: `run.worker_params` are the copies just before it,
# 5 local steps after the workers' last pull. Your two functions on them:

# %%
print(f"versions {len(run.losses) - 1}, pushes {len(run.trace.pushes)}, "
      f"local steps per worker {len(run.trace.computes) // 4}")
print(f"drift of the copies: {drift(run.worker_params):.4f}")
print("the server's last version is the average of the copies:",
      bool(np.allclose(average_copies(run.worker_params), run.params, rtol=0, atol=1e-12)))

# %% [markdown]
# ## Task 5.3 · predict: how does the drift grow with n?
# The next cell makes 100 local steps per worker with periodic averaging every n = 10, 5 and 1
# steps (and without a server), on IID and on sorted shards, and prints the drift of the copies.
# **Before you run it**, predict for the **sorted** shards: the drift with `push_every=10` is how
# many times the drift with `push_every=5`? Set `predicted_drift_ratio` to a number; it is graded
# within 35 % of the measured ratio. (Between two averagings, how many steps does each copy take
# along its own shard's gradient?)

# %% solution id=predict-drift task="Task 5.3: predict the drift ratio"
predicted_drift_ratio = None     # drift with push_every=10 / drift with push_every=5, sorted shards
### BEGIN SOLUTION
# between averagings each copy walks n steps along its own shard's gradient: drift roughly ∝ n
predicted_drift_ratio = 10 / 5
### END SOLUTION

# %% [markdown]
# ## The table
# The same runs as in Task 5.3. For each: the drift, the loss of the averaged copy
# (`problem.loss(average_copies(...))`, what periodic averaging would give the server), and the loss
# of the worst single copy (what the unluckiest worker holds). The smallest loss this problem can
# reach is printed first.

# %%
best = np.linalg.lstsq(problem.A, problem.b, rcond=None)[0]
print(f"smallest loss: {problem.loss(best):.4f}   loss at v0: {problem.loss(problem.x0):.4f}")
print("partition  push_every   drift   loss of the average   worst copy")
RUNS = {None: dict(policy="async", steps=100),       # push_every: 100 local steps per worker
        10: dict(policy="sync", steps=10), 5: dict(policy="sync", steps=20),
        1: dict(policy="sync", steps=100)}


def before_averaging(run, problem, lr, partition, push_every):
    """The copies just before the server's last averaging, each n local steps after its last pull.
    With push_every=1 the worker loop takes no local step: its gradient goes straight to the server
    and the next pull replaces its copy, so run.worker_params are the versions it pulled. To
    measure every n the same way, take that one local step here (whole-shard gradients, seed 0)."""
    if push_every != 1:
        return run.worker_params
    shards = problem.shards(len(run.worker_params), partition, 0)
    return [copy - lr * problem.gradient(copy, shard) for copy, shard in zip(run.worker_params, shards)]


rows = {}
for partition in ["iid", "sorted"]:
    for push_every, settings in RUNS.items():
        copies = before_averaging(aps.simulate(problem, workers=4, lr=0.05, push_every=push_every,
                                               partition=partition, **settings), problem, 0.05, partition, push_every)
        row = rows[partition, push_every] = (drift(copies), problem.loss(average_copies(copies)),
                                             max(problem.loss(c) for c in copies))
        print(f"{partition:>9}  {str(push_every):>10}  {row[0]:6.4f}   {row[1]:19.4f}   {row[2]:10.4f}")

# %%
if ("sorted", 10) in rows and ("sorted", 5) in rows:
    measured_drift_ratio = rows["sorted", 10][0] / rows["sorted", 5][0]
    print(f"sorted shards: drift with push_every=10 / with push_every=5 = {measured_drift_ratio:.2f}")
else:
    print("The table needs your drift and average_copies (Tasks 5.1 and 5.2) first.")

# %% tests id=check-predict-drift points=2
if predicted_drift_ratio is None:
    raise NotImplementedError("Task 5.3: write your prediction in the cell above first")
assert isinstance(predicted_drift_ratio, (int, float, np.integer, np.floating)) and predicted_drift_ratio > 0, \
    "predicted_drift_ratio must be a number > 0"
### BEGIN HIDDEN TESTS
def _spread(copies):
    return max(float(np.sqrt(np.sum((a - b) ** 2))) for a in copies for b in copies)


_at = {n: _spread(aps.simulate(problem, workers=4, policy="sync", lr=0.05, steps=100 // n, push_every=n,
                               partition="sorted").worker_params) for n in (5, 10)}
_ratio = _at[10] / _at[5]
assert abs(predicted_drift_ratio - _ratio) <= 0.35 * _ratio, \
    f"predicted {predicted_drift_ratio:g}, measured {_ratio:.2f}: the drift grows with n"
### END HIDDEN TESTS

# %% [markdown]
# Without a server nothing reaches it: the server never moves from v0.

# %%
alone = aps.simulate(problem, workers=4, policy="async", lr=0.05, steps=100, push_every=None,
                     partition="sorted")
alone_server_loss = alone.losses[-1]
print(f"pushes {len(alone.trace.pushes)}, pulls {len(alone.trace.pulls)}, "
      f"server versions {len(alone.losses) - 1}, server loss {alone_server_loss:.4f}")

# %% [markdown]
# ## Where are the lone copies heading?
# A worker without a server minimises the loss of **its own shard**. Each shard's own minimum
# (least squares on that shard alone), and the no-server copies after more local steps:

# %%
minima, lone = {}, {}
for partition in ["iid", "sorted"]:
    shards = problem.shards(4, partition, 0)
    optima = [np.linalg.lstsq(problem.A[s], problem.b[s], rcond=None)[0] for s in shards]
    minima[partition] = drift(optima), max(problem.loss(m) for m in optima)
    print(f"{partition:>6}: the 4 shard minima: drift {minima[partition][0]:.4f}, "
          f"worst loss {minima[partition][1]:.4f}")
for steps in [100, 200, 400, 800]:
    alone = aps.simulate(problem, workers=4, policy="async", lr=0.05, steps=steps, push_every=None,
                         partition="sorted")
    lone[steps] = drift(alone.worker_params), max(problem.loss(c) for c in alone.worker_params)
    print(f"sorted, no server, {steps:3d} local steps: drift {lone[steps][0]:.4f}, "
          f"worst copy {lone[steps][1]:.4f}")

# %% [markdown]
# ## Shards that disagree
# Least squares is kind: every shard's data come from the same linear model with little noise, so
# every shard's minimum is nearly the global one (with `noise=1.0`, as in lecture 05, the sorted
# shard minima lie much further apart). A classifier with one class per worker is not:
# a small MLP (4 classes, `by_label` shards), lr 0.5, with no server and with averaging after every
# step. `mlp.accuracy(params)` is the fraction of all examples classified right.

# %%
mlp = aps.problems.MLP(n=512, dim=16, hidden=32, classes=4, seed=0)
averaged = aps.simulate(mlp, workers=4, policy="sync", lr=0.5, steps=200, push_every=1,
                        partition="by_label")
classifiers = {}
for steps in [50, 200]:
    alone = aps.simulate(mlp, workers=4, policy="async", lr=0.5, steps=steps, push_every=None,
                         partition="by_label")
    classifiers[steps] = drift(alone.worker_params), max(mlp.accuracy(c) for c in alone.worker_params)
    accuracy = ", ".join(f"{mlp.accuracy(c):.4f}" for c in alone.worker_params)
    print(f"no server, {steps:3d} local steps: drift {drift(alone.worker_params):.4f}, "
          f"accuracy of each copy: {accuracy}")
print(f"push_every=1, 200 steps:     drift {drift(before_averaging(averaged, mlp, 0.5, 'by_label', 1)):.4f}, "
      f"accuracy of the server's version: {mlp.accuracy(averaged.params):.4f}")

# %% [markdown]
# ## Conclusion: why can't a worker just update its own copy?
# Rendered from the cells above: change a setting, rerun, and the sentences follow.

# %%
r, n, averaged_drift = rows, 10, drift(before_averaging(averaged, mlp, 0.5, "by_label", 1))
display(Markdown(
    f"- **Its copy learns only from its own shard.** After 100 local steps without a server, the "
    f"copies of the sorted shards are {r['sorted', None][0]:.4f} apart, the worst of them has loss "
    f"{r['sorted', None][2]:.4f} (the smallest loss is {problem.loss(best):.4f}), and even their average "
    f"has {r['sorted', None][1]:.4f}. With the same 100 local steps and averaging every 10 / 5 / 1 steps, "
    f"the drift just before the last averaging is {r['sorted', 10][0]:.4f} / {r['sorted', 5][0]:.4f} / "
    f"{r['sorted', 1][0]:.4f} — about proportional to n — and the averaged copy has loss "
    f"{r['sorted', 10][1]:.4f} / {r['sorted', 5][1]:.4f} / {r['sorted', 1][1]:.4f}.\n"
    f"- **The server is where the copies meet.** Each averaging sets every copy to the mean of all of "
    f"them (the server's version *is* `average_copies` of the copies), so the drift never grows past "
    f"what n local steps can do, and every copy gains from the other shards' gradients. Without pushes "
    f"nothing the workers learned reaches the server: it is still at v0, loss {alone_server_loss:.4f}.\n"
    f"- **With IID shards a lone copy is nearly fine — here.** Drift {r['iid', None][0]:.4f}, worst "
    f"copy {r['iid', None][2]:.4f} against {r['iid', 1][1]:.4f} with averaging: whole-shard IID "
    f"gradients look alike (claim A, assignment 3a), so each copy goes roughly where the full gradient "
    f"would take it. The server matters most with non-IID shards.\n"
    f"- **On least squares the sorted copies are slow, not lost.** Every shard's own minimum is close "
    f"to the global one (the 4 sorted shard minima are {minima['sorted'][0]:.4f} apart, the worst has "
    f"loss {minima['sorted'][1]:.4f}), so the lone copies come together in the end: drift "
    f"{lone[100][0]:.4f} → {lone[800][0]:.4f} and worst copy {lone[100][1]:.4f} → {lone[800][1]:.4f} "
    f"from 100 to 800 local steps.\n"
    f"- **When the shards disagree, the lone copies never meet.** The MLP with one class per worker: "
    f"without a server the drift is {classifiers[50][0]:.4f} after 50 local steps and "
    f"{classifiers[200][0]:.4f} after 200, and no copy classifies more than {classifiers[200][1]:.4f} "
    f"of the examples right. Averaged after every step: drift {averaged_drift:.4f}, "
    f"accuracy {mlp.accuracy(averaged.params):.4f}.\n\n"
    f"So a worker may update its own copy *between* pushes — that is what `push_every=n` does, and "
    f"n = {n} cost little here (loss of the average {r['sorted', 1][1]:.4f} → {r['sorted', n][1]:.4f} "
    f"with sorted shards, {r['iid', 1][1]:.4f} → {r['iid', n][1]:.4f} with IID shards) for {n}× fewer "
    f"pushes — but not for ever: the server's averaging is what turns the four copies into one model "
    f"trained on all the data. (Least squares is convex: on a non-convex model the average of copies "
    f"that drifted far apart need not be a good model at all.)"))

# %% [markdown]
# ## Task 5.4 · as few messages as possible
# Every pull and every push is a message. Four workers, **sorted** shards, lr 0.05, compute times
# that vary at random (`jitter=0.3`), and a budget of **800 gradients** in all (200 per worker).
# You choose the policy and n = `push_every`; `budget_run` below turns your choice into a run:
# - `"sync"`: periodic averaging, `steps = 200 // n` rounds of n local steps per worker;
# - `"async"`: each worker pushes the sum of its last n gradients, `steps = 800 // n` versions.
#
# Requirements, on the five runs with seeds 0–4: **at most 100 messages** (pushes + pulls) in every
# run, and a **median final loss within 1 %** of the smallest loss this problem can reach. Set
# `chosen_policy` and `chosen_push_every`. Think first: what does the server do with n summed
# gradients under each policy? Then try choices with `budget_trial`.

# %%
def budget_run(policy, push_every, seed):
    """One run of the 800-gradient budget with this policy and push_every."""
    steps = 200 // push_every if policy == "sync" else 800 // push_every
    return aps.simulate(problem, workers=4, policy=policy, lr=0.05, steps=steps, push_every=push_every,
                        partition="sorted", jitter=0.3, seed=seed, loss_every=max(steps, 1))


def budget_trial(policy, push_every):
    """The five runs: (largest number of messages, median final loss / smallest loss)."""
    runs = [budget_run(policy, push_every, seed) for seed in range(5)]
    messages = max(len(r.trace.pushes) + len(r.trace.pulls) for r in runs)
    ratio = float(np.median([r.losses[-1] for r in runs])) / problem.loss(best)
    print(f"{policy:5s} push_every={push_every:3d}: up to {messages} messages (limit 100), "
          f"median final loss {ratio:.4f}× the smallest (limit 1.01)")
    return messages, ratio


for policy, push_every in (("async", 1), ("sync", 1), ("async", 8)):
    budget_trial(policy, push_every)

# %% solution id=choose-push-every task="Task 5.4: as few messages as possible"
chosen_policy = None       # "sync" or "async"
chosen_push_every = None   # a whole number n >= 1
### BEGIN SOLUTION
# async applies each pushed sum of n gradients as one step of n·lr on a stale version: it blows up
# from n ≈ 10 on. Sync averages the four sums, so a round is n ordinary steps of the average copy;
# n = 20 is 10 rounds, 80 messages
chosen_policy, chosen_push_every = "sync", 20
### END SOLUTION

# %% tests id=check-choose-push-every points=3
if chosen_policy is None or chosen_push_every is None:
    raise NotImplementedError("Task 5.4: set chosen_policy and chosen_push_every in the cell above first")
assert chosen_policy in ("sync", "async"), "chosen_policy must be 'sync' or 'async'"
assert isinstance(chosen_push_every, (int, np.integer)) and chosen_push_every >= 1, \
    "chosen_push_every must be a whole number >= 1"
### BEGIN HIDDEN TESTS
_smallest = problem.loss(np.linalg.lstsq(problem.A, problem.b, rcond=None)[0])
_n = int(chosen_push_every)
_steps = 200 // _n if chosen_policy == "sync" else 800 // _n
_budget_runs = [aps.simulate(problem, workers=4, policy=chosen_policy, lr=0.05, steps=_steps, push_every=_n,
                             partition="sorted", jitter=0.3, seed=_s, loss_every=max(_steps, 1))
                for _s in range(5)]
_messages = max(len(r.trace.pushes) + len(r.trace.pulls) for r in _budget_runs)
_loss = float(np.median([r.losses[-1] for r in _budget_runs]))
assert _steps >= 1, "push_every is larger than the budget"
assert _messages <= 100, f"{chosen_policy}, push_every={_n}: {_messages} messages, over the limit 100"
assert _loss <= 1.01 * _smallest, \
    f"{chosen_policy}, push_every={_n}: median final loss {_loss / _smallest:.4g}× the smallest, over 1.01"
### END HIDDEN TESTS

# %%
if chosen_policy is None or chosen_push_every is None:
    print("Set chosen_policy and chosen_push_every in Task 5.4 first.")
else:
    budget_trial(chosen_policy, chosen_push_every)

# %% [markdown]
# ## Think about it (not graded)
# 1. Compare the drift with `push_every=10` and with `push_every=5` in the table. Why roughly
#    proportional to n? (Between two averagings, each copy takes n steps along its own shard's
#    gradient.) What does `run.worker_params` hold with `push_every=1`, and why does the table take
#    one local step by hand for that row? (The worker loop takes no local step when it pushes every
#    step: the gradient goes straight to the server and the next pull replaces the copy.)
# 2. Run the table with 4 workers and `compute_times=[1, 1, 1, 4]`. Which of the runs wait for the
#    straggler, and how often? (`run.trace.idle_time_per_worker()`)

# %% [markdown]
# ## Check your work
# Save first (Ctrl+S): `aps.check()` runs this notebook **as last saved**, top to bottom in a fresh
# kernel, and shows the points per task of the tests you can see (your grade also runs hidden
# tests) and the first thing to fix. In a terminal: `python -m asyncps.check
# exercises/05-local-updates.ipynb`.

# %%
import asyncps as aps   # this cell runs alone too: after a restart, or as the first cell you run

aps.check()
