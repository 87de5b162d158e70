"""A classroom run's views draw a lane only for each seat a student took (trace.meta["students"]),
in seat order, not one per seat of the room: the Timeline, the live picture (its lost line too),
the matplotlib timeline and the LiveView's controls. Other runs draw every worker, as before."""
import re

import ipywidgets
import pytest

import asyncps as aps
from engines import no_thread_survives, wait_until  # noqa: F401 (a fixture)
from asyncps.widgets import render_timeline as rt
from asyncps.widgets.render_live import header, live_svg

LSQ = aps.problems.LeastSquares(n=128, dim=4, seed=0)
FOREVER = 10**6


def run_of_five():
    return aps.simulate(LSQ, workers=5, steps=30, compute_times=[1, 1.3, 1.7, 2.1, 2.6], seed=0)


def classroom(run, students):
    """The same trace as a classroom run's in which only the seats of `students` were taken."""
    trace = aps.Trace(events=list(run.trace.events), losses=list(run.trace.losses),
                      meta={**run.trace.meta, "engine": "classroom", "students": dict(students)})
    return trace


def height(svg):
    return float(re.search(r'<svg[^>]*\bheight="([\d.]+)"', svg).group(1))


def lane_labels(svg):
    return re.findall(r'text-anchor="end"[^>]*>([^<]+)</text>', svg)


def test_a_classroom_timeline_draws_only_the_seats_taken_in_seat_order():
    run = run_of_five()
    trace = classroom(run, {"3": "cy", "0": "ada"})
    model = rt.TimelineModel(trace)
    svg = rt.timeline_svg(model, model.frames - 1)
    whole = rt.timeline_svg(rt.TimelineModel(run.trace), model.frames - 1)
    assert ">ada<" in svg and ">cy<" in svg
    assert not re.search(r">worker \d<", svg)
    names = [n for n in lane_labels(svg) if n in ("server", "ada", "cy")]
    assert names == ["server", "ada", "cy"]                   # seat order, under the server
    assert "· 2 workers ·" in svg and "· 5 workers ·" in whole
    assert height(svg) < height(whole)
    assert height(svg) == rt.lane_y(3) + rt.AXIS
    assert all(f">worker {k}<" in whole for k in range(5))   # any other trace: every worker
    assert rt.lanes(trace) == [0, 3] and rt.lanes(run.trace) == [0, 1, 2, 3, 4]


def test_a_classroom_timeline_puts_each_event_on_its_student_s_lane():
    trace = classroom(run_of_five(), {"0": "ada", "3": "cy"})
    model = rt.TimelineModel(trace)
    svg = rt.timeline_svg(model, model.frames - 1)
    bottom = rt.lane_y(3)                                      # below cy's lane: nothing drawn
    ys = [float(y) for y in re.findall(r'<rect x="[\d.-]+" y="([\d.-]+)"', svg)]
    assert ys and max(ys) < bottom


