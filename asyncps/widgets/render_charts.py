"""Small charts as SVG strings: loss curves on shared axes, a staleness histogram."""
import math

import numpy as np

from .svg import COLORS, line, polyline, rect, svg, text

POLICY_COLORS = {"sync": "#4C78A8", "async": "#E45756", "ssp": "#F58518"}
PALETTE = ("#4C78A8", "#E45756", "#F58518", "#54A24B", "#B279A2", "#72B7B2", "#9D755D", "#FF9DA6")


def lines_svg(series, title, xlabel, ylabel="loss", log_y=True, width=340, height=220):
    """series: [(label, xs, ys, color)]. Non-finite points (a diverged run) are cut off."""
    left, right, top, bottom = 48, 10, 24, 34
    title += f" · {ylabel}, log scale" if log_y else ""
    body = [rect(0, 0, width, height, "white", rx=0), text(left, 15, title, weight="600", size=12)]
    clean = []
    for label, xs, ys, color in series:
        xs, ys = np.asarray(xs, float), np.asarray(ys, float)
        ok = np.isfinite(xs) & np.isfinite(ys) & ((ys > 0) if log_y else True)
        if ok.any():
            clean.append((label, xs[ok], np.log10(ys[ok]) if log_y else ys[ok], color))
    if not clean:
        body.append(text(width / 2, height / 2, "nothing to plot", anchor="middle", color="#888"))
        return svg(width, height, body, "asyncps-chart")
    x_lo = min(c[1].min() for c in clean)
    x_hi = max(c[1].max() for c in clean)
    y_lo = min(c[2].min() for c in clean)
    y_hi = max(c[2].max() for c in clean)
    x_hi, y_hi = (x_hi if x_hi > x_lo else x_lo + 1), (y_hi if y_hi > y_lo else y_lo + 1)
    px = lambda v: left + (v - x_lo) / (x_hi - x_lo) * (width - left - right)          # noqa: E731
    py = lambda v: height - bottom - (v - y_lo) / (y_hi - y_lo) * (height - top - bottom)  # noqa: E731
    for tick in np.linspace(y_lo, y_hi, 4):
        body.append(line(left, py(tick), width - right, py(tick), COLORS["grid"]))
        label = f"{10 ** tick:.2g}" if log_y else f"{tick:.3g}"
        body.append(text(left - 4, py(tick) + 3, label, anchor="end", size=9, color="#666"))
    for tick in np.linspace(x_lo, x_hi, 4):
        body.append(text(px(tick), height - bottom + 12, f"{tick:.3g}", anchor="middle", size=9,
                         color="#666"))
    body.append(text((left + width - right) / 2, height - 6, xlabel, anchor="middle", size=10))
    for k, (label, xs, ys, color) in enumerate(clean):
        step = max(1, len(xs) // 400)                       # at most ~400 points per curve
        body.append(polyline([(px(a), py(b)) for a, b in zip(xs[::step], ys[::step])], color, 1.6))
        body.append(rect(width - right - 70, top + 4 + 14 * k, 10, 3, color))
        body.append(text(width - right - 56, top + 9 + 14 * k, label, size=10))
    return svg(width, height, body, "asyncps-chart")


def histogram_svg(counts, title="staleness of each push", width=340, height=220):
    """counts[s] = number of pushes stale by s versions."""
    left, right, top, bottom = 40, 10, 24, 34
    counts = np.asarray(counts, dtype=float)
    body = [rect(0, 0, width, height, "white", rx=0), text(left, 15, title, weight="600", size=12)]
    total = counts.sum()
    if total == 0:
        body.append(text(width / 2, height / 2, "no pushes", anchor="middle", color="#888"))
        return svg(width, height, body, "asyncps-chart")
    n, peak = len(counts), counts.max()
    bar = (width - left - right) / n
    for s, c in enumerate(counts):
        h = c / peak * (height - top - bottom)
        color = COLORS["fresh"] if s == 0 else COLORS["stale"]
        body.append(rect(left + s * bar + 1, height - bottom - h, max(bar - 2, 1), h, color, rx=1))
        if n <= 24 or s % math.ceil(n / 12) == 0:
            body.append(text(left + (s + 0.5) * bar, height - bottom + 12, str(s), anchor="middle",
                             size=9, color="#666"))
    mean = float(np.average(np.arange(n), weights=counts))
    body.append(text(width - right, 15, f"mean {mean:.2f}", anchor="end", size=10, color="#444"))
    body.append(text((left + width - right) / 2, height - 6, "staleness (versions)", anchor="middle",
                     size=10))
    body.append(text(left - 4, top + 8, f"{int(peak)}", anchor="end", size=9, color="#666"))
    return svg(width, height, body, "asyncps-chart")


def loss_curves(runs, by="version", of="loss", width=340, height=220):
    """The loss (or a metric, `of="accuracy"`) per version, or per unit of time, of several runs
    {label: Run} on the same axes. Versions that were not scored (loss_every) are skipped."""
    series = []
    for label, run in runs.items():
        xs, values = run.trace.curve(of, by)
        color = POLICY_COLORS.get(label, PALETTE[len(series) % len(PALETTE)])
        series.append((label, xs, values, color))
    unit = "time" if by != "version" else "server version"
    return lines_svg(series, f"{of} per {unit}", unit, ylabel=of, log_y=of == "loss", width=width,
                     height=height)
