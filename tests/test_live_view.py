"""The live view (issue 17): the picture of a growing trace as a pure function (render_live), and
LiveView, which redraws it at a bounded rate and wires its controls to the LiveRun. No kernel."""
import re
import threading
import time
from dataclasses import replace

import pytest

import asyncps as aps
from engines import no_thread_survives, wait_until  # noqa: F401 (a fixture)
from asyncps.widgets import render_charts, render_timeline
from asyncps.widgets.render_live import POINTS, WindowModel, header, live_svg, staleness_counts

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


class Counted(list):
    """A list that counts the items read from it (one per index, len() per slice)."""

    def __init__(self, items):
        super().__init__(items)
        self.read = 0

    def __getitem__(self, at):
        got = super().__getitem__(at)
        self.read += len(got) if isinstance(at, slice) else 1
        return got


def later(trace, by):
    """The same trace as if the run had made `by` versions before it: every version number + by,
    the same times, and a loss for each of those earlier versions (a long run's newest events)."""
    shift = lambda e: replace(e, **{f: getattr(e, f) + by for f in ("version", "computed_on",  # noqa: E731
                                                                  "applied_to") if hasattr(e, f)})
    return aps.Trace(events=[shift(e) for e in trace.events], losses=[1.0] * by + trace.losses,
                     meta=trace.meta)


@pytest.mark.parametrize("policy", ["async", "sync"])
def test_a_window_at_version_a_million_costs_what_one_at_version_ten_costs(policy, monkeypatch):
    """(A bar's version label is drawn where it fits, and "v1000027" needs a wider bar than "v27":
    label widths are set aside here, so that the two pictures differ in their numbers only.)"""
    monkeypatch.setattr(render_timeline, "LABEL_CHAR", 0.0)
    run = aps.simulate(LSQ, workers=3, policy=policy, steps=30, compute_times=[1, 1.5, 3], seed=0)
    short, long = run.trace, later(run.trace, 10**6)
    drawn, read = {}, {}
    for name, trace in (("short", short), ("long", long)):
        model = WindowModel(trace, window=40)
        assert len(model.version_time) <= 40 + 1                # built: the window's versions only
        model.version_time = Counted(model.version_time)
        drawn[name] = render_timeline.timeline_svg(model, model.frames - 1)
        read[name] = model.version_time.read
    assert read["long"] == read["short"] <= 2 * (40 + 1)        # the same work, whatever the version
    assert labels(drawn["long"]) == [v + 10**6 for v in labels(drawn["short"])]
    at = aps.widgets.TimelineModel(short).version_at(len(short.events) - 1)
    assert f"server at v{10**6 + at}</text>" in drawn["long"]
    assert 10**6 + at - 40 <= min(labels(drawn["long"])) <= max(labels(drawn["long"])) <= 10**6 + at
    assert drawn["long"] == re.sub(r"\bv(\d+)", lambda m: f"v{int(m[1]) + 10**6}", drawn["short"])


def test_live_svg_of_a_run_at_version_a_million_reads_a_few_hundred_losses(monkeypatch):
    run = aps.simulate(LSQ, workers=2, steps=20, seed=0)
    trace = later(run.trace, 10**6)
    trace.losses = Counted(trace.losses)
    points = []
    draw_lines = render_charts.lines_svg

    def counted(series, *args, **kwargs):
        points.append(len(series[0][1]))
        return draw_lines(series, *args, **kwargs)

    monkeypatch.setattr(render_charts, "lines_svg", counted)
    version = 10**6 + 20
    state = {"version": version, "pushes": version, "lr": 0.05, "paused": False, "running": True,
             "loss": 0.1, "lost": []}
    svg = live_svg(trace, state, window=40)
    assert points and max(points) <= POINTS + 2                  # the curve: thinned
    assert trace.losses.read <= POINTS + 3                       # and only those read
    assert f"server at v{version} ·" in svg and f"server at v{version}</text>" in svg
    assert version - 40 <= min(labels(svg)) <= max(labels(svg)) <= version


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


