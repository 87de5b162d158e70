"""The parameter server an engine drives: the protocol (semantics.py) plus its bookkeeping.

    server = ParameterServer(x0, workers=4, policy="async", lr=0.1, loss=problem.loss)
    params, version = server.pull(worker)
    server.push(worker, grad, computed_on)     # -> the Push event

What this adds to the protocol: the trace (every event, the loss of every version, the
parameters of every version on small problems), stopping a diverging run with a message,
checkpoint state, and the Run an engine returns. The server knows no threads, clocks or
processes: an engine calls it (under a lock, over shared memory or RPC) with the time of each call.
"""
import math

import numpy as np

from . import checks, hooks, semantics
from .config import RunConfig, refuse_renamed
from .events import Control
from .policies import LR_SCHEDULES, Momentum
from .run import Run
from .trace import Trace

# A run diverges when its loss stops being finite or grows this much past the start.
DIVERGENCE_FACTOR = 1e10
# Problems up to this many parameters keep the parameters of every version in the trace.
HISTORY_MAX_DIM = 16


def rules(config):
    """The apply, average, gate and lr schedule the server calls: a learner's (checked) or the
    built-ins (semantics.py, policies.py)."""
    if config.apply is not None:
        apply = hooks.checked_apply(config.apply)
    else:
        apply = Momentum(config.momentum) if config.momentum else semantics.apply
    average = semantics.average if config.average is None else hooks.checked_average(config.average)
    gate = semantics.gate if config.gate is None else hooks.checked_gate(config.gate)
    schedule = config.lr_schedule
    if schedule not in LR_SCHEDULES.values():
        schedule = hooks.checked_schedule(schedule)
    return apply, average, gate, schedule


class ParameterServer(semantics.Semantics):
    def __init__(self, x0, loss=None, storage=None, problem="problem", config=None, metrics=None,
                 **arguments):
        """`config`: a RunConfig; or its fields as keyword arguments (workers=, policy=, lr=, ...).
        `metrics`: {name: metric(params)} scored with each version's loss (e.g. accuracy)."""
        refuse_renamed(arguments)
        config = RunConfig(**arguments) if config is None else config
        self.config = config
        x0 = checks.vector("x0", x0)
        # `storage` lets an engine keep the parameters somewhere of its choosing (shared memory)
        params = x0.copy() if storage is None else storage
        params[:] = x0
        super().__init__(params, config, rules(config))
        self._loss, self._metrics = loss, dict(metrics or {})
        self.loss_every = config.loss_every        # scoring a version costs a pass over the data
        self.on_version = None                     # engines may hook a checkpoint here
        self.errors_ignored = False                # the caller ignores floating-point errors already
        # keep the parameters of every version (for the parameter-space view) on small problems
        self.history = self.params.size <= HISTORY_MAX_DIM
        self.trace = Trace(meta=config.meta(problem, dtype=str(self.params.dtype)), limit=config.trace_limit,
                           metrics={name: [] for name in self._metrics})
        self.diverged, self.message = False, ""
        self._record_loss()

    def push(self, worker, grad, computed_on, time=0.0, checked=False):
        """`checked=True`: the engine's worker loop already checked the gradient (shape, finite)."""
        if not checked and not self.done:
            grad = checks.gradient(grad, self.params, source=f"worker {worker}'s push")
        return super().push(worker, grad, computed_on, time)

    def record(self, event):
        """Every event of the run goes to the trace (engines add their Compute and Wait events)."""
        return self.trace.record(event)

    def stop(self, message, diverged=True):
        """End the run, with a message for the learner: as diverged, unless told otherwise (a
        live run stopped by hand did not diverge)."""
        self.stopped, self.diverged = True, self.diverged or diverged
        self.message = message

    def set_lr(self, lr, time=0.0):
        """From the next update on, push with this lr (a live run's control); the Control event.
        trace.meta["lr"] keeps the lr the run started with."""
        self.lr = checks.real("lr", lr, positive=True)
        return self.record(Control("lr", None, self.lr, time))

    def new_version(self):
        self._record_loss()
        if self.on_version is not None:
            self.on_version(self)

    def result(self, worker_params=()):
        """The Run an engine returns (each worker's local copy at the end, when known)."""
        return Run(trace=self.trace, params=self.params.copy(), diverged=self.diverged,
                   message=self.message, worker_params=list(worker_params), server_state=self.state())

    # -- checkpoints --------------------------------------------------------
    def state(self):
        """What a checkpoint keeps besides the trace: clocks and the momentum buffer."""
        velocity = getattr(self.apply, "velocity", None)
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
        if isinstance(self.apply, Momentum):
            self.apply.velocity = None if state["velocity"] is None else np.array(state["velocity"])
        self.trace.events = list(run.trace.events)
        self.trace.losses = list(run.trace.losses)
        self.trace.params = list(run.trace.params)
        self.trace.metrics = {name: list(values) for name, values in run.trace.metrics.items()}

    # -- each version's loss ------------------------------------------------
    def scored(self, version):
        """Is `version` scored? Every `loss_every`-th and the last; the others are NaN."""
        return not (version % self.loss_every and not (self.steps is not None and version >= self.steps))

    def _record_loss(self):
        value, metrics = math.nan, {name: math.nan for name in self._metrics}
        scored = self._loss is not None and (self.scored(self.version) or self.done)
        if scored:
            value, metrics = self.score(self.params)
        self.record_version(value, metrics, self.params, scored)

    def scorers(self):
        """The loss function (None: no loss) and the {name: metric} this server scores with."""
        return self._loss, dict(self._metrics)

    def score(self, params):
        """The loss and the metrics of `params`: (loss, {name: value}); None without a loss."""
        if self._loss is None:
            return None
        if self.errors_ignored:                    # the simulator's: np.errstate cost a third of it
            return self._scores(params)
        with np.errstate(all="ignore"):
            return self._scores(params)

    def _scores(self, params):
        return (float(self._loss(params)),
                {name: float(metric(params)) for name, metric in self._metrics.items()})

    def record_version(self, loss, metrics, params, scored, finite=None):
        """The loss (and metrics) of the version just made, scored here or where it was made (the
        processes engine's workers score in shared memory); a scored one may stop a diverging run.
        `finite`: whether `params` are all finite, when the caller knows (None: look)."""
        if self.history and self.trace.keeps_params():
            self.trace.params.append(np.array(params, copy=True))
        if self._loss is None:
            return
        for name in self._metrics:
            self.trace.metrics[name].append(metrics.get(name, math.nan))
        self.trace.losses.append(loss)
        if not scored:
            return
        finite = checks.all_finite(params) if finite is None else finite
        message = divergence(loss, self.trace.losses[0], finite, self.version, self.lr)
        if message:
            self.stop(message)


def divergence(loss, start, finite, version, lr):
    """Why a run whose `version` scored `loss` has diverged, or None (it has not); `finite`:
    whether its parameters are all finite."""
    if not math.isfinite(loss) or not finite:
        return f"diverged at v{version}: the loss is {loss} (not finite); try a smaller lr than {lr:g}"
    if abs(loss) > DIVERGENCE_FACTOR * (1.0 + abs(start)):
        return (f"diverged at v{version}: the loss {loss:.3g} grew past {DIVERGENCE_FACTOR:.0e} x the "
                f"starting loss {start:.3g}; try a smaller lr than {lr:g}")
    return None
