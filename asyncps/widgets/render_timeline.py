"""The timeline of a run, frame by frame, as SVG — a pure function of a Trace (no kernel needed).

One lane per worker plus the server's lane (in a classroom run, one per seat a student took:
`lanes`). Frame i shows the run up to its
i-th event: compute bars labelled with the version they read, pull and push
arrows, the server stepping v0 → v1 → …, waits at the barrier, the SSP gate or
until a round closes (ksync, kasync) greyed out, stale pushes in red, and a
dropped gradient (ksync: it came after its round closed) as a grey ✕ on its
worker's lane, where its compute ended, under a stub of a push that goes nowhere. `caption(model, i)` narrates event i in
plain words; it is also the picture's title (what a screen reader says). Time is
virtual (simulate) or seconds (real engines): the axis shows a window of about a
dozen compute times around the current event, so both look alike, with round
ticks (1, 2, 2.5 or 5 × 10^k apart) that are never negative.
"""
from html import escape

import numpy as np

from .picture import img_html
from .svg import BG, COLORS, INKS, MUTED, ON_COMPUTE, TEXT, line, nice_ticks, rect, svg, text, tick_label

LANE, GAP, LEFT, TOP, RIGHT, AXIS = 26, 8, 78, 22, 14, 26
LABEL_CHAR = 6.5      # px per character of a 10-px bold label, a little more than most fonts take
DROP = MUTED          # a dropped gradient's stub, ✕ and label: the theme's grey, on either theme


class TimelineModel:
    """Everything about a trace that every frame needs, computed once.

    `version_time[v - first_version]` is when version v appeared. A whole trace starts at v0; a
    window of a long one (render_live.WindowModel) starts at the version its first event saw, so
    drawing it costs what its events cost, whatever the version number."""

    first_version = 0

    def __init__(self, trace):
        if not trace.events:
            raise ValueError("this trace has no events to show (steps=0?): nothing happened yet")
        self.trace, self.events = trace, trace.events
        self.workers = trace.workers
        self.lanes = lanes(trace)                            # the workers drawn, top to bottom
        self.row = {w: k + 1 for k, w in enumerate(self.lanes)}   # worker -> its lane (0: server)
        self.policy = trace.meta.get("policy", "async")      # its name, for the title
        self.averages = trace.policy.averages                # sync: pushes gather into rounds
        self.round_size = trace.policy.round_size(self.workers)   # k (ksync, kasync), else every worker
        times = [getattr(e, "end", getattr(e, "time", 0.0)) for e in self.events]
        self.now = np.maximum.accumulate(np.array(times, dtype=float))
        # when each version appeared: v+1 is made by the last push applied to v
        pushes = [(i, e) for i, e in enumerate(self.events) if e.kind == "push"]
        made = {}
        for i, p in pushes:
            made[p.applied_to + 1] = (i, p.time)
        self.version_index = np.array([-1] + [made[v][0] for v in sorted(made)])
        self.version_time = np.array([0.0] + [made[v][1] for v in sorted(made)])
        # under sync, ksync, kasync: which push of its round each push is
        self.round_position, counts = {}, {}
        for i, p in pushes:
            counts[p.applied_to] = counts.get(p.applied_to, 0) + 1
            self.round_position[i] = counts[p.applied_to]
        computes = [e for e in self.events if e.kind == "compute"]
        durations = [c.end - c.start for c in computes if c.end > c.start]
        self.typical = float(np.median(durations)) if durations else max(self.now[-1], 1.0) / 10
        self.duration = float(self.now[-1])
        self.intervals = [(i, e) for i, e in enumerate(self.events) if e.kind in ("compute", "wait")]
        self.interval_start = np.array([e.start for _, e in self.intervals])
        self.points = [(i, e) for i, e in enumerate(self.events)
                       if e.kind in ("pull", "push", "drop", "lost")]
        self.point_time = np.array([e.time for _, e in self.points])

    @property
    def frames(self):
        return len(self.events)

    def version_at(self, frame):
        """The server's version once event `frame` has happened."""
        return int(np.searchsorted(self.version_index, frame, side="right")) - 1

    def window(self, frame):
        span = 12 * self.typical
        if self.duration <= span:
            total = max(self.duration, 1e-9)
            return -0.02 * total, total * 1.04
        right = max(self.now[frame] + 0.12 * span, span)
        return right - span, right

    def first_stale_push(self):
        for i, e in enumerate(self.events):
            if e.kind == "push" and e.staleness > 0:
                return i
        return None

    def first_late_gradient(self):
        """The first gradient that came late: a stale push, or one dropped (ksync): the frame a
        still picture of the run shows."""
        for i, e in enumerate(self.events):
            if (e.kind == "push" and e.staleness > 0) or e.kind == "drop":
                return i
        return None


