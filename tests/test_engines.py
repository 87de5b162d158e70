"""Every engine, the simulator included, keeps the same invariants (tests parametrised by engine)."""
import numpy as np
import pytest

import asyncps as aps
from engines import ALL, nothing_left_behind, run_on  # noqa: F401 (a fixture)

LSQ = aps.problems.LeastSquares(n=256, dim=8, seed=0)
REAL = ["threads", "processes", "rpc"]

pytestmark = pytest.mark.usefixtures("nothing_left_behind")


def check_invariants(run, policy, workers, steps, bound=None):
    pushes = run.trace.pushes
    applied = [p.applied_to for p in pushes]
    assert applied == sorted(applied), "versions only increase"
    assert sorted(set(applied)) == list(range(steps)), "one version per applied update"
    assert len(run.losses) == steps + 1
    assert all(p.staleness == p.applied_to - p.computed_on >= 0 for p in pushes)
    if policy == "sync":
        assert all(p.staleness == 0 for p in pushes) and len(pushes) == workers * steps
    else:
        assert len(pushes) == steps
    if bound is not None:
        clocks = [0] * workers
        for e in run.trace.events:
            if e.kind == "pull":
                assert clocks[e.worker] - min(clocks) <= bound
            if e.kind == "push":
                clocks[e.worker] += 1


@pytest.mark.timeout(120)
@pytest.mark.parametrize("engine", ALL)
@pytest.mark.parametrize("policy", ["async", "sync", "ssp"])
def test_invariants_hold_on_every_engine(engine, policy):
    bound = 1 if policy == "ssp" else None
    run = run_on(engine, LSQ, workers=3, policy=policy, max_clocks_ahead=bound, lr=0.05, steps=120,
                 slowdown=[0.0, 0.001, 0.002])
    check_invariants(run, policy, 3, 120, bound)
    assert run.trace.meta["engine"] == engine
    assert run.losses[-1] < 0.1 * run.losses[0]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("engine", ALL)
def test_sync_on_full_shards_is_full_batch_gradient_descent(engine):
    run = run_on(engine, LSQ, workers=4, policy="sync", lr=0.05, steps=60)
    one = aps.simulate(LSQ, workers=1, policy="sync", lr=0.05, steps=60)
    np.testing.assert_allclose(run.params, one.params, rtol=0, atol=1e-12)


CONSTANT = aps.problems.from_functions(loss=lambda x: float(np.sum(x)),
                                       grad=lambda x: np.ones_like(x), x0=[0.0, 0.0, 0.0])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("engine", ["threads", "processes"])
def test_no_update_is_lost_under_the_default_lock(engine):
    lr = 2.0 ** -10                         # exact in binary: the sum of the steps is exact too
    run = aps.train(CONSTANT, workers=8, policy="async", lr=lr, steps=1200, engine=engine)
    assert len(run.trace.pushes) == 1200
    assert np.array_equal(run.params, np.full(3, -lr * 1200))


@pytest.mark.timeout(120)
def test_a_straggler_halves_sync_but_not_async_on_processes():
    slow = [0.0, 0.0, 0.0, 0.02]
    rates = {}
    for policy in ("async", "sync"):
        run = aps.train(LSQ, workers=4, policy=policy, lr=0.02, steps=50 if policy == "sync" else 300,
                        slowdown=slow, engine="processes")
        rates[policy] = len(run.trace.pushes) / run.trace.duration
    assert rates["async"] >= 2.0 * rates["sync"], rates


@pytest.mark.timeout(120)
def test_rpc_three_process_world_runs_async_with_stale_pushes_from_two_workers():
    run = aps.train(LSQ, workers=2, policy="async", lr=0.05, steps=200, engine="rpc",
                    slowdown=[0.001, 0.001])
    check_invariants(run, "async", 2, 200)
    stale_workers = {p.worker for p in run.trace.pushes if p.staleness > 0}
    assert stale_workers == {0, 1}
    sync = aps.train(LSQ, workers=2, policy="sync", lr=0.05, steps=50, engine="rpc")
    check_invariants(sync, "sync", 2, 50)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("engine", REAL)
def test_a_problem_defined_in_a_cell_travels_by_value(engine):
    target = np.array([3.0, -1.0])
    prob = aps.problems.from_functions(lambda x: float(np.sum((x - target) ** 2)),
                                       lambda x, shard, rng: 2 * (x - target), x0=[0.0, 0.0])
    # sync: each version averages two fresh gradients, so the end does not hang on how the workers
    # were scheduled (under async one very stale push, late in the run, left it 7e-5 away)
    run = aps.train(prob, workers=2, policy="sync", lr=0.1, steps=100, engine=engine)
    np.testing.assert_allclose(run.params, target, atol=1e-6)


