"""Checkpoints: saved atomically, loaded exactly, and a run resumes where its last save left it."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import asyncps as aps
from engines import run_on

LSQ = aps.problems.LeastSquares(n=128, dim=5, seed=0)


@pytest.mark.parametrize("engine", ["simulate", "threads", "processes"])
def test_save_and_load_keep_params_version_losses_and_trace(engine, tmp_path):
    run = run_on(engine, LSQ, workers=2, lr=0.05, steps=40, momentum=0.5)
    run.save(tmp_path / "run.npz")
    back = aps.load_run(tmp_path / "run.npz")
    assert np.array_equal(back.params, run.params) and back.losses == run.losses
    assert back.trace == run.trace and back.server_state["version"] == 40
    assert np.array_equal(back.server_state["velocity"], run.server_state["velocity"])
    assert [np.array_equal(a, b) for a, b in zip(back.worker_params, run.worker_params)] == [True, True]


def test_a_failed_save_leaves_the_previous_checkpoint_readable(tmp_path, monkeypatch):
    path = tmp_path / "run.npz"
    first = aps.simulate(LSQ, workers=2, lr=0.05, steps=10)
    first.save(path)

    def crash(file, **arrays):
        file.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(OSError, match="disk full"):
        aps.simulate(LSQ, workers=2, lr=0.05, steps=20).save(path)
    monkeypatch.undo()
    assert aps.load_run(path).losses == first.losses
    assert os.listdir(tmp_path) == ["run.npz"]                 # no temporary file left


def test_a_broken_checkpoint_says_so(tmp_path):
    path = tmp_path / "broken.npz"
    path.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(ValueError, match="not a readable asyncps checkpoint"):
        aps.load_run(path)


@pytest.mark.parametrize("engine", ["threads", "processes"])
def test_resume_continues_from_the_saved_version_with_the_same_trace_prefix(engine, tmp_path):
    path = tmp_path / "ckpt.npz"
    first = aps.train(LSQ, workers=2, lr=0.05, steps=60, engine=engine, checkpoint=path,
                      checkpoint_every=20)
    saved = aps.load_run(path)
    assert saved.server_state["version"] == 60 and saved.losses == first.losses
    more = aps.train(LSQ, workers=2, lr=0.05, steps=100, engine=engine, resume=path)
    assert more.trace.events[:len(saved.trace.events)] == saved.trace.events
    assert more.losses[:61] == saved.losses and len(more.losses) == 101
    assert [p.applied_to for p in more.trace.pushes] == list(range(100))
    assert min(e.time for e in more.trace.pulls[len(saved.trace.pulls):]) >= saved.trace.duration


@pytest.mark.timeout(120)
def test_a_killed_training_resumes_from_its_last_checkpoint(tmp_path):
    path = tmp_path / "ckpt.npz"
    script = textwrap.dedent(f"""
        import asyncps as aps
        prob = aps.problems.LeastSquares(n=128, dim=5, seed=0)
        aps.train(prob, workers=2, lr=0.01, steps=1_000_000, slowdown=[0.001, 0.001],
                  checkpoint={str(path)!r}, checkpoint_every=10)
    """)
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 60
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    saved = aps.load_run(path)
    version = saved.server_state["version"]
    assert version >= 10 and version % 10 == 0 and len(saved.losses) == version + 1
    more = aps.train(LSQ, workers=2, lr=0.01, steps=version + 30, resume=path)
    assert more.trace.events[:len(saved.trace.events)] == saved.trace.events
    assert len(more.losses) == version + 31


@pytest.mark.timeout(120)
@pytest.mark.parametrize("delay", [0.3, 0.55, 0.8])
def test_killing_the_process_during_a_save_leaves_a_readable_checkpoint(tmp_path, delay):
    path = tmp_path / "big.npz"
    script = textwrap.dedent(f"""
        import numpy as np, asyncps as aps
        run = aps.simulate(aps.problems.Quadratic(curvature=[1.0], x0=[1.0]), workers=2, steps=5)
        v = 0
        while True:                                   # saves of ~16 MB, back to back
            run.params = np.full(2_000_000, float(v))
            run.save({str(path)!r})
            v += 1
    """)
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 60
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(delay)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    saved = aps.load_run(path)                        # the last complete save, never half of one
    assert saved.params.size == 2_000_000 and np.all(saved.params == saved.params[0])
