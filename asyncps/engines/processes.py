"""The processes engine: one OS process per worker, parameters and gradients in shared memory.

The parent process holds the one ParameterServer and serves every worker from a single loop,
like the simulator serves its virtual clock: a worker's request is a tiny message on its pipe
("push", "pull", "gate"), and arrays never travel through it.

- The server's parameters live in one shared-memory block (torch `share_memory_()`), in the
  problem's dtype. In the plain async loop a worker *reads them itself* — no message, no copy by
  the server: a sequence lock tells it which version it read and whether a push landed while it
  copied (then it reads again). The server applies every push in place inside the lock's odd
  window: `seq` odd, parameters and version updated, `seq` even. The pull is recorded by the
  worker and reaches the trace with its next message. This relies on x86-64's ordering of
  stores and loads (total store order); elsewhere, and for the loops that must ask the server
  anyway (sync, ssp, Downpour), a pull is a message and the server copies the version into the
  worker's own slot.
- A push hands the gradient over in the worker's shared slot; the server applies it from there.

Workers are started, watched and torn down by procs.py (multiprocessing's fork server; one torch
thread per worker). The problem is sent once, with cloudpickle, so a problem defined in a notebook
cell works too. A worker that raises stops the run and its error is raised here with the
worker's traceback; a worker killed by a signal is recorded as a Lost event: async goes on
without it, sync and ssp stop with an error. Learner hooks run here, in the server.
"""

import os
import platform
import time

from ..core.events import Pull
from ..core.semantics import Snapshot
from . import procs
from .worker import COMPUTE, GATE, pulls_with_each_push, worker_loop, worker_rng


# -- the worker process -------------------------------------------------------
class Remote:
    """The server as a worker process sees it: messages on a pipe, arrays in shared memory."""

    def __init__(self, conn, config, slot, flags, shared, seq):
        self.policy, self._conn, self._flags = config.policy, conn, flags
        self._pulled, self._grad = slot[0], slot[1]
        self.params = self._grad                 # shape and dtype, for the loop's buffers
        self._events, self._may_start = [], True
        # The plain async loop reads the parameters itself, under the sequence lock
        self._reads = pulls_with_each_push(config) and seqlock_is_sound()
        self._shared, self._seq = shared, seq    # seq[0]: the lock (odd: a push is landing), seq[1]: version

    def _ask(self, *message):
        self._conn.send((*message, self._events))
        self._events = []
        return self._conn.recv()

    @property
    def done(self):
        return bool(self._flags[0])

    def pull(self, worker, time):
        if not self._reads:
            return Snapshot(self._pulled, self._ask("pull", time))
        if self.done:
            return Snapshot(self._pulled, int(self._seq[1]))
        version = self._read()
        self._events.append(Pull(worker, version, time))
        return Snapshot(self._pulled, version)

    def _read(self):
        """Copy the shared parameters into our slot; the version they are (a sequence-lock read)."""
        seq = self._seq
        while True:
            before = int(seq[0])
            if before & 1:                       # a push is landing: let the server finish
                os.sched_yield()
                continue
            self._pulled[:] = self._shared
            version = int(seq[1])
            if int(seq[0]) == before:            # nothing landed while we copied
                return version

    def push(self, worker, grad, computed_on, time):
        self._grad[:] = grad
        self._may_start = self._ask("push", computed_on, time)

    def may_start(self, worker):
        return self.done or not self.policy.waits or self._may_start

    def wait_gate(self, time):
        self._may_start = self._ask("gate", time)

    def record(self, event):
        self._events.append(event)

    def stop(self, message):
        self._ask("stop", message)

    def finish(self):
        self._conn.send(("done", self._events))


def seqlock_is_sound():
    """Readers may copy while a writer is known by the counter alone where stores and loads keep
    their order (x86-64's total store order)."""
    return platform.machine().lower() in ("x86_64", "amd64")


def _child(k, payload, shard, slot, flags, shared, seq, offset, conn):
    try:
        procs.child_setup()
        problem, config = procs.loads(payload)
        problem = problem.on_device(config.devices[k])
        remote = Remote(conn, config, slot.numpy(), flags.numpy(), shared.numpy(), seq.numpy())
        conn.send(("ready", []))
        start = conn.recv()                              # every worker starts together
        clock = lambda: offset + time.perf_counter() - start      # noqa: E731  (one clock: CLOCK_MONOTONIC)
        slowdown, copies = config.slowdown[k], {}
        for need in worker_loop(k, remote, problem, shard, config, worker_rng(config.seed, k, 0),
                                clock, copies):
            if need == COMPUTE and slowdown:
                time.sleep(slowdown)
            elif need == GATE:
                remote.wait_gate(clock())
        remote.finish()
    except BaseException as err:                        # noqa: BLE001 - sent to the parent
        procs.send_error(conn, err)


