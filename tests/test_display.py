"""How runs show themselves: a one-line repr, a small HTML summary with inline SVG, a progress bar
that is a display option (never part of the run), and widgets that carry a static SVG picture."""
import inspect
import os
import time
import xml.etree.ElementTree as ET
from dataclasses import fields
from html import escape

import numpy as np
import pytest

import asyncps as aps
from asyncps.core import display
from asyncps.engines.entry import Progress
from asyncps.widgets import ParameterView, Playground, Timeline
from asyncps.widgets.picture import stack_svg
from asyncps.widgets.picture import svgs_in

LSQ = aps.problems.LeastSquares(n=512, dim=10, seed=0)
QUAD = aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0])


class Scored(aps.problems.LeastSquares):
    """Least squares with an 'accuracy' metric, as a classifier would have."""

    @property
    def metrics(self):
        return {"accuracy": lambda params: float(np.exp(-self.loss(params)))}


@pytest.fixture(scope="module")
def long_run():
    return aps.simulate(LSQ, workers=4, policy="async", lr=0.05, steps=300,
                        compute_times=[1, 1, 1, 4], seed=0, progress=False)


# -- repr ------------------------------------------------------------------------------------
def test_a_trace_s_repr_is_one_short_line_naming_the_policy_and_the_counts(long_run):
    trace = long_run.trace
    text = repr(trace)
    assert len(text) < 200 and "\n" not in text
    assert text.startswith("Trace(async, workers=4, ")
    for part in (f"events={len(trace.events)}", f"pushes={len(trace.pushes)}", "versions=300",
                 f"mean staleness={trace.summary()['mean_staleness']:.2f}"):
        assert part in text


def test_a_trace_that_keeps_only_its_first_events_still_counts_them_all():
    run = aps.simulate(LSQ, workers=4, steps=100, trace_limit=50, progress=False)
    assert len(run.trace.events) == 50
    assert f"events={50 + run.trace.beyond['events']}" in repr(run.trace)
    assert "pushes=100" in repr(run.trace)


# -- _repr_html_ -----------------------------------------------------------------------------
def test_a_run_s_html_holds_its_summary_line_and_its_charts_in_a_few_kb(long_run):
    html = long_run._repr_html_()
    assert escape(repr(long_run)) in html
    assert len(svgs_in(html)) == 2                     # the loss per version, the staleness histogram
    assert "loss per server version" in html and "staleness of each async push" in html
    assert len(html) < 20_000


def test_a_trace_s_html_holds_its_summary_line_and_the_staleness_histogram(long_run):
    html = long_run.trace._repr_html_()
    assert escape(repr(long_run.trace)) in html
    assert len(svgs_in(html)) == 1 and "staleness of each async push" in html
    assert len(html) < 20_000


def test_a_run_with_a_metric_shows_it_beside_the_loss():
    run = aps.simulate(Scored(n=256, dim=4, seed=0), workers=2, steps=20, progress=False)
    html = run._repr_html_()
    assert len(svgs_in(html)) == 3 and "accuracy per server version" in html


def test_a_diverged_run_s_html_says_why():
    run = aps.simulate(LSQ, workers=2, lr=5.0, steps=200, progress=False)
    assert run.diverged
    assert escape(run.message) in run._repr_html_()


def test_the_charts_in_the_html_are_well_formed_svg(long_run):
    for html in (long_run._repr_html_(), long_run.trace._repr_html_()):
        ET.fromstring(html)                            # the whole block parses as XML...
        for picture in svgs_in(html):
            ET.fromstring(picture)                     # ...and so does each picture in it


def test_without_a_registered_renderer_jupyter_falls_back_to_the_repr(long_run):
    try:
        display.register_html(None)
        assert long_run._repr_html_() is None and long_run.trace._repr_html_() is None
    finally:
        display.register_html(aps._summary_html)
    assert svgs_in(long_run._repr_html_())
    with pytest.raises(TypeError, match="render="):
        display.register_html("not a function")


# -- progress ----------------------------------------------------------------------------------
def test_progress_false_shows_nothing_and_true_counts_every_version(capsys):
    aps.simulate(LSQ, workers=2, steps=40, progress=False)
    assert capsys.readouterr().err == ""
    aps.simulate(LSQ, workers=2, steps=40, progress=True)
    assert "40/40" in capsys.readouterr().err


