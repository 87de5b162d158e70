"""Figures with matplotlib: the loss, the staleness histogram and the timeline of a run, and a
race (aps.race) with its lr search.

    fig, (a, b) = plt.subplots(1, 2)
    aps.plot.loss({"sync": sync, "async": asynchronous}, ax=a)
    aps.plot.staleness(asynchronous, ax=b)
    fig.savefig("runs.pdf")

They draw what the SVG views of asyncps.widgets draw, for papers and slides. Each takes a Run
(or its Trace), draws into `ax` (a new figure when ax is None), labels its axes, returns the
Axes, and never calls plt.show().
"""
from numbers import Real

import numpy as np

from .core.run import as_trace

# The widgets' palette (Okabe–Ito, colour-blind safe) and line styles: a curve is told apart by
# its dash and marker too, not by its colour alone (widgets/render_charts.py draws the same).
POLICY_COLORS = {"sync": "#0072B2", "async": "#D55E00", "ssp": "#009E73"}
OTHER_COLORS = ("#CC79A7", "#E69F00", "#56B4E9")
STYLES = (("-", "o"), ((0, (7, 3)), "^"), ((0, (1.5, 2.5)), "s"), ((0, (9, 3, 2, 3)), "D"))
POLICY_STYLES = {"sync": STYLES[0], "async": STYLES[1], "ssp": STYLES[2]}
COLORS = {"compute": "#0072B2", "wait": "#BAB0AC", "fresh": "#009E73", "stale": "#D55E00",
          "lost": "#D55E00", "dropped": "#616161", "server": ("#EEF3FA", "#DCE6F2")}


