"""The processes engine: one OS process per worker, parameters and gradients in shared memory.

Two ways to run the one semantics, chosen per run (`shared.in_shared_memory(config)`):

- **The workers run the server** (shared.py): every run with the built-in rules (sync, async,
  ssp; a built-in lr schedule), one push per gradient. Each worker applies its own push under
  one lock in shared memory; the parent only reads the push log into the trace. This is the fast
  way: workers compute in parallel, as in Hogwild, and no push waits for another process.
- **The parent serves every worker** (below): runs with a learner's hook (`apply`, `average`,
  `gate`, `lr_schedule`), momentum, a checkpoint or Downpour's local steps. A hook may keep
  state across pushes (a closure remembering earlier versions): run here, in the one parent
  process, it sees every push, in order, exactly as in the simulator.

In the served way the parent holds the one ParameterServer and serves every worker from a single loop,
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

A live run (`aps.train(..., engine="processes", live=True)`, engines/live.py) is changed through
`Controls`: each worker's extra seconds per gradient and the pause are shared memory a child reads
at every gradient; a kill is a real SIGKILL of that child (the parent then records its Lost event
as for any child that died; where the workers run the server, the parent holds the lock while it
kills, so no push is cut in half); the lr and stopping go through the server (where the workers
run it: the shared lr, and the done flag, set under the lock after reading every push before it).
The lr of a worker's own local steps (push_every > 1) is the run's lr: only the server's changes.
"""

import os
import platform
import signal
import time

import numpy as np

from ..core.events import Control, Pull
from ..core.semantics import Snapshot
from . import controls as base
from . import procs, shared
from .interrupt import raised_between_turns
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


def obey(k, flags, slowdown):
    """Worker k, its gradient computed: sleep its extra seconds, then wait while the run is paused
    (flags[1]); both end early once the run is done (flags[0])."""
    deadline = time.monotonic() + float(slowdown[k])
    while not flags[0] and (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 0.05))
    while flags[1] and not flags[0]:
        time.sleep(0.005)


def _child(k, payload, shard, slot, flags, slowdown, memory, seq, offset, conn):
    """Worker k's process. `memory`: the served way's shared parameters, or the Layout of a run
    whose workers run the server (then `slot` is the worker's local copy and `seq` is None)."""
    try:
        procs.child_setup()
        problem, config = procs.loads(payload)
        problem = problem.on_device(config.devices[k])
        flags, slowdown = flags.numpy(), slowdown.numpy()
        if seq is None:
            remote = shared.SharedServer(k, memory, config, problem, slot.numpy(), flags, conn)
        else:
            remote = Remote(conn, config, slot.numpy(), flags, memory.numpy(), seq.numpy())
        conn.send(("ready", []))
        start = conn.recv()                              # every worker starts together
        clock = lambda: offset + time.perf_counter() - start      # noqa: E731  (one clock: CLOCK_MONOTONIC)
        remote.clock = clock
        copies = {}
        for need in worker_loop(k, remote, problem, shard, config, worker_rng(config.seed, k, 0),
                                clock, copies):
            if need == COMPUTE:
                obey(k, flags, slowdown)
            elif need == GATE:
                remote.wait_gate(clock())
        remote.finish()
    except BaseException as err:                        # noqa: BLE001 - sent to the parent
        procs.send_error(conn, err)


