"""`asyncps classroom serve` and `asyncps classroom join` (asyncps/cli.py), each a process of its
own on 127.0.0.1, as a lecturer and students type them: the room prints the join line a student
pastes, the run is saved, a refusal or a lost room is one line and a non-zero exit, Ctrl-C on the
room still saves, and a misuse is a usage error naming what was wrong. Every process a test
starts is killed (by its own Popen) when the test ends."""
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import asyncps as aps
from asyncps import cli
from test_cli import usage_error

pytestmark = pytest.mark.timeout(120)
ASYNCPS = [sys.executable, "-m", "asyncps"]


class Process:
    """`python -m asyncps ARGS` (or a shell line), its stdout and stderr in a log file."""

    def __init__(self, folder, label, argv=None, shell_line=None):
        self.log = Path(folder) / f"{label}.log"
        env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                                     os.environ.get("PATH", "")]))
        with open(self.log, "w") as out:
            if shell_line is not None:                   # a line pasted into a shell, as typed
                self.proc = subprocess.Popen(["/bin/sh", "-c", shell_line], stdout=out,
                                             stderr=subprocess.STDOUT, cwd=folder, env=env)
            else:
                self.proc = subprocess.Popen([*ASYNCPS, *map(str, argv)], stdout=out,
                                             stderr=subprocess.STDOUT, cwd=folder, env=env)

    @property
    def output(self):
        return self.log.read_text()

    def wait_for(self, pattern, seconds=60):
        """The first match of the regular expression `pattern` in the output, once it is there."""
        deadline = time.monotonic() + seconds
        while True:
            found = re.search(pattern, self.output)
            if found:
                return found
            assert self.proc.poll() is None or re.search(pattern, self.output), self.output
            assert time.monotonic() < deadline, f"no {pattern!r} after {seconds} s:\n{self.output}"
            time.sleep(0.05)

    def code(self, seconds=60):
        try:
            return self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {seconds} s on:\n{self.output[-3000:]}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def start(tmp_path):
    """start(label, *args) -> a Process of `python -m asyncps *args`; start(label, shell=LINE)
    runs a shell line. Every one is killed at the end of the test."""
    started = []

    def run(label, *args, shell=None):
        started.append(Process(tmp_path, label, args, shell_line=shell))
        return started[-1]

    yield run
    for process in started:
        process.kill()


def join_line(room):
    """The join line the room printed, with its parts: (line, address, token)."""
    line = room.wait_for(r"each student types: (asyncps classroom join [^\n]*)\n").group(1)   # whole
    words = shlex.split(line)
    return line, words[3], words[words.index("--token") + 1]


def test_a_room_and_two_students_make_a_100_version_run_saved_with_their_names(start, tmp_path):
    room = start("room", "classroom", "serve", "--problem", "lsq", "--workers", "2", "--steps", "100",
                 "--lr", "0.05", "--seed", "3", "--progress-every", "0.5", "--out", tmp_path / "run.npz")
    line, address, token = join_line(room)
    assert re.fullmatch(r"asyncps classroom join tcp://127\.0\.0\.1:\d+ --token \S+ --name NAME "
                        r"--problem lsq --seed 3", line), line
    students = [start(name, "classroom", "join", address, "--token", token, "--name", name,
                      "--problem", "lsq", "--seed", "3", "--slowdown", "0.005")
                for name in ("ada", "bo")]
    for student in students:
        assert student.code() == 0, student.output
        assert re.search(r"\(seat [01]\): \d+ gradients pushed.*the room made its versions",
                         student.output), student.output
    assert room.code() == 0, room.output
    last = room.output.strip().splitlines()[-1]
    assert "100 versions" in last and "wrote" in last, last
    assert re.search(r"students: (ada, bo|bo, ada)(;|,|$)", last), last          # in seat order
    assert re.search(r"v\d+ of 100, \d of 2 seats taken", room.output), room.output   # progress
    run = aps.load_run(tmp_path / "run.npz")
    assert len(run.losses) == 101 and run.losses[-1] < run.losses[0]
    assert sorted(run.trace.meta["students"].values()) == ["ada", "bo"]
    assert aps.violations(run.trace) == []


def test_the_printed_join_line_runs_as_pasted_into_a_shell(start, tmp_path):
    room = start("room", "classroom", "serve", "--problem", "lsq", "--workers", "1", "--steps", "100",
                 "--lr", "0.05", "--out", tmp_path / "trace.json")
    line, _, _ = join_line(room)
    student = start("student", shell=line.replace("NAME", "ada"))     # all a student changes
    assert student.code() == 0, student.output
    assert "ada (seat 0): 100 gradients pushed" in student.output, student.output
    assert room.code() == 0, room.output
    trace = aps.Trace.from_json(tmp_path / "trace.json")
    assert trace.meta["students"] == {"0": "ada"} and len(trace.losses) == 101


