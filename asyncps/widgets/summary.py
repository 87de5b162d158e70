"""Static pictures of a run: what Jupyter shows for a Run or a Trace.

`run_html(run)`: the run's one-line summary, its loss (and accuracy, where scored) per version and
the staleness histogram; `trace_html(trace)`: the summary and the histogram. A few KB of SVG
(render_charts.py) in <img>s (picture.py), no widgets: they show in JupyterLab, trusted or not,
and in exported HTML. The core's `_repr_html_` reaches them through asyncps/core/display.py,
registered by the package.
"""
from html import escape

from ..core.run import Run
from ..core.trace import Trace
from . import render_charts as rc
from .picture import img_html
from .svg import INKS, hex_color

def html(run_or_trace):
    """run_html or trace_html, whichever fits (what Jupyter calls through core/display.py)."""
    if isinstance(run_or_trace, Run):
        return run_html(run_or_trace)
    if isinstance(run_or_trace, Trace):
        return trace_html(run_or_trace)
    raise TypeError(f"run_or_trace={run_or_trace!r:.60} is not allowed: it must be an asyncps Run "
                    f"or Trace")


def run_html(run):
    """The Run's summary line (and message), its loss per version, each metric it scored
    (run.metrics, e.g. accuracy) and the staleness histogram."""
    label = {run.trace.meta.get("policy", "run"): run}
    charts = [rc.loss_curves(label)]
    charts += [rc.loss_curves(label, of=name) for name in run.metrics]
    charts.append(_histogram(run.trace))
    line, _, _ = repr(run).partition("\n")
    note = (f'<div style="{text_style(INKS["stale"])}">{escape(run.message)}</div>' if run.message
            else "")
    return _block(line, note, charts)


def trace_html(trace):
    """The Trace's summary line and its staleness histogram."""
    return _block(repr(trace), "", [_histogram(trace)])


def _histogram(trace):
    policy = trace.meta.get("policy")
    title = f"staleness of each {policy} push" if policy else "staleness of each push"
    return rc.histogram_svg(trace.staleness_histogram(), title=title)


def text_style(color):
    """An HTML style for text in a themed colour: the fallback first, for renderers without CSS
    variables or color-mix, then the colour that follows the theme."""
    return f"color:{hex_color(color)};color:{color}"


def _block(line, note, charts):
    return (f'<div class="asyncps-summary"><div style="font-family:monospace;margin:2px 0 4px">'
            f'{escape(line)}</div>{note}<div style="display:flex;flex-wrap:wrap;gap:8px">'
            f'{"".join(img_html(c) for c in charts)}</div></div>')
