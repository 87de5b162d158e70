"""The parameter server in shared memory, run by the workers themselves (the processes engine).

On one machine an exact parameter server needs no server process. The parameters, their version
and every worker's clock live in shared memory; a worker that pushes takes the one lock, runs the
semantics (semantics.py: the staleness, the lr schedule, `apply`, or the sync round's `average`),
stamps the new version and writes its Push to a log, and lets go. A pull takes no lock: a
sequence lock says which version was read and whether a push landed during the copy (then it
reads again; after a few tries it reads under the lock). The SSP gate and the barrier read the
shared clocks. So pushes are applied one at a time, in one order, with exact `computed_on`,
`applied_to` and staleness, and workers compute in parallel like Hogwild's.

The parent only observes (`Observer.drain`): it reads the push log in order into the trace, the
live view, the progress bar and the losses. A version that is scored (`loss_every`) is scored by
the worker that made it, under the lock, so a diverging run stops at that version, as on every
engine. A worker's own pulls, computes and waits go to the parent in batches on its pipe.

What cannot run here: a learner's hook (`apply`, `average`, `gate`, `lr_schedule`) or momentum
keeps Python state that must see every push in order, in one process; so do checkpoints and
Downpour's local steps. Those runs are served by the parent, which runs the semantics for every
worker (processes.py): `in_shared_memory(config)` says which way a run goes.

Layout (`Layout.make` in the parent, the same arrays in every worker):
    head    int64   SEQ (odd while a push lands), VERSION, WRITTEN / READ (the push log's
                    counters), HOLDER (the worker holding the lock), ROUND (sync: pushes in the
                    round), PENDING (the worker whose push is landing), PENDING_ON, PENDING_AT,
                    PENDING_ROW (the log's WRITTEN when it began)
    reals   float64 LR (the server's lr: a live set_lr changes it), START (v0's loss), PENDING_TIME
    log     float64 (LOG, 7 + metrics): worker, computed_on, applied_to, time, made (the version
                    the push made, or -1), finite (its parameters), loss, metrics...; a ring the
                    parent empties
    clocks  int64   each worker's pushes; -1 once it is lost
    history         each made version's parameters (problems of at most 16 parameters)
    total           sync: the round's gradients summed
"""
import contextlib
import math
import os
import platform
import time

import numpy as np

from ..core import checks, semantics
from ..core.events import Pull, Push
from ..core.policies import LR_SCHEDULES
from ..core.server import divergence
from ..core.semantics import Snapshot

SEQ, VERSION, WRITTEN, READ, HOLDER, ROUND, PENDING, PENDING_ON, PENDING_AT, PENDING_ROW = range(10)
LR, START, PENDING_TIME = range(3)
WORKER, ON, AT, TIME, MADE, FINITE, LOSS = range(7)
LOG = 4096                 # pushes the log holds before a worker waits for the parent to read it
TRIES = 3                  # sequence-lock reads before a pull reads under the lock
FLUSH_EVENTS, FLUSH_SECONDS = 512, 0.1    # a worker sends its events this often (the live view draws at 10 fps)


def in_shared_memory(config):
    """Can this run's server live in shared memory (every rule built in, nothing stateful)?"""
    return (config.policy.wait_for is None            # ksync, kasync: rounds of k, parent-served
            and config.apply is None and config.average is None and config.gate is None
            and config.lr_schedule in LR_SCHEDULES.values() and not config.momentum
            and config.checkpoint is None and config.push_every == 1 and (config.fetch_every or 1) == 1
            and config.lock and platform.machine().lower() in ("x86_64", "amd64"))
    # x86-64 keeps stores and loads in order (total store order): what the sequence lock needs