def test_a_wrong_token_a_wrong_problem_and_a_lost_room_exit_non_zero_in_one_line(start):
    room = start("room", "classroom", "serve", "--problem", "lsq", "--workers", "2", "--steps", "100")
    _, address, token = join_line(room)
    wrong = "guess" + token[token.find("~"):] if "~" in token else "guess"   # the room's key kept
    for label, args, says in [
            ("eve", ["--token", wrong, "--problem", "lsq"], "a wrong or missing token"),
            ("cy", ["--token", token, "--problem", "logistic"], "this room trains"),
    ]:
        student = start(label, "classroom", "join", address, "--name", label, *args, "--timeout", "10")
        assert student.code() != 0, student.output
        last = student.output.strip().splitlines()[-1]
        assert last.startswith("python -m asyncps classroom join: error: ") and says in last, last
        assert "Traceback" not in student.output
    assert room.proc.poll() is None, room.output               # the room still serves
    room.kill()
    with socket.socket() as s:                                 # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        nobody = s.getsockname()[1]
    student = start("lost", "classroom", "join", f"tcp://127.0.0.1:{nobody}", "--token", token,
                    "--name", "dan", "--problem", "lsq", "--timeout", "1")
    assert student.code() == 1, student.output
    last = student.output.strip().splitlines()[-1]
    assert f"the room at tcp://127.0.0.1:{nobody} is lost" in last and "Traceback" not in student.output, last


def test_ctrl_c_stops_the_room_and_still_saves(start, tmp_path):
    room = start("room", "classroom", "serve", "--problem", "lsq", "--workers", "1",
                 "--steps", "1000000", "--lr", "0.01", "--progress-every", "0.3",
                 "--out", tmp_path / "run.npz")
    _, address, token = join_line(room)
    student = start("ada", "classroom", "join", address, "--token", token, "--name", "ada",
                    "--problem", "lsq", "--slowdown", "0.002")
    room.wait_for(r"v[1-9]\d* of 1000000, 1 of 1 seats taken")
    room.proc.send_signal(signal.SIGINT)
    assert room.code() == 0, room.output
    last = room.output.strip().splitlines()[-1]
    assert "stopped by Ctrl-C" in last and "students: ada" in last and "wrote" in last, last
    assert "Traceback" not in room.output
    run = aps.load_run(tmp_path / "run.npz")
    assert 1 < len(run.losses) < 1000001 and run.trace.meta["students"] == {"0": "ada"}
    assert aps.violations(run.trace) == []
    assert student.code() == 0, student.output                 # told the room is done


@pytest.mark.parametrize("argv,usage,words", [
    (["classroom"], "asyncps classroom", ["give a command", "'serve'", "'join'"]),
    (["classroom", "srve"], "asyncps classroom", ["'srve' is not a command", "did you mean 'serve'?"]),
    (["classroom", "--token", "x"], "asyncps classroom", ["give the command first",
                                                          "asyncps classroom join --token x"]),
    (["classroom", "serve"], "asyncps classroom serve", ["--problem"]),
    (["classroom", "serve", "--problem", "least-squares"], "asyncps classroom serve",
     ["--problem", "did you mean 'lsq'?"]),
    (["classroom", "serve", "--problem", "lsq", "--token", "x"], "asyncps classroom serve",
     ["--token", "an option of asyncps classroom join"]),
    (["classroom", "serve", "--problem", "lsq", "--lerning-rate", "0.1"], "asyncps classroom serve",
     ["did you mean --lr?"]),
    (["classroom", "serve", "--problem", "lsq", "--workers", "0"], "asyncps classroom serve",
     ["--workers 0"]),
    (["classroom", "serve", "--problem", "lsq", "--port", "70000"], "asyncps classroom serve",
     ["--port", "65535"]),
    (["classroom", "join", "--token", "x", "--name", "ada", "--problem", "lsq"],
     "asyncps classroom join", ["ADDRESS"]),
    (["classroom", "join", "tcp://127.0.0.1", "--token", "x", "--name", "ada", "--problem", "lsq"],
     "asyncps classroom join", ["ADDRESS", "tcp://10.0.0.5:5555"]),
    (["classroom", "join", "tcp://127.0.0.1:5555", "--name", "ada", "--problem", "lsq"],
     "asyncps classroom join", ["--token"]),
    (["classroom", "join", "tcp://127.0.0.1:5555", "--token", "abc~cut-short", "--name", "ada",
      "--problem", "lsq"], "asyncps classroom join", ["--token", "cut short", "copy the whole token"]),
])
def test_a_misuse_prints_the_classroom_command_s_usage_and_names_the_flag(argv, usage, words, capsys):
    first, line = usage_error(argv, capsys)
    assert first.startswith(f"usage: {usage}"), first
    assert line.startswith(f"{usage}: error: "), line
    for word in words:
        assert word in line, (word, line)


def test_help_lists_the_classroom_and_its_commands(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "    classroom" in capsys.readouterr().out
    for command, options in (("serve", ("--problem", "--workers", "--host", "--port", "--silent-after",
                                        "--out")),
                             ("join", ("ADDRESS", "--token", "--name", "--seed", "--slowdown",
                                       "--timeout"))):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["classroom", command, "--help"])
        out = capsys.readouterr().out
        assert exit_.value.code == 0 and f"asyncps classroom {command}" in out
        for option in options:
            assert option in out, (command, option)
