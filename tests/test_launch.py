"""`python -m asyncps.launch`, one process per rank with the environment torchrun would set
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), on 127.0.0.1: a whole world, a problem defined
outside asyncps, and ranks killed mid-run. Real torchrun runs the same in tests/test_torchrun.py
(where network namespaces are permitted)."""
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

import asyncps as aps

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]   # minutes in all: not in make test-fast


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ranks:
    """`world` processes of `python -m asyncps.launch args`, each with its own log file."""

    def __init__(self, tmp_path, world, *args, pythonpath=()):
        port, self.logs = free_port(), [tmp_path / f"rank{r}.log" for r in range(world)]
        self.procs = []
        for rank, log in enumerate(self.logs):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port),
                       PYTHONPATH=os.pathsep.join([*map(str, pythonpath), os.environ.get("PYTHONPATH", "")]))
            with open(log, "w") as out:
                self.procs.append(subprocess.Popen([sys.executable, "-m", "asyncps.launch",
                                                    *map(str, args)], env=env, stdout=out,
                                                   stderr=subprocess.STDOUT, cwd=tmp_path))

    def output(self, rank):
        return self.logs[rank].read_text()

    def wait_for(self, words, rank=0, seconds=90):
        deadline = time.monotonic() + seconds
        while words not in self.output(rank):
            assert time.monotonic() < deadline, self.output(rank)
            time.sleep(0.05)

    def codes(self, seconds=90):
        """Every rank's exit code, once all have exited (fail if one is still running)."""
        deadline = time.monotonic() + seconds
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pytest.fail(f"a rank is still running {seconds} s on:\n" +
                            "\n".join(self.output(r)[-2000:] for r in range(len(self.procs))))
        return [p.returncode for p in self.procs]

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()


@pytest.fixture
def ranks(tmp_path):
    started = []

    def start(world, *args, **kwargs):
        started.append(Ranks(tmp_path, world, *args, **kwargs))
        return started[-1]

    yield start
    for r in started:
        r.stop()


def test_launch_runs_a_three_rank_world_on_loopback(ranks, tmp_path):
    world = ranks(3, "--problem", "lsq", "--steps", "100", "--out", tmp_path / "run.npz")
    assert world.codes() == [0, 0, 0], world.output(0)
    assert "rank 0 serves" in world.output(0) and "versions=100" in world.output(0)
    run = aps.load_run(tmp_path / "run.npz")
    assert aps.violations(run.trace) == [] and len(run.losses) == 101
    assert {e.worker for e in run.trace.pushes} == {0, 1}


@pytest.mark.parametrize("policy", ["ksync", "kasync"])
def test_launch_runs_rounds_of_k(ranks, tmp_path, policy):
    world = ranks(4, "--problem", "lsq", "--policy", policy, "--wait-for", "2", "--steps", "60",
                  "--out", tmp_path / "run.npz")
    assert world.codes() == [0, 0, 0, 0], world.output(0)
    run = aps.load_run(tmp_path / "run.npz")
    assert run.trace.meta["policy"] == policy and run.trace.meta["wait_for"] == 2
    assert aps.violations(run.trace) == [] and len(run.losses) == 61
    assert len(run.trace.pushes) == 2 * 60


def test_launch_runs_a_problem_defined_outside_asyncps(ranks, tmp_path):
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "mod.py").write_text(
        "import asyncps as aps\n\n"
        "def make(seed, n=64, dim=4):\n"
        "    return aps.problems.LeastSquares(n=n, dim=dim, seed=seed)\n")
    world = ranks(3, "--problem", "mypkg.mod:make", "--problem-arg", "n=128", "--problem-arg", "dim=6",
                  "--steps", "100", "--seed", "3", "--out", tmp_path / "run.npz", pythonpath=[tmp_path])
    assert world.codes() == [0, 0, 0], world.output(0)
    run = aps.load_run(tmp_path / "run.npz")
    same = aps.problems.LeastSquares(n=128, dim=6, seed=3)         # built from the seed, on every rank
    assert run.params.shape == (6,) and len(run.losses) == 101
    assert run.losses[0] == pytest.approx(same.loss(same.x0))
    assert run.losses[-1] < run.losses[0] and aps.violations(run.trace) == []