CONTROL_WORDS = {"slow": "{worker} is slowed down by {value:g} s per gradient",
                 "lr": "the learning rate is set to {value:g}", "pause": "every worker pauses",
                 "resume": "the workers go on", "kill": "{worker} is killed",
                 "stop": "the run is stopped"}


def control_caption(e, who=None):
    """A live change (a Control event) in plain words; `who`: its worker's name (its lane's)."""
    who = f"worker {e.worker}" if who is None else who
    return f"at t={e.time:.3g}: " + CONTROL_WORDS[e.what].format(worker=who, value=e.value or 0.0)


def caption(model, frame):
    """Event `frame` in plain words, its worker named as its lane is (`student_name`)."""
    e, n = model.events[frame], model.workers
    at = model.version_at(frame)
    who = student_name(model.trace, e.worker) if e.worker is not None else None
    if e.kind == "pull":
        return f"{who} pulls v{e.version}: a copy of the parameters, version {e.version}"
    if e.kind == "compute":
        return f"{who} computed a gradient on v{e.computed_on}"
    if e.kind == "wait":
        span = f"from t={e.start:.3g} to t={e.end:.3g}"
        if e.reason == "barrier":
            return (f"{who} waited at the barrier {span}: every worker must push "
                    f"before the server makes v{at}")
        if e.reason == "round":
            return f"{who} waited until its round closed, {span}: " + round_rule(model)
        s = model.trace.meta.get("max_clocks_ahead")
        return (f"{who} waited at the SSP gate {span}: it was more than s={s} clocks "
                f"ahead of the slowest worker")
    if e.kind == "lost":
        return f"{who} was lost ({e.reason}); the run goes on without it"
    if e.kind == "drop":
        return (f"{who}'s gradient, computed on v{e.computed_on}, came after its round "
                f"closed (the server is at v{e.version}): dropped, never applied")
    if e.kind == "control":
        return control_caption(e, who)
    if model.averages:
        k, n = model.round_position[frame], model.round_size
        if k < n:
            return (f"{who} pushed its gradient computed on v{e.computed_on} "
                    f"(stale by {e.staleness}); the server waits for {n - k} more before v{e.applied_to} moves")
        every = model.trace.meta.get("push_every") or 1
        what = (f"{n} gradients of the round (fresh or stale)" if model.policy == "kasync" else
                f"{n} gradients computed on v{e.computed_on}" if every == 1 else
                f"{n} pushes (each the sum of {every} local gradients, starting from v{e.computed_on})")
        return (f"{who}'s push completes the round: the {what} are averaged and applied "
                f"to v{e.applied_to} → v{e.applied_to + 1} (stale by {e.staleness})")
    return (f"{who} computed on v{e.computed_on}; the server is at v{e.applied_to}; "
            f"applied to v{e.applied_to} → v{e.applied_to + 1} (stale by {e.staleness})")


def round_rule(model):
    """When a round closes (ksync, kasync), in words."""
    k = model.round_size
    if model.policy == "ksync":
        return (f"the server closes a round on the first {k} gradients computed on its version; "
                f"one that comes later is dropped")
    if model.policy == "kasync":
        return f"the server closes a round on the first {k} gradients, fresh or stale"
    return f"the server closes a round on {k} pushes"


def is_classroom(trace):
    """Whether `trace` is a classroom run's (asyncps.classroom): its lanes are the seats taken."""
    return isinstance(trace.meta, dict) and trace.meta.get("engine") == "classroom"


def lanes(trace):
    """The workers that get a lane, top to bottom: every worker, range(trace.workers); in a
    classroom run only the seats students took (trace.meta["students"]), in seat order, none
    before anyone joined. (A live room's dict grows while it is read: list() copies it at once.)"""
    if not is_classroom(trace):
        return list(range(trace.workers))
    return sorted(int(k) for k in list(trace.meta.get("students") or {}) if str(k).isdigit())


