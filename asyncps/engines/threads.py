"""The threads engine: real threads racing on one in-process server.

Every call a worker makes on the server runs under one lock, and the barrier
and SSP gate wait on a condition variable tied to it, so no update is ever
lost. `lock=False` (async only) drops the lock, as Hogwild does (Recht et al.
2011): pulls and pushes run without it, so two pushes may interleave and one
may be lost — allowed by design, never the default. It is not Hogwild's
setting: Hogwild assumes sparse gradients and atomic per-coordinate adds (no
write is lost, reads may be inconsistent); here updates are dense numpy writes.

Gradients are computed outside the lock, in parallel (numpy and torch release
the GIL in their kernels).
"""
import threading
import time

from .worker import COMPUTE, GATE, worker_loop, worker_rng


class Guarded:
    """The server as a worker thread sees it: each call under the engine's lock."""

    def __init__(self, server, cond, lock=True):
        self._server, self._cond, self._lock = server, cond, lock
        self.policy, self.params = server.policy, server.params

    @property
    def done(self):
        return self._server.done

    def _call(self, name, *args):
        if not self._lock:
            return getattr(self._server, name)(*args)
        with self._cond:
            return getattr(self._server, name)(*args)

    def pull(self, worker, time):
        return self._call("pull", worker, time)

    def push(self, worker, grad, computed_on, time):
        event = self._call("push", worker, grad, computed_on, time)
        with self._cond:
            self._cond.notify_all()              # a push may open the barrier / SSP gate
        return event

    def may_start(self, worker):
        return self._call("may_start", worker)

    def record(self, event):
        return self._call("record", event)

    def stop(self, message):
        self._call("stop", message)


def run_threads(server, problems, shards, config, clock, copies, progress=None):
    """Run one thread per worker until the server is done; re-raise a worker's error here.
    `progress(version)` (optional) is told the server's version while this thread waits."""
    workers, slowdown, timeout = config.workers, config.slowdown, config.timeout
    cond = threading.Condition()
    guarded = Guarded(server, cond, config.lock)
    halt = threading.Event()                       # set on error or interrupt: every thread stops
    errors = []

    def body(k):
        try:
            loop = worker_loop(k, guarded, problems[k], shards[k], config,
                               worker_rng(config.seed, k, 0), clock, copies)
            for need in loop:
                if halt.is_set():
                    return
                if need == COMPUTE and slowdown[k]:
                    halt.wait(slowdown[k])
                elif need == GATE:
                    with cond:
                        if not cond.wait_for(lambda: halt.is_set() or server.may_start(k), timeout):
                            raise TimeoutError(
                                f"worker {k} waited {timeout:g} s at the {server.policy.wait_reason} "
                                f"gate at v{server.version} without progress (clocks {server.clocks})")
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
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(0.05)
            if progress is not None:
                progress(server.version)         # a read: the workers never wait for the bar
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