# -- the parent: one loop serves every worker -------------------------------------
def run_processes(server, problem, shards, config, copies, offset, progress=None):
    """Serve every worker process from this one; `progress(version)` (optional) is told the
    server's version between messages."""
    import torch

    dtype = torch.from_numpy(server.params[:0]).dtype          # the problem's: float32 for a model
    slots = torch.zeros((config.workers, 2, server.params.size), dtype=dtype).share_memory_()
    flags = torch.zeros(1, dtype=torch.int8).share_memory_()
    shared = torch.from_numpy(server.params.copy()).share_memory_()   # the server's parameters
    seq = torch.tensor([0, server.version], dtype=torch.int64).share_memory_()
    server.params = shared.numpy()                             # the server updates them in place
    payload = procs.dumps((problem, config.worker_side()))
    with procs.Children() as children:
        for k in range(config.workers):
            children.start(_child, f"asyncps-worker-{k}", k, payload, shards[k], slots[k], flags,
                           shared, seq, offset)
        _wait_ready(children, config.timeout)
        start = time.perf_counter()
        for conn in children.conns:
            conn.send(start)
        clock = lambda: offset + time.perf_counter() - start      # noqa: E731
        _serve(server, children, slots.numpy(), flags, seq.numpy(), clock, copies, config.timeout,
               progress)
        children.ok = True


def _wait_ready(children, timeout):
    """Every worker has imported what it needs and got its problem: only then does time start."""
    waiting, deadline = set(range(len(children.procs))), time.monotonic() + max(timeout, 120.0)
    while waiting:
        for k, message in children.receive(waiting):
            if message is None:
                raise RuntimeError(f"worker {k} did not start: it {children.exit_reason(k)}")
            kind, *args, _ = message
            if kind == "error":
                raise procs.remote_error(f"worker {k}", args[0], args[1])
            waiting.discard(k)
        if time.monotonic() > deadline:
            raise TimeoutError(f"workers {sorted(waiting)} did not start in time")


def _serve(server, children, views, flags, seq, clock, copies, timeout, progress):
    conns = children.conns
    live, parked = set(range(len(conns))), set()
    last = time.monotonic()
    while live:
        for k, message in children.receive(live):
            if k not in live:
                continue
            if message is None:                         # the process died without a word
                live.discard(k)
                parked.discard(k)
                server.lose(k, clock(), children.exit_reason(k))    # raises for sync / ssp
                if not live and not server.done:
                    raise RuntimeError(f"every worker was lost before v{server.steps}")
                continue
            last = time.monotonic()
            kind, *args, events = message
            for event in events:                       # a worker's own pulls go where their time is
                server.trace.record(event, in_time=event.kind == "pull")
            if kind == "pull":
                conns[k].send(server.pull(k, args[0], out=views[k, 0]).version)
            elif kind == "push":
                computed_on, when = args
                seq[0] += 1                            # odd: readers wait or read again
                server.push(k, views[k, 1], computed_on, when, checked=True)   # the worker checked it
                seq[1] = server.version
                seq[0] += 1                            # even: a consistent version again
                flags[0] = server.done                 # before the reply: nobody starts after the end
                conns[k].send(server.may_start(k))
            elif kind == "gate":
                if server.may_start(k):
                    conns[k].send(True)
                else:
                    parked.add(k)
            elif kind == "stop":
                server.stop(args[0])
                flags[0] = 1
                conns[k].send(None)
            elif kind == "done":
                live.discard(k)
                copies[k] = views[k, 0].copy()
            elif kind == "error":
                raise procs.remote_error(f"worker {k}", args[0], args[1])
        if server.done:
            flags[0] = 1
        if progress is not None:
            progress(server.version)
        for k in sorted(parked):
            if server.may_start(k):
                parked.discard(k)
                conns[k].send(True)
        if time.monotonic() - last > timeout:
            raise TimeoutError(f"no worker made progress for {timeout:g} s at v{server.version} "
                               f"(clocks {server.clocks}, waiting: {sorted(parked)})")
