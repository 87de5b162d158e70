"""A live run (aps.train(..., live=True)) on every engine that offers it: watched while it runs,
changed by Control events that are in its trace, and nothing left running however it ends
(no thread, no process, no shared-memory segment)."""
import re
import threading
import time
from types import SimpleNamespace

import numpy as np
import psutil
import pytest

import asyncps as aps
from asyncps.engines.controls import Controls
from asyncps.engines.rpc import host as rpc_host, world as rpc_world
from engines import leftover_processes, nothing_left_behind, no_thread_survives, wait_until  # noqa: F401
from asyncps.widgets.picture import svgs_in

pytestmark = pytest.mark.usefixtures("nothing_left_behind", "no_thread_survives")

LSQ = aps.problems.LeastSquares(n=256, dim=8, seed=0)
FOREVER = 10**6                                  # steps no test waits for: each one stops its run
LIVE = ["threads", "processes", "rpc"]


def live_run(engine, problem=LSQ, workers=3, **kwargs):
    kwargs.setdefault("slowdown", [0.002] * workers)
    kwargs.setdefault("steps", FOREVER)
    return aps.train(problem, engine=engine, workers=workers, live=True, **kwargs)


def index_of(trace, what):
    return next(i for i, e in enumerate(trace.events) if e.kind == "control" and e.what == what)


def after_slow(trace):
    """The events after the first slow event of a running run's trace (a copy: the workers add to
    it); none before there is one."""
    events = list(trace.events)
    at = next((i for i, e in enumerate(events) if e.kind == "control" and e.what == "slow"), len(events))
    return events[at:]


def gone(pid):
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize("engine", LIVE)
def test_train_returns_at_once_and_the_version_grows_in_state(engine):
    with live_run(engine, workers=2, lr=0.05) as live:
        assert isinstance(live, aps.LiveRun) and live.state["running"]
        seen = [live.state["version"]]
        wait_until(lambda: seen.append(live.state["version"]) or seen[-1] >= seen[0] + 20,
                   "20 more versions while train() had returned")
        state = live.state
        assert state["running"] and not state["paused"] and state["steps"] == FOREVER
        assert state["pushes"] >= state["version"] > 0           # async: one version per push
        assert len(state["staleness"]) == 2 and state["lr"] == 0.05
        assert state["loss"] < LSQ.loss(LSQ.x0)
    assert seen == sorted(seen), "versions only increase"
    run = live.result()
    assert not live.state["running"]
    # processes insert a worker's own pulls where their time is: state still counts each push once
    assert live.state["pushes"] == len(run.trace.pushes)
    assert aps.violations(run.trace) == []


@pytest.mark.parametrize("engine", LIVE)
def test_slowing_a_worker_down_raises_the_staleness_of_its_pushes(engine):
    live = live_run(engine, lr=0.02)
    wait_until(lambda: live.state["pushes"] >= 60, "60 pushes at the same speed")
    # 150x slower: the others push many times per gradient of worker 0 even where a push itself
    # costs tens of ms (a loaded machine; at 15x, worker 0 measured only twice as stale there)
    live.slow(0, 0.3)
    assert live.state["slowdown"] == [0.3, 0.002, 0.002]
    # 5 pushes after the slow event in the trace, not 5 more than were in it when slow() returned:
    # rpc's and processes' events arrive late and go in where their time puts them (a quiet fresh
    # clone's run: of 5 more pushes of worker 0, 3 went in before the slow event)
    wait_until(lambda: sum(e.kind == "push" and e.worker == 0 for e in after_slow(live.trace)) >= 5,
               "5 pushes of the slowed worker after the slow event")
    live.stop()
    trace = live.result().trace
    at = index_of(trace, "slow")
    assert trace.events[at] == aps.Control("slow", 0, 0.3, trace.events[at].time)
    before = [e.staleness for e in trace.events[:at] if e.kind == "push" and e.worker == 0]
    after = [e.staleness for e in trace.events[at:] if e.kind == "push" and e.worker == 0]
    assert len(before) >= 3 and len(after) >= 3
    assert np.mean(after[1:]) > 2 * np.mean(before)      # its first push after may be half-slowed
    assert aps.violations(trace) == []


