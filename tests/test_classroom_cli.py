"""`asyncps classroom serve` and `asyncps classroom join` (asyncps/cli.py), each a process of its
own on 127.0.0.1, as a lecturer and students type them: the room prints the join line a student
pastes (the token in ASYNCPS_TOKEN), shows who is seated, starts on Enter or with --start-with,
and the run is saved; a student's token comes from the environment, a file or (with a warning)
the command line, and a malformed one is a usage error at once; a refusal or a lost room is one
line and a non-zero exit, Ctrl-C on the room still saves, a busy port is one line, and a misuse is
a usage error naming what was wrong. Every process a test starts is killed (by its own Popen)
when the test ends."""
import os
import pty
import re
import shlex
import signal
import socket
import stat
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
TOKEN = "ASYNCPS_TOKEN"


@pytest.fixture(autouse=True)
def no_token_around(monkeypatch):
    """A token in the developer's own environment plays no part in these tests."""
    monkeypatch.delenv(TOKEN, raising=False)


class Process:
    """`python -m asyncps ARGS` (or a shell line), its stdout and stderr in a log file; `env`:
    variables added to the environment (ASYNCPS_TOKEN only when given); `stdin`: a file
    descriptor (default: /dev/null, nobody at a terminal)."""

    def __init__(self, folder, label, argv=None, shell_line=None, env=None, stdin=None):
        self.log = Path(folder) / f"{label}.log"
        environment = {k: v for k, v in os.environ.items() if k != TOKEN}
        environment.update(env or {})
        environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent),
                                               os.environ.get("PATH", "")])
        command = ["/bin/sh", "-c", shell_line] if shell_line is not None else [*ASYNCPS, *map(str, argv)]
        with open(self.log, "w") as out:                 # a shell line: pasted into a shell, as typed
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=folder,
                                         env=environment,
                                         stdin=subprocess.DEVNULL if stdin is None else stdin)

    @property
    def output(self):
        return self.log.read_text()

    @property
    def lines(self):
        """The output's lines, as a terminal shows them (a progress line redrawn with \\r: its
        last drawing), stripped, the empty ones left out."""
        shown = (line.rsplit("\r", 1)[-1].strip() for line in self.output.splitlines())
        return [line for line in shown if line]

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
    """start(label, *args, env=None, stdin=None) -> a Process of `python -m asyncps *args`;
    start(label, shell=LINE) runs a shell line. Every one is killed at the end of the test."""
    started = []

    def run(label, *args, shell=None, env=None, stdin=None):
        started.append(Process(tmp_path, label, args, shell_line=shell, env=env, stdin=stdin))
        return started[-1]

    yield run
    for process in started:
        process.kill()


def join_line(room):
    """The join line the room printed, with its parts: (line, address, token)."""
    line = room.wait_for(r"each student types: (ASYNCPS_TOKEN=[^\n]*)\n").group(1)   # whole
    words = shlex.split(line)
    assert words[0].startswith(f"{TOKEN}=") and words[1:4] == ["asyncps", "classroom", "join"], words
    return line, words[4], words[0][len(TOKEN) + 1:]


def nobody_s_port():
    with socket.socket() as s:                                 # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_room_and_two_students_make_a_100_version_run_saved_with_their_names(start, tmp_path):
    room = start("room", "classroom", "serve", "--problem", "lsq", "--workers", "2", "--steps", "100",
                 "--lr", "0.05", "--seed", "3", "--start-with", "2", "--progress-every", "0.5",
                 "--out", tmp_path / "run.npz")
    line, address, token = join_line(room)
    assert re.fullmatch(r"ASYNCPS_TOKEN='[^']+' asyncps classroom join tcp://127\.0\.0\.1:\d+ "
                        r"--name NAME --problem lsq --seed 3", line), line
    assert "the run starts once 2 students are seated" in room.output, room.output
    students = [start(name, "classroom", "join", address, "--name", name, "--problem", "lsq",
                      "--seed", "3", "--slowdown", "0.005", env={TOKEN: token})
                for name in ("ada", "bo")]
    for student in students:
        assert student.code() == 0, student.output
        assert re.search(r"\(seat [01]\): \d+ gradients pushed.*the room made its versions",
                         student.lines[-1]), student.output
        assert "warning" not in student.output and "Traceback" not in student.output
    assert room.code() == 0, room.output
    for name in ("ada", "bo"):                                  # who is seated, as they join
        assert re.search(rf"{name} took seat [01] \([12] of 2 seated\)", room.output), room.output
    assert re.search(r"the run starts with 2 students: (ada, bo|bo, ada)\n", room.output), room.output
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
                 "--lr", "0.05", "--start-with", "1", "--out", tmp_path / "trace.json")
    line, _, _ = join_line(room)
    student = start("student", shell=line.replace("NAME", "ada"))     # all a student changes
    assert student.code() == 0, student.output
    assert "ada (seat 0): 100 gradients pushed" in student.output, student.output
    assert "warning" not in student.output                            # the token was not on a command line
    assert room.code() == 0, room.output
    trace = aps.Trace.from_json(tmp_path / "trace.json")
    assert trace.meta["students"] == {"0": "ada"} and len(trace.losses) == 101


