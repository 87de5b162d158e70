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
from collections import Counter
from typing import NamedTuple

import numpy as np

from . import checks, hooks
from .policies import UpdateRule, make_policy
from .trace import Lost, Pull, Push, Trace

# A run diverges when its loss stops being finite or grows this much past the start.
DIVERGENCE_FACTOR = 1e10
# Problems up to this many parameters keep the parameters of every version in the trace.
HISTORY_MAX_DIM = 16


class Snapshot(NamedTuple):
    params: np.ndarray
    version: int


class ParameterServer:
    def __init__(self, x0, workers=1, policy="async", staleness=None, lr=0.1,
                 lr_schedule="constant", momentum=0.0, loss=None, steps=None, storage=None,
                 history=None, apply=None, average=None, gate=None, loss_every=1, trace_limit=None):
        self.workers = checks.integer("workers", workers, minimum=1)
        self.policy = make_policy(policy, staleness)
        # Exercise hooks: a learner's own push, round or gate, run by the real server (see hooks.py)
        self.apply, self.average, self.gate = hooks.check(apply=apply, average=average, gate=gate,
                                                          policy=self.policy.name)
        self.rule = UpdateRule(lr, lr_schedule, momentum)
        x0 = checks.vector("x0", x0)
        # `storage` lets an engine keep the parameters somewhere of its choosing (shared memory)
        self.params = x0.copy() if storage is None else storage
        self.params[:] = x0
        self.steps = None if steps is None else checks.integer("steps", steps, minimum=0)
        # the loss of every version costs a full pass over the data: big runs score every n-th
        self.loss_every = checks.integer("loss_every", loss_every, minimum=1)
        self.version = 0
        self.clocks = [0] * self.workers          # pushes per worker: the SSP/BSP clock
        self._recount()                           # the slowest live clock, kept up to date
        self._loss = loss
        self._round = {}                          # sync: worker -> computed_on, this round
        self._round_sum = np.zeros_like(self.params)
        self.diverged = False
        self.message = ""
        self.on_version = None                    # engines may hook a checkpoint here
        # keep the parameters of every version (for the parameter-space view) on small problems
        self.history = self.params.size <= HISTORY_MAX_DIM if history is None else bool(history)
        self.trace = Trace(meta={"workers": self.workers, "policy": self.policy.name,
                                 "staleness": staleness, "lr": self.rule.lr,
                                 "lr_schedule": self.rule.lr_schedule, "momentum": self.rule.momentum},
                           limit=None if trace_limit is None else checks.integer("trace_limit", trace_limit,
                                                                                 minimum=0))
        self._record_loss()

    # -- the two calls a worker makes ---------------------------------------
    def pull(self, worker, time=0.0, out=None):
        """A copy of the parameters (into `out` when given) and the version they are.

        A pull after the run is done is served but not recorded: the worker is on its way out.
        """
        if not self.done:
            self.trace.record(Pull(worker, self.version, time))
        if out is None:
            return Snapshot(self.params.copy(), self.version)
        out[:] = self.params
        return Snapshot(out, self.version)

    def push(self, worker, grad, computed_on, time=0.0, checked=False):
        """Apply a gradient computed on version `computed_on` to the current version.

        Once the run is done (`steps` versions made, or diverged) a late push is
        dropped and None is returned: it was still in flight when the run ended.
        `checked=True`: the engine's worker loop already checked the gradient (shape, finite).
        """
        if self.done:
            return None
        if not checked:
            grad = checks.gradient(grad, self.params, source=f"worker {worker}'s push")
        if not 0 <= computed_on <= self.version:
            raise ValueError(f"computed_on={computed_on} is not allowed: it must be a version the "
                             f"server has had, 0..{self.version}")
        applied_to = self.version
        event = self.trace.record(Push(worker, computed_on, applied_to, applied_to - computed_on, time))
        self._tick(worker)
        if self.policy.averages:
            self._push_to_round(worker, grad, applied_to)
        elif self.apply is not None:
            self.params[:] = hooks.run_apply(self.apply, self.params, self.version, grad, event,
                                             self.rule.lr)
            self._new_version()
        else:
            self.rule.apply(self.params, grad, event.staleness)
            self._new_version()
        return event

    def _push_to_round(self, worker, grad, applied_to):
        """sync: the round's gradients are averaged into one update once everyone has pushed."""
        if worker in self._round:
            raise RuntimeError(f"worker {worker} pushed twice in the round on v{applied_to}: "
                               f"under policy='sync' it must wait at the barrier")
        if self.average is not None:
            self._round[worker] = grad.copy()
            step = hooks.run_average(self.average, dict(self._round), self.workers, self.params)
        else:
            self._round[worker] = None
            self._round_sum += grad
            step = self._round_sum / self.workers if len(self._round) == self.workers else None
        if step is not None:                                  # the barrier opens
            self.rule.apply(self.params, step, 0)
            self._round.clear()
            self._round_sum[:] = 0.0
            self._new_version()

    # -- what engines ask ---------------------------------------------------
    def may_start(self, worker):
        """Barrier / SSP gate: may this worker start its next iteration now?"""
        if self.done:
            return True
        if self.gate is not None:
            live = [c for c in self.clocks if c is not None]
            return hooks.run_gate(self.gate, self.clocks[worker], live, self.policy.bound)
        return self.policy.may_start(self.clocks[worker], self.slowest)

    @property
    def done(self):
        return self.diverged or (self.steps is not None and self.version >= self.steps)

    def record(self, event):
        """Engines add their Compute and Wait events to the same trace."""
        return self.trace.record(event)

    def stop(self, message):
        """End the run as diverged, with a message for the learner."""
        self.diverged, self.message = True, message

    def lose(self, worker, time, reason):
        """A real worker died. Async goes on without it; sync and ssp cannot (its clock is stuck)."""
        self.trace.record(Lost(worker, time, reason))
        if self.policy.name != "async":
            raise RuntimeError(f"worker {worker} was lost ({reason}) at v{self.version}: "
                               f"policy={self.policy.name!r} waits for every worker, so the run "
                               f"cannot go on; use policy='async' to tolerate lost workers")
        self.clocks[worker] = None
        self._recount()

    # -- checkpoints --------------------------------------------------------
    def state(self):
        """What a checkpoint keeps besides the trace: clocks and the momentum buffer."""
        velocity = self.rule.velocity
        return {"version": self.version, "clocks": list(self.clocks),
                "velocity": None if velocity is None else velocity.copy()}

    def restore(self, run):
        """Continue from a saved Run: its parameters, version, clocks, losses and trace."""
        state = run.server_state
        if run.params.shape != self.params.shape or len(state["clocks"]) != self.workers:
            raise ValueError(f"resume: the checkpoint has {run.params.size} parameters and "
                             f"{len(state['clocks'])} workers; this run has {self.params.size} and "
                             f"{self.workers}")
        self.params[:] = run.params
        self.version = int(state["version"])
        self.clocks = [0 if c is None else int(c) for c in state["clocks"]]
        self._recount()
        self.rule.velocity = None if state["velocity"] is None else np.array(state["velocity"])
        self.trace.events = list(run.trace.events)
        self.trace.losses = list(run.trace.losses)
        self.trace.params = list(run.trace.params)

    # -- bookkeeping --------------------------------------------------------
    def _recount(self):
        live = [c for c in self.clocks if c is not None]
        self._at_clock = Counter(live)
        self.slowest = min(live, default=0)

    def _tick(self, worker):
        """Worker's clock + 1; the slowest clock moves up when its last worker leaves it (O(1))."""
        clock = self.clocks[worker]
        self.clocks[worker] = clock + 1
        self._at_clock[clock] -= 1
        self._at_clock[clock + 1] += 1
        while self._at_clock[self.slowest] == 0:
            self.slowest += 1
    def _new_version(self):
        self.version += 1
        self._record_loss()
        if self.on_version is not None:
            self.on_version(self)

    def _record_loss(self):
        if self.history and self.trace.keeps_params():
            self.trace.params.append(self.params.copy())
        if self._loss is None:
            return
        if self.version % self.loss_every and not self.done:
            self.trace.losses.append(math.nan)                # not scored (loss_every)
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
