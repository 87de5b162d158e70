"""Every view of a ksync run draws its drops (a gradient that came after its round closed) and the
"round" waits of ksync and kasync: Perfetto, the timeline widget, the live view, matplotlib, the
parameter view, and the JSON trace file."""
import json
import re
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import asyncps as aps  # noqa: E402
from asyncps.core.chrome import chrome_trace  # noqa: E402
from asyncps.widgets import Timeline, TimelineModel, caption, static_html, timeline_svg  # noqa: E402
from asyncps.widgets.render_live import WindowModel, live_svg  # noqa: E402
from asyncps.widgets.render_params import ParameterModel  # noqa: E402

PROBLEM = aps.problems.LeastSquares(n=512, dim=10, seed=0)
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def ksync():
    return aps.simulate(PROBLEM, workers=4, policy="ksync", wait_for=3, lr=0.05, steps=60,
                        compute_times=[1, 1, 1, 4], seed=1)


@pytest.fixture(scope="module")
def kasync():
    return aps.simulate(PROBLEM, workers=4, policy="kasync", wait_for=2, lr=0.05, steps=60,
                        compute_times=[1, 1, 1, 4], seed=1)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def frames_of(trace, kind):
    return [i for i, e in enumerate(trace.events) if e.kind == kind]


def svg_texts(svg):
    root = ET.fromstring(svg)                         # also proves the SVG is well-formed
    return [t.text for t in root.iter(f"{SVG}text")]


def test_the_runs_have_what_these_tests_draw(ksync, kasync):
    assert len(ksync.trace.drops) >= 5
    assert not kasync.trace.drops
    assert {w.reason for w in kasync.trace.waits} == {"round"} and len(kasync.trace.waits) >= 5


# -- Perfetto (the Chrome trace-event format) -------------------------------------------------------
def test_each_drop_is_one_instant_on_its_worker_s_lane_with_its_versions(ksync):
    data = chrome_trace(ksync.trace)
    json.dumps(data)                                   # what to_chrome_trace(path) writes
    drops = [e for e in data["traceEvents"] if e.get("cat") == "drop"]
    assert len(drops) == len(ksync.trace.drops)
    expected = sorted((d.time * 1e3, d.worker + 1, d.worker, d.computed_on, d.version)
                      for d in ksync.trace.drops)
    got = sorted((e["ts"], e["tid"], e["args"]["worker"], e["args"]["computed_on"],
                  e["args"]["version"]) for e in drops)
    assert got == expected
    for e, d in zip(sorted(drops, key=lambda e: (e["ts"], e["tid"])),
                    sorted(ksync.trace.drops, key=lambda d: (d.time, d.worker))):
        assert e["ph"] == "i" and e["s"] == "t" and e["pid"] == 1
        assert set(e["args"]) == {"worker", "computed_on", "version"}
        assert e["name"] == f"dropped (computed on v{d.computed_on}, server at v{d.version})"


def test_a_drop_reaches_no_server_slice_and_no_flow_arrow(ksync):
    data = chrome_trace(ksync.trace)
    server = [e for e in data["traceEvents"] if e["ph"] == "X" and e["tid"] == 0]
    assert len(server) == len(ksync.trace.pushes)
    flows = [e for e in data["traceEvents"] if e["ph"] in ("s", "f")]
    assert len(flows) == 2 * len(ksync.trace.pushes)
    # every arrow leaves from inside the compute that made the pushed gradient, never a dropped one
    computes = {(e["tid"], e["ts"] + e["dur"]): e for e in data["traceEvents"]
                if e["ph"] == "X" and e.get("cat") == "compute"}
    for s in (e for e in flows if e["ph"] == "s"):
        assert any(tid == s["tid"] and c["ts"] <= s["ts"] <= end for (tid, end), c in computes.items())


@pytest.mark.parametrize("which,k", [("ksync", 3), ("kasync", 2)])
def test_a_round_of_k_pushes_is_k_minus_one_joins_and_one_apply(which, k, request):
    trace = request.getfixturevalue(which).trace
    names = [e["name"] for e in chrome_trace(trace)["traceEvents"] if e["ph"] == "X" and e["tid"] == 0]
    applies = [n for n in names if n.startswith("apply to")]
    joins = [n for n in names if n.startswith("join the round")]
    assert len(applies) == len(trace.losses) - 1 == len(trace.pushes) // k
    assert len(joins) == len(trace.pushes) - len(applies) == (k - 1) * len(applies)
    assert applies[:2] == ["apply to v0 → v1", "apply to v1 → v2"]
    assert joins[:k - 1] == ["join the round on v0"] * (k - 1)


