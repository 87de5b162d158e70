"""The live view (issue 17): the picture of a growing trace as a pure function (render_live), and
LiveView, which redraws it at a bounded rate and wires its controls to the LiveRun. No kernel."""
import re
import threading
import time

import pytest

import asyncps as aps
from engines import no_thread_survives, wait_until  # noqa: F401 (a fixture)
from asyncps.widgets.render_live import WindowModel, header, live_svg, staleness_counts

LSQ = aps.problems.LeastSquares(n=128, dim=4, seed=0)
QUAD = aps.problems.Quadratic(curvature=(1.0, 2.0))
FOREVER = 10**6
pytestmark = pytest.mark.usefixtures("no_thread_survives")


def labels(svg):
    """The version labels drawn in the timeline (server lane and compute bars)."""
    return [int(v) for v in re.findall(r">v(\d+)</text>", svg)]


# -- the pure function --------------------------------------------------------------------------
@pytest.mark.parametrize("policy,window", [("async", 2), ("async", 7), ("async", 40),
                                           ("ssp", 7), ("sync", 40), ("sync", 10**6)])
def test_a_window_keeps_the_versions_numbers_of_the_whole_trace(policy, window):
    bound = 1 if policy == "ssp" else None
    run = aps.simulate(LSQ, workers=3, policy=policy, max_clocks_ahead=bound, steps=25,
                       compute_times=[1, 1.5, 3], seed=0)
    whole = aps.widgets.TimelineModel(run.trace)
    for n in range(1, len(run.trace.events) + 1):             # the trace as it grew
        growing = aps.Trace(events=run.trace.events[:n], meta=run.trace.meta)
        model = WindowModel(growing, window)
        assert model.first == max(0, n - window) and model.frames == min(n, window)
        assert [model.version_at(j) for j in range(model.frames)] == \
               [whole.version_at(model.first + j) for j in range(model.frames)]


def test_live_svg_of_a_growing_run_shows_its_newest_events():
    live = aps.train(LSQ, workers=2, steps=FOREVER, lr=0.05, slowdown=[0.001, 0.001], live=True)
    wait_until(lambda: live.state["version"] >= 30, "30 versions")
    state = live.state
    early = live_svg(live.trace, state, window=40)
    assert f"server at v{state['version']} · {state['pushes']} pushes · lr 0.05" in early
    wait_until(lambda: live.state["version"] >= state["version"] + 60, "60 more versions")
    later = live_svg(live.trace, live.state, window=40)
    live.stop()
    assert min(labels(later)) > max(labels(early)) - 40        # the window slid on
    assert min(labels(later)) > min(labels(early))
    assert max(labels(later)) <= live.state["version"]
    assert later.startswith("<svg") and "loss per server version" in later
    assert "staleness of each push" in later


def test_live_svg_draws_each_metric_and_how_the_run_ended():
    run = aps.simulate(LSQ, workers=2, steps=20, seed=0)
    run.trace.metrics = {"accuracy": [0.5] * len(run.losses)}
    state = {"version": 20, "pushes": 20, "lr": 0.05, "paused": False, "running": False,
             "loss": 0.1, "lost": [1]}
    svg = live_svg(run.trace, state, ended="failed: worker 1 was lost")
    assert "accuracy per server version" in svg
    assert "lost: worker 1 · failed: worker 1 was lost" in svg
    assert header({**state, "running": True, "paused": True}).endswith("· paused")
    empty = aps.Trace(meta={"workers": 2})
    assert "waiting for the first event" in live_svg(empty, {**state, "version": 0})
    assert staleness_counts(run.trace).tolist() == run.trace.staleness_histogram().tolist()


# -- the widget ---------------------------------------------------------------------------------
def test_a_fast_run_is_redrawn_at_most_fps_times_a_second():
    live = aps.train(QUAD, workers=2, steps=FOREVER, lr=0.001, live=True)  # thousands of pushes/s
    start = time.monotonic()
    view = aps.widgets.LiveView(live, fps=10)
    time.sleep(1.5)
    live.stop()
    assert view.join(timeout=20)
    seconds = time.monotonic() - start
    assert live.result().trace.pushes[-1].applied_to > 10 * view.redraws   # far more than drawn
    assert 2 <= view.redraws <= 10 * seconds + 2                          # + the first and last
    assert "stopped by live.stop()" in view.picture.value