def student_name(trace, worker):
    """A worker's name: its student's in a classroom run, else "worker k" (captions say it)."""
    name = trace.meta.get("students", {}).get(str(worker)) if isinstance(trace.meta, dict) else None
    return name if isinstance(name, str) and name else f"worker {worker}"


def lane_name(trace, worker):
    """A worker's lane label: its `student_name`, cut to fit."""
    name = student_name(trace, worker)
    return name if len(name) <= 10 else name[:9] + "…"


def lane_y(lane):
    """Top of a lane: 0 is the server, 1.. are the workers drawn (a model's `row[worker]`)."""
    return TOP + lane * (LANE + GAP)


def timeline_svg(model, frame, width=720):
    """Frame `frame` of the timeline as an SVG string, titled with its status and caption."""
    if not 0 <= frame < model.frames:
        raise ValueError(f"frame={frame} is not allowed: frame must be in 0..{model.frames - 1}")
    t_now = float(model.now[frame])
    t0, t1 = model.window(frame)
    plot = width - LEFT - RIGHT
    x = lambda t: LEFT + (min(max(t, t0), t1) - t0) / (t1 - t0) * plot       # noqa: E731
    rows = len(model.lanes)
    height = lane_y(rows + 1) + AXIS
    body = [rect(0, 0, width, height, BG, rx=0)]
    at = model.version_at(frame)
    status = f"{model.policy} · {rows} workers · server at v{at}"
    body.append(text(LEFT, 14, status, weight="600", size=12, cls="aps-status"))
    # lanes
    body.append(text(LEFT - 8, lane_y(0) + 17, "server", anchor="end", weight="600"))
    for w in model.lanes:
        y = lane_y(model.row[w])
        body.append(rect(LEFT, y, plot, LANE, COLORS["lane"], rx=0))
        body.append(text(LEFT - 8, y + 17, lane_name(model.trace, w), anchor="end"))
    # the server's versions
    first = model.first_version
    for v in range(first, at + 1):
        start = model.version_time[v - first]
        end = model.version_time[v + 1 - first] if v + 1 <= at else t_now
        if end < t0 or start > t1:
            continue
        body.append(rect(x(start), lane_y(0), x(end) - x(start), LANE, COLORS["server"][v % 2], rx=0))
        if x(end) - x(start) > 18:
            body.append(text((x(start) + x(end)) / 2, lane_y(0) + 17, f"v{v}", anchor="middle",
                             weight="600"))
    # compute bars and waits: those begun by now, clipped to now if still running
    if model.intervals:
        begun = np.nonzero(model.interval_start <= t_now)[0]
        for j in begun:
            i, e = model.intervals[j]
            end = min(e.end, t_now) if i > frame else e.end
            if end < t0 or e.worker not in model.row:     # a seat no student took: no lane
                continue
            y = lane_y(model.row[e.worker]) + 3
            x0, x1 = x(e.start), x(end)
            current = i == frame
            if e.kind == "compute":                  # still running: a pale bar, outlined
                done = i <= frame
                body.append(rect(x0, y, x1 - x0, LANE - 6,
                                 COLORS["compute"] if done else COLORS["computing"],
                                 stroke=TEXT if current else "none" if done else COLORS["compute"],
                                 width=2 if current else 0 if done else 1))
                label = f"v{e.computed_on}"     # only where it fits: white on the lane is unreadable
                if x1 - x0 > max(20, 1.1 * LABEL_CHAR * len(label) + 6):       # 11 px, not 10
                    body.append(text((x0 + x1) / 2, y + 14, label, anchor="middle",
                                     color=ON_COMPUTE if done else TEXT, weight="600"))
            else:
                body.append(rect(x0, y, x1 - x0, LANE - 6, COLORS["wait"],
                                 stroke=TEXT if current else "none", width=2 if current else 0))
                if x1 - x0 > 44:
                    body.append(text((x0 + x1) / 2, y + 14, "waiting", anchor="middle"))
    # pulls, pushes, drops and losses: those that have happened
    if model.points:
        shown = np.nonzero((model.point_time >= t0) & (model.point_time <= t1))[0]
        taken = {}                               # lane -> labels' spans: a label never covers another
        labels = []                              # drawn last: a later arrow never crosses a label
        for j in shown:
            i, e = model.points[j]
            if i > frame or e.worker not in model.row:
                continue
            xe, yw = x(e.time), lane_y(model.row[e.worker])
            current = i == frame
            if e.kind == "pull":
                body.append(line(xe, lane_y(0) + LANE, xe + 5, yw, COLORS["pull"], 2.5 if current else 1,
                                 head="pull", opacity=1.0 if current else 0.6))
            elif e.kind == "push":
                kind = "stale" if e.staleness > 0 else "fresh"
                body.append(line(xe - 5, yw, xe, lane_y(0) + LANE, COLORS[kind], 3 if current else 1.4,
                                 head=kind))
                if current or (e.staleness > 0 and len(shown) < 60):
                    label = f"stale {e.staleness}" if e.staleness else "fresh"
                    labels += _point_label(xe, yw, label, INKS[kind], current, taken.setdefault(e.worker, []),
                                           width)
            elif e.kind == "drop":                   # a push that never leaves its lane
                xs, ys = xe - 3, yw + LANE / 2                     # a ✕ where its compute ended
                body.append(line(xe - 5, yw, xe - 3, yw - GAP / 2, DROP, 3 if current else 1.4,
                                 dash="2,2"))                      # a stub that goes nowhere
                r = 5.5 if current else 4.5
                for color, stroke in ((BG, 2 * r / 3 + 2), (DROP, 2 * r / 3)):  # a ✕, haloed
                    body.append(line(xs - r, ys - r, xs + r, ys + r, color, stroke))
                    body.append(line(xs - r, ys + r, xs + r, ys - r, color, stroke))
                if current or len(shown) < 60:
                    labels += _point_label(xe, yw, "dropped", DROP, current, taken.setdefault(e.worker, []),
                                           width)
            else:
                body.append(rect(xe - 8, yw + 5, 16, 16, BG, stroke=INKS["lost"], width=1))  # a badge
                body.append(text(xe, yw + 18, "✕", color=INKS["lost"], size=14, anchor="middle"))
        body += labels
    # now, and a time axis
    body.append(line(x(t_now), TOP - 4, x(t_now), lane_y(rows + 1), COLORS["now"], 1,
                     dash="3,3"))
    base = lane_y(rows + 1) + 4
    unit = "time" if model.trace.meta.get("clock") != "wall" else "time (s)"
    body.append(text(LEFT - 8, base + 12, unit, anchor="end", color=MUTED, size=10))
    for tick in time_ticks(t0, t1, plot):
        body.append(line(x(tick), base - 4, x(tick), base, MUTED))
        body.append(text(x(tick), base + 12, tick_label(tick), anchor="middle", color=MUTED, size=10))
    title = f"timeline, {status}. frame {frame} of {model.frames - 1}: {caption(model, frame)}"
    return svg(width, height, body, "asyncps-timeline", title)


