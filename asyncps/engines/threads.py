"""The threads engine: real threads racing on one in-process server.

Every call a worker makes on the server runs under one lock, and the barrier
and SSP gate wait on a condition variable tied to it, so no update is ever
lost. A pull copies the parameters outside the lock, as a sequence-lock read
(`Guarded.pull`): pulls no longer wait for each other, and only a push that
lands during the copy makes it copy again. `lock=False` (async only) drops the lock, as Hogwild does (Recht et al.
2011): pulls and pushes run without it, so two pushes may interleave and one
may be lost — allowed by design, never the default. It is not Hogwild's
setting: Hogwild assumes sparse gradients and atomic per-coordinate adds (no
write is lost, reads may be inconsistent); here updates are dense numpy writes.

Gradients are computed outside the lock, in parallel (numpy and torch release
the GIL in their kernels).

A live run (`aps.train(..., live=True)`, engines/live.py) changes the run while
its threads run, through `Controls`: each worker obeys them at its yields (extra
seconds per gradient, a pause, being killed), and the lr and stopping go through
the server. Without a live handle the Controls hold only the run's `slowdown`.
"""
import threading
import time

import numpy as np

from ..core.events import Pull
from ..core.semantics import Snapshot
from . import controls as base
from .interrupt import raised_between_turns
from .worker import COMPUTE, GATE, worker_loop, worker_rng

KILLED = "killed by live.kill()"


class Controls(base.Controls):
    """What may change while the threads run (controls.py), and how a worker thread obeys it.
    The lock is the engine's condition variable: every server call takes it, and a change wakes
    every waiting worker; `halt` is set on error, interrupt or stop: every thread stops."""

    def __init__(self, server, config, clock):
        super().__init__(server, config, clock, lock=threading.Condition())
        self.cond, self.halt = self.lock, threading.Event()

    def stop(self, message):
        stopped = super().stop(message)
        self.halt.set()
        with self.cond:
            self.cond.notify_all()                    # waiters see halt now
        return stopped

    def obey(self, k, need):
        """Worker k at a yield: its extra seconds and the pause (at COMPUTE, after its gradient);
        False once it was killed: its Lost event is recorded (and raises under sync and ssp)."""
        if need == COMPUTE:
            seconds = self._slowdown[k]
            if seconds:
                self.halt.wait(seconds)
            if self.paused:
                with self.cond:
                    self.cond.wait_for(lambda: not self.paused or self.halt.is_set() or k in self.killed)
        if k not in self.killed:
            return True
        with self.cond:
            if not self.server.done:
                self.server.lose(k, self.clock(), KILLED)     # raises for sync / ssp
        return False


class Guarded:
    """The server as a worker thread sees it: each call under the engine's lock, except the copy
    of a pull: a sequence-lock read (`seq` is odd while a push changes the parameters; a copy
    that saw it change is made again), so pulls copy in parallel with each other and with pushes."""

    def __init__(self, server, cond, lock=True):
        self._server, self._cond, self._lock = server, cond, lock
        self.policy, self.params = server.policy, server.params
        self._seq, self._copies = 0, {}

    @property
    def done(self):
        return self._server.done

    def _call(self, name, *args):
        if not self._lock:
            return getattr(self._server, name)(*args)
        with self._cond:
            return getattr(self._server, name)(*args)

    def pull(self, worker, when):
        if not self._lock:
            return self._call("pull", worker, when)
        server = self._server
        out = self._copies.setdefault(worker, np.empty_like(server.params))   # the worker's own copy
        while True:
            before = self._seq
            if before & 1:                       # a push is changing them: let it finish
                time.sleep(0)
                continue
            out[:] = server.params               # numpy may let go of the GIL while it copies
            version = server.version
            if self._seq == before:
                break
        with self._cond:
            if not server.done:                  # a pull after the end is served, not recorded
                server.trace.record(Pull(worker, version, when), in_time=True)
        return Snapshot(out, version)

    def push(self, worker, grad, computed_on, time):
        if not self._lock:
            return self._call("push", worker, grad, computed_on, time)
        with self._cond:
            self._seq += 1                       # odd: a pull copying now copies again
            try:
                event = self._server.push(worker, grad, computed_on, time)
            finally:
                self._seq += 1
            self._cond.notify_all()              # a push may open the barrier / SSP gate
        return event

    def may_start(self, worker):
        return self._call("may_start", worker)

    def record(self, event):
        return self._call("record", event)

    def stop(self, message):
        self._call("stop", message)


def run_threads(server, problems, shards, config, clock, copies, progress=None, controls=None):
    """Run one thread per worker until the server is done; re-raise a worker's error here.
    `progress(version)` (optional) is told the server's version while this thread waits.
    `controls`: a live run's Controls (made here when not given)."""
    controls = Controls(server, config, clock) if controls is None else controls
    workers, timeout = config.workers, config.timeout
    cond, halt = controls.cond, controls.halt
    guarded = Guarded(server, cond, config.lock)
    errors = []

    def wait_at_gate(k):
        """Until the gate opens (or the run halts, or k is killed); a pause is no lack of progress."""
        with cond:
            deadline = time.monotonic() + timeout
            while not (halt.is_set() or k in controls.killed or server.may_start(k)):
                if controls.paused:
                    cond.wait()
                    deadline = time.monotonic() + timeout
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"worker {k} waited {timeout:g} s at the {server.policy.wait_reason} "
                        f"gate at v{server.version} without progress (clocks {server.clocks})")
                cond.wait(left)

    def body(k):
        try:
            loop = worker_loop(k, guarded, problems[k], shards[k], config,
                               worker_rng(config.seed, k, 0), clock, copies)
            for need in loop:
                if halt.is_set():
                    return
                if need == GATE:
                    wait_at_gate(k)
                if not controls.obey(k, need) or halt.is_set():
                    return
        except BaseException as err:               # noqa: BLE001 - re-raised in the caller
            errors.append(err)
            halt.set()
            with cond:
                cond.notify_all()

    threads = [threading.Thread(target=body, args=(k,), name=f"asyncps-worker-{k}", daemon=True)
               for k in range(workers)]
    for t in threads:
        t.start()
    try:
        with raised_between_turns() as ctrl_c:
            while any(t.is_alive() for t in threads):
                for t in threads:
                    t.join(0.05)
                if progress is not None:
                    progress(server.version)     # a read: the workers never wait for the bar
                ctrl_c.check()
    except BaseException:                          # Ctrl-C / notebook interrupt: stop everyone
        halt.set()
        with cond:
            cond.notify_all()
        deadline = time.monotonic() + 2.0
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        raise
    if errors:
        raise errors[0]
    if server.steps is not None and not server.done and len(server.lost) == workers:
        raise RuntimeError(f"every worker was lost before v{server.steps}")
