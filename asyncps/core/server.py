"""The parameter server: parameters plus a version counter v0, v1, ...

    pull(worker)                    -> Snapshot(params copy, version)
    push(worker, grad, computed_on) -> Push event

A push is applied to the server's *current* version, whatever version the
gradient was computed on: computed on v0, applied to v1 -> v2, stale by 1.
Under "sync" the pushes of one round are summed and applied once, averaged,
when the last worker of the round has pushed.

The server knows no threads, clocks or processes: an engine calls it (under a
lock, over shared memory or RPC) and passes the time of each call.
"""
import math
from typing import NamedTuple

import numpy as np

from . import checks
from .policies import UpdateRule, make_policy
from .trace import Pull, Push, Trace

# A run diverges when its loss stops being finite or grows this much past the start.
DIVERGENCE_FACTOR = 1e10


class Snapshot(NamedTuple):
    params: np.ndarray
    version: int


class ParameterServer:
    def __init__(self, x0, workers=1, policy="async", staleness=None, lr=0.1,
                 lr_schedule="constant", momentum=0.0, loss=None, steps=None):
        self.workers = checks.integer("workers", workers, minimum=1)
        self.policy = make_policy(policy, staleness)
        self.rule = UpdateRule(lr, lr_schedule, momentum)
        self.params = checks.vector("x0", x0).copy()
        self.steps = None if steps is None else checks.integer("steps", steps, minimum=0)
        self.version = 0
        self.clocks = [0] * self.workers          # pushes per worker: the SSP/BSP clock
        self._loss = loss
        self._round = {}                          # sync: worker -> computed_on, this round
        self._round_sum = np.zeros_like(self.params)
        self.diverged = False
        self.message = ""
        self.trace = Trace(meta={"workers": self.workers, "policy": self.policy.name,
                                 "staleness": staleness, "lr": self.rule.lr,
                                 "lr_schedule": self.rule.lr_schedule, "momentum": self.rule.momentum})
        self._record_loss()

    # -- the two calls a worker makes ---------------------------------------
    def pull(self, worker, time=0.0):
        """A copy of the parameters and the version they are."""
        self.trace.record(Pull(worker, self.version, time))
        return Snapshot(self.params.copy(), self.version)

    def push(self, worker, grad, computed_on, time=0.0):
        """Apply a gradient computed on version `computed_on` to the current version."""
        grad = checks.gradient(grad, self.params, source=f"worker {worker}'s push")
        if not 0 <= computed_on <= self.version:
            raise ValueError(f"computed_on={computed_on} is not allowed: it must be a version the "
                             f"server has had, 0..{self.version}")
        applied_to = self.version
        event = self.trace.record(Push(worker, computed_on, applied_to, applied_to - computed_on, time))
        self.clocks[worker] += 1
        if self.policy.averages:
            if worker in self._round:
                raise RuntimeError(f"worker {worker} pushed twice in the round on v{applied_to}: "
                                   f"under policy='sync' it must wait at the barrier")
            self._round[worker] = computed_on
            self._round_sum += grad
            if len(self._round) == self.workers:          # the barrier opens
                self.rule.apply(self.params, self._round_sum / self.workers, 0)
                self._round.clear()
                self._round_sum[:] = 0.0
                self._new_version()
        else:
            self.rule.apply(self.params, grad, event.staleness)
            self._new_version()
        return event

    # -- what engines ask ---------------------------------------------------
    def may_start(self, worker):
        """Barrier / SSP gate: may this worker start its next iteration now?"""
        return self.done or self.policy.may_start(self.clocks[worker], self.clocks)

    @property
    def done(self):
        return self.diverged or (self.steps is not None and self.version >= self.steps)

    def record(self, event):
        """Engines add their Compute and Wait events to the same trace."""
        return self.trace.record(event)

    def stop(self, message):
        """End the run as diverged, with a message for the learner."""
        self.diverged, self.message = True, message

    # -- bookkeeping --------------------------------------------------------
    def _new_version(self):
        self.version += 1
        self._record_loss()

    def _record_loss(self):
        if self._loss is None:
            return
        with np.errstate(all="ignore"):
            value = float(self._loss(self.params))
        self.trace.losses.append(value)
        start = self.trace.losses[0]
        if not math.isfinite(value) or not np.all(np.isfinite(self.params)):
            self.stop(f"diverged at v{self.version}: the loss is {value} (not finite); "
                      f"try a smaller lr than {self.rule.lr:g}")
        elif abs(value) > DIVERGENCE_FACTOR * (1.0 + abs(start)):
            self.stop(f"diverged at v{self.version}: the loss {value:.3g} grew past "
                      f"{DIVERGENCE_FACTOR:.0e} x the starting loss {start:.3g}; "
                      f"try a smaller lr than {self.rule.lr:g}")