def test_serve_writes_the_token_to_a_file_only_its_owner_reads_and_a_student_joins_with_it(
        start, tmp_path):
    path = tmp_path / "room-token"
    path.write_text("an old token\n")
    path.chmod(0o644)                                          # there before, readable by all
    room = start("room", "classroom", "serve", "--problem", "lsq", "--workers", "1", "--steps", "50",
                 "--start-with", "1", "--token-file", path)
    _, address, token = join_line(room)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == token + "\n"
    student = start("ada", "classroom", "join", address, "--token-file", path, "--name", "ada",
                    "--problem", "lsq")
    assert student.code() == 0, student.output
    assert "the room made its versions" in student.lines[-1] and "warning" not in student.output
    assert room.code() == 0, room.output


def test_a_token_on_the_command_line_still_works_and_warns_that_other_users_can_read_it(start):
    room = start("room", "classroom", "serve", "--problem", "lsq", "--workers", "1", "--steps", "50",
                 "--start-with", "1")
    _, address, token = join_line(room)
    student = start("ada", "classroom", "join", address, "--token", token, "--name", "ada",
                    "--problem", "lsq")
    assert student.code() == 0, student.output
    warnings = [line for line in student.lines if "warning" in line]
    assert len(warnings) == 1, student.output
    assert "(ps)" in warnings[0] and "ASYNCPS_TOKEN=TOKEN" in warnings[0], warnings
    assert "the room made its versions" in student.lines[-1]
    assert room.code() == 0, room.output


def test_a_wrong_token_a_wrong_problem_and_a_lost_room_exit_non_zero_in_one_line(start):
    room = start("room", "classroom", "serve", "--problem", "lsq", "--workers", "2", "--steps", "100",
                 "--start-with", "2")
    _, address, token = join_line(room)
    wrong = "A" * 22 + token[token.find("~"):]                 # well formed, the room's key kept
    for label, token_of, args, says in [
            ("eve", wrong, ["--problem", "lsq"], "refused this token"),
            ("cy", token, ["--problem", "logistic"], "this room trains"),
    ]:
        began = time.monotonic()
        student = start(label, "classroom", "join", address, "--name", label, *args, "--timeout", "20",
                        env={TOKEN: token_of})
        assert student.code() == 1, student.output
        assert time.monotonic() - began < 15, student.output   # refused at once, not after --timeout
        last = student.lines[-1]
        assert last.startswith("python -m asyncps classroom join: error: ") and says in last, last
        assert "Traceback" not in student.output
        assert ("(the token came from ASYNCPS_TOKEN)" in last) == (label == "eve"), last
    assert room.proc.poll() is None, room.output               # the room still serves
    room.kill()
    nobody = nobody_s_port()
    student = start("lost", "classroom", "join", f"tcp://127.0.0.1:{nobody}", "--name", "dan",
                    "--problem", "lsq", "--timeout", "1", env={TOKEN: token})
    assert student.code() == 1, student.output
    last = student.lines[-1]
    assert f"the room at tcp://127.0.0.1:{nobody} is lost" in last and "Traceback" not in student.output, last


def test_ctrl_c_stops_the_room_still_saves_and_the_student_is_told_why(start, tmp_path):
    room = start("room", "classroom", "serve", "--problem", "lsq", "--workers", "1",
                 "--steps", "1000000", "--lr", "0.01", "--start-with", "1", "--progress-every", "0.3",
                 "--out", tmp_path / "run.npz")
    _, address, token = join_line(room)
    student = start("ada", "classroom", "join", address, "--name", "ada", "--problem", "lsq",
                    "--slowdown", "0.002", env={TOKEN: token})
    room.wait_for(r"v[1-9]\d* of 1000000, 1 of 1 seats taken")
    room.proc.send_signal(signal.SIGINT)
    assert room.code() == 0, room.output
    last = room.output.strip().splitlines()[-1]
    assert "stopped by Ctrl-C" in last and "students: ada" in last and "wrote" in last, last
    assert "Traceback" not in room.output
    run = aps.load_run(tmp_path / "run.npz")
    assert 1 < len(run.losses) < 1000001 and run.trace.meta["students"] == {"0": "ada"}
    assert aps.violations(run.trace) == []
    assert student.code() == 1, student.output                 # told: not "made its versions"
    assert student.lines[-1] == "python -m asyncps classroom join: error: the lecturer stopped the run", \
        student.output
    assert "gradients pushed" in student.lines[-2] and "the lecturer stopped the run" in student.lines[-2]