def test_a_classroom_before_anyone_joined_draws_the_server_lane_only():
    trace = classroom(run_of_five(), {})
    model = rt.TimelineModel(trace)
    for frame in (0, model.frames // 2, model.frames - 1):
        svg = rt.timeline_svg(model, frame)
        assert ">server<" in svg and "worker" not in " ".join(lane_labels(svg))
        assert "· 0 workers ·" in svg and height(svg) == rt.lane_y(1) + rt.AXIS
    assert "<img" in rt.static_html(model)
    state = {"version": 30, "pushes": 30, "lr": 0.05, "paused": False, "running": True,
             "loss": 0.1, "lost": []}
    assert live_svg(trace, state).startswith("<svg")
    assert rt.lanes(trace) == []
    assert rt.lanes(aps.Trace(meta={"workers": 30, "engine": "classroom", "students": {}})) == []


def test_the_live_picture_draws_the_students_and_names_the_lost_ones():
    run = run_of_five()
    trace = classroom(run, {"0": "ada", "3": "cy"})
    state = {"version": 30, "pushes": 30, "lr": 0.05, "paused": False, "running": False,
             "loss": 0.1, "lost": [0, 3]}
    svg = live_svg(trace, state, ended="stopped by live.stop()")
    assert "lost: ada, cy · stopped by live.stop()" in svg
    assert ">ada<" in svg and ">cy<" in svg and ">worker 1<" not in svg
    assert height(svg) < height(live_svg(run.trace, state))
    assert header(state, trace=trace) == ("server at v30 · 30 pushes · lr 0.05 · loss 0.1 · "
                                          "lost: ada, cy · ending")
    assert "lost: worker 0, 3 ·" in header(state, trace=run.trace)  # not a classroom: as before
    assert "lost: worker 0, 3 ·" in header(state)


def test_the_matplotlib_timeline_has_a_row_per_student():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    run = run_of_five()
    ax = aps.plot.timeline(classroom(run, {"0": "ada", "3": "cy"}))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["server", "ada", "cy"]
    assert "2 workers" in ax.get_title(loc="left")
    whole = aps.plot.timeline(run)
    assert [t.get_text() for t in whole.get_yticklabels()] == ["server"] + [f"worker {k}"
                                                                           for k in range(5)]
    plt.close("all")


def shown_sliders(view):
    """The slowdown sliders the view shows (in its widget tree), by their names."""
    found, todo = [], [view]
    while todo:
        widget = todo.pop(0)
        if isinstance(widget, ipywidgets.FloatSlider):
            found.append(widget.description)
        todo = list(getattr(widget, "children", ())) + todo
    return found


@pytest.mark.usefixtures("no_thread_survives")
def test_the_live_view_lists_only_the_seats_taken_and_follows_students_as_they_join():
    live = aps.train(LSQ, workers=5, steps=FOREVER, lr=0.05, slowdown=[0.002] * 5, live=True)
    view = None
    try:
        live.trace.meta.update(engine="classroom", students={"0": "ada"})
        view = aps.widgets.LiveView(live, fps=10)
        c = view.controls
        assert shown_sliders(view) == ["ada"]
        assert c["worker"].options == (("ada", 0),) and c["worker"].value == 0
        live.trace.meta["students"]["3"] = "cy"                # a student takes seat 3
        wait_until(lambda: c["worker"].options == (("ada", 0), ("cy", 3)), "the dropdown follows")
        wait_until(lambda: shown_sliders(view) == ["ada", "cy"], "the sliders follow")
        assert c["worker"].value == 0
        wait_until(lambda: ">cy<" in view.picture.value and ">ada<" in view.picture.value,
                   "the picture draws both students")
        assert ">worker 1<" not in view.picture.value
        c["slowdown"][3].value = 0.004                         # seat 3's slider: worker 3
        assert live.state["slowdown"][3] == 0.004
    finally:
        live.stop()
        if view is not None:
            assert view.join(timeout=20)
            view.close()


@pytest.mark.usefixtures("no_thread_survives")
def test_a_live_classroom_view_opened_before_anyone_joined_has_no_worker_controls():
    live = aps.train(LSQ, workers=3, steps=FOREVER, lr=0.05, slowdown=[0.002] * 3, live=True)
    view = None
    try:
        live.trace.meta.update(engine="classroom", students={})
        view = aps.widgets.LiveView(live, fps=10)
        assert shown_sliders(view) == [] and view.controls["worker"].options == ()
        assert view.controls["worker"].value is None
        view.controls["kill"].click()                          # nobody to kill: said, not raised
        assert "nobody to kill" in view.message.value
        live.trace.meta["students"]["1"] = "bo"
        wait_until(lambda: view.controls["worker"].options == (("bo", 1),), "the dropdown follows")
        assert view.controls["worker"].value == 1 and shown_sliders(view) == ["bo"]
    finally:
        live.stop()
        if view is not None:
            assert view.join(timeout=20)
            view.close()


def test_perfetto_names_each_classroom_track_by_its_student():
    run = aps.simulate(aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0]), workers=5, steps=10,
                       compute_times=[1, 1, 1, 1, 1])
    run.trace.meta.update(engine="classroom", students={"0": "ada", "3": "cy"})
    from asyncps.core.chrome import chrome_trace

    names = [e["args"]["name"] for e in chrome_trace(run.trace)["traceEvents"]
             if e.get("name") == "thread_name"]
    assert names == ["server", "ada", "cy"]
