"""A live run as one SVG — a pure function of a growing Trace and the LiveRun's state (no kernel).

    live_svg(live.trace, live.state)     # the trace as it grows; or a finished run's trace

Top to bottom: a header (the server's version, the pushes, the lr and how the run stands), the
Timeline of the newest `window` events (render_timeline's drawing, of a WindowModel), and the loss
(and each metric, e.g. accuracy) per version so far beside the staleness histogram.

The trace may be growing while it is read: worker threads append to its lists. Each list is read
with one slice (the workers only append), never under a lock, so a reader never holds up a worker.
"""
from bisect import bisect_right

import numpy as np

from ..core.trace import Trace
from . import render_charts as rc
from . import render_timeline as rt
from .picture import stack_svg
from .svg import MUTED, svg, text

POINTS = 400          # at most this many points per curve, whatever the number of versions


class WindowModel(rt.TimelineModel):
    """The TimelineModel of the newest `window` events of a (growing) trace, drawn by timeline_svg.

    The versions keep their numbers: the server lane starts with the version the server had when
    the window begins (the first push's `applied_to`; `version` when the window holds no push) and
    the time axis spans the window's events. `first` is the index in the trace of the first event
    shown, `first_version` the version the window begins with: what is built costs what the
    window's events cost, never what the version number is."""

    def __init__(self, trace, window, version=0):
        self.first = max(0, len(trace.events) - window)
        part = Trace(events=trace.events[self.first:self.first + window], meta=trace.meta)
        super().__init__(part)                           # raises when there is no event yet
        made = {}                                        # version -> (its event index, its time)
        for i, e in enumerate(self.events):
            if e.kind == "push":
                made[e.applied_to + 1] = (i, e.time)
        pushes = [e for e in self.events if e.kind == "push"]
        seen = max((getattr(e, "version", getattr(e, "computed_on", -1)) for e in self.events
                    if e.kind != "push"), default=-1)
        if self.averages and made and max(made) > seen:  # a round (sync, ksync, kasync): ended?
            newest = max(made) - 1
            if sum(e.applied_to == newest for e in pushes) < self.round_size:
                del made[newest + 1]                     # no: it is still gathering pushes
        self.base = pushes[0].applied_to if pushes else max(seen, int(version))
        self.made_index = [made[v][0] for v in sorted(made)]
        # version v's start for timeline_svg, from the window's first version on (-inf: it was
        # there before the window begins): a run at v1,000,000 costs what one at v10 costs
        self.first_version = self.base
        self.version_time = [-np.inf] + [made[v][1] for v in sorted(made)]

    def version_at(self, frame):
        return self.base + bisect_right(self.made_index, frame)

    def window(self, frame):
        start = min(getattr(e, "start", getattr(e, "time", 0.0)) for e in self.events)
        span = max(float(self.now[-1]) - start, 1e-9)
        return start - 0.02 * span, float(self.now[-1]) + 0.04 * span


def outcome(run_or_error):
    """How a run ended, in words, from what `live.result()` returned or raised."""
    if isinstance(run_or_error, BaseException):
        return f"failed: {run_or_error}"
    if run_or_error.diverged:
        return f"diverged: {run_or_error.message}"
    if run_or_error.message:                             # "stopped by live.stop()", a timeout
        message = run_or_error.message
        return message if message.startswith("stopped") else f"stopped: {message}"
    return "finished"


def header(state, ended=None, trace=None):
    """One line: "server at v37 · 37 pushes · lr 0.05 · running" (paused; `ended`: outcome()).
    Lost workers are named as their lanes are in a classroom `trace` ("lost: ada, bo"), else
    "lost: worker 0, 2"."""
    status = ended or state.get("waiting") or ("paused" if state["paused"] else "running"
                                               if state["running"] else "ending")
    lost = state.get("lost") or []
    parts = [f"server at v{state['version']}", f"{state['pushes']} pushes", f"lr {state['lr']:g}"]
    if state.get("loss") is not None:
        parts.append(f"loss {state['loss']:.4g}")
    if lost:
        parts.append("lost: " + (", ".join(rt.lane_name(trace, k) for k in lost)
                                 if trace is not None and rt.is_classroom(trace)
                                 else f"worker {', '.join(str(k) for k in lost)}"))
    return " · ".join(parts + [status])


