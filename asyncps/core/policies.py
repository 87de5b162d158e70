"""Consistency policies and update rules: when may a worker go on, and how is a gradient applied.

    sync   BSP  every worker waits at a barrier; the round's gradients are averaged
                into one update: one new version per round, every push stale by 0.
    async  ASP  nobody waits; each push is applied at once: one version per push.
                A gradient computed on v0 may land on v1, v2, ... (a stale update).
    ssp    SSP  Stale Synchronous Parallel (Ho et al. 2013): like async, but the
                fastest worker is never more than `staleness` clocks ahead of the slowest.

A worker's clock counts its pushes. The three policies differ only in how far a
worker may run ahead (`bound`: 0, infinity, s) and whether a round is averaged.
"""
import math
from dataclasses import dataclass

import numpy as np

from . import checks

POLICIES = ("sync", "async", "ssp")
LR_SCHEDULES = ("constant", "staleness")


@dataclass(frozen=True)
class Policy:
    name: str
    bound: float          # how many clocks a worker may run ahead of the slowest
    averages: bool        # True: gradients of a round are averaged into one update (sync)
    wait_reason: str      # what a Wait event says when a worker is held back

    def may_start(self, clock, slowest):
        """May a worker whose clock is `clock` start its next iteration, the slowest being at `slowest`?"""
        return clock - slowest <= self.bound


def make_policy(policy, staleness=None):
    checks.choice("policy", policy, POLICIES)
    if policy == "ssp":
        if staleness is None:
            raise ValueError("policy='ssp' needs staleness=s, the bound on how many clocks the "
                             "fastest worker may run ahead of the slowest (an integer >= 0)")
        s = checks.integer("staleness", staleness, minimum=0)
        return Policy("ssp", s, averages=False, wait_reason="ssp")
    if staleness is not None:
        raise ValueError(f"staleness={staleness!r} is not allowed with policy={policy!r}: "
                         f"the staleness bound is only used with policy='ssp'")
    if policy == "sync":
        return Policy("sync", 0, averages=True, wait_reason="barrier")
    return Policy("async", math.inf, averages=False, wait_reason="none")


class UpdateRule:
    """SGD with learning rate `lr`, optionally divided by (staleness + 1), optionally with momentum.

    lr_schedule="staleness" is the staleness-aware rate of Zhang et al. (2016):
    a gradient stale by s versions is applied with lr / (s + 1).
    """

    def __init__(self, lr, lr_schedule="constant", momentum=0.0):
        self.lr = checks.real("lr", lr, positive=True)
        self.schedule = None
        if callable(lr_schedule):                # a learner's own rate(lr, staleness) (exercise 4)
            self.schedule, self.lr_schedule = lr_schedule, getattr(lr_schedule, "__name__", "custom")
        else:
            self.lr_schedule = checks.choice("lr_schedule",
                                             "constant" if lr_schedule is None else lr_schedule,
                                             LR_SCHEDULES + ("a function rate(lr, staleness)",))
        self.momentum = checks.real("momentum", momentum, minimum=0.0, below=1.0)
        self.velocity = None
        self._step = None                        # scratch for lr * grad, reused by every push

    def rate(self, staleness):
        if self.schedule is not None:
            rate = self.schedule(self.lr, staleness)
            if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0 \
                    or rate == float("inf"):
                raise ValueError(f"lr_schedule({self.lr:g}, {staleness}) returned {rate!r}: a "
                                 f"learning rate must be a finite number > 0")
            return float(rate)
        return self.lr / (staleness + 1) if self.lr_schedule == "staleness" else self.lr

    def apply(self, params, grad, staleness):
        """Update `params` in place with one (possibly stale) gradient (no temporary array)."""
        if self._step is None or self._step.shape != grad.shape:
            self._step = np.empty_like(params)
        step = np.multiply(grad, self.rate(staleness), out=self._step)
        if self.momentum:
            if self.velocity is None:
                self.velocity = step.copy()
            else:
                self.velocity *= self.momentum
                self.velocity += step
            step = self.velocity
        params -= step
