"""Small charts as SVG strings: loss curves on shared axes, a staleness histogram.

Each curve has its own colour (Okabe–Ito), dash pattern and marker shape, so two curves that lie
on each other — async and ssp often do — both stay visible, in print and to a colour-blind eye.
Ticks are round numbers (1, 2, 2.5 or 5 × 10^k apart; decades on a log scale).
"""
import math

import numpy as np

from .svg import (BG, COLORS, GRID, MUTED, OKABE_ITO, TEXT, line, marker, nice_ticks, polyline,
                  rect, svg, text, tick_label)

POLICY_COLORS = {"sync": OKABE_ITO[0], "async": OKABE_ITO[1], "ssp": OKABE_ITO[2]}
PALETTE = OKABE_ITO
# (dash pattern, marker): the k-th curve of a chart gets STYLES[k], a policy always its own
DASHES, SHAPES = (None, "7,3", "1.5,2.5", "9,3,2,3"), ("circle", "triangle", "square", "diamond")
STYLES = tuple((DASHES[k % 4], SHAPES[(k + k // 4) % 4]) for k in range(8))   # 8 distinct pairs
POLICY_STYLES = {"sync": STYLES[0], "async": STYLES[1], "ssp": STYLES[2]}
MARKS = 5                                                 # markers per curve


def lines_svg(series, title, xlabel, ylabel="loss", log_y=True, width=340, height=220):
    """series: [(label, xs, ys, color)] or [(label, xs, ys, color, (dash, marker))]; a curve
    without a style gets the next of STYLES. Non-finite points (a diverged run) are cut off."""
    left, right, top, bottom = 48, 10, 24, 34
    heading = title + (f" · {ylabel}, log scale" if log_y else "")
    body = [rect(0, 0, width, height, BG, rx=0), text(left, 15, heading, weight="600", size=12)]
    clean, said = [], []
    for k, (label, xs, ys, color, *style) in enumerate(series):
        xs, ys = np.asarray(xs, float), np.asarray(ys, float)
        ok = np.isfinite(xs) & np.isfinite(ys) & ((ys > 0) if log_y else True)
        if ok.any():
            style = style[0] if style else STYLES[k % len(STYLES)]
            clean.append((label, xs[ok], np.log10(ys[ok]) if log_y else ys[ok], color, style))
            said.append(f"{label}: {ylabel} {ys[ok][0]:.3g} at {xlabel} {tick_label(xs[ok][0])}, "
                        f"{ys[ok][-1]:.3g} at {tick_label(xs[ok][-1])}")
    description = f"{heading}. " + ("; ".join(said) if said else "nothing to plot")
    if not clean:
        body.append(text(width / 2, height / 2, "nothing to plot", anchor="middle", color=MUTED))
        return svg(width, height, body, "asyncps-chart", description)
    x_lo = min(c[1].min() for c in clean)
    x_hi = max(c[1].max() for c in clean)
    y_lo = min(c[2].min() for c in clean)
    y_hi = max(c[2].max() for c in clean)
    x_hi, y_hi = (x_hi if x_hi > x_lo else x_lo + 1), (y_hi if y_hi > y_lo else y_lo + 1)
    px = lambda v: left + (v - x_lo) / (x_hi - x_lo) * (width - left - right)          # noqa: E731
    py = lambda v: height - bottom - (v - y_lo) / (y_hi - y_lo) * (height - top - bottom)  # noqa: E731
    for value, at in y_ticks(y_lo, y_hi, log_y):
        body.append(line(left, py(at), width - right, py(at), GRID))
        body.append(text(left - 4, py(at) + 3, tick_label(value), anchor="end", size=9, color=MUTED))
    integer = all(np.all(c[1] == np.round(c[1])) for c in clean)
    for tick in nice_ticks(x_lo, x_hi, max(2, (width - left - right) // 70), integer=integer):
        body.append(line(px(tick), height - bottom, px(tick), height - bottom + 3, MUTED))
        body.append(text(px(tick), height - bottom + 13, tick_label(tick), anchor="middle", size=9,
                         color=MUTED))
    body.append(text((left + width - right) / 2, height - 6, xlabel, anchor="middle", size=10))
    for k, (label, xs, ys, color, (dash, shape)) in enumerate(clean):
        step = max(1, len(xs) // 400)                       # at most ~400 points per curve
        body.append(polyline([(px(a), py(b)) for a, b in zip(xs[::step], ys[::step])], color, 1.6,
                             dash=dash))
        for j in range(MARKS):                              # staggered: curve k's marks fall
            i = round((j + (k + 1) / (len(clean) + 1)) / MARKS * (len(xs) - 1))   # between the others'
            body.append(marker(shape, px(xs[i]), py(ys[i]), color))
    body += legend([(label, color, style) for label, _, _, color, style in clean], width - right,
                   top + 4)
    return svg(width, height, body, "asyncps-chart", description)


def legend(entries, right, y):
    """One row per curve, ending at x=`right`: a sample of its line (dash and marker) and its
    label, on the background colour."""
    wide = 30 + 6 * max(len(str(label)) for label, _, _ in entries)
    x = right - wide
    body = [rect(x - 4, y - 2, wide + 2, 14 * len(entries) + 2, BG, rx=2)]
    for k, (label, color, (dash, shape)) in enumerate(entries):
        middle = y + 5 + 14 * k
        body.append(polyline([(x, middle), (x + 20, middle)], color, 1.6, dash=dash))
        body.append(marker(shape, x + 10, middle, color))
        body.append(text(x + 26, middle + 3.5, label, size=10))
    return body


def y_ticks(lo, hi, log_y):
    """(value, where) pairs: on a log axis (lo, hi are log10 values) the decades inside, or the
    1-2-5 values where fewer than two decades fit, or round values; else round values."""
    if not log_y:
        return [(t, t) for t in nice_ticks(lo, hi, 4)]
    decades = list(range(math.ceil(lo - 1e-9), math.floor(hi + 1e-9) + 1))
    if len(decades) >= 2:
        every = math.ceil(len(decades) / 5)
        return [(10.0 ** d, float(d)) for d in decades[::every]]
    steps = [m * 10.0 ** d for d in range(math.floor(lo) - 1, math.ceil(hi) + 1) for m in (1, 2, 5)]
    inside = [v for v in steps if lo - 1e-9 <= math.log10(v) <= hi + 1e-9]
    if len(inside) < 2:
        inside = [v for v in nice_ticks(10.0 ** lo, 10.0 ** hi, 3) if v > 0]
    return [(v, math.log10(v)) for v in inside]


def histogram_svg(counts, title="staleness of each push", width=340, height=220):
    """counts[s] = number of pushes stale by s versions."""
    left, right, top, bottom = 40, 10, 24, 34
    counts = np.asarray(counts, dtype=float)
    body = [rect(0, 0, width, height, BG, rx=0), text(left, 15, title, weight="600", size=12)]
    total = counts.sum()
    if total == 0:
        body.append(text(width / 2, height / 2, "no pushes", anchor="middle", color=MUTED))
        return svg(width, height, body, "asyncps-chart", f"{title}: no pushes")
    n, peak = len(counts), counts.max()
    bar = (width - left - right) / n
    for s, c in enumerate(counts):
        h = c / peak * (height - top - bottom)
        color = COLORS["fresh"] if s == 0 else COLORS["stale"]
        body.append(rect(left + s * bar + 1, height - bottom - h, max(bar - 2, 1), h, color, rx=1))
        if n <= 24 or s % math.ceil(n / 12) == 0:
            body.append(text(left + (s + 0.5) * bar, height - bottom + 12, str(s), anchor="middle",
                             size=9, color=MUTED))
    mean = float(np.average(np.arange(n), weights=counts))
    body.append(text(width - right, 15, f"mean {mean:.2f}", anchor="end", size=10, color=TEXT))
    body.append(text((left + width - right) / 2, height - 6, "staleness (versions)", anchor="middle",
                     size=10))
    body.append(text(left - 4, top + 8, f"{int(peak)}", anchor="end", size=9, color=MUTED))
    shown = [f"{int(c)} stale by {s}" for s, c in enumerate(counts) if c][:8]
    more = "" if len(shown) == np.count_nonzero(counts) else ", …"
    description = (f"{title}: {int(total)} pushes, mean staleness {mean:.2f}; "
                   f"{', '.join(shown)}{more}")
    return svg(width, height, body, "asyncps-chart", description)


def loss_curves(runs, by="version", of="loss", width=340, height=220):
    """The loss (or a metric, `of="accuracy"`) per version, or per unit of time, of several runs
    {label: Run} on the same axes. Versions that were not scored (loss_every) are skipped. A
    policy's curve has the same colour, dash and marker in every chart."""
    series, used = [], set()
    for label, run in runs.items():
        xs, values = run.trace.curve(of, by)
        color = POLICY_COLORS.get(label, PALETTE[len(series) % len(PALETTE)])
        style = POLICY_STYLES.get(label)
        if style is None or style in used:
            style = next((s for s in STYLES if s not in used), STYLES[len(series) % len(STYLES)])
        used.add(style)
        series.append((label, xs, values, color, style))
    unit = "time" if by != "version" else "server version"
    return lines_svg(series, f"{of} per {unit}", unit, ylabel=of, log_y=of == "loss", width=width,
                     height=height)