def test_the_lecturer_presses_enter_to_start_with_the_students_seated(start, tmp_path):
    """stdin a terminal (a pseudo-terminal here): Enter before anyone joined says so; the room
    shows each student who takes a seat (a taken name suffixed) or frees one; Enter starts."""
    lecturer, terminal = pty.openpty()
    try:
        room = start("room", "classroom", "serve", "--problem", "lsq", "--workers", "3", "--steps",
                     "100", "--out", tmp_path / "run.npz", stdin=terminal)
        _, address, token = join_line(room)
        room.wait_for("press Enter to start the run")
        os.write(lecturer, b"\n")
        room.wait_for("the run cannot start yet: nobody is seated yet")
        ada = start("ada", "classroom", "join", address, "--name", "ada", "--problem", "lsq",
                    env={TOKEN: token})
        room.wait_for(r"ada took seat 0 \(1 of 3 seated\)")
        other = start("ada-2", "classroom", "join", address, "--name", "ada", "--problem", "lsq",
                      env={TOKEN: token})
        room.wait_for(r"ada \(2\) took seat 1 \(2 of 3 seated\)")
        cy = start("cy", "classroom", "join", address, "--name", "cy", "--problem", "lsq",
                   env={TOKEN: token})
        room.wait_for(r"cy took seat 2 \(3 of 3 seated\)")
        cy.wait_for("waiting for the lecturer")
        cy.proc.send_signal(signal.SIGINT)                     # cy leaves before the start
        assert cy.code() == 130, cy.output
        room.wait_for(r"seat 2 is free: cy left the room \(2 of 3 seated\)")
        time.sleep(0.3)
        assert room.proc.poll() is None and "the run starts" not in room.output, room.output
        os.write(lecturer, b"\n")
        room.wait_for(r"the run starts with 2 students: ada, ada \(2\)")
        for student in (ada, other):
            assert student.code() == 0, student.output
        assert "the room calls you 'ada (2)'" in other.output, other.output
        assert room.code() == 0, room.output
    finally:
        os.close(lecturer)
        os.close(terminal)
    run = aps.load_run(tmp_path / "run.npz")
    assert run.trace.meta["students"] == {"0": "ada", "1": "ada (2)"} and len(run.losses) == 101


def test_serve_with_no_terminal_and_no_start_with_is_a_usage_error_at_once(start):
    began = time.monotonic()
    room = start("room", "classroom", "serve", "--problem", "lsq", "--workers", "2")   # stdin: /dev/null
    assert room.code(30) == 2, room.output
    assert time.monotonic() - began < 20
    lines = room.lines
    assert lines[0].startswith("usage: python -m asyncps classroom serve"), lines
    assert lines[-1].startswith("python -m asyncps classroom serve: error: "), lines
    assert "stdin is not a terminal" in lines[-1] and "--start-with N" in lines[-1], lines
    assert "each student types" not in room.output                 # no join line for a room that closed


def test_a_busy_port_is_one_line_saying_what_to_do(start):
    with socket.socket() as taken:                                 # another program listens there
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        room = start("room", "classroom", "serve", "--problem", "lsq", "--workers", "2",
                     "--port", port, "--start-with", "1")
        assert room.code(30) == 1, room.output
    lines = room.lines
    assert len(lines) == 1, lines
    assert lines[0].startswith("python -m asyncps classroom serve: error: "), lines
    assert f"--port {port} is taken" in lines[0] and "--port 0" in lines[0], lines


@pytest.mark.parametrize("where", [TOKEN, "--token-file", "--token"])
@pytest.mark.parametrize("token", ["abc", "Xl5z_0Ks2r9QmV3bT1yH8w~cut-short",
                                   "Xl5z_0Ks2r9QmV3bT1yH8w" + "x" * 5 + "~" + "a" * 40])
