"""Playground: every knob of the lecture on one screen. Each change re-runs `simulate` for sync,
async and ssp with the same settings and shows the Timeline of the chosen policy, their loss
curves (per version and per unit of time) and the staleness histogram.

`aps.compare(...)` is the plain function behind it (call it with fixed values first); the
Playground only wires sliders to it. A setting that cannot run shows a message, not a traceback.
Its rows wrap: at any output width the controls and the charts flow onto as many lines as they
need, and each picture shrinks to the width of the output area (svg.py), never wider.
"""
import math
from html import escape

import ipywidgets as widgets

from ..core import checks
from ..core.config import renamed_keywords
from ..core.policies import LR_SCHEDULES, POLICIES
from ..engines.compare import compare
from ..problems.base import Problem
from ..problems.synthetic import LeastSquares, Logistic, Quadratic
from . import render_charts as rc
from .picture import img_html, stack_svg
from .summary import text_style
from .svg import INKS
from .timeline import Timeline


CHART_ROW = "display:flex;flex-wrap:wrap;gap:8px;max-width:100%"


def wrapping():
    """A row that wraps onto more lines where the output area is narrower than its content."""
    return widgets.Layout(flex_flow="row wrap", max_width="100%")


LR_STEP = 0.05        # the lr slider's step, in powers of ten
BATCHES = (None, 8, 32, 128)     # batch_size: None is the whole shard
WHOLE_SHARD = 0       # the batch dropdown's value for None: a None value shows a blank dropdown


def lr_grid_start(lr):
    """The lr slider's lowest power of ten (about -3), chosen so that `lr` lies on its grid: the
    browser puts a FloatLogSlider's value on min + n * step and sends the result back, and an lr
    off the grid came back as another lr (0.05 as 0.0501) and ran the Playground again."""
    at = math.log10(lr)
    return at - round((at + 3) / LR_STEP) * LR_STEP


def moved(change):
    """An lr slider change by at least half a step (not the browser's rounding of the same lr)."""
    return abs(math.log10(change["new"]) - math.log10(change["old"])) >= LR_STEP / 2