def test_fps_is_bounded_and_named():
    with aps.train(LSQ, workers=2, steps=FOREVER, slowdown=[0.001, 0.001], live=True) as live:
        with pytest.raises(ValueError, match=r"fps=30 is not allowed: fps must be .*<= 10"):
            aps.widgets.LiveView(live, fps=30)
        with pytest.raises(TypeError, match="live=.* must be a LiveRun"):
            aps.widgets.LiveView(live.state)


def test_a_slowdown_slider_and_the_lr_slider_change_the_run_and_are_recorded():
    live = aps.train(LSQ, workers=2, steps=FOREVER, lr=0.05, slowdown=[0.001, 0.001], live=True)
    view = live.view()
    assert isinstance(view, aps.widgets.LiveView)
    wait_until(lambda: live.state["version"] >= 5, "5 versions")
    view.controls["slowdown"][1].value = 0.004
    view.controls["lr"].value = 0.02
    assert live.state["slowdown"] == [0.001, 0.004]
    live.stop()
    view.join()
    controls = live.result().trace.controls
    assert [(c.what, c.worker, c.value) for c in controls[:2]] == \
           [("slow", 1, 0.004), ("lr", None, pytest.approx(0.02))]


def test_pause_and_stop_buttons_and_controls_disabled_at_the_end():
    live = aps.train(LSQ, workers=2, steps=FOREVER, slowdown=[0.001, 0.001], live=True)
    view = aps.widgets.LiveView(live)
    wait_until(lambda: live.state["version"] >= 5, "5 versions")
    view.controls["pause"].value = True
    assert live.state["paused"]
    view.controls["pause"].value = False
    view.controls["stop"].click()
    assert not live.running
    run = live.result()
    assert run.message == "stopped by live.stop()"
    assert [c.what for c in run.trace.controls] == ["pause", "resume", "stop"]
    assert view.join(timeout=20)
    assert "stopped by live.stop()" in view.message.value
    assert all(c.disabled for c in view.every_control())
    view.controls["stop"].click()                       # after the end: nothing happens, no error


def test_a_late_control_is_said_in_the_message_line_not_raised():
    live = aps.train(LSQ, workers=2, steps=20, live=True)
    view = aps.widgets.LiveView(live)
    live.result()
    view.controls["lr"].value = 0.5                     # the run has ended: too late
    assert "came too late" in view.message.value
    assert view.join(timeout=20)
    assert "finished" in view.picture.value


def test_a_killed_worker_under_sync_shows_the_error_in_the_view():
    live = aps.train(LSQ, workers=3, policy="sync", steps=FOREVER, lr=0.02, slowdown=[0.002] * 3,
                     live=True)
    view = aps.widgets.LiveView(live)
    wait_until(lambda: live.state["version"] >= 5, "5 versions")
    view.controls["worker"].value = 1
    view.controls["kill"].click()
    with pytest.raises(RuntimeError, match="worker 1 was lost"):
        live.result()
    assert view.join(timeout=20)
    assert re.search(r"failed: .*worker 1 was lost", view.message.value)
    assert "failed: " in view.picture.value and "lost: worker 1" in view.picture.value
    assert all(c.disabled for c in view.every_control())


def test_closing_the_view_stops_its_thread_and_not_the_run():
    with aps.train(LSQ, workers=2, steps=FOREVER, slowdown=[0.001, 0.001], live=True) as live:
        view = aps.widgets.LiveView(live)
        view.close()
        assert live.running
        assert not any(t.name == "asyncps-live-view" for t in threading.enumerate())


def test_jupyter_shows_a_live_run_as_its_view():
    live = aps.train(LSQ, workers=2, steps=20, live=True)
    live.result()
    bundle = live._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"].startswith("LiveRun(ended")
    for t in threading.enumerate():
        if t.name == "asyncps-live-view":
            t.join(timeout=20)
