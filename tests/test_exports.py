"""Exports: a trace in the Chrome trace-event format (Perfetto), figures through matplotlib."""
import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import asyncps as aps  # noqa: E402
from asyncps.core.chrome import chrome_trace  # noqa: E402

REQUIRED = ("name", "ph", "ts", "pid", "tid")


@pytest.fixture(scope="module")
def run():
    return aps.simulate(aps.problems.Quadratic(curvature=[1.0, 2.0]), workers=3, policy="async",
                        steps=30, compute_times=[1, 1, 3], seed=0)


@pytest.fixture(scope="module")
def sync_run():
    return aps.simulate(aps.problems.Quadratic(curvature=[1.0, 2.0]), workers=3, policy="sync",
                        steps=8, compute_times=[1, 1, 3], seed=0)


@pytest.fixture(autouse=True)
def no_show(monkeypatch):
    """A helper that calls plt.show() fails the test; every figure is closed afterwards."""
    def show(*args, **kwargs):
        raise AssertionError("a plotting helper called plt.show()")
    monkeypatch.setattr(plt, "show", show)
    yield
    plt.close("all")


def of_phase(data, ph, tid=None):
    return [e for e in data["traceEvents"] if e["ph"] == ph and (tid is None or e["tid"] == tid)]


def thread_names(data):
    return {e["tid"]: e["args"]["name"] for e in of_phase(data, "M") if e["name"] == "thread_name"}


# -- the Chrome trace-event format ---------------------------------------------------------
def test_every_event_has_the_fields_the_format_requires(run):
    data = chrome_trace(run.trace)
    assert data["displayTimeUnit"] == "ms" and data["traceEvents"]
    for e in data["traceEvents"]:
        assert all(key in e for key in REQUIRED), e
        assert e["ts"] >= 0, e
        if e["ph"] == "X":
            assert e["dur"] >= 0, e
        if e["ph"] in ("s", "f"):
            assert "id" in e and "cat" in e, e
        if e["ph"] == "i":
            assert e["s"] == "t", e
    json.dumps(data, allow_nan=False)                # strict JSON: no NaN or infinity anywhere


def test_one_thread_for_the_server_and_one_per_worker_in_one_process(run):
    data = chrome_trace(run.trace)
    assert thread_names(data) == {0: "server", 1: "worker 0", 2: "worker 1", 3: "worker 2"}
    assert len({e["pid"] for e in data["traceEvents"]}) == 1
    assert [e["name"] for e in of_phase(data, "M") if e["name"] == "process_name"] == ["process_name"]
    order = {e["tid"]: e["args"]["sort_index"] for e in of_phase(data, "M")
             if e["name"] == "thread_sort_index"}
    assert sorted(order, key=order.get) == [0, 1, 2, 3]
    used = {e["tid"] for e in data["traceEvents"]}
    assert used <= set(thread_names(data))


def test_one_slice_per_compute_on_its_worker_s_thread_with_the_version_it_read(run):
    data = chrome_trace(run.trace)
    slices = [e for e in of_phase(data, "X") if e["cat"] == "compute"]
    computes = run.trace.computes
    assert len(slices) == len(computes)
    assert sorted((e["tid"], e["args"]["computed_on"], e["ts"]) for e in slices) == \
        sorted((c.worker + 1, c.computed_on, round(c.start * 1000, 3)) for c in computes)
    assert all(e["dur"] == 1000.0 for e in slices if e["tid"] in (1, 2))   # compute time 1 -> 1 ms
    assert all(e["dur"] == 3000.0 for e in slices if e["tid"] == 3)
    assert "1 ms" in data["otherData"]["time_unit"]
    assert data["otherData"]["policy"] == "async" and data["otherData"]["workers"] == 3


def test_slices_on_each_thread_are_sorted_and_never_overlap(run, sync_run):
    for trace in (run.trace, sync_run.trace):
        data = chrome_trace(trace)
        for tid in thread_names(data):
            slices = of_phase(data, "X", tid)
            starts = [e["ts"] for e in slices]
            assert starts == sorted(starts)
            for a, b in zip(slices, slices[1:]):
                assert a["ts"] + a["dur"] <= b["ts"] + 1e-6, (a, b)


