"""A 2-D problem in parameter space, frame by frame: loss contours, the server's path, and the
current push drawn twice — where its gradient was computed (v0) and where it lands (v1).

The three arrows differ in line style as well as colour: the step taken (solid, red), the step as
computed at the old version (dashed, orange), a fresh gradient at the new one (dotted, green)."""
import math
from html import escape

import numpy as np

from .svg import (BG, COLORS, INKS, MUTED, TEXT, circle, ink, line, path, polyline, rect, svg, text,
                  tint)

SIZE, PAD = 360, 28
CONTOUR = tint(COLORS["compute"], 28)                  # faint on either theme
COMPUTED = ink(COLORS["computed"], 85)                 # orange, a little darker on white


class ParameterModel:
    """Contours, the iterate path and each frame's push, computed once."""

    def __init__(self, run_or_trace, problem, timeline):
        if problem.dim != 2:
            raise ValueError(f"problem has {problem.dim} parameters: the parameter view draws 2-D "
                             f"problems only, e.g. aps.problems.Quadratic(curvature=[1, 4], x0=[1, 1])")
        trace = getattr(run_or_trace, "trace", run_or_trace)
        if len(trace.params) != len(trace.losses):
            raise ValueError("this run kept no parameters per version (trace.params is empty); "
                             "runs of problems with up to 16 parameters keep them")
        self.problem, self.timeline = problem, timeline
        self.path = np.array(trace.params)
        lo, hi = self.path.min(axis=0), self.path.max(axis=0)
        centre, half = (lo + hi) / 2, max((hi - lo).max() / 2, 1e-3) * 1.25
        self.lo, self.hi = centre - half, centre + half
        self.contours = self._contours()
        self.push_at = np.full(timeline.frames, -1)           # latest push at or before each frame
        last = -1
        for i, e in enumerate(timeline.events):
            last = i if e.kind == "push" else last
            self.push_at[i] = last

    def px(self, point):
        scale = (SIZE - 2 * PAD) / (self.hi - self.lo)
        return PAD + (point[0] - self.lo[0]) * scale[0], SIZE - PAD - (point[1] - self.lo[1]) * scale[1]

    def _contours(self):
        import contourpy

        xs = np.linspace(self.lo[0], self.hi[0], 60)
        ys = np.linspace(self.lo[1], self.hi[1], 60)
        grid = np.array([[self.problem.loss(np.array([x, y])) for x in xs] for y in ys])
        lo, hi = float(grid.min()), float(grid.max())
        levels = lo + (hi - lo) * np.geomspace(1e-3, 1.0, 9)
        gen = contourpy.contour_generator(xs, ys, grid)
        paths = []
        for level in levels:
            for seg in gen.lines(level):
                pts = [self.px(p) for p in seg]
                paths.append("M" + " L".join(f"{a:.1f},{b:.1f}" for a, b in pts))
        return paths

    def arrows(self, frame):
        """(computed_at, applied_at, step, fresh) for the push shown at `frame`, or None."""
        i = self.push_at[frame]
        if i < 0:
            return None
        p = self.timeline.events[i]
        if p.applied_to + 1 >= len(self.path):
            return None
        if self.timeline.averages and self.timeline.round_position[i] < self.timeline.round_size:
            return None                                        # the round is not averaged yet
        computed_at, applied_at = self.path[p.computed_on], self.path[p.applied_to]
        step = self.path[p.applied_to + 1] - applied_at
        fresh = -np.asarray(self.problem.gradient(applied_at), dtype=float)
        norm = np.linalg.norm(fresh)
        fresh = fresh / norm * np.linalg.norm(step) if norm > 0 else fresh
        return p, computed_at, applied_at, step, fresh


def angle(a, b):
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 0.0
    return math.degrees(math.acos(float(np.clip(np.dot(a, b) / (na * nb), -1.0, 1.0))))


def param_caption(model, frame):
    shown = model.arrows(frame)
    at = model.timeline.version_at(frame)
    if shown is None:
        return f"the server is at v{at}"
    p, _, _, step, fresh = shown
    if p.staleness == 0:
        return (f"v{p.applied_to} → v{p.applied_to + 1}: the gradient was computed at the point it is "
                f"applied to (stale by 0)")
    return (f"worker {p.worker}'s gradient was computed at v{p.computed_on} but moves v{p.applied_to}: "
            f"its step points {angle(step, fresh):.0f}° away from a fresh gradient at v{p.applied_to}")


def params_svg(model, frame):
    at = model.timeline.version_at(frame)
    body = [rect(0, 0, SIZE, SIZE, BG, rx=0)]
    body += [path(d, CONTOUR, 1.0) for d in model.contours]
    body.append(polyline([model.px(p) for p in model.path[: at + 1]], TEXT, 1.4))
    cx, cy = model.px(model.path[at])
    body.append(circle(cx, cy, 4, fill=TEXT))
    shown = model.arrows(frame)
    if shown is not None:
        p, computed_at, applied_at, step, fresh = shown
        kind = "stale" if p.staleness else "fresh"

        def arrow(origin, vector, color, head, dash=None):
            x0, y0 = model.px(origin)
            x1, y1 = model.px(origin + vector)
            return line(x0, y0, x1, y1, color, 2.2, dash=dash, head=head)

        if p.staleness:
            x0, y0 = model.px(computed_at)
            body.append(circle(x0, y0, 3.5, stroke=COMPUTED, width=1.5))
            body.append(arrow(computed_at, step, COMPUTED, "stale", dash="5,3"))
            body.append(text(x0 + 6, y0 - 6, f"computed on v{p.computed_on}", color=INKS["computed"],
                             size=10))
            body.append(arrow(applied_at, fresh, COLORS["fresh"], "fresh", dash="1.5,2.5"))
        body.append(arrow(applied_at, step, COLORS[kind], kind))
        body.append(text(cx + 6, cy + 14, f"applied to v{p.applied_to}", color=INKS[kind], size=10))
    body.append(text(PAD, 16, f"parameter space · v{at}", weight="600", size=12))
    if shown is not None and not shown[0].staleness:
        keys = ["solid green: the step taken, from a fresh gradient"]
    else:
        keys = ["solid red: the step taken · dotted green: a fresh gradient"]
        keys += ["dashed orange: the step as computed"] if shown is not None else []
    for k, key in enumerate(keys):
        body.append(text(SIZE - PAD, SIZE - 8 - 11 * k, key, anchor="end", size=9, color=MUTED))
    return svg(SIZE, SIZE, body, "asyncps-params",
               f"parameter space at v{at}: {param_caption(model, frame)}")


def static_params_html(model, frame):
    return (f'<div class="asyncps-static">{params_svg(model, frame)}'
            f'<p>{escape(param_caption(model, frame))}</p></div>')
