"""One event trace: what every engine records and every view renders.

A run is a sequence of events (events.py: Pull, Compute, Push, Drop, Wait, Lost) in the order the
server saw them, plus the loss of each server version: ``losses[v]`` is the loss at version v.
Times are virtual (simulate) or seconds since the start (real engines); ``meta["clock"]`` says
which, and ``meta`` holds the run's configuration (config.py), written once at the start.
"""
import heapq
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import tracefile
from .events import Compute, Drop, Lost, Pull, Push, Wait  # noqa: F401  (re-exported: the trace's vocabulary)
from .policies import make_policy


@dataclass(eq=False)
class Trace:
    """The events of one run, in the order the server saw them, and the loss of each version."""
    events: list = field(default_factory=list)
    losses: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    params: list = field(default_factory=list)   # params[v] at each version (small problems only)
    limit: int | None = None                     # keep at most this many events, then summaries only
    beyond: dict = field(default_factory=dict)   # what the events past `limit` add to the summaries
    metrics: dict = field(default_factory=dict)  # {name: [value of each version]}, e.g. accuracy

    def __eq__(self, other):
        if not isinstance(other, Trace):
            return NotImplemented
        return (self.events == other.events and np.array_equal(self.losses, other.losses, equal_nan=True)
                and self.meta == other.meta
                and self.beyond == other.beyond and len(self.params) == len(other.params)
                and _same_metrics(self.metrics, other.metrics)
                and all(np.array_equal(a, b) for a, b in zip(self.params, other.params)))

    def record(self, event, in_time=False):
        """Append `event`; `in_time=True`: an event the server learns of late (a worker's own read
        of shared parameters) goes where its time puts it among the last events."""
        if self.limit is None or len(self.events) < self.limit:
            if not in_time:
                self.events.append(event)
                return event
            at = len(self.events)
            while at and _when(self.events[at - 1]) > _when(event):
                at -= 1
            self.events.insert(at, event)
        else:                                    # a long run: count it, don't keep it
            b = self.beyond
            b["events"] = b.get("events", 0) + 1
            if event.kind == "push":
                b.setdefault("staleness", {})
                b["staleness"][str(event.staleness)] = b["staleness"].get(str(event.staleness), 0) + 1
                b.setdefault("pushes", {})
                b["pushes"][str(event.worker)] = b["pushes"].get(str(event.worker), 0) + 1
            elif event.kind == "wait":
                b.setdefault("idle", {})
                b["idle"][str(event.worker)] = b["idle"].get(str(event.worker), 0.0) + event.end - event.start
            b["last_time"] = max(b.get("last_time", 0.0), getattr(event, "end", getattr(event, "time", 0.0)))
        return event

    def record_late(self, events):
        """Record events the server learns of late (a worker process's own pulls, computes and
        waits, sent in batches), each where its time puts it among the last events, as
        `record(e, in_time=True)` one by one would, in one merge instead of a walk per event."""
        events = sorted(events, key=_when)
        if not events:
            return
        if self.limit is not None and len(self.events) + len(events) > self.limit:
            for event in events:
                self.record(event, in_time=True)
            return
        at, first = len(self.events), _when(events[0])
        while at and _when(self.events[at - 1]) > first:
            at -= 1
        tail = self.events[at:]
        self.events[at:] = heapq.merge(tail, events, key=_when)

    def keeps_params(self):
        """Small problems keep every version's parameters, up to the event limit."""
        return self.limit is None or len(self.params) < self.limit

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
    def drops(self):
        """ksync: the gradients that came after their round closed, not applied."""
        return self.of_kind("drop")

    @property
    def waits(self):
        return self.of_kind("wait")

    @property
    def lost(self):
        return self.of_kind("lost")

    @property
    def controls(self):
        """What was changed while the run ran (a live run's slow, lr, pause, resume, kill, stop)."""
        return self.of_kind("control")

    @property
    def policy(self):
        """The run's Policy (policies.py): whether it averages rounds, whether it waits.
        A trace whose meta names no valid policy (hand-made, edited) is read as async."""
        try:
            return make_policy(self.meta.get("policy", "async"), self.meta.get("max_clocks_ahead"),
                               self.meta.get("wait_for"))
        except (TypeError, ValueError):
            return make_policy("async")

    @property
    def workers(self):
        if "workers" in self.meta:
            return int(self.meta["workers"])
        return 1 + max((e.worker for e in self.events if e.worker is not None), default=-1)

    # -- summaries ----------------------------------------------------------
    def staleness_histogram(self):
        """counts[s] = number of pushes that were stale by s versions."""
        stale = [p.staleness for p in self.pushes]
        counts = np.bincount(stale, minlength=1) if stale else np.zeros(1, dtype=int)
        extra = {int(s): c for s, c in self.beyond.get("staleness", {}).items()}
        if extra:
            counts = np.pad(counts, (0, max(0, max(extra) + 1 - counts.size)))
            for s, c in extra.items():
                counts[s] += c
        return counts

    def pushes_per_worker(self):
        counts = np.zeros(self.workers, dtype=int)
        for p in self.pushes:
            counts[p.worker] += 1
        for w, c in self.beyond.get("pushes", {}).items():
            counts[int(w)] += c
        return counts

    def idle_time_per_worker(self):
        """Time each worker spent waiting at the barrier or the SSP gate."""
        idle = np.zeros(self.workers)
        for w in self.waits:
            idle[w.worker] += w.end - w.start
        for w, t in self.beyond.get("idle", {}).items():
            idle[int(w)] += t
        return idle

    def version_times(self):
        """times[v] = when version v was made (0 for v0): the last push applied to v - 1."""
        made = {p.applied_to + 1: p.time for p in self.pushes}
        return np.array([0.0] + [made.get(v, np.nan) for v in range(1, len(self.losses))])

    def curve(self, of="loss", by="version"):
        """(xs, values): the loss (or a metric, of="accuracy") of each version, against the version
        (by="version") or the time it was made (by="time"); NaN where a version was not scored."""
        if of == "loss":
            values = np.asarray(self.losses, dtype=float)
        elif of in self.metrics:
            values = np.asarray(self.metrics[of], dtype=float)
        else:
            raise ValueError(f"of={of!r} is not allowed: this run has the loss"
                             + "".join(f", {m!r}" for m in self.metrics) + " to plot")
        if by not in ("version", "time"):
            raise ValueError(f"by={by!r} is not allowed: by must be 'version' or 'time'")
        xs = np.arange(len(values)) if by == "version" else self.version_times()[:len(values)]
        return xs, values

    @property
    def duration(self):
        """Time from the start to the last event."""
        ends = [getattr(e, "end", getattr(e, "time", 0.0)) for e in self.events]
        return max(max(ends, default=0.0), self.beyond.get("last_time", 0.0))

    def summary(self):
        hist = self.staleness_histogram()
        return {"pushes": int(self.pushes_per_worker().sum()), "versions": len(self.losses) - 1,
                "mean_staleness": float(np.average(np.arange(hist.size), weights=hist)) if hist.sum() else 0.0,
                "max_staleness": int(hist.size - 1) if hist.sum() else 0,
                "idle_time": self.idle_time_per_worker().tolist(), "duration": self.duration}

    def __repr__(self):
        """One line, like Run's (the events themselves: trace.events)."""
        s = self.summary()
        events = len(self.events) + self.beyond.get("events", 0)
        return (f"Trace({self.meta.get('policy', '?')}, workers={self.workers}, events={events}, "
                f"pushes={s['pushes']}, versions={max(s['versions'], 0)}, "
                f"mean staleness={s['mean_staleness']:.2f})")

    def _repr_html_(self):
        """Jupyter's view: the summary line and the staleness histogram, drawn by the view layer
        registered in display.py (None without one: Jupyter shows the repr)."""
        from .display import html
        return html(self)

    # -- JSON (asyncps/core/tracefile.py) -----------------------------------
    def to_dict(self):
        return tracefile.to_dict(self)

    def to_json(self, path=None):
        """The trace as JSON text; written atomically to `path` when given. Lossless: from_json
        gives it back."""
        text = json.dumps(self.to_dict())
        if path is not None:
            tracefile.write_atomically(path, text)
        return text

    def to_chrome_trace(self, path=None):
        """The trace in the Chrome trace-event format (asyncps/core/chrome.py), to open in Perfetto
        (ui.perfetto.dev) or chrome://tracing: the dict, or written as JSON to `path`, returns path."""
        from .chrome import chrome_trace
        data = chrome_trace(self)
        if path is None:
            return data
        tracefile.write_atomically(path, json.dumps(data))
        return path

    @classmethod
    def from_dict(cls, data, where="trace"):
        return tracefile.from_dict(cls, data, where)

    @classmethod
    def from_json(cls, source):
        """Read a trace from a file path, or from JSON text; a damaged one says what and where."""
        if isinstance(source, str) and source.lstrip().startswith("{"):
            text, where = source, "the JSON text"
        elif isinstance(source, (str, Path)):
            text, where = Path(source).read_text(), str(source)
        else:
            raise TypeError(f"source={source!r:.60} is not allowed: source must be a file path or JSON text")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{where} is not valid JSON (line {err.lineno}, column {err.colno}): "
                             f"{err.msg}; was the file cut short?") from None
        return cls.from_dict(data, where)


def _same_metrics(a, b):
    """Equal metrics, NaN (a version not scored) equal to NaN."""
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)


def _when(event):
    return getattr(event, "time", getattr(event, "end", 0.0))