@pytest.mark.parametrize("engine", LIVE)
def test_a_killed_worker_is_lost_and_async_completes_without_it(engine):
    live = live_run(engine, steps=300, lr=0.02)
    wait_until(lambda: live.state["pushes"] >= 10, "10 pushes")
    live.kill(1)
    live.kill(1)                                              # twice: the same as once
    wait_until(lambda: live.state["lost"] == [1], "worker 1 recorded as lost")
    reason = live.trace.lost[0].reason
    if engine != "threads":                                   # a real SIGKILL: the process is gone
        assert re.fullmatch(r"killed by live\.kill\(\) \(pid \d+: killed by signal 9 \(SIGKILL\)\)",
                            reason), reason
        assert gone(int(re.search(r"pid (\d+)", reason).group(1)))
    else:
        assert reason == "killed by live.kill()"
    run = live.result()
    trace = run.trace
    assert [e.worker for e in trace.lost] == [1]
    assert [(c.what, c.worker) for c in trace.controls] == [("kill", 1)]
    lost_at = trace.events.index(trace.lost[0])
    assert all(e.worker != 1 for e in trace.events[lost_at:] if e.kind == "push")
    assert len(run.losses) == 301 and not run.diverged and run.message == ""
    assert aps.violations(trace) == []


@pytest.mark.parametrize("engine", LIVE)
@pytest.mark.parametrize("policy,bound", [("sync", None), ("ssp", 1)])
def test_a_killed_worker_stops_sync_and_ssp_with_their_error(engine, policy, bound):
    live = live_run(engine, policy=policy, max_clocks_ahead=bound, lr=0.02)
    wait_until(lambda: live.state["version"] >= 5, "5 versions")
    live.kill(1)
    with pytest.raises(RuntimeError, match=rf"worker 1 was lost \(killed by live.kill\(\).*"
                                           rf"policy='{policy}'"):
        live.result()
    live.stop()                                               # after a failed end: nothing to do


@pytest.mark.parametrize("engine", LIVE)
def test_pause_holds_every_worker_and_resume_lets_them_go_on(engine):
    workers = 3
    live = live_run(engine, workers=workers, lr=0.02, slowdown=[0.001] * workers)
    wait_until(lambda: live.state["version"] >= 20, "20 versions")
    live.pause()
    assert live.state["paused"]
    time.sleep(0.5)                   # without the pause: hundreds of pushes
    live.resume()
    resumed_at = live.state["version"]
    wait_until(lambda: live.state["version"] >= resumed_at + 20, "20 versions after resume()")
    live.stop()
    trace = live.result().trace
    paused, resumed = index_of(trace, "pause"), index_of(trace, "resume")
    during = [e.worker for e in trace.events[paused:resumed] if e.kind == "push"]
    # a gradient already past its pause check when pause() came may still be handed in: one each
    assert all(during.count(k) <= 1 for k in range(workers)), during
    assert len(trace.pushes) > len([e for e in trace.events[:resumed] if e.kind == "push"])


class Noting:
    """A server for Controls alone: it notes each Control with the paused flag as it was then."""
    done = False

    def __init__(self):
        self.flags, self.noted = None, []

    def record(self, event):
        self.noted.append((event.what, int(self.flags[1])))


def test_a_pause_is_set_before_its_control_and_a_resume_recorded_before_it_is_lifted():
    """Else a worker let go by resume() pushes before the resume in the trace: inside the pause."""
    server = Noting()
    controls = Controls(server, SimpleNamespace(slowdown=[0.0, 0.0]), lambda: 0.0)
    server.flags = controls.flags
    controls.pause()
    controls.resume()
    assert server.noted == [("pause", 1), ("resume", 1)] and controls.flags[1] == 0


def test_on_rpc_rank_0_lifts_the_pause_once_it_has_recorded_the_resume(monkeypatch):
    """The caller pauses the workers at once; only rank 0, which records pushes, lets them go."""
    caller = rpc_world.Controls(Noting(), SimpleNamespace(slowdown=[0.0, 0.0]), lambda: 0.0)
    caller.pause()
    caller.resume()
    assert not caller.paused and caller.flags[1] == 1               # asked, not yet lifted
    server, cond = Noting(), threading.Condition()
    rank_0 = Controls(server, SimpleNamespace(slowdown=[0.0, 0.0]), lambda: 0.0, lock=cond)
    rank_0.flags = server.flags = caller.flags                      # shared memory in a real run
    monkeypatch.setitem(rpc_host._STATE, "controls", rank_0)
    monkeypatch.setitem(rpc_host._STATE, "cond", cond)
    with cond:
        for message in caller.outbox:
            rpc_host._hear(server, message, lambda: 0.0)
    assert server.noted == [("pause", 1), ("resume", 1)] and caller.flags[1] == 0