@pytest.mark.parametrize("spec,says", [
    ("nowhere.mod:make", r"--problem nowhere.mod:make cannot be loaded \(No module named 'nowhere'\)"),
    ("asyncps.problems:nothing", r"cannot be loaded \(module 'asyncps.problems' has no attribute"),
    ("builtins:dict", r"--problem builtins:dict returned dict, not an asyncps Problem"),
])
def test_a_problem_that_cannot_be_built_is_named(monkeypatch, spec, says):
    from asyncps import launch

    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(SystemExit, match=says):
        launch.main(["--problem", spec])


def test_problem_arguments_are_literals_and_need_a_factory():
    from asyncps import launch

    args = launch.parse(["--problem", "m:f", "--problem-arg", "hidden=64", "--problem-arg",
                         "sizes=[8, 4]", "--problem-arg", "name=relu"])
    assert dict(args.problem_arg) == {"hidden": 64, "sizes": [8, 4], "name": "relu"}
    with pytest.raises(SystemExit):
        launch.parse(["--problem", "m:f", "--problem-arg", "64"])        # not key=value
    with pytest.raises(SystemExit):
        launch.parse(["--problem", "resnet"])                           # neither built in nor m:f
    with pytest.raises(ValueError, match="--problem-arg is not allowed with the built-in problem"):
        launch.make_problem("lsq", 0, [("n", 5)])


def test_a_killed_worker_rank_is_lost_and_async_finishes(ranks, tmp_path):
    world = ranks(4, "--problem", "lsq", "--steps", "3000", "--timeout", "2", "--out",
                  tmp_path / "run.npz")
    world.wait_for("every rank has joined")
    time.sleep(0.5)
    world.procs[3].send_signal(signal.SIGKILL)
    assert world.codes()[:3] == [0, 0, 0], world.output(0)
    run = aps.load_run(tmp_path / "run.npz")
    assert [(e.worker, e.reason) for e in run.trace.lost] == [
        (2, "no word from rank 3 for 2 s: its process died, or one gradient takes longer than --timeout")]
    assert "worker 2 was lost" in world.output(0)
    assert len(run.losses) == 3001 and aps.violations(run.trace) == []


def test_a_killed_worker_rank_stops_sync_with_a_clear_error(ranks):
    world = ranks(3, "--problem", "lsq", "--policy", "sync", "--steps", "1000000", "--timeout", "2")
    world.wait_for("every rank has joined")
    time.sleep(0.5)
    world.procs[2].send_signal(signal.SIGKILL)
    codes = world.codes()
    assert codes[0] == 1 and codes[1] == 1, [world.output(r) for r in range(3)]
    assert "rank 0: the run failed: worker 1 was lost (no word from rank 2 for 2 s" in world.output(0)
    assert "worker 0 (rank 1) lost the server (rank 0)" in world.output(1)


def test_a_killed_server_rank_makes_every_worker_exit_saying_so(ranks):
    world = ranks(4, "--problem", "lsq", "--steps", "1000000", "--timeout", "60")
    world.wait_for("every rank has joined")
    time.sleep(0.5)
    world.procs[0].send_signal(signal.SIGKILL)
    codes = world.codes(seconds=30)                    # well before the 60-s timeout
    assert codes == [-signal.SIGKILL, 1, 1, 1], [world.output(r) for r in range(4)]
    for rank in (1, 2, 3):
        assert f"asyncps.launch: worker {rank - 1} (rank {rank}) lost the server (rank 0)" in \
            world.output(rank)
        assert "Traceback" not in world.output(rank)