def test_each_push_is_a_flow_from_its_worker_to_the_server_slice_that_applied_it(run):
    data = chrome_trace(run.trace)
    starts, ends = of_phase(data, "s"), of_phase(data, "f")
    pushes = run.trace.pushes
    assert len(starts) == len(ends) == len(pushes)
    assert len({e["id"] for e in starts}) == len(starts)
    assert {e["id"] for e in starts} == {e["id"] for e in ends}
    end_of = {e["id"]: e for e in ends}
    server = of_phase(data, "X", 0)
    assert [(e["args"]["computed_on"], e["args"]["applied_to"], e["args"]["staleness"])
            for e in server] == [(p.computed_on, p.applied_to, p.staleness) for p in pushes]
    for s in starts:
        f = end_of[s["id"]]
        assert (f["name"], f["cat"], f["tid"], f.get("bp")) == (s["name"], s["cat"], 0, "e")
        assert s["tid"] != 0 and f["ts"] >= s["ts"]
        # each end lies strictly inside one server slice, each start inside one compute of its
        # worker: Perfetto binds a flow to the slice that encloses it
        assert sum(e["ts"] < f["ts"] < e["ts"] + e["dur"] for e in server) == 1
        assert sum(e["ts"] < s["ts"] < e["ts"] + e["dur"]
                   for e in of_phase(data, "X", s["tid"]) if e["cat"] == "compute") == 1


def test_the_server_slice_names_the_version_each_push_makes(run, sync_run):
    names = [e["name"] for e in of_phase(chrome_trace(run.trace), "X", 0)]
    assert names == [f"apply to v{p.applied_to} → v{p.applied_to + 1}" for p in run.trace.pushes]
    sync = of_phase(chrome_trace(sync_run.trace), "X", 0)
    made = [e["name"] for e in sync if "→" in e["name"]]
    assert made == [f"apply to v{v} → v{v + 1}" for v in range(len(sync_run.losses) - 1)]
    versions = [e["args"]["version"] for e in of_phase(chrome_trace(sync_run.trace), "C")
                if e["name"] == "server"]
    assert versions == list(range(len(sync_run.losses)))


def test_pulls_waits_and_a_lost_worker_are_on_the_worker_s_thread(sync_run):
    data = chrome_trace(sync_run.trace)
    pulls = [e for e in of_phase(data, "i") if e["cat"] == "pull"]
    assert sorted((e["tid"], e["args"]["version"]) for e in pulls) == \
        sorted((p.worker + 1, p.version) for p in sync_run.trace.pulls)
    waits = [e for e in of_phase(data, "X") if e["cat"] == "wait"]
    assert len(waits) == len(sync_run.trace.waits) > 0
    assert {e["name"] for e in waits} == {"wait (barrier)"}
    lost = aps.Trace(events=[aps.Pull(0, 0, 0.0), aps.Compute(0, 0.0, 1.0, 0), aps.Push(0, 0, 0, 0, 1.0),
                             aps.Lost(1, 0.5, "killed by signal 9")],
                     losses=[1.0, 0.5], meta={"workers": 2, "policy": "async"})
    instants = [e for e in of_phase(chrome_trace(lost), "i") if e["cat"] == "lost"]
    assert [(e["tid"], e["ts"], e["args"]["reason"]) for e in instants] == \
        [(2, 500.0, "killed by signal 9")]


def test_to_chrome_trace_returns_the_dict_or_writes_json_that_loads(run, tmp_path):
    data = run.trace.to_chrome_trace()
    assert data == chrome_trace(run.trace)
    path = tmp_path / "run.perfetto.json"
    assert run.trace.to_chrome_trace(path) == path
    with open(path) as f:
        assert json.load(f) == json.loads(json.dumps(data))


def test_only_a_trace_converts_and_the_error_names_the_argument():
    with pytest.raises(TypeError, match="trace="):
        chrome_trace({"events": []})


def test_a_run_on_real_threads_exports_valid_json_with_one_track_per_worker(tmp_path):
    real = aps.train(aps.problems.Quadratic(curvature=[1.0, 2.0]), engine="threads", workers=2,
                     policy="async", steps=20, seed=0)
    path = real.trace.to_chrome_trace(tmp_path / "threads.json")
    data = json.loads(path.read_text())
    assert thread_names(data) == {0: "server", 1: "worker 0", 2: "worker 1"}
    assert "seconds" in data["otherData"]["time_unit"]
    assert all(all(k in e for k in REQUIRED) and e["ts"] >= 0 for e in data["traceEvents"])
    assert len(of_phase(data, "s")) == len(of_phase(data, "f")) == len(real.trace.pushes)
    for tid in thread_names(data):
        slices = of_phase(data, "X", tid)
        assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-6 for a, b in zip(slices, slices[1:]))
    computed = [e["tid"] for e in of_phase(data, "X") if e["cat"] == "compute"]
    assert sorted(computed) == sorted(c.worker + 1 for c in real.trace.computes)


