"""Consistency policies and learning-rate rules: the settings of a run's semantics.

    sync   BSP  every worker waits at a barrier; the round's gradients are averaged
                into one update: one new version per round, every push stale by 0.
    async  ASP  nobody waits; each push is applied at once: one version per push.
                A gradient computed on v0 may land on v1, v2, ... (a stale update).
    ssp    SSP  Stale Synchronous Parallel (Ho et al. 2013): like async, but the
                fastest worker is never more than `max_clocks_ahead` clocks ahead of the slowest.

A worker's clock counts its pushes. The policies differ only in how many clocks a worker may run
ahead of the slowest (`max_ahead`: 0, s or unbounded) and whether a round is averaged. How a push
then moves the parameters is in `semantics.py`; this module names the choices.

The learning rate of a push is `lr_schedule(lr, staleness)`, a plain function. The built-ins:
    "constant"             lr, whatever the push's staleness
    "divide_by_staleness"  lr / (staleness + 1): the staleness-aware rate of Zhang et al. (2016)
A learner's own function with the same signature is used the same way.
"""
import math
from dataclasses import dataclass

from . import checks

POLICIES = ("sync", "async", "ssp")


@dataclass(frozen=True)
class Policy:
    name: str
    max_ahead: float      # how many clocks a worker may run ahead of the slowest (inf: no limit)
    averages: bool        # True: the gradients of a round are averaged into one update (sync)
    wait_reason: str      # what a Wait event says when a worker is held back

    @property
    def waits(self):
        """Does this policy ever hold a worker back (a barrier or a gate)?"""
        return self.max_ahead != math.inf


def make_policy(policy, max_clocks_ahead=None):
    checks.choice("policy", policy, POLICIES)
    if policy == "ssp":
        if max_clocks_ahead is None:
            raise ValueError("policy='ssp' needs max_clocks_ahead=s, how many clocks the fastest "
                             "worker may run ahead of the slowest (an integer >= 0)")
        s = checks.integer("max_clocks_ahead", max_clocks_ahead, minimum=0)
        return Policy("ssp", s, averages=False, wait_reason="ssp")
    if max_clocks_ahead is not None:
        raise ValueError(f"max_clocks_ahead={max_clocks_ahead!r} is not allowed with policy={policy!r}: "
                         f"it is the SSP threshold, used only with policy='ssp'")
    if policy == "sync":
        return Policy("sync", 0, averages=True, wait_reason="barrier")
    return Policy("async", math.inf, averages=False, wait_reason="none")


# -- learning-rate schedules: rate(lr, staleness) ------------------------------------------
def constant(lr, staleness):
    """The same lr for every push."""
    return lr


def divide_by_staleness(lr, staleness):
    """lr / (staleness + 1): a push stale by s versions moves the parameters s + 1 times less."""
    return lr / (staleness + 1)


LR_SCHEDULES = {"constant": constant, "divide_by_staleness": divide_by_staleness}


def lr_schedule(value):
    """The schedule function for `lr_schedule=` (a name, or a learner's own function)."""
    if callable(value):
        return value
    if value == "staleness":
        raise ValueError("lr_schedule='staleness' was renamed: use lr_schedule='divide_by_staleness' "
                         "(lr / (staleness + 1) for a push stale by `staleness` versions)")
    checks.choice("lr_schedule", "constant" if value is None else value,
                  tuple(LR_SCHEDULES) + ("a function rate(lr, staleness)",))
    return LR_SCHEDULES["constant" if value is None else value]


def schedule_name(schedule):
    return getattr(schedule, "__name__", "custom")


class Momentum:
    """The built-in push with heavy-ball momentum (the same signature as `semantics.apply`).

    velocity <- momentum * velocity + lr * grad;  params <- params - velocity.
    The velocity is the server's state: checkpoints keep it.
    """

    def __init__(self, momentum):
        self.momentum, self.velocity = momentum, None

    def __call__(self, params, version, grad, computed_on, lr):
        step = lr * grad
        self.velocity = step if self.velocity is None else self.velocity * self.momentum + step
        params -= self.velocity
        return params, version + 1, version - computed_on