def staleness_counts(trace):
    """The staleness histogram of a trace being appended to (a snapshot of its pushes)."""
    return StalenessTally().update(trace)


class StalenessTally:
    """The staleness histogram of a growing trace, read a little at a time: each `update` reads
    only the events added since the last one. (The processes engine inserts a worker's own pulls
    among the last events: that only moves the last event seen to the right, so it is looked for
    by identity, as LiveRun.state does.)"""

    def __init__(self):
        self.seen, self.last, self.counts = 0, None, [0]

    def update(self, trace):
        start = max(self.seen - 1, 0)
        new = trace.events[start:]                       # one slice: the workers only append
        if self.last is not None:
            at = next(i for i, e in enumerate(new) if e is self.last)
            start, new = start + at + 1, new[at + 1:]
        if new:
            self.seen, self.last = start + len(new), new[-1]
        for e in new:
            if e.kind == "push":
                self.counts.extend([0] * (e.staleness + 1 - len(self.counts)))
                self.counts[e.staleness] += 1
        counts = list(self.counts)
        for s, c in trace.beyond.get("staleness", {}).items():     # past trace_limit
            counts.extend([0] * (int(s) + 1 - len(counts)))
            counts[int(s)] += c
        return np.array(counts)


def _curve(values, n, label, color, width, of, style=None):
    """The first `n` values of each version (`values` a list being appended to), thinned to about
    POINTS points: read with one strided slice, so a long run costs no more than a short one."""
    step = max(1, n // POINTS)
    xs = list(range(0, n, step))
    ys = values[0:n:step]
    if n and xs[-1] != n - 1:
        xs.append(n - 1)
        ys.append(values[n - 1])
    return rc.lines_svg([(label, xs, ys, color, style or rc.STYLES[0])], f"{of} per server version",
                        "server version", ylabel=of, log_y=of == "loss", width=width)


def live_svg(trace, state, window=40, width=720, counts=None, ended=None):
    """The live picture of `trace` (growing or not) as one SVG string: the header (header()), the
    Timeline of its newest `window` events, the loss and metrics per version, and the staleness
    histogram (`counts`, e.g. a StalenessTally's; by default read from the trace). `state` is a
    LiveRun's state; `ended`: how the run ended (outcome()), None while it runs."""
    said = header(state, ended, trace)
    top = svg(width, 22, [text(8, 15, said[:120], weight="600", size=12, cls="aps-live-header")],
              "asyncps-live-header", said)
    if trace.events:                                     # events are only ever added
        model = WindowModel(trace, window, state["version"])
        timeline = rt.timeline_svg(model, model.frames - 1, width)
    else:
        timeline = svg(width, 40, [text(width / 2, 24, "waiting for the first event",
                                        anchor="middle", color=MUTED)], "asyncps-timeline",
                       "timeline: waiting for the first event")
    n = len(trace.losses)                                # a metric is appended before its loss:
    metrics = dict(trace.metrics)                        # each has at least n values
    color = rc.POLICY_COLORS.get(trace.meta.get("policy"), rc.PALETTE[0])
    style = rc.POLICY_STYLES.get(trace.meta.get("policy"))
    gap = 8
    each = (width - gap * (len(metrics) + 1)) // (len(metrics) + 2)
    charts = [_curve(trace.losses, n, "loss", color, each, "loss", style)]
    charts += [_curve(values, n, name, color, each, name, style) for name, values in metrics.items()]
    counts = staleness_counts(trace) if counts is None else counts
    charts.append(rc.histogram_svg(counts, width=each))
    return stack_svg([[top], [timeline], charts], gap=gap, title=f"live run: {said}")
