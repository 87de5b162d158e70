"""The render functions (no kernel, no browser) and the widgets' state, on simulated and real traces."""
import xml.etree.ElementTree as ET

import pytest

import asyncps as aps
from asyncps.widgets import (ParameterView, Playground, Timeline, TimelineModel, caption,
                             histogram_svg, loss_curves, param_caption, params_svg, static_html,
                             timeline_svg)
from asyncps.widgets.render_params import ParameterModel
from asyncps.widgets.picture import svgs_in

QUAD = aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0])


def two_worker_async():
    return aps.simulate(QUAD, workers=2, policy="async", lr=0.1, steps=6, compute_times=[1, 1.5])


def svg_texts(svg):
    root = ET.fromstring(svg)                         # also proves the SVG is well-formed
    return [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]


def test_the_stale_push_frame_shows_v0_v1_the_caption_and_one_lane_per_worker():
    model = TimelineModel(two_worker_async().trace)
    frame = model.first_stale_push()
    texts = svg_texts(timeline_svg(model, frame))
    assert "v0" in texts and "v1" in texts and "stale 1" in texts
    assert [t for t in texts if t.startswith("worker ")] == ["worker 0", "worker 1"]
    assert "server" in texts
    assert caption(model, frame) == ("worker 1 computed on v0; the server is at v1; "
                                     "applied to v1 → v2 (stale by 1)")


def test_sync_frames_show_the_barrier_wait():
    run = aps.simulate(QUAD, workers=2, policy="sync", lr=0.1, steps=4, compute_times=[1, 3])
    model = TimelineModel(run.trace)
    waits = [i for i, e in enumerate(model.events) if e.kind == "wait"]
    assert waits
    texts = svg_texts(timeline_svg(model, waits[0]))
    assert "waiting" in texts
    assert "waited at the barrier from t=1 to t=3" in caption(model, waits[0])
    pushes = [i for i, e in enumerate(model.events) if e.kind == "push"]
    assert "server waits for 1 more" in caption(model, pushes[0])
    assert "averaged and applied to v0 → v1" in caption(model, pushes[1])


@pytest.mark.parametrize("engine", ["simulate", "threads"])
def test_a_frame_renders_for_every_event(engine):
    kwargs = dict(workers=3, policy="ssp", max_clocks_ahead=1, lr=0.05, steps=40)
    run = (aps.simulate(QUAD, compute_times=[1, 2, 3], **kwargs) if engine == "simulate"
           else aps.train(QUAD, slowdown=[0, 0.001, 0.002], **kwargs))
    model = TimelineModel(run.trace)
    for frame in range(model.frames):
        texts = svg_texts(timeline_svg(model, frame))
        assert f"server at v{model.version_at(frame)}" in " ".join(texts)
        assert caption(model, frame)
    pm = ParameterModel(run, QUAD, model)
    for frame in range(model.frames):
        svg_texts(params_svg(pm, frame))


def test_parameter_view_draws_the_stale_gradient_where_it_was_computed():
    run = aps.simulate(QUAD, workers=4, policy="async", lr=0.1, steps=30, compute_times=[1, 1, 1, 3])
    model = TimelineModel(run.trace)
    pm = ParameterModel(run, QUAD, model)
    frame = model.first_stale_push()
    texts = svg_texts(params_svg(pm, frame))
    push = model.events[frame]
    assert f"computed on v{push.computed_on}" in texts and f"applied to v{push.applied_to}" in texts
    assert "away from a fresh gradient" in param_caption(pm, frame)
    view = ParameterView(run, QUAD, timeline=Timeline(run, frame=frame))
    assert "computed at v" in view.state


def test_parameter_view_refuses_what_it_cannot_draw():
    lsq = aps.problems.LeastSquares(n=64, dim=3, seed=0)
    with pytest.raises(ValueError, match="2-D"):
        ParameterView(aps.simulate(lsq, steps=5), lsq)
    with pytest.raises(TypeError, match="problem="):
        ParameterView(two_worker_async(), "quadratic")