class Layout:
    """The shared arrays of one run (torch tensors in shared memory) and the lock."""

    @classmethod
    def make(cls, server, config, ctx):
        import torch

        layout = cls()
        dim, metrics = server.params.size, len(server.trace.metrics)
        shared = lambda a: torch.from_numpy(np.ascontiguousarray(a)).share_memory_()   # noqa: E731
        layout.params = shared(server.params.copy())
        head = np.zeros(10, dtype=np.int64)
        head[VERSION], head[HOLDER], head[PENDING] = server.version, -1, -1
        layout.head = shared(head)
        lost = [-1 if c is None else c for c in server.clocks]
        layout.clocks = shared(np.array(lost, dtype=np.int64))
        start = server.trace.losses[0] if server.trace.losses else math.nan
        layout.reals = shared(np.array([server.lr, start, 0.0]))
        layout.log = shared(np.full((LOG, 7 + metrics), np.nan))
        layout.history = shared(np.zeros((LOG, dim), dtype=server.params.dtype)) if server.history else None
        layout.total = shared(np.zeros(dim, dtype=server.params.dtype)) if config.policy.averages else None
        layout.lock = ctx.Lock()
        return layout

    def forget_name(self):
        """The lock's name in /dev/shm is needed until every worker has opened it: then it goes
        (multiprocessing would remove it only when the lock is collected)."""
        from multiprocessing import util

        name = getattr(self.lock._semlock, "name", None)
        for finalizer in list(util._finalizer_registry.values()):
            if name is not None and finalizer._args == (name,):
                finalizer()                             # SemLock._cleanup: sem_unlink(name)

    def arrays(self):
        """The numpy views of the shared tensors (in whichever process holds them)."""
        out = {name: getattr(self, name) for name in ("params", "head", "clocks", "reals", "log",
                                                       "history", "total")}
        return {name: None if t is None else t.numpy() for name, t in out.items()}


def descend(params, grad, lr):
    """semantics.apply's update, `params -= lr * grad`, in one pass with no temporary array
    (numpy's form writes lr * grad to a temporary first: twice the time on 1e6 parameters, and
    this runs under the lock)."""
    import torch

    torch.from_numpy(params).add_(torch.from_numpy(grad), alpha=-lr)


def write_score(row, params, loss, metrics):
    """Score the version `params` are into its row of the log: `loss(params)`, each of `metrics`
    (the metric functions, in the log's column order) and whether `params` are all finite. The
    worker that made the version scores it, or the parent when that worker died before it could
    (`Observer.lost`). Returns (the loss, finite)."""
    with np.errstate(all="ignore"):
        row[LOSS] = value = float(loss(params))
        for i, metric in enumerate(metrics):
            row[LOSS + 1 + i] = float(metric(params))
    row[FINITE] = finite = checks.all_finite(params)
    return value, finite