def test_round_waits_are_named_slices_on_the_worker_s_lane(kasync):
    waits = [e for e in chrome_trace(kasync.trace)["traceEvents"] if e.get("cat") == "wait"]
    assert len(waits) == len(kasync.trace.waits)
    assert {e["name"] for e in waits} == {"wait (round)"}
    assert sorted((e["tid"], e["ts"], e["dur"]) for e in waits) == \
        sorted((w.worker + 1, w.start * 1e3, round((w.end - w.start) * 1e3, 3)) for w in kasync.trace.waits)


# -- the timeline widget ------------------------------------------------------------------------
def test_a_drop_s_frame_draws_it_and_says_it_was_dropped(ksync):
    model = TimelineModel(ksync.trace)
    drops = frames_of(ksync.trace, "drop")
    before = timeline_svg(model, drops[0] - 1)
    assert "dropped" not in svg_texts(before)
    for frame in drops:
        d = model.events[frame]
        said = caption(model, frame)
        assert said == (f"worker {d.worker}'s gradient, computed on v{d.computed_on}, came after its "
                        f"round closed (the server is at v{d.version}): dropped, never applied")
        svg = timeline_svg(model, frame)
        assert "dropped" in svg_texts(svg)              # the current drop is always labelled
        title = ET.fromstring(svg).find(f"{SVG}title").text
        assert title.endswith(said)
    # the drop's mark: a dashed stub that goes nowhere, and a ✕ on its worker's own lane
    frame = drops[0]
    assert timeline_svg(model, frame).count('stroke-dasharray="2,2"') == 1 + before.count(
        'stroke-dasharray="2,2"')
    d, lane_top = model.events[frame], 22 + (model.events[frame].worker + 1) * (26 + 8)
    crosses = [el for el in ET.fromstring(timeline_svg(model, frame)).iter(f"{SVG}line")
               if el.get("stroke") == "#616161" and el.get("stroke-dasharray") is None
               and el.get("x1") != el.get("x2")]                  # the ✕'s diagonals, not ticks
    assert crosses and all(lane_top <= float(el.get(y)) <= lane_top + 26
                           for el in crosses for y in ("y1", "y2")), "the ✕ sits on the lane"


def test_every_frame_of_a_ksync_and_a_kasync_run_renders(ksync, kasync):
    for run in (ksync, kasync):
        model = TimelineModel(run.trace)
        for frame in range(model.frames):
            svg_texts(timeline_svg(model, frame))
            assert caption(model, frame)
        assert "<img" in static_html(model)


def test_the_pushes_of_a_round_count_to_k_not_to_the_number_of_workers(ksync, kasync):
    model = TimelineModel(ksync.trace)
    pushes = frames_of(ksync.trace, "push")
    assert "the server waits for 2 more before v0 moves" in caption(model, pushes[0])
    assert "the server waits for 1 more before v0 moves" in caption(model, pushes[1])
    assert ("push completes the round: the 3 gradients computed on v0 are averaged and applied "
            "to v0 → v1") in caption(model, pushes[2])
    model = TimelineModel(kasync.trace)
    pushes = frames_of(kasync.trace, "push")
    assert "the server waits for 1 more before v0 moves" in caption(model, pushes[0])
    assert ("push completes the round: the 2 gradients of the round (fresh or stale) are averaged "
            "and applied to v0 → v1") in caption(model, pushes[1])


def test_a_round_wait_says_the_worker_waits_until_its_round_closes(kasync):
    model = TimelineModel(kasync.trace)
    for frame in frames_of(kasync.trace, "wait"):
        w = model.events[frame]
        assert caption(model, frame) == (
            f"worker {w.worker} waited until its round closed, from t={w.start:.3g} to t={w.end:.3g}: "
            f"the server closes a round on the first 2 gradients, fresh or stale")
        assert "waited at the SSP gate" not in caption(model, frame)
    ksync_wait = aps.Trace(events=[aps.Pull(0, 0, 0.0), aps.Compute(0, 0.0, 1.0, 0),
                                   aps.Push(0, 0, 0, 0, 1.0), aps.Wait(0, 1.0, 2.0, "round")],
                           losses=[1.0], meta={"workers": 2, "policy": "ksync", "wait_for": 2})
    said = caption(TimelineModel(ksync_wait), 3)
    assert said == ("worker 0 waited until its round closed, from t=1 to t=2: the server closes a "
                    "round on the first 2 gradients computed on its version; one that comes later "
                    "is dropped")


def test_the_timeline_widget_shows_a_drop_frame(ksync):
    frame = frames_of(ksync.trace, "drop")[0]
    tl = Timeline(ksync, frame=frame)
    assert "came after its round closed" in tl.state
    assert ">dropped</text>" in tl.view.value
    assert "dropped" in tl.animated_svg(still=frame)


