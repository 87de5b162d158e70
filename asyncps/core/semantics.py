"""What a parameter server means: the lecture in ten lines, then the code.

The server holds the parameters and their version: v0, then v1, v2, ..., one per update.
A worker *pulls* (reads the parameters and the version v they are), computes a gradient on v,
and *pushes* it. The server applies it to its *current* version, which other pushes may have
moved on since: computed_on v, applied_to u, staleness = u - v (0: fresh; 1: one version late).
async (ASP): every push is applied at once and makes a new version. Nobody waits.
sync (BSP): every worker pushes once per round; the round's gradients are averaged and applied
as one new version, so every push is stale by 0, and workers wait at the barrier for the round.
A worker's clock counts its pushes. The gate lets a worker start an iteration only while its
clock is at most `max_ahead` clocks ahead of the slowest live worker: 0 is the barrier, s is SSP.
ksync and kasync close a round on k pushes (the first k fresh ones under ksync, which drops a
gradient that comes after its round closed; any k under kasync); a worker that pushed waits
until its round closes.

`apply`, `average` and `gate` below are the built-ins. A learner's own (`aps.simulate(...,
apply=my_apply)`) has exactly the same signature, and the server calls whichever is configured.
Everything else a real server needs (scoring each version's loss, stopping a diverging run,
checkpoints) is in server.py; what each policy sets is in policies.py.
"""
from typing import NamedTuple

import numpy as np

from .events import Drop, Lost, Pull, Push


class Snapshot(NamedTuple):
    """What a pull returns: the parameters and the version they are."""
    params: np.ndarray
    version: int


def apply(params, version, grad, computed_on, lr):
    """The asynchronous push: `grad`, computed on `computed_on`, lands on the current `version`."""
    params -= lr * grad
    return params, version + 1, version - computed_on


def average(grads, workers):
    """The synchronous round: the mean of the round's gradients once all `workers` have pushed
    (`grads` maps each worker to its gradient); None keeps the barrier closed."""
    if len(grads) < workers:
        return None
    return sum(grads.values()) / workers


def gate(clock, clocks, max_ahead):
    """May a worker at `clock` start its next iteration? `clocks`: every live worker's clock."""
    return clock - min(clocks) <= max_ahead


class Semantics:
    """Versions, clocks, pull, push, the round and the gate: the whole protocol."""

    def __init__(self, params, config, rules):
        """`config`: the run (config.py); `rules`: the apply, average, gate and lr_schedule to call."""
        self.params, self.workers, self.policy, self.lr = params, config.workers, config.policy, config.lr
        self.apply, self.average, self.gate, self.lr_schedule = rules
        self.steps = None if config.push_every is None else config.steps   # None: local steps only
        self.version = 0
        self.clocks = [0] * self.workers      # pushes per worker; None once a worker is lost
        self.round = {}                       # sync, ksync, kasync: worker -> its gradient
        self.round_computed_on = {}           # ... and the version it was computed on
        self.round_size = config.policy.round_size(self.workers)
        self.stopped, self.lost = False, set()

    @property
    def done(self):
        """The run has made its `steps` versions (or was stopped): late pushes are dropped."""
        return self.stopped or (self.steps is not None and self.version >= self.steps)

    def pull(self, worker, time=0.0, out=None):
        """A copy of the parameters (into `out` when given) and the version they are."""
        if not self.done:                     # a pull after the end is served, not recorded
            self.record(Pull(worker, self.version, time))
        if out is None:
            return Snapshot(self.params.copy(), self.version)
        out[:] = self.params
        return Snapshot(out, self.version)

    def push(self, worker, grad, computed_on, time=0.0):
        """Apply a gradient computed on `computed_on` to the current version; the Push event."""
        if self.done:
            return None                       # still in flight when the run ended
        if not 0 <= computed_on <= self.version:
            raise ValueError(f"computed_on={computed_on} is not allowed: it must be a version the "
                             f"server has had, 0..{self.version}")
        if self.policy.drops_stale and computed_on < self.version:
            return self.record(Drop(worker, computed_on, self.version, time))   # ksync: too late
        event = self.record(Push(worker, computed_on, self.version, self.version - computed_on, time))
        self.clocks[worker] += 1
        if self.policy.averages:              # a round's mean is applied once
            if worker in self.round:
                raise RuntimeError(f"worker {worker} pushed twice in the round on v{self.version}: "
                                   f"under policy={self.policy.name!r} it must wait until the round "
                                   f"closes")
            self.round[worker] = grad.copy()
            self.round_computed_on[worker] = computed_on
            grad = self.average(self.round, self.round_size)
            if grad is None:
                return event                  # the round stays open
            computed_on = min(self.round_computed_on.values())   # the lr of its stalest push
            self.round, self.round_computed_on = {}, {}
        self.update(grad, computed_on)
        return event

    def update(self, grad, computed_on):
        """One new version: the configured push rule moves the parameters."""
        lr = self.lr_schedule(self.lr, self.version - computed_on)
        params, _, _ = self.apply(self.params, self.version, grad, computed_on, lr)
        if params is not self.params:
            self.params[:] = params           # an engine may keep the parameters in shared memory
        self.version += 1                     # (a learner's apply is checked to say the same)
        self.new_version()

    def may_start(self, worker):
        """The barrier (sync) or the SSP gate: may this worker start its next iteration now?"""
        if self.done or not self.policy.waits:
            return True
        if self.policy.wait_for is not None:  # ksync, kasync: not while its push waits in the round
            return worker not in self.round
        return self.gate(self.clocks[worker], self.live_clocks, self.policy.max_ahead)

    @property
    def live_clocks(self):
        if self.lost:
            return [c for c in self.clocks if c is not None]
        return self.clocks                    # nobody lost: every clock is live (and not copied)

    @property
    def slowest(self):
        return min(self.live_clocks, default=0)

    def lose(self, worker, time, reason):
        """A real worker died. async goes on without it, and so do ksync and kasync while k
        workers are left; sync and ssp cannot (its clock is stuck)."""
        self.record(Lost(worker, time, reason))
        left = self.workers - len(self.lost) - 1
        if self.policy.waits and (self.policy.wait_for is None or left < self.policy.wait_for):
            needs = ("waits for every worker" if self.policy.wait_for is None else
                     f"needs {self.policy.wait_for} pushes per round and {left} workers are left")
            raise RuntimeError(f"worker {worker} was lost ({reason}) at v{self.version}: "
                               f"policy={self.policy.name!r} {needs}, so the run "
                               f"cannot go on; use policy='async' to tolerate lost workers")
        self.clocks[worker] = None
        self.lost.add(worker)

    def vacate(self, worker):
        """An empty seat (a classroom seat nobody took when the run started): no clock and no
        place in a round until `occupy`. Not an event: nobody was there to be lost."""
        if worker in self.lost:
            return
        self.clocks[worker] = None
        self.lost.add(worker)
        if self.policy.averages and self.policy.wait_for is None:
            self.round_size -= 1              # sync: the round is every seated worker

    def occupy(self, worker):
        """A worker takes an empty seat of a running run (a late student): its clock starts at the
        slowest live clock, level with the class."""
        if worker not in self.lost:
            return
        self.clocks[worker] = self.slowest
        self.lost.discard(worker)
        if self.policy.averages and self.policy.wait_for is None:
            self.round_size += 1

    # -- what the full server (server.py) adds --------------------------------------------
    def record(self, event):
        return event

    def new_version(self):
        pass
