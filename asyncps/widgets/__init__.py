"""Widgets that render a Run or Trace: Timeline, ParameterView, Playground; and LiveView, a live
run (aps.train(..., live=True)) watched and changed while it runs. `interactive(f, x=(0, 10))`: a
plain function behind sliders; `Picture(svg, ...)`: SVG strings as an output every frontend shows.

The drawing is in pure functions (render_timeline, render_params, render_charts, render_live:
Trace -> SVG) that need no kernel; the widgets only wire ipywidgets controls to them.
"""
from .interact import Interactive, interactive
from .live import LiveView
from .params import ParameterView, show
from .picture import Picture
from .playground import Playground
from .render_charts import histogram_svg, loss_curves
from .render_live import live_svg
from .render_params import ParameterModel, param_caption, params_svg
from .render_timeline import TimelineModel, caption, static_html, timeline_svg
from .timeline import Timeline

__all__ = ["Timeline", "ParameterView", "Playground", "LiveView", "show", "TimelineModel",
           "timeline_svg", "live_svg", "caption", "static_html", "ParameterModel", "params_svg",
           "param_caption", "loss_curves", "histogram_svg", "Picture", "interactive", "Interactive"]