def test_a_real_run_on_threads_draws_its_bar_from_the_waiting_thread(capsys):
    aps.train(LSQ, engine="threads", workers=2, steps=30, progress=False)
    assert capsys.readouterr().err == ""
    run = aps.train(LSQ, engine="threads", workers=2, steps=30, progress=True)
    assert "30/30" in capsys.readouterr().err
    assert run.trace.losses and len(run.trace.losses) == 31


def test_progress_is_no_part_of_the_run():
    shown = aps.simulate(LSQ, workers=2, steps=20, progress=True)
    hidden = aps.simulate(LSQ, workers=2, steps=20, progress=False)
    assert shown.trace == hidden.trace                 # the bar changes nothing recorded
    assert "progress" not in shown.trace.meta
    real = aps.train(LSQ, engine="threads", workers=2, steps=10, progress=True)
    assert "progress" not in real.trace.meta
    assert "progress" not in {f.name for f in fields(aps.RunConfig)}
    for entry in (aps.simulate, aps.train):
        parameter = inspect.signature(entry).parameters["progress"]
        assert parameter.default is None and parameter.kind is inspect.Parameter.KEYWORD_ONLY


def test_a_progress_that_is_not_none_true_or_false_is_refused():
    with pytest.raises(TypeError, match="progress='yes' is not allowed"):
        aps.simulate(LSQ, workers=2, steps=5, progress="yes")


def test_the_default_bar_is_made_after_2_s_goes_away_at_the_end_and_honours_tqdm_disable(monkeypatch):
    assert os.environ.get("TQDM_DISABLE") == "1"       # conftest.py: no bars in the tests
    server = aps.ParameterServer(LSQ.x0, workers=2, steps=10)
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    off, always = Progress(None, server, "x"), Progress(True, server, "x")
    monkeypatch.delenv("TQDM_DISABLE")
    default = Progress(None, server, "x")
    try:
        default(1)
        assert default.bar is None                     # a short run makes no bar (and no widget)
        clock[0] += Progress.DELAY
        default(2)
        off(2)
        assert default.bar is not None and not default.bar.leave
        assert off.bar is None                         # TQDM_DISABLE=1 turns the default off...
        assert not always.bar.disable                  # ...not an explicit progress=True
        assert always.bar.total == 10 and always.bar.leave
    finally:
        default.bar.close()
        always.bar.close()
    assert Progress(False, server, "x").bar is None


# -- widgets carry a static SVG ------------------------------------------------------------------
def test_the_timeline_s_svg_is_the_frame_its_static_html_shows():
    run = aps.simulate(QUAD, workers=2, lr=0.1, steps=6, compute_times=[1, 1.5])
    timeline = Timeline(run)
    frame = timeline.static_frame()
    assert frame == timeline.model.first_stale_push()  # frame 0 says little
    bundle = timeline._repr_mimebundle_()
    assert bundle["image/svg+xml"] == timeline.animated_svg(frame)
    assert svgs_in(bundle["text/html"]) == [bundle["image/svg+xml"]]
    timeline.frame = 3
    assert timeline._repr_mimebundle_()["image/svg+xml"] == timeline.animated_svg(3)


def test_the_parameter_view_s_svg_is_its_static_frame():
    run = aps.simulate(QUAD, workers=2, lr=0.1, steps=6, compute_times=[1, 1.5])
    view = ParameterView(run, QUAD)
    bundle = view._repr_mimebundle_()
    frame = view.model.timeline.first_stale_push()
    assert bundle["image/svg+xml"] == view.animated_svg(frame)
    assert svgs_in(bundle["text/html"]) == [bundle["image/svg+xml"]]


def test_the_playground_s_svg_holds_the_timeline_and_every_chart():
    playground = Playground(steps=40)
    svg = playground._repr_mimebundle_()["image/svg+xml"]
    assert svg == playground.static_svg()
    root = ET.fromstring(svg)
    assert len(root.findall("{http://www.w3.org/2000/svg}svg")) == 4   # timeline + three charts
    timeline = playground.timeline
    assert timeline.animated_svg()[4:] in svg


def test_stacked_pictures_sit_side_by_side_and_row_below_row():
    a = '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="40"></svg>'
    b = '<svg xmlns="http://www.w3.org/2000/svg" width="50" height="60"></svg>'
    root = ET.fromstring(stack_svg([[a, b], ["", a]], gap=10))
    assert (root.get("width"), root.get("height")) == ("160", "110")     # 100+10+50; 60+10+40
    placed = [(c.get("x"), c.get("y")) for c in root]
    assert placed == [("0", "0"), ("110", "0"), ("0", "70")]
    with pytest.raises(ValueError, match="picture="):
        stack_svg([["<p>not a picture</p>"]])
