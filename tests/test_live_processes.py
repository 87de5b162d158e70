"""A live run on engine="processes": the same handle as on threads (tests/test_live.py), obeyed
through shared memory and real signals, and no process or shared-memory segment left however it ends."""
import re
import threading
import time

import numpy as np
import psutil
import pytest

import asyncps as aps
from engines import leftover_processes, nothing_left_behind  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("nothing_left_behind")

LSQ = aps.problems.LeastSquares(n=256, dim=8, seed=0)
FOREVER = 10**6                                  # steps no test waits for: each one stops its run


@pytest.fixture(autouse=True)
def no_thread_survives():
    yield
    left = [t.name for t in threading.enumerate() if t.name.startswith("asyncps-")]
    assert left == [], f"threads left running: {left}"


def live_run(problem=LSQ, workers=3, **kwargs):
    kwargs.setdefault("slowdown", [0.002] * workers)
    kwargs.setdefault("steps", FOREVER)
    return aps.train(problem, engine="processes", workers=workers, live=True, **kwargs)


def wait_until(condition, what, seconds=30.0):
    """Poll `condition()` until it holds; fail (not hang) if it never does."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def index_of(trace, what):
    return next(i for i, e in enumerate(trace.events) if e.kind == "control" and e.what == what)


def gone(pid):
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_train_returns_at_once_and_the_version_grows_in_state():
    with live_run(workers=2, lr=0.05) as live:
        assert isinstance(live, aps.LiveRun) and live.state["running"]
        seen = [live.state["version"]]
        wait_until(lambda: seen.append(live.state["version"]) or seen[-1] >= seen[0] + 20,
                   "20 more versions while train() had returned")
        state = live.state
        assert state["pushes"] >= state["version"] > 0           # async: one version per push
        assert state["loss"] < LSQ.loss(LSQ.x0)
    assert seen == sorted(seen), "versions only increase"
    run = live.result()
    # the engine inserts a worker's own pulls where their time is: state counted each push once
    assert live.state["pushes"] == len(run.trace.pushes)
    assert aps.violations(run.trace) == []


def test_slowing_a_worker_down_raises_the_staleness_of_its_pushes():
    live = live_run(lr=0.02)
    wait_until(lambda: live.state["pushes"] >= 60, "60 pushes at the same speed")
    live.slow(0, 0.03)                 # 15x slower: the others push many times per gradient of 0
    assert live.state["slowdown"] == [0.03, 0.002, 0.002]
    wait_until(lambda: live.state["pushes"] >= 400, "400 pushes")
    live.stop()
    trace = live.result().trace
    at = index_of(trace, "slow")
    assert trace.events[at] == aps.Control("slow", 0, 0.03, trace.events[at].time)
    before = [e.staleness for e in trace.events[:at] if e.kind == "push" and e.worker == 0]
    after = [e.staleness for e in trace.events[at:] if e.kind == "push" and e.worker == 0]
    assert len(before) >= 3 and len(after) >= 3
    assert np.mean(after[1:]) > 2 * np.mean(before)      # its first push after may be half-slowed
    assert aps.violations(trace) == []


def test_a_killed_worker_dies_by_sigkill_and_async_completes_without_it():
    live = live_run(steps=300, lr=0.02)
    wait_until(lambda: live.state["pushes"] >= 10, "10 pushes")
    live.kill(1)
    live.kill(1)                                              # twice: the same as once
    wait_until(lambda: live.state["lost"] == [1], "worker 1 recorded as lost")
    lost = live.trace.lost[0]
    assert re.fullmatch(r"killed by live\.kill\(\) \(pid \d+: killed by signal 9 \(SIGKILL\)\)",
                        lost.reason), lost.reason
    pid = int(re.search(r"pid (\d+)", lost.reason).group(1))
    assert gone(pid)
    run = live.result()
    trace = run.trace
    assert [e.worker for e in trace.lost] == [1]
    assert [(c.what, c.worker) for c in trace.controls] == [("kill", 1)]
    lost_at = trace.events.index(trace.lost[0])
    assert all(e.worker != 1 for e in trace.events[lost_at:] if e.kind == "push")
    assert len(run.losses) == 301 and not run.diverged and run.message == ""
    assert aps.violations(trace) == []


@pytest.mark.parametrize("policy,bound", [("sync", None), ("ssp", 1)])
def test_a_killed_worker_stops_sync_and_ssp_with_their_error(policy, bound):
    live = live_run(policy=policy, max_clocks_ahead=bound, lr=0.02)
    wait_until(lambda: live.state["version"] >= 5, "5 versions")
    live.kill(1)
    with pytest.raises(RuntimeError, match=rf"worker 1 was lost \(killed by live.kill\(\) .*SIGKILL"
                                           rf".*policy='{policy}'"):
        live.result()
    live.stop()                                               # after a failed end: nothing to do


def test_pause_holds_every_worker_and_resume_lets_them_go_on():
    workers = 3
    live = live_run(workers=workers, lr=0.02, slowdown=[0.001] * workers)
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


def test_a_pause_longer_than_the_timeout_is_not_a_failure():
    live = live_run(workers=2, policy="sync", lr=0.02, timeout=0.3, slowdown=[0.0, 0.005])
    wait_until(lambda: live.state["version"] >= 5, "5 versions")
    live.pause()
    time.sleep(0.8)                   # worker 0 sits at the barrier, the server hears nothing
    live.resume()
    paused_at = live.state["version"]
    wait_until(lambda: live.state["version"] >= paused_at + 5, "5 versions after resume()")
    live.stop()
    assert live.result().message == "stopped by live.stop()"


def test_set_lr_is_recorded_and_every_later_update_uses_it():
    quad = aps.problems.Quadratic(curvature=(1.0, 2.0))
    live = live_run(quad, workers=2, lr=0.001, slowdown=[0.001, 0.001])
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


def test_stop_ends_the_run_with_its_message_and_leaves_no_process():
    live = live_run(lr=0.02, slowdown=[0.0, 0.0, 0.05])
    wait_until(lambda: live.state["version"] >= 10, "10 versions")
    live.stop()
    assert leftover_processes() == []                         # stop() returns once they are gone
    live.stop()                                               # twice: nothing more happens
    run = live.result()
    assert run.message == "stopped by live.stop()" and not run.diverged
    assert len(run.losses) - 1 < FOREVER
    assert [c.what for c in run.trace.controls] == ["stop"]
    assert aps.violations(run.trace) == []


def test_the_with_block_stops_the_run_when_it_ends_or_is_interrupted():
    with pytest.raises(KeyboardInterrupt):
        with live_run(workers=2) as live:
            wait_until(lambda: live.state["version"] >= 3, "3 versions")
            raise KeyboardInterrupt                           # Ctrl-C in the cell
    assert not live.state["running"] and leftover_processes() == []
    assert live.result().message == "stopped by live.stop()"


def test_controls_before_the_workers_start_are_obeyed():
    live = live_run(workers=2, slowdown=[0.001, 0.001])
    live.kill(0)                                              # while the children still start
    live.slow(1, 0.002)
    wait_until(lambda: live.state["version"] >= 10, "10 versions by worker 1 alone")
    live.stop()
    trace = live.result().trace
    assert [e.worker for e in trace.lost] == [0] and "SIGKILL" in trace.lost[0].reason
    lost_at = trace.events.index(trace.lost[0])
    assert all(e.worker == 1 for e in trace.events[lost_at:] if e.kind == "push")
    assert [c.what for c in trace.controls] == ["kill", "slow", "stop"]


def test_rpc_still_refuses_live():
    with pytest.raises(ValueError, match="live=True is not allowed with engine='rpc' yet"):
        aps.train(LSQ, engine="rpc", live=True)