def test_code_that_pauses_or_changes_the_run_moves_the_controls_and_records_it_once():
    live = aps.train(LSQ, workers=2, steps=FOREVER, lr=0.05, slowdown=[0.001, 0.001], live=True)
    view = aps.widgets.LiveView(live)
    wait_until(lambda: live.state["version"] >= 5, "5 versions")
    live.pause()
    wait_until(lambda: view.controls["pause"].value, "the toggle follows live.pause()", seconds=1.0)
    live.slow(0, 0.6)                                   # beyond the slider's end: it grows
    live.set_lr(0.00001)                                # below the slider's range: it grows
    wait_until(lambda: view.controls["slowdown"][0].value == 0.6, "the slider follows live.slow")
    wait_until(lambda: view.controls["lr"].value == pytest.approx(1e-5), "the lr follows set_lr")
    assert format(view.controls["lr"].value, view.controls["lr"].readout_format) == "0.0000100"
    live.resume()
    wait_until(lambda: not view.controls["pause"].value, "the toggle follows live.resume()",
               seconds=1.0)
    live.stop()
    assert view.join(timeout=20)
    assert [(c.what, c.worker, c.value) for c in live.result().trace.controls] == \
           [("pause", None, None), ("slow", 0, 0.6), ("lr", None, pytest.approx(1e-5)),
            ("resume", None, None), ("stop", None, None)]          # each once: no echo


def test_a_tick_that_read_the_state_before_a_click_leaves_the_clicked_toggle_alone():
    live = aps.train(LSQ, workers=2, steps=FOREVER, slowdown=[0.001, 0.001], live=True)
    view = aps.widgets.LiveView(live)
    view.close()                                        # the ticks are driven here, one by one

    def tick(state):                                    # as the view's own thread would
        view._thread = threading.Thread(target=view._follow, args=(state,))
        view._thread.start()
        view._thread.join()

    before = live.state
    view.controls["pause"].value = True                 # by hand: live.pause()
    tick(before)                                        # read just before the click
    assert view.controls["pause"].value and live.state["paused"]
    tick(live.state)
    live.resume()                                       # from code: the toggle follows
    tick(live.state)
    assert not view.controls["pause"].value
    live.stop()
    assert [c.what for c in live.result().trace.controls] == ["pause", "resume", "stop"]


@pytest.mark.parametrize("lr", [0.05, 0.003, 1.0, 2e-5])
def test_the_readouts_show_each_lr_and_slowdown_in_full(lr):
    """The browser formats a readout with d3-format; its "f" is Python's "f" (JavaScript's
    toFixed), so what is formatted here is what the learner reads."""
    with aps.train(LSQ, workers=2, steps=FOREVER, lr=lr, slowdown=[0.003, 0.25], live=True) as live:
        view = aps.widgets.LiveView(live)
        view.close()
    slider = view.controls["lr"]
    assert slider.readout_format.endswith("f")
    shown = lambda value: format(value, slider.readout_format)          # noqa: E731
    low, high = 10 ** slider.min, 10 ** slider.max
    assert float(shown(low)) > 0 and shown(low) != shown(2 * low)       # its first digit, at least
    assert float(shown(lr)) == pytest.approx(lr, rel=0.01)             # where it starts: 2 digits
    assert len(shown(high)) <= 12                                       # fits the readout's box
    for value in (0.003, 0.25):                                         # each in full
        if low <= value <= high:
            assert float(shown(value)) == value
    if lr == 0.05:
        assert (shown(0.003), shown(0.25)) == ("0.0030", "0.2500")
    slow = [format(s.value, s.readout_format) for s in view.controls["slowdown"]]
    assert slow == ["0.003", "0.250"]
    columns = view.children[0].children                                 # fit in the picture
    assert sum(int(c.layout.width[:-2]) for c in view.controls["slowdown"][:1] +
               [view.controls["lr"]]) <= view.width
    assert all(c.layout.flex == "0 0 auto" for c in columns)           # and never squeezed


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
