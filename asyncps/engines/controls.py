"""What a live run may change while its workers run, kept the same way on every engine.

    controls.slow(worker, seconds)   controls.pause() / resume()   controls.kill(worker)
    controls.set_lr(lr)              controls.stop(message)

LiveRun (live.py) checks the arguments and calls these; each returns False, changing nothing,
once the run is done. Every change is a Control event in the trace (what changed, when), so a
replay shows it too. The state workers obey is two small arrays, `flags` ([0] the run is done,
[1] paused) and `slowdown` (extra seconds per gradient, per worker): plain arrays for threads,
shared memory for worker processes (processes.py, rpc/world.py), read by the workers at every
gradient.

An engine says how its workers learn of a change by overriding the hooks: `_kill` (a real
SIGKILL), and where the server lives in another process (rpc), `_record`, `_set_lr`, `_stop` and
`_lift_pause` send the change there instead of applying it here. Given a condition variable as
its lock, a change wakes every thread waiting on it (`_changed`).
"""
import threading

import numpy as np

from ..core.events import Control


class Controls:
    def __init__(self, server, config, clock, lock=None):
        self.server, self.clock = server, clock
        self.lock = threading.Lock() if lock is None else lock   # held while the server is called
        self.flags = np.zeros(2, dtype=np.int8)                  # [0] done, [1] paused
        self._slowdown = np.array(config.slowdown, dtype=np.float64)
        self.killed = set()

    # -- what the run is now ---------------------------------------------------------------
    @property
    def done(self):
        return self.server.done

    @property
    def paused(self):
        return bool(self.flags[1])

    @property
    def slowdown(self):
        return [float(s) for s in self._slowdown]

    # -- the changes -------------------------------------------------------------------------
    def slow(self, worker, seconds):
        with self.lock:
            if self.done:
                return False
            self._slowdown[worker] = seconds
            return self._record("slow", worker, seconds)

    def pause(self, paused=True):
        """The workers stop before their next push (paused=True) or go on. The pause is set before
        its Control is recorded and a resume recorded before it is lifted, so that in the trace no
        push between the two is one a paused worker began after the pause."""
        with self.lock:
            if self.done:
                return False
            if paused:
                self.flags[1] = 1
                return self._record("pause")
            self._record("resume")
            self._lift_pause()
            return True

    def resume(self):
        return self.pause(False)

    def kill(self, worker):
        """Worker `worker` stops for good; the Lost event is recorded when it is gone."""
        with self.lock:
            if self.done:
                return False
            self.killed.add(worker)
            self._record("kill", worker)
            self._kill(worker)
            return True

    def set_lr(self, lr):
        with self.lock:
            if self.done:
                return False
            self._set_lr(lr)
            return True

    def stop(self, message):
        """End the run (not as diverged): every worker stops at its next step."""
        with self.lock:
            stopped = not self.done
            if stopped:
                self._stop(message)
            self.flags[0] = 1
            self._changed()
        return stopped

    # -- the hooks: how this engine's workers learn of a change (the lock is held) ----------------
    def _record(self, what, worker=None, value=None):
        self.server.record(Control(what, worker, value, self.clock()))
        self._changed()
        return True

    def _set_lr(self, lr):
        self.server.set_lr(lr, self.clock())          # records its Control event

    def _stop(self, message):
        self.server.stop(message, diverged=False)
        self._record("stop")

    def _changed(self):
        """Something changed: wake whoever waits for it, where the lock is a condition variable
        (the threads engine's, rank 0's handlers')."""
        if isinstance(self.lock, threading.Condition):
            self.lock.notify_all()

    def _lift_pause(self):
        """The resume is recorded: let the workers go on."""
        self.flags[1] = 0

    def _kill(self, worker):
        """Carry out a kill now (a worker process: SIGKILL); threads stop at their next step."""
