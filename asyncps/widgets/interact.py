"""A plain function behind sliders, as ipywidgets' `interactive` makes it, with a first-sight picture.

    def others_wait(slowdown=4.0):
        return f"the others wait {barrier_cost(slowdown):.0%}"

    others_wait(4.0)                                               # a plain function first...
    aps.widgets.interactive(others_wait, slowdown=(1.0, 10.0, 0.5))  # ...then behind a slider

The controls are made the way ipywidgets makes them (a (min, max, step) tuple is a slider, a list a
dropdown, a bool a checkbox; the function's default is the start value) and named after the
argument. Below them, the function's result: a string as text, anything Jupyter draws (an
`IPython.display.HTML`, a `Picture`) as its HTML. Unlike ipywidgets' own, the widget also carries
a picture of itself (the controls where they stand and the result, in text/html: picture.py), so a
notebook opened without a kernel, trusted or not, shows what the cell showed, not a repr.
"""
import inspect
from html import escape

import ipywidgets as widgets

from ..core import checks
from .picture import img_html, pictures_as_images
from .svg import COLORS, MUTED, TEXT, circle, line, rect, svg, text

WIDTH, HEIGHT = 420, 28          # one control's picture, px


def result_html(result):
    """What the widget shows of the function's `result`: its HTML if Jupyter draws it as HTML
    (pictures as <img>: picture.py), a string as text, None as nothing, else its repr."""
    if result is None:
        return ""
    if isinstance(result, str):
        return f'<div class="asyncps-result" style="white-space:pre-wrap">{escape(result)}</div>'
    bundle = result._repr_mimebundle_() if hasattr(result, "_repr_mimebundle_") else None
    html = (bundle or {}).get("text/html") if isinstance(bundle, dict) else None
    if html is None and hasattr(result, "_repr_html_"):
        html = result._repr_html_()
    if html is None:
        return f'<pre class="asyncps-result">{escape(repr(result))}</pre>'
    return pictures_as_images(html)


def control_svg(control):
    """A picture of one control where it stands: a slider's track and handle, else its value."""
    name = escape(str(control.description))
    body = [text(4, 18, name, color=TEXT, size=12)]
    value = getattr(control, "value", None)
    if isinstance(control, (widgets.IntSlider, widgets.FloatSlider)):
        x0, x1 = 130, WIDTH - 70
        span = (control.max - control.min) or 1
        at = x0 + (x1 - x0) * (value - control.min) / span
        body += [line(x0, 14, x1, 14, COLORS["grid"], width=4),
                 line(x0, 14, at, 14, COLORS["compute"], width=4),
                 circle(at, 14, 7, fill=COLORS["compute"], stroke="#ffffff", width=1.5),
                 text(x1 + 12, 18, _readout(control), color=TEXT, size=12)]
        title = f"{control.description}: a slider from {control.min:g} to {control.max:g}, at {value:g}"
    else:
        shown = control.label if isinstance(control, widgets.Dropdown) else value
        body += [rect(128, 3, WIDTH - 132, 22, "none", stroke=MUTED),
                 text(136, 18, escape(str(shown)), color=TEXT, size=12)]
        title = f"{control.description}: {shown}"
    return svg(WIDTH, HEIGHT, body, "asyncps-control", title)


def _readout(slider):
    """The value as the slider's readout shows it (its readout_format: ".2f", "d")."""
    try:
        return format(slider.value, slider.readout_format or "g")
    except ValueError:
        return f"{slider.value:g}"


class Interactive(widgets.VBox):
    """`function`'s result behind `controls` (made as ipywidgets' interactive makes them); the
    result shows below the controls and follows them. `result`: the latest result."""

    def __init__(self, function, **controls):
        if not callable(function):
            raise checks.bad("function", function, "a function of the controls' values", TypeError)
        if not controls:
            raise ValueError("controls: give at least one, named after an argument of the "
                             "function, e.g. interactive(f, slowdown=(1.0, 10.0, 0.5))")
        parameters = inspect.signature(function).parameters
        self.function, self.controls = function, {}
        for name, abbreviation in controls.items():
            if name not in parameters:
                raise checks.bad(name, abbreviation, f"a control for an argument of "
                                 f"{getattr(function, '__name__', 'the function')}: its arguments are "
                                 f"{', '.join(parameters) or 'none'}")
            default = parameters[name].default
            made = widgets.interactive.widget_from_abbrev(
                abbreviation, widgets.interaction.empty if default is inspect.Parameter.empty else default)
            if made is None:
                raise checks.bad(name, abbreviation, "a widget, a value, a (min, max[, step]) tuple "
                                 "(a slider), a list (a dropdown) or a bool (a checkbox)")
            made.description = name
            self.controls[name] = made
        self.output, self.result = widgets.HTML(), None
        for control in self.controls.values():
            control.observe(self._update, "value")
        super().__init__([*self.controls.values(), self.output])
        self.add_class("asyncps-interactive")
        self._update()

    @property
    def kwargs(self):
        """The arguments the function was last called with: the controls' values."""
        return {name: control.value for name, control in self.controls.items()}

    def _update(self, _change=None):
        self.result = self.function(**self.kwargs)
        self.output.value = result_html(self.result)

    def __repr__(self):
        settings = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"interactive({getattr(self.function, '__name__', 'function')}, {settings})"

    def _repr_mimebundle_(self, **kwargs):
        """The widget, and where it cannot run the controls where they stand and the result."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        pictures = "".join(f"<div>{img_html(control_svg(c))}</div>" for c in self.controls.values())
        bundle["text/html"] = f'<div class="asyncps-static">{pictures}{self.output.value}</div>'
        return bundle


def interactive(function, **controls):
    """`function` behind controls, ipywidgets-style: interactive(f, x=(0, 10, 1)); see Interactive."""
    return Interactive(function, **controls)
