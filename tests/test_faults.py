"""Faults and shutdown: errors come home with their traceback, dead workers are survived or reported,
Ctrl-C stops everything fast, and nothing is left behind (no child process, no /dev/shm segment)."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import asyncps as aps
from engines import nothing_left_behind  # noqa: F401 (a fixture)

REAL = ["threads", "processes", "rpc"]
N = 64

pytestmark = [pytest.mark.usefixtures("nothing_left_behind"), pytest.mark.slow]   # not in make test-fast


def least_squares_with(hook):
    """A tiny least-squares problem whose gradient calls hook(shard) first (in the worker)."""
    rng = np.random.default_rng(0)
    A, b = rng.standard_normal((N, 3)), rng.standard_normal(N)

    def grad(x, shard, _rng):
        hook(shard)
        return A[shard].T @ (A[shard] @ x - b[shard]) / len(shard)

    return aps.problems.from_functions(lambda x: float(np.mean((A @ x - b) ** 2)), grad,
                                       x0=np.zeros(3), n=N)


def victim_hook(action, after=30, worker=1, workers=3):
    """Run `action` in worker `worker` once it has computed `after` gradients."""
    first = least_squares_with(lambda s: None).shards(workers, "iid", 0)[worker][0]
    calls = [0]

    def hook(shard):
        if shard[0] == first:
            calls[0] += 1
            if calls[0] > after:
                action()
    return hook


def boom():
    raise ZeroDivisionError("boom in the gradient")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("engine", REAL)
def test_a_worker_that_raises_stops_the_run_and_reraises_here(engine):
    prob = least_squares_with(victim_hook(boom))
    with pytest.raises(ZeroDivisionError, match="boom in the gradient") as info:
        aps.train(prob, workers=3, lr=0.05, steps=10_000, engine=engine, slowdown=[0.001] * 3)
    if engine != "threads":                        # the worker's own traceback comes along
        assert "boom" in str(info.value.__cause__) and "def hook" not in str(info.value.__cause__)
        assert "in hook" in str(info.value.__cause__)


def sigkill_self():
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("engine", ["processes", "rpc"])
def test_async_survives_a_killed_worker_and_records_it(engine):
    prob = least_squares_with(victim_hook(sigkill_self))
    run = aps.train(prob, workers=3, policy="async", lr=0.05, steps=400, engine=engine,
                    slowdown=[0.001] * 3)
    assert len(run.trace.pushes) == 400 and len(run.losses) == 401
    (lost,) = run.trace.lost
    assert lost.worker == 1 and "SIGKILL" in lost.reason
    assert all(p.worker != 1 for p in run.trace.pushes if p.time > lost.time + 0.5)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("engine", ["processes", "rpc"])
@pytest.mark.parametrize("policy", ["sync", "ssp"])
def test_sync_and_ssp_fail_clearly_when_a_worker_is_killed(engine, policy):
    prob = least_squares_with(victim_hook(sigkill_self))
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker 1 was lost \(killed by signal 9"):
        aps.train(prob, workers=3, policy=policy, max_clocks_ahead=1 if policy == "ssp" else None, lr=0.05,
                  steps=10_000, engine=engine, timeout=10)
    assert time.monotonic() - start < 10


@pytest.mark.timeout(60)
@pytest.mark.parametrize("engine", ["processes", "rpc"])
def test_a_hung_worker_fails_the_barrier_within_the_timeout(engine):
    prob = least_squares_with(victim_hook(lambda: time.sleep(60), after=5))
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="progress"):
        aps.train(prob, workers=3, policy="sync", lr=0.05, steps=10_000, engine=engine, timeout=2)
    assert time.monotonic() - start < 10


@pytest.mark.timeout(60)
@pytest.mark.parametrize("engine", REAL)
def test_ctrl_c_stops_everything_within_two_seconds(engine):
    prob = least_squares_with(lambda s: None)
    when = {}

    def interrupt():
        time.sleep(3.0 if engine != "threads" else 0.5)   # let the world start
        when["sent"] = time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        aps.train(prob, workers=3, lr=0.01, steps=10_000_000, engine=engine, slowdown=[0.002] * 3)
    assert time.monotonic() - when["sent"] < 2.0
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # Python's own again


def test_ctrl_c_that_lands_inside_a_del_is_not_lost():
    """Python drops a KeyboardInterrupt raised inside __del__ or a weakref callback ("Exception
    ignored"): a processes run in a loaded `make test` went on for 60 s after its SIGINT. While an
    engine watches its run, SIGINT sets a flag that its loop raises (engines/interrupt.py)."""
    from asyncps.engines.interrupt import raised_between_turns

    class Garbage:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)

    turns = 0
    with pytest.raises(KeyboardInterrupt):
        with raised_between_turns() as ctrl_c:
            for turns in range(1, 4):
                Garbage()                                    # dropped at once: SIGINT inside __del__
                ctrl_c.check()
    assert turns == 1 and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):                   # pressed after the loop's last turn
        with raised_between_turns():
            signal.raise_signal(signal.SIGINT)
    seen = []                                                # a run on another thread: untouched

    def elsewhere():
        with raised_between_turns():
            seen.append(signal.getsignal(signal.SIGINT))
    worker = threading.Thread(target=elsewhere)
    worker.start()
    worker.join()
    assert seen == [signal.default_int_handler]
