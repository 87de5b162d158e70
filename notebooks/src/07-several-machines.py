# %% [markdown]
# # 07 · Several machines
#
# **Learning goals**
# - run a parameter server as a torch.distributed.rpc world: one server process and two worker
#   processes on 127.0.0.1, started from this notebook;
# - find the stale pushes in that world's trace, as in the simulator;
# - measure what a message costs on threads, processes and rpc, and what latency does to a run;
# - know what happens when a worker fails, under async and under sync;
# - know the command that starts the same world on real machines, and why it must stay on a
#   trusted network.

# %% [markdown] slide
# ## A world of three processes
# `aps.train(..., engine="rpc")` starts a torch.distributed.rpc world (TensorPipe) on 127.0.0.1:
# **rank 0** hosts the server; **ranks 1 and 2** are worker 0 and worker 1. A pull is a remote call
# that returns the parameters as a tensor and their version; a push sends the gradient tensor to
# rank 0, which applies it to its *current* version — so pushes are stale, as in the simulator.
# The first run in a session also starts multiprocessing's fork server (about 2 seconds).

# %%
import tempfile
from pathlib import Path

import numpy as np

import asyncps as aps

problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)

# %% tags=nbval-ignore-output
world = aps.train(problem, workers=2, policy="async", lr=0.05, steps=200, engine="rpc",
                  slowdown=[0.001, 0.001])
print(world)
print("staleness histogram:", world.trace.staleness_histogram().tolist())
print("pushes per worker:  ", world.trace.pushes_per_worker().tolist())
assert aps.violations(world.trace) == []
assert {p.worker for p in world.trace.pushes if p.staleness > 0} == {0, 1}    # both push stale
aps.widgets.Picture(aps.widgets.histogram_svg(world.trace.staleness_histogram(),
                                              title="rpc world: staleness of each push"))

# %% [markdown] fragment
# With two workers, a push is stale by the number of times the *other* worker pushed between this
# worker's pull and its push: by 1 when the two alternate, by 0 when the other was slower, by 2 or
# more when this one was.

# %% [markdown] slide
# ## An rpc trace in the Timeline
# The world's trace is an ordinary `Trace` (wall-clock seconds since rank 0 started), so it plays in
# the same Timeline. A short world whose worker 1 is twice as slow, opened at its first stale push:

# %% tags=nbval-ignore-output
short = aps.train(problem, workers=2, policy="async", lr=0.05, steps=20, engine="rpc",
                  slowdown=[0.01, 0.02])
timeline = aps.widgets.Timeline(short, frame="stale")
print(timeline.state)
assert "stale by" in timeline.state and short.trace.meta["engine"] == "rpc"
timeline

# %% [markdown] fragment
# Play it or drag the slider. We jump to the last push and check that the caption names its versions:

# %%
last = short.trace.pushes[-1]
timeline.frame = short.trace.events.index(last)
print("the caption names the last push's versions:",
      f"computed on v{last.computed_on}; the server is at v{last.applied_to}" in timeline.state)

# %% [markdown] slide
# ## What a message costs
# The same run — 2 workers, 300 pushes, no extra sleep — on the three engines. The gradient of this
# small problem takes microseconds, so the time per push is almost all communication: a call under
# a lock (threads), a push each worker process applies itself to the parameters in shared memory,
# under a lock shared between processes (processes), a remote call with its arguments serialised
# (rpc).
#
# **Predict, then run.** Rank the three engines by pushes per second before you run the cell.

# %% tags=nbval-ignore-output
rates = {}
for engine in ("threads", "processes", "rpc"):
    run = aps.train(problem, workers=2, policy="async", lr=0.05, steps=300, engine=engine)
    assert aps.violations(run.trace) == []
    rates[engine] = len(run.trace.pushes) / run.trace.duration
    print(f"{engine:9s}: {rates[engine]:8.0f} pushes/s, {1000 / rates[engine]:.3f} ms per push, "
          f"staleness histogram {run.trace.staleness_histogram().tolist()[:6]}")
print("time per push, relative to threads:",
      ", ".join(f"{engine} {rates['threads'] / rates[engine]:.1f}×" for engine in rates))

# %% [markdown] fragment
# These are wall-clock times on this machine, now: rerun the cell and they move, and a busy machine
# moves them a lot (a test run beside it once made threads the slowest). On a quiet machine an rpc
# push costs several times a threads push, even on one machine; across real machines, add the
# network's latency on top. (With threads and no sleep, the workers rarely overlap — one
# thread runs Python at a time — so their staleness says little here.)

