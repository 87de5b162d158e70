"""A Run: what an engine returns, and the same Run on disk (a checkpoint).

One .npz file holds the parameters, the server state (version, clocks,
momentum buffer) and the trace as JSON. It is written atomically (atomic.py),
so a crash during a save leaves the previous checkpoint intact. Nothing is
pickled: loading runs no code.
"""
import json
import zipfile
from dataclasses import dataclass, field

import numpy as np

from . import atomic
from .trace import Trace


@dataclass
class Run:
    """What an engine returns: the trace, the losses per version and the final parameters."""
    trace: Trace
    params: np.ndarray
    diverged: bool = False
    message: str = ""
    worker_params: list = field(default_factory=list)   # each worker's local copy at the end
    server_state: dict = field(default_factory=dict)    # version, clocks, momentum: for resume

    @property
    def losses(self):
        return self.trace.losses

    @property
    def metrics(self):
        """{name: [value of each version]}, e.g. run.metrics["accuracy"][v] (NaN where not scored)."""
        return self.trace.metrics

    def versions_to_reach(self, loss):
        """The first version whose loss is <= `loss`, or None if the run never got there."""
        below = np.nonzero(np.asarray(self.losses) <= loss)[0]
        return int(below[0]) if below.size else None

    def time_to_reach(self, loss):
        """When the server first reached `loss` (virtual time or seconds), or None."""
        v = self.versions_to_reach(loss)
        return None if v is None else float(self.trace.version_times()[v])

    def versions_to_stay_below(self, loss):
        """The first scored version from which every later scored version's loss is <= `loss`, or
        None if the last scored loss is above it (or the run diverged). Versions that were not
        scored (NaN, loss_every) are skipped: they say nothing either way."""
        losses = np.asarray(self.losses, dtype=float)
        scored = np.nonzero(~np.isnan(losses))[0]
        if self.diverged or not scored.size:
            return None
        above = scored[losses[scored] > loss]
        after = scored[scored > above[-1]] if above.size else scored
        return int(after[0]) if after.size else None

    def time_to_stay_below(self, loss):
        """When the server got to `loss` for good: the earliest time after which every later scored
        version's loss is <= `loss` (virtual time or seconds), or None if the run ended above it.
        Never before time_to_reach(loss), which counts a run that touches `loss` and bounces back."""
        v = self.versions_to_stay_below(loss)
        return None if v is None else float(self.trace.version_times()[v])

    def save(self, path):
        """Write the run to `path` (.npz) atomically: a crash mid-save keeps the previous file."""
        save_run(self, path)

    def __repr__(self):
        s = self.trace.summary()
        text = (f"Run({self.trace.meta.get('policy', '?')}, workers={self.trace.workers}, "
                f"versions={s['versions']}, pushes={s['pushes']}, "
                f"final loss={self.losses[-1]:.4g}, mean staleness={s['mean_staleness']:.2f})")
        return text + (f"\n  {self.message}" if self.message else "")

    def _repr_html_(self):
        """Jupyter's view: the summary line, the loss (and accuracy) per version and the staleness
        histogram, drawn by the view layer registered in display.py (None without one)."""
        from .display import html
        return html(self)


def save_run(run, path):
    """Write `run` to `path` (.npz) atomically."""
    state = dict(run.server_state)
    velocity = state.pop("velocity", None)
    meta = {"diverged": run.diverged, "message": run.message, "server_state": state}
    arrays = {"params": run.params, "meta": np.array(json.dumps(meta)),
              "trace": np.array(run.trace.to_json())}
    if velocity is not None:
        arrays["velocity"] = velocity
    if run.worker_params:
        arrays["worker_params"] = np.stack(run.worker_params)
    return atomic.write_atomically(path, lambda f: np.savez(f, **arrays))


def load_run(path):
    """Read a Run written by Run.save (or by a training checkpoint)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            state = dict(meta["server_state"])
            state["velocity"] = data["velocity"].copy() if "velocity" in data else None
            workers = list(data["worker_params"]) if "worker_params" in data else []
            return Run(trace=Trace.from_json(str(data["trace"])), params=data["params"].copy(),
                       diverged=meta["diverged"], message=meta["message"], worker_params=workers,
                       server_state=state)
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise ValueError(f"{path} is not a readable asyncps checkpoint: {err}") from None


def as_trace(run_or_trace, name="run_or_trace"):
    """The Trace of a Run, or the Trace itself: what every view draws."""
    if isinstance(run_or_trace, Run):
        return run_or_trace.trace
    if isinstance(run_or_trace, Trace):
        return run_or_trace
    raise TypeError(f"{name}={run_or_trace!r:.60} is not allowed: {name} must be an asyncps Run "
                    f"(what simulate/train return) or a Trace")
