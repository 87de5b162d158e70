"""Helpers for the engine tests: run one configuration on any engine, and check nothing is left behind."""
import os
import threading
import time

import psutil
import pytest

import asyncps as aps

ALL = ["simulate", "threads", "processes", "rpc"]
HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def run_on(engine, problem, **kwargs):
    """The same run on the simulator or a real engine (slowdown only applies to real ones)."""
    if engine == "simulate":
        kwargs.pop("slowdown", None)
        kwargs.pop("timeout", None)
        return aps.simulate(problem, **kwargs)
    return aps.train(problem, engine=engine, **kwargs)


def leftover_processes():
    """Our descendants, except multiprocessing's own long-lived helpers (fork server, resource tracker)."""
    left = []
    for child in psutil.Process().children(recursive=True):
        try:
            cmd = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if child.status() == psutil.STATUS_ZOMBIE or any(h in cmd for h in HELPERS):
            continue
        left.append((child.pid, cmd[:80]))
    return left


def shm_segments():
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


@pytest.fixture
def nothing_left_behind():
    """After the test: no worker process (multiprocessing's helpers aside), no new /dev/shm segment."""
    before = shm_segments()
    yield
    deadline = time.monotonic() + 3.0           # both are cleaned up a moment after the run ends
    while (leftover_processes() or not shm_segments() <= before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftover_processes() == []
    assert shm_segments() <= before, sorted(shm_segments() - before)


@pytest.fixture
def no_thread_survives():
    """After the test: no thread of ours (worker, live run, live view) is still running."""
    yield
    left = [t.name for t in threading.enumerate() if t.name.startswith("asyncps-")]
    assert left == [], f"threads left running: {left}"


def wait_until(condition, what, seconds=30.0):
    """Poll `condition()` until it holds; fail (not hang) if it never does."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)
