"""Timeline: the v0/v1 timeline of a run as a widget — Play/Pause, step, speed and a frame slider.

It only renders a Run or Trace (simulated or real); all drawing is in render_timeline.
Playback runs in the browser (Play is linked to the slider there); each frame is
drawn by the kernel when the slider moves. `set_run` shows another run in the same widget: a Play
already pressed keeps playing (the Playground re-runs on every change, and a new widget in place
of the old one would lose a click that landed on the old one).

Where no kernel runs, the widget is a picture that plays by itself: a dozen frames around the
first stale push or drop as one animated, script-free SVG (animate.py).
"""
from html import escape

import ipywidgets as widgets

from ..core import checks
from ..core.run import as_trace
from . import animate, icon_names
from . import render_timeline as rt


class Timeline(widgets.VBox):
    """Timeline(run) shows frame 0; `frame=` picks another; `.state` says what is shown, as text."""

    def __init__(self, run_or_trace, frame=0, width=720, interval=600):
        self.model = rt.TimelineModel(as_trace(run_or_trace))
        self.width = checks.integer("width", width, minimum=240, maximum=4000)
        interval = checks.integer("interval", interval, minimum=20, maximum=60_000)
        frame = _checked_frame(self.model, frame)
        last = self.model.frames - 1
        self._quiet = False                  # True while set_run changes the controls
        self.play = icon_names.play("play or pause the frames; stop goes back to the first frame",
                                    value=frame, min=0, max=last, step=1, interval=interval,
                                    show_repeat=False)
        self.slider = widgets.IntSlider(value=frame, min=0, max=last, description="frame",
                                        continuous_update=True,
                                        layout=widgets.Layout(width="360px", max_width="100%"))
        self.link = widgets.jslink((self.play, "value"), (self.slider, "value"))
        self.back = widgets.Button(description="◀ step", tooltip="one frame back",
                                   layout=widgets.Layout(width="72px"))
        self.forward = widgets.Button(description="step ▶", tooltip="one frame forward",
                                      layout=widgets.Layout(width="72px"))
        self.speed = widgets.IntSlider(value=max(1, min(10, round(3000 / interval))), min=1, max=10,
                                       description="speed", layout=widgets.Layout(width="220px"))
        self.view = widgets.HTML()
        self.caption = widgets.HTML()
        self.back.on_click(lambda _: self.step(-1))
        self.forward.on_click(lambda _: self.step(+1))
        self.speed.observe(lambda change: setattr(self.play, "interval", int(3000 / change["new"])),
                           "value")
        self.slider.observe(lambda change: self._quiet or self.draw(change["new"]), "value")
        controls = widgets.HBox([self.play, self.back, self.forward, self.slider, self.speed,
                                 icon_names.named_icons()],
                                layout=widgets.Layout(flex_flow="row wrap"))   # narrow: two rows
        super().__init__([controls, self.view, self.caption])
        self.add_class("asyncps-timeline-widget")
        self.draw(frame)

    @property
    def frame(self):
        return self.slider.value

    @frame.setter
    def frame(self, value):
        self.slider.value = value

    def set_run(self, run_or_trace, frame=0):
        """Show another run (or trace) in this same widget, at `frame` (an integer, or 'stale'):
        its controls stay, and so does playback (a Play pressed before keeps playing)."""
        model = rt.TimelineModel(as_trace(run_or_trace))
        frame = _checked_frame(model, frame)
        last = model.frames - 1
        self.model, self._quiet = model, True
        try:                                       # every value stays in min..max on the way
            for control in (self.play, self.slider):
                control.value = min(control.value, last)
                control.max = last
                control.value = frame
        finally:
            self._quiet = False
        self.draw(frame)

    def step(self, by):
        self.slider.value = min(max(self.slider.value + by, 0), self.slider.max)

    def draw(self, frame):
        self.view.value = rt.timeline_svg(self.model, frame, self.width)
        self.caption.value = f'<div class="asyncps-caption">{escape(rt.caption(self.model, frame))}</div>'

    @property
    def state(self):
        """What the widget shows now, as text (for notebooks that check it without a browser)."""
        f = self.frame
        return (f"frame {f}/{self.model.frames - 1}: server at v{self.model.version_at(f)}; "
                f"{rt.caption(self.model, f)}")

    def __repr__(self):
        return f"Timeline({self.model.frames} frames; {self.state})"

    def _repr_mimebundle_(self, **kwargs):
        """The widget, and where widgets don't run (GitHub, nbviewer, exported HTML, PDF) a picture
        that plays by itself, as HTML and as SVG: frames around the static frame, which is what
        shows where nothing moves (the current frame, or at frame 0 the first stale push or drop)."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        frame = self.static_frame()
        picture = self.animated_svg(frame)
        bundle["text/html"] = animate.animated_html(picture, frame, rt.caption(self.model, frame))
        bundle["image/svg+xml"] = picture
        return bundle

    def animated_svg(self, still=None):
        """The frames around `still` (default: the static frame) as one animated, script-free SVG
        that holds on `still` and shows it where nothing moves."""
        still = self.static_frame() if still is None else _checked_frame(self.model, still)
        frames = [animate.Frame(f, rt.timeline_svg(self.model, f, self.width), rt.caption(self.model, f))
                  for f in animate.frames_around(still, self.model.frames)]
        return animate.animated_svg(frames, still)

    def static_frame(self):
        """The frame a static picture shows: the current one; at frame 0 the first stale push or
        drop (a late gradient), or the middle frame when none came late."""
        stale = self.frame or self.model.first_late_gradient()
        return self.model.frames // 2 if stale is None else stale


def _checked_frame(model, frame):
    """`frame` as a frame number of `model`: an integer in range, or 'stale' (the first stale push,
    frame 0 if none)."""
    last = model.frames - 1
    if frame == "stale":
        frame = model.first_stale_push() or 0
    if isinstance(frame, bool) or not isinstance(frame, int) or not 0 <= frame <= last:
        raise ValueError(f"frame={frame!r} is not allowed: frame must be an integer in 0..{last} "
                         f"or 'stale' (the first stale push)")
    return frame
