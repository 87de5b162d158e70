"""Static pictures of a run: what Jupyter shows for a Run or a Trace, and one SVG made of several.

`run_html(run)`: the run's one-line summary, its loss (and accuracy, where scored) per version and
the staleness histogram; `trace_html(trace)`: the summary and the histogram. A few KB of inline
SVG (render_charts.py), no widgets: they show in JupyterLab, exported HTML and on GitHub alike.
The core's `_repr_html_` reaches them through asyncps/core/display.py, registered by the package.
"""
import re
from html import escape, unescape

from ..core.run import Run
from ..core.trace import Trace
from . import render_charts as rc
from .svg import FONT, INKS, hex_color

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
            f'{"".join(charts)}</div></div>')


_SIZE = re.compile(r'<svg\b[^>]*?\swidth="([\d.]+)"[^>]*?\sheight="([\d.]+)"')
_TITLE = re.compile(r"<title>(.*?)</title>", re.S)


def stack_svg(rows, gap=8, title=None):
    """One SVG of several: `rows` of SVG strings, side by side in a row, rows top to bottom (a
    widget's whole picture as one image/svg+xml, for PDF and renderers without widgets). Empty
    strings (a chart not drawn yet) are left out. Its title: `title`, else its pictures' titles."""
    body, y, width, titles = [], 0.0, 0.0, []
    for row in filter(None, ([p for p in row if p] for row in rows)):
        x, tallest = 0.0, 0.0
        for picture in row:
            size = _SIZE.match(picture)
            if size is None:
                raise ValueError(f"picture={picture[:60]!r} is not allowed: each picture must be an "
                                 f"<svg> with a width and a height")
            w, h = float(size[1]), float(size[2])
            named = _TITLE.search(picture)
            titles += [unescape(named[1])] if named else []
            body.append(picture.replace("<svg", f'<svg x="{x:g}" y="{y:g}"', 1))
            x, tallest = x + w + gap, max(tallest, h)
        width, y = max(width, x - gap), y + tallest + gap
    height = max(y - gap, 0.0)
    label = escape(title or " | ".join(titles) or "asyncps pictures")
    # labelled by its aria-label only: its children are its pictures, each with its own <title>
    # and the rule that fits it to the page (which, inline, fits this one too)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="asyncps-stack asyncps-svg" '
            f'width="{width:g}" height="{height:g}" viewBox="0 0 {width:g} {height:g}" role="img" '
            f'aria-label="{label}" {FONT}>{"".join(body)}</svg>')