# -- the parent: what may change while the workers run ------------------------------
class Controls(base.Controls):
    """What may change while the worker processes run (controls.py), in shared memory the children
    read (`share()`); a kill is a real SIGKILL. The lock is held by the serving loop while it
    handles messages. Until the workers start together, changes are timed at the run's start."""

    def __init__(self, server, config, clock):
        start = clock()
        super().__init__(server, config, lambda: start)   # made without torch: train() returns at once
        self._children, self._observer = None, None

    def share(self):
        """The flags and slowdowns as shared tensors for the children (this process keeps views)."""
        import torch

        with self.lock:
            flags = torch.from_numpy(self.flags.copy()).share_memory_()
            slowdown = torch.from_numpy(self._slowdown.copy()).share_memory_()
            self.flags, self._slowdown = flags.numpy(), slowdown.numpy()
        return flags, slowdown

    def _kill(self, worker):
        """SIGKILL worker's process (once the workers have started: then)."""
        if self._children is not None:
            proc = self._children.procs[self.child(worker)]
            if proc.is_alive() and self._observer is not None:
                self._observer.kill(proc.pid)           # never inside its push
            elif proc.is_alive():
                os.kill(proc.pid, signal.SIGKILL)

    def _set_lr(self, lr):
        if self._observer is None:
            return super()._set_lr(lr)
        with self._observer.locked():                  # no push lands between the two
            self._observer.drain()                      # its Control: after the pushes before it
            super()._set_lr(lr)
            self._observer.set_lr(self.server.lr)

    def _record(self, what, worker=None, value=None):
        if self._observer is None:
            return super()._record(what, worker, value)
        self._observer.record(Control(what, worker, value, self.clock()))
        return True

    def _stop(self, message):
        if self._observer is not None:
            self._observer.halt(self.flags)             # the pushes before the stop, none after
        super()._stop(message)

    def child(self, worker):
        """The index of worker's process among the children."""
        return worker

    def started(self, children, clock=None, observer=None):
        """The workers start now (on `clock`): a kill that came earlier is carried out.
        `observer`: the shared.Observer of a run whose workers run the server."""
        with self.lock:
            self._children, self._observer = children, observer
            if clock is not None:
                self.clock = clock
            for worker in sorted(self.killed):
                self._kill(worker)

    def lost_reason(self, k, reason):
        """Why worker k's process is gone, saying so when live.kill() killed it."""
        if k not in self.killed:
            return reason
        pid = self._children.procs[self.child(k)].pid
        return f"killed by live.kill() (pid {pid}: {reason})"


# -- the parent: one loop serves every worker -------------------------------------
def run_processes(server, problem, shards, config, copies, offset, progress=None, controls=None):
    """Serve every worker process from this one; `progress(version)` (optional) is told the
    server's version between messages. `controls`: a live run's Controls (made here when not given)."""
    import torch

    if controls is None:
        controls = Controls(server, config, lambda: offset)
    if shared.in_shared_memory(config):
        return _run_shared(server, problem, shards, config, copies, offset, progress, controls)
    dtype = torch.from_numpy(server.params[:0]).dtype          # the problem's: float32 for a model
    slots = torch.zeros((config.workers, 2, server.params.size), dtype=dtype).share_memory_()
    flags, slowdown = controls.share()
    memory = torch.from_numpy(server.params.copy()).share_memory_()   # the server's parameters
    seq = torch.tensor([0, server.version], dtype=torch.int64).share_memory_()
    server.params = memory.numpy()                             # the server updates them in place
    payload = procs.dumps((problem, config.worker_side()))
    with procs.Children() as children:
        for k in range(config.workers):
            children.start(_child, f"asyncps-worker-{k}", k, payload, shards[k], slots[k], flags,
                           slowdown, memory, seq, offset)
        _wait_ready(children, config.timeout)
        start = time.perf_counter()
        for conn in children.conns:
            conn.send(start)
        clock = lambda: offset + time.perf_counter() - start      # noqa: E731
        controls.started(children, clock)
        with raised_between_turns() as ctrl_c:
            _serve(server, children, slots.numpy(), controls, seq.numpy(), clock, copies, config.timeout,
                   progress, ctrl_c)
        children.ok = True


# -- the parent of a run whose workers run the server: it observes --------------------------------
def _run_shared(server, problem, shards, config, copies, offset, progress, controls):
    import torch

    layout = shared.Layout.make(server, config, procs.context())
    local = torch.zeros((config.workers, server.params.size), dtype=layout.params.dtype).share_memory_()
    flags, slowdown = controls.share()
    server.params = layout.params.numpy()                      # the Run's parameters: the shared ones
    worker_config = config.worker_side().replace(lr_schedule=config.lr_schedule)   # a built-in one
    payload = procs.dumps((problem, worker_config))
    try:
        with procs.Children() as children:
            for k in range(config.workers):
                children.start(_child, f"asyncps-worker-{k}", k, payload, shards[k], local[k], flags,
                               slowdown, layout, None, offset)
            _wait_ready(children, config.timeout)
            layout.forget_name()                                   # every worker has opened the lock
            observer = shared.Observer(layout, server, dead=lambda k: not children.procs[k].is_alive())
            start = time.perf_counter()
            for conn in children.conns:
                conn.send(start)
            clock = lambda: offset + time.perf_counter() - start      # noqa: E731
            controls.started(children, clock, observer)
            with raised_between_turns() as ctrl_c:
                _observe(server, children, observer, local.numpy(), controls, clock, copies,
                         config.timeout, progress, ctrl_c)
            children.ok = True
    finally:
        layout.forget_name()                                   # on every ending