def _point_label(xe, yw, label, color, current, spans, width):
    """A push's or a drop's label just above its worker's lane, right of it (left of it at the
    right edge), on a patch of the page's colour (many pushes close together draw a thicket of
    arrows there): [] where it would cover a label already there (`spans`), unless it is current."""
    span = LABEL_CHAR * len(label)
    inside = xe + 3 + span <= width - 2                 # else left of the push
    start = xe + 3 if inside else xe - 3 - span
    if not current and any(a - 2 < start + span and start < b + 2 for a, b in spans):
        return []                                       # it would cover a label already there
    spans.append((start, start + span))
    return [rect(start - 1, yw - 12, span + 2, 12, BG, rx=1),
            text(xe + 3 if inside else xe - 3, yw - 3, label, anchor="start" if inside else "end",
                 color=color, size=10, weight="600" if current else None)]


def time_ticks(t0, t1, plot=600):
    """Round times inside the window [t0, t1], about one per 90 px of `plot`, never before 0."""
    return nice_ticks(max(t0, 0.0), max(t1, 0.0), max(2, plot // 90))


def static_html(model, frame=None, width=720):
    """One informative frame (the first stale push or drop, else the middle) with its caption: the
    fallback that GitHub, nbviewer and exported HTML show where widgets don't run."""
    if frame is None:
        stale = model.first_late_gradient()
        frame = stale if stale is not None else model.frames // 2
    return (f'<div class="asyncps-static">{img_html(timeline_svg(model, frame, width))}'
            f'<p><b>frame {frame}</b>: {escape(caption(model, frame))}</p></div>')