# -- a worker's side --------------------------------------------------------------------------
class SharedServer:
    """The server as a worker process sees it: the shared arrays, the lock, a pipe for its events.

    It has what worker.py's loop calls (pull, push, may_start, record, stop, done), like the
    ParameterServer it replaces."""

    def __init__(self, worker, layout, config, problem, local, flags, conn):
        a = layout.arrays()
        self._worker = worker
        self.params = a["params"]
        self._head, self._clocks, self._reals, self._log = a["head"], a["clocks"], a["reals"], a["log"]
        self._history, self._total, self._lock = a["history"], a["total"], layout.lock
        self.policy, self.workers, self.steps = config.policy, config.workers, config.steps
        self.loss_every, self.lr_schedule = config.loss_every, config.lr_schedule
        self._problem, self._metrics = problem, list(problem.metrics.values())
        self._local, self._flags, self._conn = local, flags, conn
        self._events, self._sent = [], time.monotonic()
        self.clock = time.perf_counter                  # the run's clock, once the workers start

    @property
    def done(self):
        return bool(self._flags[0]) or self._head[VERSION] >= self.steps

    # -- pull: a sequence-lock read --------------------------------------------------------
    def pull(self, worker, time):
        if self.done:                                   # served, not recorded
            return Snapshot(self._local, int(self._head[VERSION]))
        version = self._read()
        self.record(Pull(worker, version, time))
        return Snapshot(self._local, version)

    def _read(self):
        """Copy the parameters into our local copy; the version they are."""
        head = self._head
        for _ in range(TRIES):
            before = int(head[SEQ])
            if before & 1:                              # a push is landing: let it finish
                os.sched_yield()
                continue
            self._local[:] = self.params
            version = int(head[VERSION])
            if int(head[SEQ]) == before:                # nothing landed while we copied
                return version
        with self._lock:                                # pushes kept landing: read between them
            self._local[:] = self.params
            return int(head[VERSION])

    # -- push: the semantics under the lock --------------------------------------------------
    def push(self, worker, grad, computed_on, sent):
        """`sent`: when the worker sent it; its Push is stamped when it lands, under the lock."""
        while True:
            self._lock.acquire()
            head = self._head
            if head[WRITTEN] - head[READ] < LOG:
                break
            self._lock.release()                        # the parent has not read the log yet
            self._sleep(0.001)
        try:
            head[HOLDER] = worker
            if self.done:                               # still in flight when the run ended
                return None
            landed = self.clock()                       # so the log is in time order
            version = int(head[VERSION])
            if self.policy.averages:
                made = self._into_round(grad, version)
            else:
                made = self._apply(worker, grad, computed_on, version, landed)
            self._write(worker, computed_on, version, landed, made)
            self._clocks[worker] += 1                   # last: a gate it opens finds the push logged
            return Push(worker, computed_on, version, version - computed_on, landed)
        finally:
            head[HOLDER] = -1
            self._lock.release()
            self._maybe_flush()

    def _apply(self, worker, grad, computed_on, version, time):
        """One asynchronous push: the configured schedule and the built-in apply, in place."""
        head = self._head
        lr = self.lr_schedule(float(self._reals[LR]), version - computed_on)
        head[PENDING_ON], head[PENDING_AT], self._reals[PENDING_TIME] = computed_on, version, time
        head[PENDING_ROW] = head[WRITTEN]
        head[PENDING] = worker                          # what the parent finishes if we die now
        head[SEQ] += 1                                  # odd: readers wait or read again
        descend(self.params, grad, lr)
        head[VERSION] = version + 1
        head[SEQ] += 1                                  # even: a consistent version again
        return version + 1

    def _into_round(self, grad, version):
        """A sync push: into the round's sum; the last one of the round applies the mean."""
        head = self._head
        self._total += grad
        head[ROUND] += 1
        if head[ROUND] < self.workers:
            return -1                                   # the barrier stays closed
        mean = self._total / self.workers               # semantics.average: the round's mean
        lr = self.lr_schedule(float(self._reals[LR]), 0)
        head[SEQ] += 1
        descend(self.params, mean, lr)
        head[VERSION] = version + 1
        head[SEQ] += 1
        self._total[:] = 0.0
        head[ROUND] = 0
        return version + 1

    def _write(self, worker, computed_on, applied_to, time, made):
        """The push into the log, with the loss of the version it made when that is scored."""
        head = self._head
        slot = int(head[WRITTEN]) % LOG
        row = self._log[slot]
        row[:] = np.nan
        row[WORKER], row[ON], row[AT], row[TIME], row[MADE] = worker, computed_on, applied_to, time, made
        if made >= 0:
            if self._history is not None:
                self._history[slot] = self.params
            if made % self.loss_every == 0 or made >= self.steps:
                loss, finite = write_score(row, self.params, self._problem.loss, self._metrics)
                if divergence(loss, float(self._reals[START]), finite, made, float(self._reals[LR])):
                    self._flags[0] = 1                  # the parent says why, from the same row
            if made >= self.steps:
                self._flags[0] = 1                      # the last version: everyone stops
        head[WRITTEN] += 1                              # published: the parent may read the row

    # -- the gate: the shared clocks ----------------------------------------------------------
    def may_start(self, worker):
        if self.done or not self.policy.waits:
            return True
        clocks = [int(c) for c in self._clocks if c >= 0]
        return semantics.gate(int(self._clocks[worker]), clocks, self.policy.max_ahead)

    def wait_gate(self, when):
        """Until the gate opens for this worker (or the run ends); `when`: the time it asked."""
        pause = 0.0001
        while not self.may_start(self._worker):
            self._sleep(pause)
            pause = min(2 * pause, 0.002)

    def _sleep(self, seconds):
        if self._events:
            self.flush()
        time.sleep(seconds)

    # -- events to the parent ---------------------------------------------------------------------
    def record(self, event):
        self._events.append(event)

    def _maybe_flush(self):
        if len(self._events) >= FLUSH_EVENTS or time.monotonic() - self._sent > FLUSH_SECONDS:
            self.flush()

    def flush(self):
        self._conn.send(("events", self._events))
        self._events, self._sent = [], time.monotonic()

    def stop(self, message):
        self._flags[0] = 1
        self._conn.send(("stop", message, self._events))
        self._events = []

    def finish(self):
        self._conn.send(("done", self._events))