def test_a_problem_that_cannot_travel_fails_at_once_with_advice():
    import threading
    lock = threading.Lock()
    prob = aps.problems.from_functions(lambda x: float(lock.locked()), lambda x: x, x0=[1.0])
    with pytest.raises(TypeError, match="engine='threads'"):
        aps.train(prob, workers=2, steps=5, engine="processes")


def test_train_checks_its_own_arguments():
    with pytest.raises(ValueError, match="engine='mpi'"):
        aps.train(LSQ, engine="mpi")
    with pytest.raises(ValueError, match="device='tpu'"):
        aps.train(LSQ, device="tpu")
    with pytest.raises(ValueError, match="slowdown"):
        aps.train(LSQ, workers=2, slowdown=[0.1])
    with pytest.raises(ValueError, match="lock=False"):
        aps.train(LSQ, policy="sync", lock=False)
    with pytest.raises(ValueError, match="address='10.0.0.1'"):
        aps.train(LSQ, engine="rpc", address="10.0.0.1")
    with pytest.raises(TypeError, match="engine='rpc' only"):
        aps.train(LSQ, engine="threads", address="127.0.0.1")


def test_device_cuda_without_a_gpu_says_so():
    import torch
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: scripts/gpu_check.py covers device='cuda'")
    with pytest.raises(ValueError, match="no CUDA GPU"):
        aps.train(LSQ, device="cuda")
    assert aps.train(LSQ, device="auto", steps=5).trace.meta["devices"] == ["cpu", "cpu"]


def test_hogwild_runs_and_is_labelled():
    run = aps.train(CONSTANT, workers=4, policy="async", lr=2.0 ** -10, steps=400, lock=False)
    assert run.trace.meta["lock"] is False and len(run.trace.pushes) >= 1


@pytest.mark.timeout(120)
def test_rpc_listens_on_loopback_only():
    import threading
    import time

    import psutil

    seen = []

    def watch():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not seen[-1:] == ["stop"]:
            for child in psutil.Process().children(recursive=True):
                try:
                    seen.extend((c.laddr.ip, c.laddr.port) for c in child.net_connections("inet")
                                if c.status == psutil.CONN_LISTEN)
                except psutil.Error:
                    pass
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    aps.train(LSQ, workers=2, lr=0.01, steps=600, slowdown=[0.003, 0.003], engine="rpc")
    seen.append("stop")
    watcher.join()
    listening = [s for s in seen if s != "stop"]
    assert listening, "the watcher saw no listening socket at all"
    assert {ip for ip, _ in listening} <= {"127.0.0.1", "::1"}, listening


def test_launch_refuses_a_remote_address_without_allow_remote(monkeypatch, capsys):
    from asyncps import launch
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "3")
    monkeypatch.setenv("MASTER_ADDR", "10.1.2.3")
    with pytest.raises(SystemExit, match="--allow-remote"):
        launch.main(["--steps", "5"])


def test_violations_finds_a_broken_trace_and_passes_real_ones():
    run = aps.train(LSQ, workers=3, policy="ssp", max_clocks_ahead=1, lr=0.05, steps=50)
    assert aps.violations(run.trace) == []
    bad = aps.Trace.from_json(run.trace.to_json())
    p = bad.pushes[5]
    bad.events[bad.events.index(p)] = aps.Push(p.worker, p.computed_on, p.applied_to, p.staleness + 1,
                                               p.time)
    assert any("staleness must be" in v for v in aps.violations(bad))


def test_gpu_check_skips_cleanly_without_a_gpu():
    import subprocess
    import sys
    from pathlib import Path

    import torch
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: run scripts/gpu_check.py itself")
    script = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.py"
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "SKIPPED" in out.stdout


def test_gpu_check_runs_every_check_and_reports_each(monkeypatch, capsys):
    """Issue 26: gpu_check stopped at its first exception, so the checks after it never ran."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.py"
    spec = importlib.util.spec_from_file_location("gpu_check", path)
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)

    def crashes():
        raise RuntimeError("the rpc server (rank 0) killed by signal 6 (SIGABRT)")
    checks = [("rpc       crashes", crashes),
              ("threads   fails", lambda: (["loss did not fall"], "loss 1 -> 2")),
              ("threads   passes", lambda: ([], "loss 2 -> 1"))]
    monkeypatch.setattr(gpu_check, "checks_on", lambda device, count: checks)
    assert gpu_check.main(["--device", "cpu"]) == 1
    out = capsys.readouterr().out
    assert "rpc       crashes FAILED  raised" in out and "RuntimeError: the rpc server (rank 0) killed" in out
    assert "threads   fails FAILED  loss 1 -> 2" in out and "loss did not fall" in out
    assert "threads   passes ok  loss 2 -> 1" in out
    assert "gpu_check: 2 of 3 FAILED (1 of 3 checks passed)" in out
    assert "torch " in out.splitlines()[0] and "Python " in out.splitlines()[0]
