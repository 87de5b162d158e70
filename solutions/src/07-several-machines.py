# %% [markdown]
# # Assignment 7 · Several machines: what a message costs
#
# Between machines every pull and every push is a message, and a message takes time. You will
# predict the rate at which workers make gradients when each message costs `comm_delay`, check
# your prediction against the simulator, and measure what a push costs on the real engines — an
# rpc world of three processes on this machine included.
#
# Lecture notebook: `notebooks/07-several-machines.ipynb`. Run every cell from the top; a cell
# that says `NotImplementedError` is waiting for your code.

# %%
import numpy as np

import asyncps as aps

problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)

# %% [markdown]
# ## Task 7.1 · gradients per unit of time
# Async workers, each taking `compute` per gradient. A worker pulls, computes `push_every`
# gradients on its local copy, and pushes their sum; the pull and the push each travel for
# `comm_delay`. Write `gradients_per_time(workers, compute, comm_delay, push_every)`: the number of
# gradients all workers together compute per unit of time.
#
# **Predict first:** with `comm_delay` equal to the compute time, how much does `push_every=4`
# gain over `push_every=1`?

# %% solution id=gradients-per-time task="Task 7.1: gradients per unit of time"
def gradients_per_time(workers, compute, comm_delay, push_every=1):
    """Gradients per unit of time of `workers` async workers (each message costs `comm_delay`)."""
    ### BEGIN SOLUTION
    return workers * push_every / (push_every * compute + 2 * comm_delay)
    ### END SOLUTION

# %% tests id=check-gradients-per-time points=2
assert abs(gradients_per_time(2, 1.0, 0.0) - 2.0) < 1e-12, "free messages: one gradient per compute"
assert abs(gradients_per_time(2, 1.0, 1.0) - 2 / 3) < 1e-12, "a pull and a push per gradient"
### BEGIN HIDDEN TESTS
for workers, compute, delay, n in ((2, 1.0, 2.0, 4), (3, 0.5, 1.0, 2), (4, 2.0, 0.5, 3), (5, 1.5, 0.0, 1),
                                   (1, 1.0, 3.0, 10)):
    run = aps.simulate(problem, workers=workers, policy="async", lr=0.01, steps=300,
                       compute_times=[compute] * workers, comm_delay=delay, push_every=n)
    measured = len(run.trace.computes) / run.trace.duration
    got = gradients_per_time(workers, compute, delay, n)
    assert abs(got - measured) < 0.02 * measured, (workers, compute, delay, n, got, measured)
### END HIDDEN TESTS

# %% [markdown]
# The simulator measures the same thing: gradients computed over the run's duration.

# %%
for delay, n in ((0.0, 1), (1.0, 1), (1.0, 4)):
    run = aps.simulate(problem, workers=2, policy="async", lr=0.05, steps=200, compute_times=[1, 1],
                       comm_delay=delay, push_every=n)
    print(f"comm_delay={delay}, push_every={n}: simulator {len(run.trace.computes) / run.trace.duration:.3f}, "
          f"yours {gradients_per_time(2, 1.0, delay, n):.3f} gradients per unit of time")

# %% [markdown]
# ## Task 7.2 · the cost of one push on a real engine
# A real run's trace is in wall-clock seconds. Write `seconds_per_push(trace)`: the run's duration
# (`trace.duration`) divided by the number of pushes (`trace.pushes`), or `None` for a trace without
# pushes.

# %% solution id=seconds-per-push task="Task 7.2: seconds per push"
def seconds_per_push(trace):
    """The trace's duration over its number of pushes; None when nothing was pushed."""
    ### BEGIN SOLUTION
    if not trace.pushes:
        return None
    return trace.duration / len(trace.pushes)
    ### END SOLUTION

# %% tests id=check-seconds-per-push points=1
run = aps.simulate(problem, workers=2, policy="async", lr=0.05, steps=10, compute_times=[1, 1])
assert abs(seconds_per_push(run.trace) - run.trace.duration / 10) < 1e-12
### BEGIN HIDDEN TESTS
none = aps.simulate(problem, workers=2, policy="async", lr=0.05, steps=10, push_every=None)
assert seconds_per_push(none.trace) is None, "no push: None, not a division by zero"
sync = aps.simulate(problem, workers=3, policy="sync", lr=0.05, steps=4, compute_times=[1, 2, 3])
assert abs(seconds_per_push(sync.trace) - sync.trace.duration / 12) < 1e-12, "a sync round has 3 pushes"
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then run.** The gradient of this small problem takes microseconds, so a push's cost is
# almost all communication. How many times more does an rpc push (three processes on this machine,
# arguments serialised) cost than a threads push (a call under a lock)?

# %% tags=nbval-ignore-output
cost = {}
for engine in ("threads", "processes", "rpc"):
    run = aps.train(problem, workers=2, policy="async", lr=0.05, steps=200, engine=engine)
    assert aps.violations(run.trace) == []
    cost[engine] = seconds_per_push(run.trace)
    print(f"{engine:9s}: {1000 * cost[engine]:.3f} ms per push "
          f"({cost[engine] / cost['threads']:.0f}× threads)")
assert cost["rpc"] > cost["threads"]

# %% [markdown]
# ## Think about it (not graded)
# 1. Take the rpc cost per push you measured as `comm_delay` (in units of a 10 ms gradient). With
#    `gradients_per_time`, how large must `push_every` be to get 90 % of the rate of free messages?
#    What does that cost in drift (lecture 05)?
# 2. Between real machines add the network's latency. Why does the rpc world bind to 127.0.0.1
#    unless told otherwise, and what must you open between machines to run it for real (lecture 07)?