# -- the parent's side --------------------------------------------------------------------------
class Observer:
    """The parent's reader of the shared log: every push, in order, into the ParameterServer's
    trace, versions, clocks and losses."""

    def __init__(self, layout, server, dead):
        """`dead(worker)`: has that worker's process died?"""
        self.server, self.dead, a = server, dead, layout.arrays()
        self._head, self._log, self._history = a["head"], a["log"], a["history"]
        self._clocks, self._reals, self._lock, self._params = a["clocks"], a["reals"], layout.lock, a["params"]
        self._names = list(server.trace.metrics)

    def drain(self):
        """Read every push written since the last call; True if there was one."""
        head, server = self._head, self.server
        written, read = int(head[WRITTEN]), int(head[READ])
        for n in range(read, written):
            self._take(n % LOG)
        head[READ] = written                            # the workers may reuse those rows
        return written > read

    def _take(self, slot):
        row, server = self._log[slot], self.server
        worker, on, at, when, made = int(row[WORKER]), int(row[ON]), int(row[AT]), float(row[TIME]), int(row[MADE])
        server.record(Push(worker, on, at, at - on, when))
        server.clocks[worker] += 1
        if made < 0:
            return
        server.version = made
        scored = not math.isnan(row[LOSS])
        metrics = {name: float(row[LOSS + 1 + i]) for i, name in enumerate(self._names)}
        params = self._history[slot] if self._history is not None else self._params
        server.record_version(float(row[LOSS]), metrics, params, scored, finite=bool(row[FINITE]))

    def set_lr(self, lr):
        self._reals[LR] = lr

    def record(self, event):
        """A live run's Control, after every push that landed before it: under the lock."""
        with self.locked():
            self.drain()
            return self.server.record(event)

    @contextlib.contextmanager
    def locked(self):
        """The lock, for the parent; a worker that died holding it (`dead(worker)`) is lost here."""
        while not self._lock.acquire(timeout=0.1):
            holder = int(self._head[HOLDER])
            if holder >= 0 and self.dead(holder):
                self.lost(holder)                       # its push finished, the lock freed
        try:
            yield
        finally:
            self._lock.release()

    def halt(self, flags):
        """No push lands after this (a live stop): the done flag is set under the lock, and the
        pushes that landed before it are read."""
        with self.locked():
            flags[0] = 1
            self.drain()

    def kill(self, pid):
        """SIGKILL a worker outside its push: it dies holding nothing."""
        import signal

        with self.locked():
            os.kill(pid, signal.SIGKILL)

    def lost(self, worker):
        """Worker `worker` died: it pushes no more, and if it held the lock, its push is finished
        (a push half applied stays applied, as in a crashed Hogwild process) and the lock freed."""
        head = self._head
        self._clocks[worker] = -1
        if head[HOLDER] != worker:
            return
        landing = head[PENDING] == worker and head[WRITTEN] == head[PENDING_ROW]
        if landing and (head[SEQ] & 1 or head[VERSION] > head[PENDING_AT]):   # it died in its push
            if head[SEQ] & 1:
                head[VERSION] = head[PENDING_AT] + 1
                head[SEQ] += 1
            slot = int(head[WRITTEN]) % LOG
            row = self._log[slot]
            row[:] = np.nan
            row[WORKER], row[ON], row[AT] = worker, head[PENDING_ON], head[PENDING_AT]
            row[TIME], row[MADE] = self._reals[PENDING_TIME], head[VERSION]
            if self._history is not None:
                self._history[slot] = self._params
            (loss, metrics), made = self.server.scorers(), int(head[VERSION])
            if loss is not None and self.server.scored(made):   # what the worker would have scored
                write_score(row, self._params, loss, [metrics[name] for name in self._names])
            head[WRITTEN] += 1
        elif head[SEQ] & 1:
            head[SEQ] += 1
        head[HOLDER] = -1
        self._lock.release()
