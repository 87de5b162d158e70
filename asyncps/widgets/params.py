"""ParameterView: a 2-D run in parameter space — the stale gradient drawn where it was computed
(v0) and where it lands (v1). Shares its frame with a Timeline when given one.

Where no kernel runs it is a picture that plays by itself: the frames around the first stale push
as one animated, script-free SVG (animate.py), the same frames a Timeline of the run plays."""
from html import escape

import ipywidgets as widgets

from ..problems.base import Problem
from . import animate
from . import render_params as rp
from . import render_timeline as rt
from ..core.run import as_trace
from .timeline import Timeline


class ParameterView(widgets.VBox):
    def __init__(self, run, problem, timeline=None, frame=0):
        trace = as_trace(run, "run")
        if not isinstance(problem, Problem):
            raise TypeError(f"problem={problem!r:.60} is not allowed: problem must be the asyncps "
                            f"problem the run optimised (2-D)")
        if timeline is not None and not isinstance(timeline, Timeline):
            raise TypeError(f"timeline={timeline!r:.60} is not allowed: timeline must be a Timeline "
                            f"of the same run, or None")
        self.timeline = timeline
        tmodel = timeline.model if timeline is not None else rt.TimelineModel(trace)
        self.model = rp.ParameterModel(trace, problem, tmodel)
        last = tmodel.frames - 1
        if timeline is not None:
            self.slider = timeline.slider                     # one frame slider for both
            frame = timeline.frame
        else:
            if isinstance(frame, bool) or not isinstance(frame, int) or not 0 <= frame <= last:
                raise ValueError(f"frame={frame!r} is not allowed: frame must be an integer in 0..{last}")
            self.slider = widgets.IntSlider(value=frame, min=0, max=last, description="frame")
        self.view, self.caption = widgets.HTML(), widgets.HTML()
        self.slider.observe(lambda change: self.draw(change["new"]), "value")
        super().__init__([self.view, self.caption] if timeline is not None
                         else [self.slider, self.view, self.caption])
        self.draw(frame)

    def draw(self, frame):
        self.view.value = rp.params_svg(self.model, frame)
        self.caption.value = f'<div class="asyncps-caption">{escape(rp.param_caption(self.model, frame))}</div>'

    @property
    def state(self):
        return f"frame {self.slider.value}: {rp.param_caption(self.model, self.slider.value)}"

    def __repr__(self):
        return f"ParameterView({self.state})"

    def _repr_mimebundle_(self, **kwargs):
        """The widget, and where widgets don't run the stale push animated, as HTML and as SVG
        (still, for PDF and renderers that run no CSS animation, on the first stale push)."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        frame = self.model.timeline.first_stale_push() or self.slider.value
        picture = self.animated_svg(frame)
        bundle["text/html"] = animate.animated_html(picture, frame, rp.param_caption(self.model, frame))
        bundle["image/svg+xml"] = picture
        return bundle

    def animated_svg(self, still):
        """The frames around frame `still` as one animated, script-free SVG that holds on `still`
        and shows it where nothing moves."""
        frames = [animate.Frame(f, rp.params_svg(self.model, f), rp.param_caption(self.model, f))
                  for f in animate.frames_around(still, self.model.timeline.frames)]
        return animate.animated_svg(frames, still)


def show(run, problem=None, frame=0):
    """A Timeline, and the ParameterView beside it for a 2-D problem, on one frame slider."""
    timeline = Timeline(run, frame=frame)
    if problem is None or problem.dim != 2:
        return timeline
    return widgets.VBox([timeline, ParameterView(run, problem, timeline=timeline)])