# %% [markdown] slide
# ## Latency in the simulator
# `comm_delay` is the time the parameters (after a pull) or a gradient (before a push) spend
# travelling. Each iteration pays it twice, under every policy: with compute time 1 and delay d, two
# workers make 2 / (1 + 2d) gradients per time unit. Pushing the sum of 4 local steps at once
# (`push_every=4`, Downpour) pays it once per 4 gradients — at the price of notebook 05b: local
# copies drift apart between pushes.

# %%
for delay in (0.0, 2.0):
    for push_every in (1, 4):
        run = aps.simulate(problem, workers=2, policy="async", lr=0.05, steps=100,
                           compute_times=[1, 1], comm_delay=delay, push_every=push_every)
        print(f"comm_delay={delay:g}, push_every={push_every}: "
              f"{len(run.trace.computes) / run.trace.duration:.2f} gradients per time unit, "
              f"final loss {run.losses[-1]:.4f}")

# %% [markdown] slide
# ## When a worker fails
# On one machine a crash is rare; on many machines it is routine. What asyncps does:
# - a worker that **raises** stops the run; the error is raised here, with the worker's traceback;
# - a worker process **killed** by a signal becomes a `Lost` event: `"async"` goes on without it,
#   `"sync"` and `"ssp"` stop with an error at once (their barrier or gate would wait for it
#   forever);
# - a run with no progress for `timeout` seconds (default 60) fails instead of hanging.
#
# To make worker 1 fail on purpose, we wrap the problem's gradient: worker 1 (recognised by its
# shard) runs `fail()` once it has computed 30 gradients.

# %%
victim = problem.shards(3, "iid", 0)[1][0]          # the first example of worker 1's shard


def failing(fail, after=30):
    """The least-squares problem, but worker 1 calls fail() after `after` gradients."""
    calls = [0]                                      # counted in each worker's own process

    def grad(x, shard, rng):
        if shard[0] == victim:
            calls[0] += 1
            if calls[0] > after:
                fail()
        return problem.gradient(x, shard, rng)

    return aps.problems.from_functions(problem.loss, grad, x0=problem.x0, n=problem.n)


def raise_error():
    raise ZeroDivisionError("worker 1 divided by zero")

# %% tags=nbval-ignore-output
try:
    aps.train(failing(raise_error), workers=3, policy="async", lr=0.05, steps=10_000,
              engine="rpc", slowdown=[0.001] * 3)
except ZeroDivisionError as err:
    print(f"{type(err).__name__}: {err}")
    print(err.__notes__[0])
    caught = err
assert isinstance(caught, ZeroDivisionError) and "worker 1" in caught.__notes__[0]

# %% [markdown] fragment
# The error raised in worker 1's process comes home as itself, with a note saying where it
# happened; `err.__cause__` holds the worker's own traceback. Now a harder failure: worker 1's
# process is killed (SIGKILL), as when a machine dies. (Only with `engine="processes"` or `"rpc"`:
# on threads, the worker *is* this notebook's process.)

# %%
import os
import signal


def kill_me():
    os.kill(os.getpid(), signal.SIGKILL)

# %% tags=nbval-ignore-output
survived = aps.train(failing(kill_me), workers=3, policy="async", lr=0.05, steps=400,
                     engine="rpc", slowdown=[0.001] * 3)
print(survived.trace.lost)
print("pushes per worker:", survived.trace.pushes_per_worker().tolist(), "· versions made:",
      len(survived.losses) - 1)
assert len(survived.trace.pushes) == 400 and survived.trace.lost[0].worker == 1
assert survived.trace.pushes_per_worker()[1] == 30
assert aps.violations(survived.trace) == []

# %% tags=nbval-ignore-output
try:
    aps.train(failing(kill_me), workers=3, policy="sync", lr=0.05, steps=10_000, engine="rpc",
              slowdown=[0.001] * 3, timeout=10)
except RuntimeError as err:
    print(f"{type(err).__name__}: {err}")
    stopped = err
assert "worker 1 was lost" in str(stopped)

# %% [markdown] fragment
# Async finished its 400 versions with workers 0 and 2: worker 1 pushed its 30 gradients and was
# gone. Sync could not: its barrier waits for every worker, and one of them will never push again.
# That is one more reason, besides stragglers, why large asynchronous systems drop the barrier.
# (You may see TensorPipe warnings about closed pipes above: the other ranks noticing the dead one.)

