"""One event trace: what every engine records and every view renders.

A parameter server run is a sequence of four kinds of events:

    Pull(worker, version, time)                       a worker reads version v
    Compute(worker, start, end, computed_on)          it computes a gradient on v
    Push(worker, computed_on, applied_to, staleness, time)
                                                      the server applies it to its current version
    Wait(worker, start, end, reason)                  it sits at the barrier or the SSP gate
    Lost(worker, time, reason)                        a real worker died; the run went on without it

plus the loss of each server version: ``losses[v]`` is the loss at version v.
``staleness = applied_to - computed_on``: a gradient computed on v0 and applied
to v1 is stale by one version. Times are virtual (simulate) or seconds since
the start (real engines); ``meta["clock"]`` says which.
"""
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

FORMAT = "asyncps-trace"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Pull:
    worker: int
    version: int
    time: float
    kind: ClassVar[str] = "pull"


@dataclass(frozen=True)
class Compute:
    worker: int
    start: float
    end: float
    computed_on: int
    kind: ClassVar[str] = "compute"


@dataclass(frozen=True)
class Push:
    worker: int
    computed_on: int
    applied_to: int
    staleness: int
    time: float
    kind: ClassVar[str] = "push"


@dataclass(frozen=True)
class Wait:
    worker: int
    start: float
    end: float
    reason: str          # "barrier" (sync) or "ssp" (the bounded-staleness gate)
    kind: ClassVar[str] = "wait"


@dataclass(frozen=True)
class Lost:
    worker: int
    time: float
    reason: str          # e.g. "killed by signal 9"
    kind: ClassVar[str] = "lost"


EVENT_TYPES = {cls.kind: cls for cls in (Pull, Compute, Push, Wait, Lost)}


@dataclass(eq=False)
class Trace:
    """The events of one run, in the order the server saw them, and the loss of each version."""
    events: list = field(default_factory=list)
    losses: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    params: list = field(default_factory=list)   # params[v] at each version (small problems only)

    def __eq__(self, other):
        if not isinstance(other, Trace):
            return NotImplemented
        return (self.events == other.events and self.losses == other.losses and self.meta == other.meta
                and len(self.params) == len(other.params)
                and all(np.array_equal(a, b) for a, b in zip(self.params, other.params)))

    def record(self, event):
        self.events.append(event)
        return event

    # -- views by kind ------------------------------------------------------
    def of_kind(self, kind):
        return [e for e in self.events if e.kind == kind]

    @property
    def pulls(self):
        return self.of_kind("pull")

    @property
    def computes(self):
        return self.of_kind("compute")

    @property
    def pushes(self):
        return self.of_kind("push")

    @property
    def waits(self):
        return self.of_kind("wait")

    @property
    def lost(self):
        return self.of_kind("lost")

    @property
    def workers(self):
        if "workers" in self.meta:
            return int(self.meta["workers"])
        return 1 + max((e.worker for e in self.events), default=-1)

    # -- summaries ----------------------------------------------------------
    def staleness_histogram(self):
        """counts[s] = number of pushes that were stale by s versions."""
        stale = [p.staleness for p in self.pushes]
        return np.bincount(stale, minlength=1) if stale else np.zeros(1, dtype=int)

    def pushes_per_worker(self):
        counts = np.zeros(self.workers, dtype=int)
        for p in self.pushes:
            counts[p.worker] += 1
        return counts

    def idle_time_per_worker(self):
        """Time each worker spent waiting at the barrier or the SSP gate."""
        idle = np.zeros(self.workers)
        for w in self.waits:
            idle[w.worker] += w.end - w.start
        return idle

    def version_times(self):
        """times[v] = when version v was made (0 for v0): the last push applied to v - 1."""
        made = {p.applied_to + 1: p.time for p in self.pushes}
        return np.array([0.0] + [made.get(v, np.nan) for v in range(1, len(self.losses))])

    @property
    def duration(self):
        """Time from the start to the last event."""
        ends = [getattr(e, "end", getattr(e, "time", 0.0)) for e in self.events]
        return max(ends, default=0.0)

    def summary(self):
        hist = self.staleness_histogram()
        return {"pushes": len(self.pushes), "versions": len(self.losses) - 1,
                "mean_staleness": float(np.average(np.arange(hist.size), weights=hist)) if hist.sum() else 0.0,
                "max_staleness": int(hist.size - 1) if hist.sum() else 0,
                "idle_time": self.idle_time_per_worker().tolist(), "duration": self.duration}

    # -- JSON ---------------------------------------------------------------
    def to_dict(self):
        return {"format": FORMAT, "format_version": FORMAT_VERSION, "meta": self.meta,
                "losses": [float(x) for x in self.losses],
                "params": [[float(x) for x in p] for p in self.params],
                "events": [{"kind": e.kind, **asdict(e)} for e in self.events]}

    def to_json(self, path=None):
        """The trace as JSON text; written to `path` when given. Lossless: from_json gives it back."""
        text = json.dumps(self.to_dict())
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def from_dict(cls, data, where="trace"):
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{where} is not an asyncps trace: expected a JSON object with "
                             f"\"format\": \"{FORMAT}\"")
        if data.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{where} has format_version {data.get('format_version')!r}; this asyncps "
                             f"reads format_version {FORMAT_VERSION}")
        events = []
        for i, raw in enumerate(data.get("events", [])):
            raw = dict(raw) if isinstance(raw, dict) else {}
            kind = raw.pop("kind", None)
            if kind not in EVENT_TYPES:
                raise ValueError(f"{where}: event {i} has kind {kind!r}; allowed kinds are "
                                 f"{', '.join(EVENT_TYPES)}")
            try:
                events.append(EVENT_TYPES[kind](**raw))
            except TypeError as err:
                raise ValueError(f"{where}: event {i} ({kind}) has the wrong fields: {err}") from None
        return cls(events=events, losses=[float(x) for x in data.get("losses", [])],
                   meta=dict(data.get("meta", {})),
                   params=[np.array(p, dtype=float) for p in data.get("params", [])])

    @classmethod
    def from_json(cls, source):
        """Read a trace from a file path, or from JSON text."""
        if isinstance(source, str) and source.lstrip().startswith("{"):
            text, where = source, "the JSON text"
        elif isinstance(source, (str, Path)):
            text, where = Path(source).read_text(), str(source)
        else:
            raise TypeError(f"source={source!r} is not allowed: source must be a file path or JSON text")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{where} is not valid JSON (line {err.lineno}, column {err.colno}): "
                             f"{err.msg}") from None
        return cls.from_dict(data, where)


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

    def versions_to_reach(self, loss):
        """The first version whose loss is <= `loss`, or None if the run never got there."""
        below = np.nonzero(np.asarray(self.losses) <= loss)[0]
        return int(below[0]) if below.size else None

    def time_to_reach(self, loss):
        """When the server first reached `loss` (virtual time or seconds), or None."""
        v = self.versions_to_reach(loss)
        return None if v is None else float(self.trace.version_times()[v])

    def save(self, path):
        """Write the run to `path` (.npz) atomically: a crash mid-save keeps the previous file."""
        from .checkpoint import save_run
        save_run(self, path)

    def __repr__(self):
        s = self.trace.summary()
        text = (f"Run({self.trace.meta.get('policy', '?')}, workers={self.trace.workers}, "
                f"versions={s['versions']}, pushes={s['pushes']}, "
                f"final loss={self.losses[-1]:.4g}, mean staleness={s['mean_staleness']:.2f})")
        return text + (f"\n  {self.message}" if self.message else "")
