"""The processes engine's server in shared memory (engines/shared.py): which runs it takes, a
worker that dies holding the lock, and the other way (the parent serving) kept as correct."""
import multiprocessing
import os
import signal

import numpy as np
import pytest
from engines import nothing_left_behind  # noqa: F401 (a fixture)
from test_engines import LSQ, check_invariants

import asyncps as aps
from asyncps.core.config import configure
from asyncps.engines import shared
from asyncps.engines.worker import prepare

pytestmark = pytest.mark.usefixtures("nothing_left_behind")


def config(**arguments):
    return configure("train", {"engine": "processes", **arguments})


@pytest.mark.parametrize("policy", ["async", "sync", "ssp"])
@pytest.mark.parametrize("schedule", ["constant", "divide_by_staleness"])
def test_runs_with_the_built_in_rules_run_in_shared_memory(policy, schedule):
    assert shared.in_shared_memory(config(policy=policy, lr_schedule=schedule))


@pytest.mark.parametrize("change", [
    {"apply": lambda params, version, grad, computed_on, lr: (params, version + 1, 0)},
    {"average": lambda grads, workers: None, "policy": "sync"},
    {"gate": lambda clock, clocks, max_ahead: True, "policy": "ssp"},
    {"lr_schedule": lambda lr, staleness: lr},
    {"momentum": 0.9},
    {"checkpoint": "run.json"},
    {"push_every": 2},
    {"push_every": None},
    {"fetch_every": 3},
    {"policy": "ksync", "wait_for": 2},
    {"policy": "kasync", "wait_for": 2},
], ids=["apply", "average", "gate", "lr_schedule", "momentum", "checkpoint", "push_every",
        "no pushes", "fetch_every", "ksync", "kasync"])
def test_a_hook_state_local_steps_or_rounds_of_k_keep_the_parent_serving(change):
    assert not shared.in_shared_memory(config(**change))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("policy", ["async", "sync", "ssp"])
def test_the_parent_serving_keeps_the_invariants_too(policy, monkeypatch):
    monkeypatch.setattr(shared, "in_shared_memory", lambda config: False)
    bound = 1 if policy == "ssp" else None
    run = aps.train(LSQ, engine="processes", workers=3, policy=policy, max_clocks_ahead=bound,
                    lr=0.05, steps=120, slowdown=[0.0, 0.001, 0.002])
    check_invariants(run, policy, 3, 120, bound)
    assert run.losses[-1] < 0.1 * run.losses[0]


# -- a worker that dies inside its push ------------------------------------------------------
class Stage:
    """A Layout in this process, with worker 1 stopped at a chosen point of its push."""

    def __init__(self):
        cfg = config(workers=2, steps=10, policy="async")
        self.server, _ = prepare(LSQ, cfg)
        self.layout = shared.Layout.make(self.server, cfg, multiprocessing.get_context("fork"))
        self.a = self.layout.arrays()
        self.observer = shared.Observer(self.layout, self.server, dead=lambda k: k == 1)

    def die_in_push(self, applied):
        """Worker 1 holds the lock for a push computed on v0 and applied to v0, and dies before
        changing anything (`applied=None`), halfway through the update ("half"), or after the
        version was made but before the push was published ("made")."""
        head = self.a["head"]
        self.layout.lock.acquire()
        head[shared.HOLDER], head[shared.PENDING] = 1, 1
        head[shared.PENDING_ON], head[shared.PENDING_AT] = 0, 0
        head[shared.PENDING_ROW] = head[shared.WRITTEN]
        if applied is None:
            return
        head[shared.SEQ] += 1
        self.a["params"][: LSQ.dim // 2] -= 0.1
        if applied == "made":
            self.a["params"][LSQ.dim // 2:] -= 0.1
            head[shared.VERSION] += 1
            head[shared.SEQ] += 1


@pytest.mark.parametrize("applied", [None, "half", "made"])
def test_a_worker_dead_inside_its_push_leaves_the_lock_free_and_the_log_whole(applied):
    stage = Stage()
    stage.die_in_push(applied)
    stage.observer.lost(1)
    stage.observer.drain()
    head, server = stage.a["head"], stage.server
    assert stage.layout.lock.acquire(timeout=1.0), "the lock is free again"
    stage.layout.lock.release()
    assert head[shared.SEQ] % 2 == 0 and head[shared.HOLDER] == -1
    if applied is None:                            # nothing happened: nothing is recorded
        assert head[shared.VERSION] == 0 and server.trace.pushes == []
        return
    (push,) = server.trace.pushes                  # what changed the parameters is in the trace
    assert (push.worker, push.computed_on, push.applied_to) == (1, 0, 0)
    assert head[shared.VERSION] == 1 == server.version and len(server.trace.losses) == 2
    assert server.trace.losses[1] == pytest.approx(LSQ.loss(stage.a["params"]))   # scored here
    assert stage.a["clocks"][1] == -1


def kill_inside_the_fifth_scoring():
    """A loss that SIGKILLs worker 1's process the fifth time it scores a version there: under
    the lock, after its push made the version, before it was published."""
    calls = [0]

    def loss(x):
        if multiprocessing.current_process().name == "asyncps-worker-1":
            calls[0] += 1
            if calls[0] == 5:
                os.kill(os.getpid(), signal.SIGKILL)
        return LSQ.loss(x)

    return aps.problems.from_functions(loss, LSQ.gradient, LSQ.x0, n=LSQ.n, name="killer")


@pytest.mark.timeout(60)
def test_async_goes_on_when_a_worker_dies_holding_the_lock():
    run = aps.train(kill_inside_the_fifth_scoring(), engine="processes", workers=3, policy="async",
                    lr=0.05, steps=200, slowdown=[0.001] * 3)
    (lost,) = run.trace.lost
    assert lost.worker == 1 and "SIGKILL" in lost.reason
    assert len(run.trace.pushes) == 200 and not aps.violations(run.trace)
    assert np.all(np.isfinite(run.losses)) and len(run.losses) == 201
    assert sum(p.worker == 1 for p in run.trace.pushes) == 5   # its last one finished by the parent


@pytest.mark.timeout(60)
def test_sync_names_a_worker_that_died_holding_the_lock():
    with pytest.raises(RuntimeError, match=r"worker 1 was lost \(killed by signal 9"):
        aps.train(kill_inside_the_fifth_scoring(), engine="processes", workers=3, policy="sync",
                  lr=0.05, steps=200, timeout=10)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the resident size from /proc")
def test_a_child_keeps_the_memory_a_gradient_frees_for_the_next_one():
    """procs.keep_freed_memory (every engine child calls it): an 8 MB block freed stays resident,
    ready for the next step's gradient; without it glibc gives it back to the kernel at once (the
    control), and the next step faults in fresh pages."""
    import subprocess
    import sys

    script = ("import sys, numpy as np\nfrom asyncps.engines import procs\n"
              "rss = lambda: int(open('/proc/self/statm').read().split()[1]) * 4096 / 2**20\n"
              "if sys.argv[1] == 'keep': procs.keep_freed_memory()\n"
              "before = rss(); block = np.ones(2**20); del block\nprint(rss() - before)\n")
    kept = {how: float(subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True,
                                      check=True).stdout) for how in ("keep", "default")}
    assert kept["keep"] >= 7.5, kept                  # MB still resident after the free
    assert kept["default"] <= 1.0, kept