def test_a_malformed_token_is_a_usage_error_at_once_from_every_source(where, token, tmp_path,
                                                                      monkeypatch, capsys):
    """Its form is checked before anything is sent: no waiting for --timeout (here 60 s, at an
    address where nobody listens)."""
    argv = ["classroom", "join", f"tcp://127.0.0.1:{nobody_s_port()}", "--name", "ada",
            "--problem", "lsq", "--timeout", "60"]
    if where == TOKEN:
        monkeypatch.setenv(TOKEN, token)
    elif where == "--token-file":
        (tmp_path / "token").write_text(token + "\nthe second line is not read\n")
        argv += ["--token-file", str(tmp_path / "token")]
    else:
        argv += ["--token", token]
    began = time.monotonic()
    first, line = usage_error(argv, capsys)
    assert time.monotonic() - began < 2
    assert first.startswith("usage: ") and "ASYNCPS_TOKEN=TOKEN" in first, first
    source = {TOKEN: "ASYNCPS_TOKEN: ", "--token-file": f"--token-file {tmp_path / 'token'}: ",
              "--token": "argument --token: "}[where]
    assert line.startswith(f"asyncps classroom join: error: {source}"), line
    assert "is not allowed" in line and "copy" in line, line


def test_a_token_from_a_file_is_its_first_line_stripped(tmp_path, capsys):
    """The file's first line, without its spaces and newline, is the token whose form is checked
    (a well-formed one gets as far as the network: here nobody listens, and --timeout says so)."""
    secret = "Xl5z_0Ks2r9QmV3bT1yH8w"
    (tmp_path / "token").write_text(f"  {secret}  \r\nmore\n")
    code = cli.main(["classroom", "join", f"tcp://127.0.0.1:{nobody_s_port()}", "--token-file",
                     str(tmp_path / "token"), "--name", "ada", "--problem", "lsq", "--timeout", "0.5"])
    err = capsys.readouterr().err
    assert code == 1 and "is lost" in err and "usage" not in err, err


@pytest.mark.parametrize("env,args,words", [
    ({}, [], ["give the room's token", "ASYNCPS_TOKEN=TOKEN", "--token-file PATH"]),
    ({TOKEN: "x"}, ["--token", "y"], ["given twice (ASYNCPS_TOKEN and --token)",
                                      "unset ASYNCPS_TOKEN to use --token"]),
    ({}, ["--token", "y", "--token-file", "t"], ["given twice (--token-file and --token)"]),
    ({}, ["--token-file", "no-such-file"], ["argument --token-file: cannot read no-such-file"]),
    ({}, ["--token-file", "empty"], ["argument --token-file: empty has no token"]),
])
def test_the_token_comes_from_exactly_one_source(env, args, words, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").write_text("\n")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    first, line = usage_error(["classroom", "join", "tcp://127.0.0.1:5555", "--name", "ada",
                               "--problem", "lsq", *args], capsys)
    assert first.startswith("usage: ASYNCPS_TOKEN=TOKEN asyncps classroom join"), first
    for word in words:
        assert word in line, (word, line)


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
    (["classroom", "serve", "--problem", "lsq", "--start-with", "0"], "asyncps classroom serve",
     ["--start-with", ">= 1"]),
    (["classroom", "serve", "--problem", "lsq", "--workers", "2", "--start-with", "3"],
     "asyncps classroom serve", ["--start-with 3 is not allowed", "--workers 2"]),
    (["classroom", "join", "--name", "ada", "--problem", "lsq"], "asyncps classroom join", ["ADDRESS"]),
    (["classroom", "join", "tcp://127.0.0.1", "--name", "ada", "--problem", "lsq"],
     "asyncps classroom join", ["ADDRESS", "tcp://10.0.0.5:5555"]),
])
def test_a_misuse_prints_the_classroom_command_s_usage_and_names_the_flag(argv, usage, words, capsys):
    first, line = usage_error(argv, capsys)
    assert first.startswith(f"usage: {usage}") or first.startswith(f"usage: {TOKEN}=TOKEN {usage}"), first
    assert line.startswith(f"{usage}: error: "), line
    for word in words:
        assert word in line, (word, line)


def test_help_lists_the_classroom_and_its_commands(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "    classroom" in capsys.readouterr().out
    for command, options in (("serve", ("--problem", "--workers", "--host", "--port", "--start-with",
                                        "--token-file", "--silent-after", "--out")),
                             ("join", ("ADDRESS", "ASYNCPS_TOKEN", "--token-file", "--token", "--name",
                                       "--seed", "--slowdown", "--timeout"))):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["classroom", command, "--help"])
        out = capsys.readouterr().out
        assert exit_.value.code == 0 and f"asyncps classroom {command}" in out
        for option in options:
            assert option in out, (command, option)


def test_serve_s_defaults_are_the_room_s():
    """--silent-after and --max-rate default to what aps.classroom.serve takes by default."""
    from asyncps.classroom import room

    serve = cli._classroom_parser("asyncps classroom").runs["serve"]
    assert serve.get_default("silent_after") == room.SILENT_AFTER
    assert serve.get_default("max_rate") == room.MAX_RATE