@pytest.mark.parametrize("engine", LIVE)
def test_a_pause_longer_than_the_timeout_is_not_a_failure(engine):
    live = live_run(engine, workers=2, policy="sync", lr=0.02, timeout=0.3, slowdown=[0.0, 0.005])
    wait_until(lambda: live.state["version"] >= 5, "5 versions")
    live.pause()
    time.sleep(0.8)                   # worker 0 sits at the barrier, the server hears nothing
    live.resume()
    paused_at = live.state["version"]
    wait_until(lambda: live.state["version"] >= paused_at + 5, "5 versions after resume()")
    live.stop()
    assert live.result().message == "stopped by live.stop()"


@pytest.mark.parametrize("engine", LIVE)
def test_set_lr_is_recorded_and_every_later_update_uses_it(engine):
    quad = aps.problems.Quadratic(curvature=(1.0, 2.0))
    live = live_run(engine, quad, workers=2, lr=0.001, slowdown=[0.001, 0.001])
    wait_until(lambda: live.state["version"] >= 20, "20 versions")
    live.set_lr(0.0005)
    assert live.state["lr"] == 0.0005
    at_change = live.state["version"]
    wait_until(lambda: live.state["version"] >= at_change + 20, "20 versions after set_lr")
    live.stop()
    trace = live.result().trace
    at = index_of(trace, "lr")
    assert trace.events[at].value == 0.0005 and trace.meta["lr"] == 0.001   # meta: the start
    params = np.array(trace.params)
    for i, p in enumerate(trace.events):
        if p.kind != "push" or p.applied_to + 1 >= len(params):
            continue
        # the Quadratic's gradient is curvature * x: the step says which lr moved it
        step = params[p.applied_to] - params[p.applied_to + 1]
        lr = step / (quad.curvature * params[p.computed_on])
        np.testing.assert_allclose(lr, 0.001 if i < at else 0.0005, rtol=1e-9)


@pytest.mark.parametrize("engine", LIVE)
def test_stop_ends_the_run_early_with_its_message_and_leaves_nothing(engine):
    live = live_run(engine, lr=0.02, slowdown=[0.0, 0.0, 0.05])
    wait_until(lambda: live.state["version"] >= 10, "10 versions")
    live.stop()                                               # returns once nothing is left:
    assert not any(t.name.startswith("asyncps-") for t in threading.enumerate())
    assert leftover_processes() == []
    live.stop()                                               # twice: nothing more happens
    run = live.result()
    assert run.message == "stopped by live.stop()" and not run.diverged
    assert len(run.losses) - 1 < FOREVER
    assert [c.what for c in run.trace.controls] == ["stop"]
    assert aps.violations(run.trace) == []


@pytest.mark.parametrize("engine", LIVE)
def test_the_with_block_stops_the_run_when_it_ends_or_is_interrupted(engine):
    with pytest.raises(KeyboardInterrupt):
        with live_run(engine, workers=2) as live:
            wait_until(lambda: live.state["version"] >= 3, "3 versions")
            raise KeyboardInterrupt                           # Ctrl-C in the cell
    assert not live.state["running"] and leftover_processes() == []
    assert live.result().message == "stopped by live.stop()"


@pytest.mark.parametrize("engine", LIVE)
def test_controls_before_the_workers_start_are_obeyed(engine):
    live = live_run(engine, workers=2, slowdown=[0.001, 0.001])
    live.kill(0)                                              # while the workers still start
    live.slow(1, 0.002)
    wait_until(lambda: live.state["version"] >= 10, "10 versions by worker 1 alone")
    live.stop()
    trace = live.result().trace
    assert [e.worker for e in trace.lost] == [0]
    lost_at = trace.events.index(trace.lost[0])
    assert all(e.worker == 1 for e in trace.events[lost_at:] if e.kind == "push")
    assert [c.what for c in trace.controls] == ["kill", "slow", "stop"]


def test_a_run_that_ended_by_itself_says_so_and_refuses_late_changes():
    live = aps.train(LSQ, workers=2, steps=30, lr=0.02, live=True)
    run = live.result()
    assert live.result() is run and len(run.losses) == 31 and run.message == ""
    with pytest.raises(RuntimeError, match="too late: the run has ended"):
        live.set_lr(0.01)
    live.stop()                                               # safe after the end, records nothing
    assert run.trace.controls == [] and run.message == ""