# -- figures ---------------------------------------------------------------------------------
@pytest.mark.parametrize("helper", ["loss", "staleness", "timeline"])
def test_each_helper_returns_an_axes_and_draws_into_a_given_one(run, helper):
    draw = getattr(aps.plot, helper)
    ax = draw(run)
    assert isinstance(ax, matplotlib.axes.Axes) and ax.get_xlabel()
    fig, given = plt.subplots()
    assert draw(run, ax=given) is given
    assert given.get_xlabel() and (given.lines or given.patches or given.collections)


def test_the_loss_line_is_the_run_s_losses_by_version_or_by_time(run, sync_run):
    ax = aps.plot.loss(run)
    (line,) = ax.lines
    assert np.array_equal(line.get_ydata(), run.losses)
    assert np.array_equal(line.get_xdata(), np.arange(len(run.losses)))
    assert ax.get_ylabel() == "loss" and ax.get_yscale() == "log"
    ax = aps.plot.loss(run, by="time")
    assert np.array_equal(ax.lines[0].get_xdata(), run.trace.version_times())
    ax = aps.plot.loss({"sync": sync_run, "async": run})
    assert [ln.get_label() for ln in ax.lines] == ["sync", "async"]
    assert np.array_equal(ax.lines[0].get_ydata(), sync_run.losses)
    ax = aps.plot.loss([run, run], label=["a", "b"])
    assert [ln.get_label() for ln in ax.lines] == ["a", "b"]


def test_the_loss_skips_versions_that_were_not_scored():
    trace = aps.Trace(losses=[1.0, float("nan"), 0.5, float("nan"), 0.25], meta={"policy": "async"})
    (line,) = aps.plot.loss(trace).lines
    assert list(line.get_xdata()) == [0, 2, 4] and list(line.get_ydata()) == [1.0, 0.5, 0.25]


def test_wrong_arguments_are_named():
    with pytest.raises(ValueError, match="by='steps'"):
        aps.plot.loss(aps.Trace(losses=[1.0]), by="steps")
    with pytest.raises(TypeError, match="run="):
        aps.plot.staleness([1, 2, 3])
    with pytest.raises(ValueError, match="until=-1"):
        aps.plot.timeline(aps.Trace(losses=[1.0]), until=-1)


def test_the_staleness_bars_count_every_push_once_in_integer_bins(run):
    ax = aps.plot.staleness(run)
    heights = [p.get_height() for p in ax.patches]
    assert sum(heights) == len(run.trace.pushes)
    assert heights == list(run.trace.staleness_histogram())
    assert [p.get_x() + p.get_width() / 2 for p in ax.patches] == list(range(len(heights)))
    assert ax.get_ylabel() == "pushes"


def test_the_timeline_has_a_row_per_worker_under_the_server_and_stops_at_until(run):
    ax = aps.plot.timeline(run, until=6)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["server", "worker 0", "worker 1",
                                                           "worker 2"]
    assert ax.get_xlim()[1] <= 6 * 1.02 + 1e-9
    for collection in ax.collections:
        for path in collection.get_paths():
            assert path.vertices[:, 0].max() <= 6 + 1e-9
    stale = [c for c in ax.collections if c.get_offsets().shape[0]
             and matplotlib.colors.same_color(c.get_facecolor()[0], aps.plot.COLORS["stale"])]
    drawn = sum(c.get_offsets().shape[0] for c in stale)
    assert drawn == sum(1 for p in run.trace.pushes if p.staleness > 0 and p.time <= 6) > 0


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_a_figure_of_all_three_saves_as(run, tmp_path, fmt):
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(12, 3))
    aps.plot.loss(run, ax=a)
    aps.plot.staleness(run, ax=b)
    aps.plot.timeline(run, ax=c)
    path = tmp_path / f"run.{fmt}"
    fig.savefig(path)
    assert path.stat().st_size > 0
