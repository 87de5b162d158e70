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


def mapped_elsewhere():
    """The /dev/shm names mapped by a process outside this one's tree: another test's, run beside
    this one (pytest-xdist's other worker), not ones this test left behind. /dev/shm is one folder
    for the whole machine, and a semaphore's name (sem.mp-...) says nothing of its owner."""
    ours = {os.getpid()} | {p.pid for p in psutil.Process().children(recursive=True)}
    names = set()
    for pid in set(psutil.pids()) - ours:
        try:
            with open(f"/proc/{pid}/maps") as maps:
                names.update(line.split("/dev/shm/", 1)[1].split()[0] for line in maps if "/dev/shm/" in line)
        except OSError:
            continue
    return names


def new_segments(before):
    """The /dev/shm segments made since `before` that no process outside this one's tree maps."""
    new = shm_segments() - before
    return new - mapped_elsewhere() if new else new


@pytest.fixture
def nothing_left_behind():
    """After the test: no worker process (multiprocessing's helpers aside), no new /dev/shm segment."""
    before = shm_segments()
    yield
    deadline = time.monotonic() + 3.0           # both are cleaned up a moment after the run ends
    while (leftover_processes() or new_segments(before)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftover_processes() == []
    # A run beside this one (another xdist worker) has, for a moment, a semaphore no process maps:
    # between its last close and its unlink (by its process's resource tracker, which a loaded
    # machine may not run for seconds: 1 s of grace was not enough with three test processes and
    # two busy loops on 2 cores). A segment counts as left behind only if it is still there,
    # mapped by no one else, 10 s later; one this test leaked never goes.
    stuck, deadline = new_segments(before), time.monotonic() + 10.0
    while stuck and time.monotonic() < deadline:
        time.sleep(0.2)
        stuck &= new_segments(before)
    assert not stuck, sorted(stuck)


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