def test_result_with_a_timeout_says_the_run_is_still_going():
    with aps.train(LSQ, workers=2, steps=FOREVER, slowdown=[0.01, 0.01], live=True) as live:
        with pytest.raises(TimeoutError, match="still going after timeout=0.05 s"):
            live.result(timeout=0.05)


def test_control_events_round_trip_through_json_and_are_drawn_in_chrome():
    with aps.train(LSQ, workers=2, steps=FOREVER, slowdown=[0.001, 0.001], live=True) as live:
        wait_until(lambda: live.state["version"] >= 5, "5 versions")
        live.slow(1, 0.002)
        live.set_lr(0.05)
        live.pause()
        live.resume()
    trace = live.result().trace
    assert [c.what for c in trace.controls] == ["slow", "lr", "pause", "resume", "stop"]
    assert aps.Trace.from_json(trace.to_json()) == trace
    chrome = [e for e in trace.to_chrome_trace()["traceEvents"] if e.get("cat") == "control"]
    assert [e["args"]["what"] for e in chrome] == ["slow", "lr", "pause", "resume", "stop"]
    assert all(e["ph"] == "i" and e["s"] == "g" for e in chrome)


def test_a_damaged_control_event_is_named():
    trace = aps.Trace(events=[aps.Control("lr", None, 0.1, 1.0)], meta={"workers": 1})
    data = trace.to_dict()
    data["events"][0]["what"] = "explode"
    with pytest.raises(ValueError, match="what='explode' must be one of slow, lr, pause"):
        aps.Trace.from_dict(data)
    data["events"][0].update(what="slow", worker=-1)
    with pytest.raises(ValueError, match="worker=-1 must be an integer >= 0"):
        aps.Trace.from_dict(data)


def test_bad_controls_name_the_argument():
    with aps.train(LSQ, workers=2, steps=FOREVER, slowdown=[0.001, 0.001], live=True) as live:
        with pytest.raises(ValueError, match=r"worker=2 is not allowed: worker must be an integer "
                                             r">= 0 and <= 1"):
            live.slow(2, 0.1)
        with pytest.raises(ValueError, match="seconds=-1.* seconds must be a finite number >= 0"):
            live.slow(0, -1)
        with pytest.raises(ValueError, match="lr=0.* lr must be a finite number > 0"):
            live.set_lr(0)
        with pytest.raises(ValueError, match="lr=inf"):
            live.set_lr(float("inf"))
        with pytest.raises(TypeError, match="worker=0.5"):
            live.kill(0.5)
    assert live.result().trace.controls[:-1] == []            # nothing but the stop was recorded


def test_live_arguments_that_make_no_sense_are_refused():
    with pytest.raises(ValueError, match="progress=True is not allowed with live=True"):
        aps.train(LSQ, live=True, progress=True)
    with pytest.raises(TypeError, match="live='yes' is not allowed"):
        aps.train(LSQ, live="yes")


def test_live_is_an_argument_of_train_and_not_of_the_run():
    import inspect

    assert inspect.signature(aps.train).parameters["live"].default is False
    assert "live" not in {f.name for f in __import__("dataclasses").fields(aps.RunConfig)}
    run = aps.train(LSQ, workers=2, steps=5, live=True).result()
    assert "live" not in run.trace.meta


def test_every_view_replays_a_trace_with_control_events():
    live = aps.train(LSQ, workers=2, steps=FOREVER, lr=0.05, slowdown=[0.001, 0.001], live=True)
    wait_until(lambda: live.state["version"] >= 5, "5 versions")
    live.slow(1, 0.002)
    live.set_lr(0.02)
    wait_until(lambda: live.state["version"] >= 15, "15 versions")
    live.stop()
    trace = live.result().trace
    model = aps.widgets.TimelineModel(trace)
    frames = [i for i, e in enumerate(model.events) if e.kind == "control"]
    assert len(frames) >= 2
    captions = [aps.widgets.caption(model, i) for i in frames]
    assert any("worker 1 is slowed down by 0.002 s" in c for c in captions), captions
    assert any("learning rate is set to 0.02" in c for c in captions), captions
    assert aps.widgets.timeline_svg(model, frames[0]).startswith("<svg")
    assert "asyncps-static" in aps.widgets.static_html(model, frames[-1])
    timeline = aps.widgets.Timeline(trace)
    assert svgs_in(aps.widgets.static_html(model, timeline.static_frame()))