# %% [markdown] slide
# ## Real machines: torchrun
# The same world across machines is started with `torchrun`, once on each machine (`HOST` is the
# first machine's address):
#
# ```sh
# torchrun --nnodes=2 --nproc-per-node=4 --rdzv-backend=c10d --rdzv-endpoint=HOST:29500 \
#     -m asyncps.launch --problem mlp --policy async --steps 2000 --allow-remote --out run.npz
# ```
#
# - Rank 0 hosts the server and saves the `Run` (`--out`); every other rank is a worker
#   (here 2 × 4 = 8 ranks: 1 server, 7 workers).
# - Every rank builds the same problem and shards from `--seed`, so no data travels.
# - Without torchrun, set `RANK`, `WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT` yourself.
# - Time stamps are wall-clock seconds relative to rank 0's start: as good as the machines' clock
#   synchronisation (versions and staleness are exact: the server decides them).
# - Your own model: `--problem package.module:factory` (a function returning a Problem, built from
#   `--seed` on every rank).
# - A worker rank silent for `--timeout` seconds is lost: async goes on, sync and ssp stop. Under
#   torchrun a failed rank takes the other ranks of its machine with it (torchrun stops them).
# - The cluster guide, `docs/cluster.md`, has a SLURM script, the ports to open and the network
#   variables; its commands run for real in the tests (`tests/test_torchrun.py`).

# %% [markdown] fragment
# Rank 0's `run.npz` opens here with `aps.load_run` and plays in the same widgets. The world above
# makes such a file too (in a temporary folder):

# %%
with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "run.npz"
    world.save(path)
    loaded = aps.load_run(path)
print("the loaded trace equals the saved one:", loaded.trace == world.trace)
print("loaded parameters equal the saved ones:", np.array_equal(loaded.params, world.params))

# %% [markdown] slide
# ## Security: who may talk to the server
# torch.distributed.rpc deserialises what it receives with **pickle**: anyone who can reach its
# ports can run code in it. So asyncps binds everything to 127.0.0.1 — `aps.train(engine="rpc")`
# binds even the rendezvous store itself, which torch would open on every interface. An address
# that is not loopback needs an explicit `allow_remote=True` (or `--allow-remote` for
# `asyncps.launch`, which then prints a warning): use it on a trusted network only. Under torchrun,
# the rendezvous store is torchrun's own, bound as torchrun binds it.

# %%
try:
    aps.train(problem, workers=2, engine="rpc", address="10.0.0.1")
except ValueError as err:
    print(err)

# %% [markdown] slide
# ## Check your understanding
# 1. In the rpc world with two workers, what must happen between a worker's pull and its push for
#    that push to be stale by 1? By 0?
# 2. In the simulator, with `comm_delay=d` each iteration costs 1 + 2d, under sync and async alike.
#    What does `push_every=4` save, and what does it cost?
# 3. Worker 1's process is killed. Why can async finish the run, and sync not?
# 4. Why does `asyncps.launch` refuse a non-loopback `MASTER_ADDR` unless you pass `--allow-remote`?
#
# <details><summary>Answers</summary>
#
# 1. A push's staleness is the number of versions made between this worker's pull and its push,
#    and with two workers only the other worker makes them. Stale by 1: the other worker's push
#    landed exactly once in between (the two alternate); by 0: the other did not push in between.
# 2. It pays the 2d of a pull and a push once per 4 gradients instead of once per gradient:
#    4 + 2d per 4 gradients instead of 4(1 + 2d), so more gradients per time unit when d > 0. The
#    cost is notebook 05b's: the local copies drift apart between pushes and every push is the sum
#    of gradients taken on an older version, so the loss can settle higher.
# 3. The async server applies each push on its own and never waits for anyone, so the killed
#    worker becomes a `Lost` event and the other two go on making the versions. Sync's barrier
#    needs one gradient from every worker per round, and the dead one will never push again, so
#    asyncps stops it with an error instead of waiting forever.
# 4. torch.distributed.rpc deserialises what it receives with pickle, so anyone who can reach its
#    ports can run code in the server or the workers. Loopback keeps the ports on this machine; a
#    remote address must be an explicit choice, made on a trusted network only.
# </details>
#
# Next: [08a · Asynchronous SGD on real digits: the race](08a-digits-race.ipynb), [the playground](playground.ipynb), or the start:
# [00 · Start here](00-start-here.ipynb). Assignment:
# [07 · several machines](../exercises/07-several-machines.ipynb) — what a message costs, predicted
# and measured on threads, processes and rpc.