def loss(run_or_runs, ax=None, label=None, by="version", of="loss"):
    """The loss (or a metric, of="accuracy") of each server version, per version or per unit of
    time (by="time"). `run_or_runs`: a Run, a list of Runs, or {label: Run} on the same axes.
    Versions that were not scored (loss_every) are skipped; the loss is drawn on a log scale."""
    if by not in ("version", "time"):
        raise ValueError(f"by={by!r} is not allowed: by must be 'version' or 'time'")
    ax = _axes(ax, (6, 3.5))
    runs = _labelled(run_or_runs, label)
    positive = True
    for k, (name, trace) in enumerate(runs.items()):
        xs, values = trace.curve(of, by)
        ok = np.isfinite(xs) & np.isfinite(values)
        positive &= bool((values[ok] > 0).all())
        (dash, mark), color = _style(name, k)
        every = max(1, int(ok.sum()) // 12)                 # staggered: overlapping curves show
        ax.plot(xs[ok], values[ok], label=name, color=color, linewidth=1.6, linestyle=dash,
                marker=mark, markevery=(k * every // 3 % every, every), markersize=4)
    if of == "loss" and positive:
        ax.set_yscale("log")
    ax.set_xlabel("server version" if by == "version" else _time_label(next(iter(runs.values()))))
    ax.set_ylabel(of)
    ax.set_title(f"{of} per {'server version' if by == 'version' else 'unit of time'}")
    if len(runs) > 1 or label is not None:
        ax.legend(frameon=False)
    return ax


def staleness(run, ax=None):
    """A histogram of the staleness of each push: bar s counts the pushes stale by s versions
    (s = applied_to - computed_on); bar 0, the fresh pushes, is green."""
    trace = as_trace(run, "run")
    ax = _axes(ax, (5, 3.5))
    counts = trace.staleness_histogram()
    ax.bar(np.arange(counts.size), counts, width=0.8,
           color=[COLORS["fresh"]] + [COLORS["stale"]] * (counts.size - 1))
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("staleness (versions)")
    ax.set_ylabel("pushes")
    mean = float(np.average(np.arange(counts.size), weights=counts)) if counts.sum() else 0.0
    ax.set_title(f"staleness of each push · mean {mean:.2f}" if counts.sum() else "no pushes")
    return ax


def timeline(trace_or_run, ax=None, until=None):
    """One row per worker (compute bars, waits in grey, pushes marked, stale ones in red with
    their staleness, dropped gradients (ksync) as a grey ×) under the server's row (v0, v1, … as
    they were made), up to time `until`. A classroom run has a row per seat taken, named by its
    student, as the Timeline widget draws it."""
    trace = as_trace(trace_or_run, "trace_or_run")
    if until is not None and (isinstance(until, bool) or not isinstance(until, Real)
                              or not until >= 0):
        raise ValueError(f"until={until!r} is not allowed: until must be None or a time >= 0")
    end = trace.duration if until is None else float(until)
    from .widgets.render_timeline import lane_name, lanes   # the widget's rows: one rule
    drawn = lanes(trace)
    n, row = len(drawn), {w: k + 1 for k, w in enumerate(drawn)}     # worker -> its row
    ax = _axes(ax, (10, 1.2 + 0.45 * (n + 1)))
    _server_row(ax, trace, end)
    bars = {(w, kind): [] for w in drawn for kind in ("compute", "wait")}
    marks = {"fresh": ([], []), "stale": ([], []), "lost": ([], []), "dropped": ([], [])}
    stale_labels, compute_labels = [], []
    for e in trace.events:
        if e.worker not in row:                          # a seat no student took (or none)
            continue
        if e.kind in ("compute", "wait") and e.start <= end:
            bars[e.worker, e.kind].append((e.start, min(e.end, end) - e.start))
            if e.kind == "compute":
                compute_labels.append((e.start, min(e.end, end), row[e.worker], e.computed_on))
        elif e.kind == "drop" and e.time <= end:          # where its push would be: a ×
            marks["dropped"][0].append(e.time)
            marks["dropped"][1].append(row[e.worker])
        elif e.kind in ("push", "lost") and e.time <= end:
            kind = "lost" if e.kind == "lost" else "stale" if e.staleness > 0 else "fresh"
            marks[kind][0].append(e.time)
            marks[kind][1].append(row[e.worker])
            if kind == "stale":
                stale_labels.append((e.time, row[e.worker], e.staleness))
    for (w, kind), spans in bars.items():
        ax.broken_barh(spans, (row[w] - 0.35, 0.7), facecolor=COLORS[kind],
                       alpha=0.7 if kind == "wait" else 1.0, edgecolor="white", linewidth=0.8)
    if len(compute_labels) <= 120:                     # each bar says the version it computed on
        for start, stop, y, v in compute_labels:
            if stop - start > 0.03 * max(end, 1e-9):
                ax.text((start + stop) / 2, y, f"v{v}", ha="center", va="center", fontsize=7,
                        color="white", fontweight="bold")
    for kind, marker, size in (("fresh", "^", 30), ("stale", "^", 60), ("lost", "X", 80)):
        xs, ys = marks[kind]
        ax.scatter(xs, [y - 0.42 for y in ys] if kind != "lost" else ys, marker=marker, s=size,
                   color=COLORS[kind], zorder=3, linewidths=0)
    if marks["dropped"][0]:                            # ksync: gradients that came too late
        xs, ys = marks["dropped"]
        ax.scatter(xs, [y - 0.42 for y in ys], marker="x", s=45, color=COLORS["dropped"],
                   zorder=3, linewidths=1.6, label="dropped")
    if len(stale_labels) <= 60:
        for t, y, s in stale_labels:
            ax.annotate(f"{s}", (t, y - 0.42), xytext=(3, 2), textcoords="offset points",
                        fontsize=7, color=COLORS["stale"])
    ax.set_yticks(range(n + 1), ["server"] + [lane_name(trace, k) for k in drawn])
    ax.set_ylim(n + 0.6, -0.6)
    ax.set_xlim(0, max(end, 1e-9) * 1.02)
    ax.set_xlabel(_time_label(trace))
    ax.set_title(f"{trace.meta.get('policy', '?')} · {n} workers", loc="left", fontsize=10)
    _legend(ax, dropped=bool(marks["dropped"][0]))
    return ax


def _style(name, k):
    """((dash, marker), colour) of the k-th curve, called `name`: a policy's own, else the k-th."""
    return (POLICY_STYLES.get(name, STYLES[k % len(STYLES)]),
            POLICY_COLORS.get(name, OTHER_COLORS[k % len(OTHER_COLORS)]))


def race(result, ax=None):
    """A race (aps.race): per contender its race seeds' times to the target as points, first touch
    (left, hollow) and stay (right, filled) side by side, each median a bar; seeds that never met
    the target are counted under the contender's name."""
    ax = _axes(ax, (1.6 + 1.4 * len(result.contenders), 3.5))
    names = []
    for k, c in enumerate(result.contenders):
        color = _style(c.name, k)[1]
        for side, measure in ((-0.17, "first_touch"), (0.17, "stay")):
            times = c.times(measure)
            met = times[np.isfinite(times)]
            xs = k + side + np.linspace(-0.06, 0.06, met.size) if met.size > 1 else [k + side] * met.size
            ax.scatter(xs, met, s=22, edgecolors=color, zorder=3, linewidths=1.2,
                       facecolors="none" if measure == "first_touch" else color,
                       label=(measure.replace("_", " ") if k == 0 else None))
            if np.isfinite(np.median(times)):
                ax.hlines(np.median(times), k + side - 0.13, k + side + 0.13, color="#000000",
                          linewidth=2, zorder=4)
        never = int(np.isinf(c.times(result.measure)).sum())
        names.append(f"{c.name}\nlr {c.lr:.3g}" + (f"\n{never} never" if never else ""))
    ax.set_xticks(range(len(names)), names)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_ylabel(f"time to loss ≤ {result.target:g}")
    ax.set_title(f"{len(result.race_seeds)} held-out seeds · ranked by {result.measure.replace('_', ' ')}"
                 " · bar: median", fontsize=10)
    ax.legend(frameon=False, fontsize=8)
    return ax


def race_tuning(result, ax=None):
    """The lr search of a race (aps.race): each contender's tuning score (median time over its
    tuning seeds) against the lr tried, on a log lr axis; the tuned lr starred. Scores that never
    met the target are left out."""
    ax = _axes(ax, (6, 3.5))
    for k, c in enumerate(result.contenders):
        lrs, scores = np.array(c.tried).T
        ok = np.isfinite(scores)
        (dash, mark), color = _style(c.name, k)
        ax.plot(lrs[ok], scores[ok], color=color, linestyle=dash, marker=mark, markersize=4,
                linewidth=1.4, label=c.name)
        ax.scatter([c.lr], [dict(c.tried)[c.lr]], marker="*", s=160, color=color, zorder=4,
                   edgecolors="#000000", linewidths=0.6)
    ax.set_xscale("log")
    ax.set_xlabel("lr")
    ax.set_ylabel(f"median {result.measure.replace('_', ' ')} time (tuning seeds)")
    ax.set_title("lr search: ★ the tuned lr", fontsize=10)
    ax.legend(frameon=False, fontsize=8)
    return ax


def _server_row(ax, trace, end):
    """The server's versions as alternating spans, labelled v0, v1, … where there is room."""
    made = trace.version_times()
    made = made[np.isfinite(made) & (made <= end)]
    bounds = np.append(made, end)
    spans = [(bounds[v], bounds[v + 1] - bounds[v]) for v in range(len(made))]
    for parity in (0, 1):
        ax.broken_barh(spans[parity::2], (-0.4, 0.8), facecolor=COLORS["server"][parity],
                       edgecolor="#9FB3CF", linewidth=0.5)
    if len(spans) <= 40:
        for v, (start, width) in enumerate(spans):
            if width > 0.02 * max(end, 1e-9):
                ax.text(start + width / 2, 0, f"v{v}", ha="center", va="center", fontsize=8,
                        fontweight="bold")


def _legend(ax, dropped=False):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    handles = [Patch(color=COLORS["compute"], label="compute"),
               Patch(color=COLORS["wait"], alpha=0.7, label="wait"),
               Line2D([], [], marker="^", linestyle="", color=COLORS["fresh"], label="fresh push"),
               Line2D([], [], marker="^", linestyle="", color=COLORS["stale"],
                      label="stale push (its staleness)")]
    if dropped:
        handles.append(Line2D([], [], marker="x", linestyle="", color=COLORS["dropped"],
                              markeredgewidth=1.6, label="dropped"))
    ax.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=len(handles),
              frameon=False, fontsize=8)


def _axes(ax, size):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt
    return plt.subplots(figsize=size, layout="constrained")[1]


def _labelled(run_or_runs, label):
    """{label: Trace} from a Run, a list of Runs or {label: Run}; runs are named by policy."""
    if isinstance(run_or_runs, dict):
        return {str(k): as_trace(r, "run_or_runs") for k, r in run_or_runs.items()}
    if isinstance(run_or_runs, (list, tuple)):
        traces = [as_trace(r, "run_or_runs") for r in run_or_runs]
        labels = label if isinstance(label, (list, tuple)) else [None] * len(traces)
        if len(labels) != len(traces):
            raise ValueError(f"label has {len(labels)} entries for {len(traces)} runs: give "
                             f"one label per run")
    else:
        traces, labels = [as_trace(run_or_runs, "run_or_runs")], [label]
    out = {}
    for k, (trace, name) in enumerate(zip(traces, labels)):
        name = str(name) if name is not None else str(trace.meta.get("policy", f"run {k}"))
        out[name if name not in out else f"{name} ({k})"] = trace
    return out


def _time_label(trace):
    wall = trace.meta.get("clock") == "wall"
    return "time (s)" if wall else "time (virtual: 1 = one compute time)"