# -- the live view --------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["ksync", "kasync"])
def test_a_live_window_keeps_the_versions_of_the_whole_k_run(which, request):
    run = request.getfixturevalue(which)
    whole = TimelineModel(run.trace)
    for n in range(1, 160, 3):                             # the trace as it grew
        growing = aps.Trace(events=run.trace.events[:n], meta=run.trace.meta)
        model = WindowModel(growing, 40)
        assert [model.version_at(j) for j in range(model.frames)] == \
               [whole.version_at(model.first + j) for j in range(model.frames)]


def test_live_svg_of_a_ksync_run_ending_on_a_drop(ksync):
    last = frames_of(ksync.trace, "drop")[-1]
    growing = aps.Trace(events=ksync.trace.events[:last + 1], losses=ksync.trace.losses,
                        meta=ksync.trace.meta)
    state = {"version": ksync.trace.drops[-1].version, "pushes": 0, "lr": 0.05, "paused": False,
             "running": True, "loss": None, "lost": []}
    svg = live_svg(growing, state, window=40)
    assert ">dropped</text>" in svg and "came after its round closed" in svg


# -- matplotlib -----------------------------------------------------------------------------------
def test_the_plot_marks_each_drop_where_its_push_would_be_and_says_so_in_the_legend(ksync):
    ax = aps.plot.timeline(ksync)
    dropped = [c for c in ax.collections if c.get_label() == "dropped"]
    assert len(dropped) == 1
    assert matplotlib.colors.same_color(dropped[0].get_edgecolor()[0], aps.plot.COLORS["dropped"])
    assert sorted(map(tuple, dropped[0].get_offsets().tolist())) == \
        sorted((d.time, d.worker + 1 - 0.42) for d in ksync.trace.drops)
    assert "dropped" in [t.get_text() for t in ax.get_legend().get_texts()]
    early = aps.plot.timeline(ksync, until=5)
    marks = [c for c in early.collections if c.get_label() == "dropped"][0].get_offsets()
    assert len(marks) == sum(d.time <= 5 for d in ksync.trace.drops) >= 1


def test_a_plot_without_drops_has_no_dropped_mark_and_draws_the_round_waits(kasync):
    ax = aps.plot.timeline(kasync)
    assert "dropped" not in [t.get_text() for t in ax.get_legend().get_texts()]
    assert not [c for c in ax.collections if c.get_label() == "dropped"]
    waits = sum(len(c.get_paths()) for c in ax.collections
                if c.get_paths() and matplotlib.colors.same_color(c.get_facecolor()[0][:3],
                                                                  aps.plot.COLORS["wait"]))
    assert waits == len(kasync.trace.waits)


# -- the parameter view ---------------------------------------------------------------------------
def test_the_parameter_view_shows_the_step_when_k_pushes_close_a_round():
    quad = aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0])
    run = aps.simulate(quad, workers=3, policy="ksync", wait_for=2, lr=0.1, steps=10,
                       compute_times=[1, 1, 3], seed=0)
    model = TimelineModel(run.trace)
    pm = ParameterModel(run, quad, model)
    pushes = frames_of(run.trace, "push")
    assert pm.arrows(pushes[0]) is None                 # the round is not averaged yet
    assert pm.arrows(pushes[1]) is not None             # 2 of 3 workers: the round closed


# -- the JSON trace file --------------------------------------------------------------------------
def test_a_trace_with_drops_reads_back_exactly(ksync, tmp_path):
    text = ksync.trace.to_json()
    back = aps.Trace.from_json(text)
    assert back.events == ksync.trace.events
    assert back.drops == ksync.trace.drops and all(isinstance(d, aps.Drop) for d in back.drops)
    assert back.meta["wait_for"] == 3 and back.policy.drops_stale
    assert chrome_trace(back) == chrome_trace(ksync.trace)
    assert [e["kind"] for e in json.loads(text)["events"]].count("drop") == len(ksync.trace.drops)
    path = tmp_path / "ksync.npz"
    ksync.save(path)
    loaded = aps.load_run(path)
    assert loaded.trace.drops == ksync.trace.drops
    assert np.array_equal(loaded.params, ksync.params)


def test_a_damaged_drop_in_a_trace_file_says_where(ksync):
    data = ksync.trace.to_dict()
    i = frames_of(ksync.trace, "drop")[0]
    data["events"][i] = {**data["events"][i], "version": -1}
    with pytest.raises(ValueError, match=re.escape(f"event {i} (drop): version=-1")):
        aps.Trace.from_dict(data)