def test_timeline_widget_steps_and_narrates():
    tl = Timeline(two_worker_async())
    assert tl.state.startswith("frame 0/") and "pulls v0" in tl.state
    tl.step(+1)
    tl.step(-5)
    assert tl.frame == 0
    tl.frame = tl.model.first_stale_push()
    assert "stale by 1" in tl.state and "stale 1" in tl.view.value
    with pytest.raises(ValueError, match="frame=999"):
        Timeline(two_worker_async(), frame=999)
    with pytest.raises(TypeError, match="run_or_trace="):
        Timeline([1, 2, 3])
    with pytest.raises(ValueError, match="no events"):
        Timeline(aps.simulate(QUAD, steps=0))


def test_every_widget_has_a_static_fallback():
    run = two_worker_async()
    for widget in (Timeline(run), ParameterView(run, QUAD), Playground(steps=40)):
        bundle = widget._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle
        assert svgs_in(bundle["text/html"]) and len(bundle["text/plain"]) <= 111
        assert "<svg" not in bundle["text/html"]        # an untrusted notebook drops inline SVG
    assert "stale by 1" in static_html(TimelineModel(run.trace))


@pytest.mark.parametrize("change", [dict(lr=10.0), dict(workers=1), dict(max_clocks_ahead=50),
                                    dict(workers=16, straggler=10.0), dict(push_every=10),
                                    dict(partition="sorted", lr_schedule="divide_by_staleness"),
                                    dict(policy="sync"), dict(lr=0.001)])
def test_playground_extremes_show_a_message_never_a_traceback(change):
    pg = Playground(steps=60)
    for name, value in change.items():
        pg.controls[name].value = value
    assert pg.losses.value.startswith("<svg") and pg.histogram.value.startswith("<svg")
    if change.get("lr") == 10.0:
        assert "diverged" in pg.message.value
    if change.get("workers") == 1:
        assert "nobody to be stale against" in pg.message.value


def test_charts_are_well_formed():
    runs = {p: aps.simulate(QUAD, workers=3, policy=p, max_clocks_ahead=1 if p == "ssp" else None, lr=0.1,
                            steps=20) for p in ("sync", "async", "ssp")}
    for by in ("version", "time"):
        texts = svg_texts(loss_curves(runs, by=by))
        assert {"sync", "async", "ssp"} <= set(texts)
    assert "mean 1.00" in svg_texts(histogram_svg([0, 10]))


def test_the_static_frame_follows_the_chosen_frame():
    run = two_worker_async()
    tl = Timeline(run, frame=3)
    assert "<b>frame 3</b>" in tl._repr_mimebundle_()["text/html"]
    assert f"<b>frame {tl.model.first_stale_push()}</b>" in Timeline(run)._repr_mimebundle_()["text/html"]


def test_a_ksync_run_s_still_picture_is_its_first_drop():
    """Under ksync no push is stale: a late gradient is dropped, and that is what a still shows."""
    run = aps.simulate(aps.problems.Quadratic(curvature=(1.0, 2.0)), workers=4, policy="ksync",
                       wait_for=3, steps=12, compute_times=[1.0, 1.0, 1.0, 3.0], seed=0)
    drop = run.trace.events.index(run.trace.drops[0])
    tl = Timeline(run)
    assert tl.model.first_stale_push() is None and tl.static_frame() == drop
    assert f"<b>frame {drop}</b>" in tl._repr_mimebundle_()["text/html"]


def test_the_playground_s_lr_is_on_its_slider_s_grid_and_the_browser_s_rounding_runs_nothing():
    import math

    for lr in (0.05, 0.003, 0.1):
        pg = aps.widgets.Playground(lr=lr, steps=20)
        slider = pg.controls["lr"]
        steps = (math.log10(lr) - slider.min) / slider.step
        assert abs(steps - round(steps)) < 1e-9, (lr, slider.min)     # the browser keeps lr as is
        runs = []
        pg.update = lambda: runs.append(slider.value)
        slider.value = lr * (1 + 1e-12)             # what a browser's rounding sends back: no re-run
        assert runs == []
        slider.value = lr * 10 ** slider.step       # a learner's move by one step: a re-run
        assert len(runs) == 1