class Playground(widgets.VBox):
    @renamed_keywords
    def __init__(self, problem=None, workers=4, policy="async", max_clocks_ahead=2, lr=0.05,
                 lr_schedule="constant", straggler=1.0, partition="iid", push_every=1, steps=200,
                 jitter=0.0, comm_delay=0.0, momentum=0.0, batch_size=None):
        if problem is not None and not isinstance(problem, Problem):
            raise checks.bad("problem", problem, "an asyncps problem or None", TypeError)
        self.problems = {"least squares": LeastSquares(n=512, dim=10, seed=0),
                         "logistic": Logistic(n=512, dim=10, seed=0),
                         "quadratic": Quadratic(curvature=[1.0, 0.1], x0=[1.0, 1.0])}
        if problem is not None:
            self.problems = {"yours": problem, **self.problems}
        jitter = checks.real("jitter", jitter, minimum=0.0, below=2.0 + 1e-9)
        comm_delay = checks.real("comm_delay", comm_delay, minimum=0.0, below=2.0 + 1e-9)
        momentum = checks.real("momentum", momentum, minimum=0.0, below=0.95 + 1e-9)
        if batch_size not in BATCHES:
            raise checks.bad("batch_size", batch_size, f"one of {BATCHES}")
        self.steps = checks.integer("steps", steps, minimum=1, maximum=5000)
        workers = checks.integer("workers", workers, minimum=1, maximum=16)
        policy = checks.choice("policy", policy, POLICIES)
        max_clocks_ahead = checks.integer("max_clocks_ahead", max_clocks_ahead, minimum=0, maximum=50)
        lr = checks.real("lr", lr, minimum=1e-3, below=10.0 + 1e-9)
        lr_schedule = checks.choice("lr_schedule", lr_schedule, tuple(LR_SCHEDULES))
        straggler = checks.real("straggler", straggler, minimum=0.25, below=10.0 + 1e-9)
        partition = checks.choice("partition", partition, ("iid", "sorted"))
        push_every = checks.integer("push_every", push_every, minimum=1, maximum=10)
        style = {"description_width": "130px"}          # "SSP: clocks ahead" in full
        wide = widgets.Layout(width="330px", max_width="100%")
        self.controls = {
            "workers": widgets.IntSlider(value=workers, min=1, max=16, description="workers",
                                         style=style, layout=wide),
            "policy": widgets.ToggleButtons(options=POLICIES, value=policy, description="timeline of",
                                            style=style),
            "max_clocks_ahead": widgets.IntSlider(value=max_clocks_ahead, min=0, max=50,
                                                  description="SSP: clocks ahead",
                                           style=style, layout=wide),
            "lr": widgets.FloatLogSlider(value=lr, base=10, min=lr_grid_start(lr), max=1,
                                         step=LR_STEP, description="lr", style=style, layout=wide),
            "lr_schedule": widgets.ToggleButtons(options=tuple(LR_SCHEDULES), value=lr_schedule,
                                                 description="lr schedule",
                                                 style={**style, "button_width": "160px"}),
            "straggler": widgets.FloatSlider(value=straggler, min=0.25, max=10, step=0.25,
                                             description="last worker ×", style=style, layout=wide),
            "partition": widgets.ToggleButtons(options=("iid", "sorted"), value=partition,
                                               description="shards", style=style),
            "push_every": widgets.IntSlider(value=push_every, min=1, max=10, description="push every",
                                            style=style, layout=wide),
            "jitter": widgets.FloatSlider(value=jitter, min=0.0, max=2.0, step=0.1, description="jitter",
                                          style=style, layout=wide),
            "comm_delay": widgets.FloatSlider(value=comm_delay, min=0.0, max=2.0, step=0.1,
                                              description="comm delay", style=style, layout=wide),
            "momentum": widgets.FloatSlider(value=momentum, min=0.0, max=0.95, step=0.05,
                                            description="momentum", style=style, layout=wide),
            "batch_size": widgets.Dropdown(options=[("whole shard", WHOLE_SHARD), ("8", 8), ("32", 32),
                                                    ("128", 128)],
                                           value=WHOLE_SHARD if batch_size is None else batch_size,
                                           description="batch", style=style),
            "problem": widgets.Dropdown(options=list(self.problems), value=next(iter(self.problems)),
                                        description="problem", style=style),
        }
        for name, control in self.controls.items():
            if name == "lr":                # the browser snaps lr to its grid: not a change
                control.observe(lambda change: moved(change) and self.update(), "value")
            else:
                control.observe(lambda _: self.update(), "value")
        self.message = widgets.HTML()
        self.timeline_box = widgets.VBox()
        self.losses = widgets.HTML()
        self.by_time = widgets.HTML()
        self.histogram = widgets.HTML()
        c = self.controls
        left = widgets.VBox([c["workers"], c["max_clocks_ahead"], c["lr"], c["straggler"], c["push_every"],
                             c["jitter"], c["comm_delay"], c["momentum"]])
        right = widgets.VBox([c["policy"], c["lr_schedule"], c["partition"], c["batch_size"],
                              c["problem"]])
        charts = widgets.HBox([self.losses, self.by_time, self.histogram], layout=wrapping())
        controls = widgets.HBox([left, right], layout=wrapping())
        super().__init__([controls, self.message, self.timeline_box, charts])
        self.add_class("asyncps-playground")
        self.timeline, self.note = None, ""
        self.update()

    def settings(self):
        """What the controls are set to, as `compare`'s arguments (batch_size None: whole shard)."""
        values = {name: control.value for name, control in self.controls.items()}
        batch = values["batch_size"]
        return {**values, "batch_size": None if batch == WHOLE_SHARD else batch}

    def update(self):
        try:
            settings = self.settings()
            problem = self.problems[settings.pop("problem")]
            runs, note = compare(problem, steps=self.steps, **settings)
        except (ValueError, TypeError) as err:               # an impossible setting: say why
            self._say(str(err), error=True)
            return
        chosen = runs[self.controls["policy"].value]
        if chosen.trace.events and self.timeline is not None:
            self.timeline.set_run(chosen, frame="stale")     # the same widget: a Play click stays
        elif chosen.trace.events:
            self.timeline = Timeline(chosen, frame="stale")
            self.timeline_box.children = [self.timeline]
        self.losses.value = rc.loss_curves(runs, by="version")
        self.by_time.value = rc.loss_curves(runs, by="time")
        self.histogram.value = rc.histogram_svg(chosen.trace.staleness_histogram(),
                                                title=f"staleness of each {chosen.trace.meta['policy']} push")
        self._say(note)

    def _say(self, text, error=False):
        self.note = text
        color = INKS["stale"] if error else INKS["computed"]
        self.message.value = (f'<div class="asyncps-message" style="{text_style(color)};'
                              f'white-space:normal">{escape(text)}</div>' if text else "")

    @property
    def state(self):
        return f"{self.settings()}" + (f" | {self.note}" if self.note else "")

    def __repr__(self):
        return f"Playground({self.settings()})"

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        static = (self.timeline._repr_mimebundle_()["text/html"] if self.timeline else "")
        bundle["text/html"] = (f'<div class="asyncps-static">{static}<div style="{CHART_ROW}">'
                               f'{"".join(img_html(c) for c in self._charts() if c)}'
                               f'</div></div>')
        bundle["image/svg+xml"] = self.static_svg()              # for PDF and plain renderers
        return bundle

    def static_svg(self):
        """What the static HTML shows, as one SVG: the timeline's frame above the three charts."""
        timeline = ([self.timeline._repr_mimebundle_()["image/svg+xml"]] if self.timeline else [])
        return stack_svg([timeline, self._charts()])

    def _charts(self):
        return [self.losses.value, self.by_time.value, self.histogram.value]