def _observe(server, children, observer, local, controls, clock, copies, timeout, progress, ctrl_c):
    """Until every worker said it is done or died: the push log into the trace, the workers'
    own events where their times put them, a dead worker's Lost event."""
    conns, flags = children.conns, controls.flags
    live = set(range(len(conns)))
    last, version = time.monotonic(), server.version
    while live:
        said, late = children.receive(live, timeout=0.05), []
        with controls.lock:
            observer.drain()                    # after the messages: every push they follow is read
            for k, message in said:
                if k not in live:
                    continue
                if message is None:             # the process died without a word
                    live.discard(k)
                    observer.lost(k)            # its push, if it died inside one, and the lock
                    observer.drain()
                    server.lose(k, clock(), controls.lost_reason(k, children.exit_reason(k)))
                    if not live and not server.done:
                        raise RuntimeError(f"every worker was lost before v{server.steps}")
                    continue
                kind, *args, events = message
                late += events
                if kind == "stop":
                    server.stop(args[0])
                elif kind == "done":
                    live.discard(k)
                    copies[k] = local[k].copy()
                elif kind == "error":
                    raise procs.remote_error(f"worker {k}", args[0], args[1])
            server.trace.record_late(late)      # each where its time puts it
            if server.done:
                flags[0] = 1
        if progress is not None:
            progress(server.version)
        ctrl_c.check()
        if said or server.version != version or controls.paused:
            last, version = time.monotonic(), server.version
        if time.monotonic() - last > timeout:
            raise TimeoutError(f"no worker made progress for {timeout:g} s at v{server.version} "
                               f"(clocks {server.clocks})")
    observer.drain()


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


def _serve(server, children, views, controls, seq, clock, copies, timeout, progress, ctrl_c):
    """Until every worker said it is done or died. Each batch of messages is handled under
    `controls.lock`; a pause (controls.paused) is no lack of progress."""
    conns, flags = children.conns, controls.flags
    live, parked = set(range(len(conns))), set()
    last = time.monotonic()

    def reply(k, answer):
        try:
            conns[k].send(answer)
        except (BrokenPipeError, ConnectionResetError):
            pass                                        # k died: its sentinel says so next

    while live:
        said = children.receive(live)
        ctrl_c.check()
        with controls.lock:
            for k, message in said:
                if k not in live:
                    continue
                if message is None:                     # the process died without a word
                    live.discard(k)
                    parked.discard(k)
                    reason = controls.lost_reason(k, children.exit_reason(k))
                    server.lose(k, clock(), reason)     # raises for sync / ssp
                    if not live and not server.done:
                        raise RuntimeError(f"every worker was lost before v{server.steps}")
                    continue
                last = time.monotonic()
                kind, *args, events = message
                for event in events:                   # a worker's own pulls go where their time is
                    server.trace.record(event, in_time=event.kind == "pull")
                if kind == "pull":
                    reply(k, server.pull(k, args[0], out=views[k, 0]).version)
                elif kind == "push":
                    computed_on, when = args
                    seq[0] += 1                        # odd: readers wait or read again
                    server.push(k, views[k, 1], computed_on, when, checked=True)   # the worker checked it
                    seq[1] = server.version
                    seq[0] += 1                        # even: a consistent version again
                    flags[0] = server.done             # before the reply: nobody starts after the end
                    reply(k, server.may_start(k))
                elif kind == "gate":
                    if server.may_start(k):
                        reply(k, True)
                    else:
                        parked.add(k)
                elif kind == "stop":
                    server.stop(args[0])
                    flags[0] = 1
                    reply(k, None)
                elif kind == "done":
                    live.discard(k)
                    copies[k] = views[k, 0].copy()
                elif kind == "error":
                    raise procs.remote_error(f"worker {k}", args[0], args[1])
            if server.done:
                flags[0] = 1
            for k in sorted(parked):
                if server.may_start(k):
                    parked.discard(k)
                    reply(k, True)
        if progress is not None:
            progress(server.version)
        if controls.paused:
            last = time.monotonic()
        if time.monotonic() - last > timeout:
            raise TimeoutError(f"no worker made progress for {timeout:g} s at v{server.version} "
                               f"(clocks {server.clocks}, waiting: {sorted(parked)})")
