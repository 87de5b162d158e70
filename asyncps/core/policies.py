"""Consistency policies and learning-rate rules: the settings of a run's semantics.

    sync   BSP  every worker waits at a barrier; the round's gradients are averaged
                into one update: one new version per round, every push stale by 0.
    async  ASP  nobody waits; each push is applied at once: one version per push.
                A gradient computed on v0 may land on v1, v2, ... (a stale update).
    ssp    SSP  Stale Synchronous Parallel (Ho et al. 2013): like async, but the
                fastest worker is never more than `max_clocks_ahead` clocks ahead of the slowest
                (the threshold s; SSP_MAX_CLOCKS_AHEAD = 2 when it is not given).
    ksync       sync with backup workers (Chen et al. 2016; K-sync in Dutta et al. 2018): a round
                closes on the first `wait_for` = k gradients computed on the current version,
                averaged; a gradient that arrives after its round closed is dropped (a Drop
                event). A worker that pushed waits until its round closes. k = N is sync.
    kasync      K-async (Dutta et al. 2018): a round closes on the first k gradients whatever
                version they were computed on, averaged; nothing is dropped. A worker that
                pushed waits until its round closes. k = N is sync, k = 1 is async.

A worker's clock counts its pushes. sync, async and ssp differ only in how many clocks a worker
may run ahead of the slowest (`max_ahead`: 0, s or unbounded) and whether a round is averaged;
ksync and kasync close a round on k pushes (`wait_for`) instead of on every worker's. How a push
then moves the parameters is in `semantics.py`; this module names the choices.

The learning rate of a push is `lr_schedule(lr, staleness)`, a plain function. The built-ins:
    "constant"             lr, whatever the push's staleness
    "divide_by_staleness"  lr / (staleness + 1): the staleness-aware rate of Zhang et al. (2016)
A learner's own function with the same signature is used the same way.
"""
import math
import numbers
from dataclasses import dataclass

from . import checks

POLICIES = ("sync", "async", "ssp")          # what aps.compare and the Playground set side by side
K_POLICIES = ("ksync", "kasync")             # a round of k pushes: they need wait_for=k
ALL_POLICIES = POLICIES + K_POLICIES

# The SSP threshold s when policy="ssp" comes without max_clocks_ahead. In Ho et al. (2013) s is a
# setting of the server (s = 0 is BSP; without a bound it is asynchronous) that trades the time the
# fast workers wait against how stale a push may get. 2 is this package's choice, not a number
# taken from the paper: the s that aps.compare and the Playground start with, so
# `aps.simulate(problem, policy="ssp")` is the ssp run they show. trace.meta records the s used.
SSP_MAX_CLOCKS_AHEAD = 2


@dataclass(frozen=True)
class Policy:
    name: str
    max_ahead: float      # how many clocks a worker may run ahead of the slowest (inf: no limit)
    averages: bool        # True: the gradients of a round are averaged into one update (sync)
    wait_reason: str      # what a Wait event says when a worker is held back
    wait_for: int | None = None   # ksync, kasync: the k pushes that close a round
    drops_stale: bool = False     # ksync: a push computed on an older version is dropped

    @property
    def waits(self):
        """Does this policy ever hold a worker back (a barrier or a gate)?"""
        return self.max_ahead != math.inf or self.wait_for is not None

    def round_size(self, workers):
        """How many pushes close a round (averaging policies): k, or every worker (sync)."""
        return workers if self.wait_for is None else self.wait_for


# What the threshold means under the policies that have none to set (the error's words).
NO_THRESHOLD = {"sync": "its barrier keeps every worker at the same clock (s = 0, and each round "
                        "averaged)",
                "async": "it never holds a worker back (no bound at all)"}


def make_policy(policy, max_clocks_ahead=None, wait_for=None, workers=None):
    """The Policy named `policy`; `max_clocks_ahead` is ssp's threshold s (None: the default),
    `wait_for` ksync's and kasync's k (1..workers; `workers` checks the upper end when given)."""
    checks.choice("policy", policy, ALL_POLICIES)
    if policy in K_POLICIES:
        if wait_for is None:
            raise ValueError(f"policy={policy!r} needs wait_for=k: how many pushes close a round "
                             f"(1..workers; k = workers is policy='sync')")
        k = checks.integer("wait_for", wait_for, minimum=1)
        if workers is not None and k > workers:
            raise ValueError(f"wait_for={k} is not allowed with workers={workers}: a round cannot "
                             f"wait for more pushes than there are workers (1..{workers})")
    elif wait_for is not None:
        raise ValueError(f"wait_for={checks._show(wait_for)} is not allowed with policy={policy!r}: "
                         f"wait_for is the k of policy='ksync' (the first k fresh gradients close a "
                         f"round, the rest are dropped) and policy='kasync' (the first k gradients, "
                         f"fresh or stale); leave it out, or use one of those policies")
    if policy in K_POLICIES and max_clocks_ahead is not None:
        raise ValueError(f"max_clocks_ahead={checks._show(max_clocks_ahead)} is not allowed with "
                         f"policy={policy!r}: max_clocks_ahead is the SSP threshold; {policy} waits "
                         f"for wait_for pushes per round instead")
    if policy == "ksync":
        return Policy("ksync", math.inf, averages=True, wait_reason="round", wait_for=k,
                      drops_stale=True)
    if policy == "kasync":
        return Policy("kasync", math.inf, averages=True, wait_reason="round", wait_for=k)
    if policy == "ssp":
        if max_clocks_ahead is None:
            max_clocks_ahead = SSP_MAX_CLOCKS_AHEAD
        s = checks.integer("max_clocks_ahead", max_clocks_ahead, minimum=0)
        return Policy("ssp", s, averages=False, wait_reason="ssp")
    if max_clocks_ahead is not None:
        raise ValueError(f"max_clocks_ahead={checks._show(max_clocks_ahead)} is not allowed with "
                         f"policy={policy!r}: max_clocks_ahead is the SSP threshold (how many clocks "
                         f"the fastest worker may run ahead of the slowest), and {policy} has none "
                         f"to set: {NO_THRESHOLD[policy]}; use policy='ssp' with it, or leave "
                         f"max_clocks_ahead out (policy='ssp' alone uses s = "
                         f"{SSP_MAX_CLOCKS_AHEAD})")
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
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        shown = checks._show(value)
        raise checks.bad("lr_schedule", value, f"one of {', '.join(map(repr, LR_SCHEDULES))} or a "
                         f"function rate(lr, staleness): it says how a push's staleness changes the "
                         f"learning rate; for a learning rate of {shown} pass lr={shown}", TypeError)
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
