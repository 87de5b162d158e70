"""The `asyncps` console script: every subcommand reachable, its runs readable back, its errors
naming the argument; the modules it delegates to still work on their own."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import asyncps as aps
from asyncps import cli

SCRIPT = Path(sys.executable).parent / "asyncps"
COMMANDS = ("simulate", "train", "launch", "grade", "check", "assignments", "bench")
KEY_OPTIONS = {"simulate": ("--workers", "--policy", "--max-clocks-ahead", "--compute-times", "--config",
                            "--out", "--chrome", "--problem"),
               "train": ("--engine", "--workers", "--slowdown", "--config", "--out"),
               "launch": ("--problem", "--policy", "--allow-remote"),
               "grade": ("notebook", "--solutions"),
               "check": ("notebook", "--timeout"),
               "assignments": ("solutions", "exercises", "--check"),
               "bench": ("--quick", "--out")}
RUN = ["--workers", "3", "--policy", "ssp", "--max-clocks-ahead", "1", "--lr", "0.05",
       "--steps", "40", "--compute-times", "1", "1", "3", "--seed", "7"]


def usage_error(argv, capsys):
    """(the usage line, the last line) that `asyncps ARGV` prints to stderr: a usage error, exit 2."""
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert not lines[-1].startswith((" ", "Traceback")), lines
    return lines[0], lines[-1]


def asyncps(*args, cwd=None):
    if not SCRIPT.exists():
        pytest.fail(f"{SCRIPT} is missing: reinstall with `.venv/bin/pip install -e . --no-deps`")
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_help_lists_every_subcommand():
    done = asyncps("--help")
    assert done.returncode == 0, done.stderr
    for command in COMMANDS:
        assert f"    {command}" in done.stdout, command


@pytest.mark.parametrize("command", COMMANDS)
def test_each_subcommand_s_help_names_itself_and_its_key_options(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert f"asyncps {command}" in out                  # prog reads `asyncps grade`, not python -m
    for option in KEY_OPTIONS[command]:
        assert option in out, (command, option)


def test_simulate_writes_a_trace_with_the_asked_workers_and_steps(tmp_path):
    done = asyncps("simulate", *RUN, "--out", tmp_path / "t.json")
    assert done.returncode == 0, done.stderr
    assert "3 workers" in done.stdout and done.stdout.count("\n") == 1    # a one-line summary
    trace = aps.Trace.from_json(tmp_path / "t.json")
    assert trace.workers == 3 and len(trace.losses) - 1 == 40
    assert trace.meta["policy"] == "ssp" and trace.meta["max_clocks_ahead"] == 1
    assert trace.meta["compute_times"] == [1.0, 1.0, 3.0]
    assert aps.violations(trace) == []


def test_a_config_file_gives_the_same_trace_as_the_flags(tmp_path):
    cli.main(["simulate", *RUN, "--out", str(tmp_path / "flags.json")])
    config = {"workers": 3, "policy": "ssp", "max_clocks_ahead": 1, "lr": 0.05, "steps": 40,
              "compute_times": [1, 1, 3], "seed": 7, "problem": "least-squares"}
    (tmp_path / "run.json").write_text(json.dumps(config))
    done = asyncps("simulate", "--config", tmp_path / "run.json", "--out", tmp_path / "config.json")
    assert done.returncode == 0, done.stderr
    assert aps.Trace.from_json(tmp_path / "flags.json") == aps.Trace.from_json(tmp_path / "config.json")
    assert (tmp_path / "flags.json").read_bytes() == (tmp_path / "config.json").read_bytes()


def test_a_flag_overrides_the_config_file(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"workers": 4, "steps": 30}))
    assert cli.main(["simulate", "--config", str(tmp_path / "run.json"), "--workers", "2",
                     "--out", str(tmp_path / "t.json")]) == 0
    trace = aps.Trace.from_json(tmp_path / "t.json")
    assert trace.workers == 2 and len(trace.losses) - 1 == 30


def test_out_npz_saves_the_whole_run(tmp_path):
    assert cli.main(["simulate", "--problem", "quadratic", "--dim", "3", "--steps", "12",
                     "--out", str(tmp_path / "run.npz")]) == 0
    run = aps.load_run(tmp_path / "run.npz")
    assert run.params.shape == (3,) and len(run.losses) - 1 == 12


def test_a_bad_policy_exits_2_naming_the_argument_and_the_allowed_values():
    done = asyncps("simulate", "--policy", "eventually")
    assert done.returncode == 2
    assert "--policy" in done.stderr and "eventually" in done.stderr
    for policy in aps.POLICIES:
        assert repr(policy) in done.stderr


@pytest.mark.parametrize("args,named", [(["--workers", "0"], "--workers 0"),
                                        (["--workers", "3", "--compute-times", "1", "2"],
                                         "--compute-times 1 2"),
                                        (["--dim", "0"], "argument --dim")])
def test_a_value_run_config_refuses_is_a_usage_error_naming_the_flag(args, named, capsys):
    usage, line = usage_error(["simulate", *args], capsys)
    assert usage == "usage: asyncps simulate [options]" and named in line


def test_a_bad_config_file_names_the_file_and_the_key(tmp_path, capsys):
    (tmp_path / "run.json").write_text(json.dumps({"workers": 2, "wokers": 3}))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["simulate", "--config", str(tmp_path / "run.json")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "run.json" in err and "'wokers'" in err and "workers" in err


def test_an_unknown_subcommand_lists_the_valid_ones():
    done = asyncps("simulat")
    assert done.returncode == 2
    for command in COMMANDS:
        assert repr(command) in done.stderr
    assert "did you mean 'simulate'?" in done.stderr


def test_chrome_export_is_written_or_refused_clearly(tmp_path, capsys):
    argv = ["simulate", "--steps", "5", "--chrome", str(tmp_path / "chrome.json")]
    if getattr(aps.Trace, "to_chrome_trace", None) is None:
        with pytest.raises(SystemExit) as exit_:
            cli.main(argv)
        assert exit_.value.code == 2 and "to_chrome_trace" in capsys.readouterr().err
    else:
        assert cli.main(argv) == 0
        assert "traceEvents" in json.loads((tmp_path / "chrome.json").read_text())


def test_train_on_threads_writes_a_trace(tmp_path):
    done = asyncps("train", "--engine", "threads", "--workers", "2", "--steps", "15",
                   "--out", tmp_path / "t.json")
    assert done.returncode == 0, done.stderr
    trace = aps.Trace.from_json(tmp_path / "t.json")
    assert trace.meta["engine"] == "threads" and trace.workers == 2 and len(trace.losses) - 1 == 15
    assert aps.violations(trace) == []


@pytest.mark.slow
def test_grade_help_works_through_the_script_and_as_a_module():
    through_cli = asyncps("grade", "--help")
    as_module = subprocess.run([sys.executable, "-m", "asyncps.grade", "--help"], capture_output=True,
                               text=True, timeout=120)
    assert through_cli.returncode == 0 and as_module.returncode == 0
    assert through_cli.stdout.startswith("usage: asyncps grade")
    assert as_module.stdout.startswith("usage: python -m asyncps.grade")


def test_python_dash_m_asyncps_runs_the_same_command_line():
    done = subprocess.run([sys.executable, "-m", "asyncps", "simulate", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("usage: python -m asyncps simulate")


@pytest.mark.slow
def test_the_readme_s_commands_run_as_written(tmp_path):
    """README's `simulate` and `train` lines, as a user pastes them (host names aside)."""
    import shlex
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = readme[readme.index("## The command line"):].split("```")[1].split("\n", 1)[1]
    lines = block.replace("\\\n", " ").splitlines()
    runnable = [line.split("#")[0] for line in lines
                if line.startswith(("asyncps simulate --problem", "asyncps train"))]
    assert len(runnable) == 2, runnable
    for line in runnable:
        done = asyncps(*shlex.split(line)[1:], cwd=tmp_path)
        assert done.returncode == 0, (line, done.stderr[-2000:])
    assert json.loads((tmp_path / "perfetto.json").read_text())["traceEvents"]
    for name in ("trace.json", "real.json"):
        trace = aps.Trace.from_json(tmp_path / name)
        assert trace.pushes and not aps.violations(trace)


# -- mistakes: the misused command's usage, then one line in the command line's terms ----------
@pytest.mark.parametrize("argv,usage,words", [
    # an unknown flag: the subcommand's usage (not the top level's) and the closest flag
    (["simulate", "--lerning-rate", "0.1"], "asyncps simulate", ["--lerning-rate", "did you mean --lr?"]),
    (["simulate", "--learning-rate=0.1"], "asyncps simulate", ["did you mean --lr?"]),
    (["simulate", "--max_clocks_ahead", "1"], "asyncps simulate", ["did you mean --max-clocks-ahead?"]),
    (["simulate", "--staleness", "1"], "asyncps simulate", ["--staleness", "renamed", "--max-clocks-ahead"]),
    (["simulate", "-w", "3"], "asyncps simulate", ["-w", "did you mean --workers or --wait-for?"]),
    (["simulate", "--engine", "threads"], "asyncps simulate", ["--engine", "an option of asyncps train"]),
    (["train", "--compute-times", "1", "2"], "asyncps train", ["--compute-times", "asyncps simulate"]),
    (["train", "--devices", "cuda"], "asyncps train", ["did you mean --device?"]),
    (["train", "--bogus"], "asyncps train", ["--bogus", "asyncps train --help"]),
    (["simulate", "run.json"], "asyncps simulate", ["run.json", "did you mean --config run.json?"]),
    (["simulate", "--workers", "3", "4"], "asyncps simulate", ["4", "every value follows its flag"]),
    # a value of the wrong kind: the flag, the value as typed, what is allowed
    (["simulate", "--workers", "two"], "asyncps simulate", ["--workers", "'two'", "integer"]),
    (["simulate", "--lr", "0,1"], "asyncps simulate", ["--lr", "decimal point", "0.1"]),
    (["simulate", "--workers", "3", "--compute-times", "1,1,4"], "asyncps simulate",
     ["--compute-times", "spaces", "1 1 4"]),
    (["simulate", "--policy", "hogwild"], "asyncps simulate", ["--policy", "'ssp'", "--no-lock"]),
    (["simulate", "--policy", "SSP"], "asyncps simulate", ["did you mean 'ssp'?"]),
    (["train", "--engine", "gpu"], "asyncps train", ["--engine", "'gpu'", "--device cuda"]),
    (["train", "--engine", "simulate"], "asyncps train", ["--engine", "simulate command"]),
    # the command itself
    ([], "asyncps [-h]", ["give a command", "'simulate'", "'bench'"]),
    (["nosuch"], "asyncps [-h]", ["'nosuch' is not a command", "'simulate'"]),
    (["--workers", "3"], "asyncps [-h]", ["give the command first", "asyncps simulate --workers 3"]),
    (["--bogus"], "asyncps [-h]", ["--bogus", "give a command first"]),
    # the subcommands that parse their own command line print their own usage
    (["check"], "asyncps check", ["asyncps check: error", "notebook"]),
    (["grade", "student.ipynb"], "asyncps grade", ["asyncps grade: error", "--solutions"]),
    (["bench", "--bogus"], "asyncps bench", ["asyncps bench: error", "--bogus"]),
    (["assignments"], "asyncps assignments", ["asyncps assignments: error", "solutions"]),
    (["launch", "--policy", "hogwild"], "asyncps launch", ["asyncps launch: error", "'hogwild'"]),
])
def test_a_misuse_prints_its_command_s_usage_and_names_the_flag_last(argv, usage, words, capsys):
    first, line = usage_error(argv, capsys)
    assert first.startswith(f"usage: {usage}"), first
    prog = usage.split(" [")[0]
    assert line.startswith(f"{prog}: error: "), line
    for word in words:
        assert word in line, (word, line)


@pytest.mark.parametrize("argv,words", [
    (["simulate", "--policy", "async", "--max-clocks-ahead", "2"],
     ["--max-clocks-ahead 2", "--policy async"]),
    (["simulate", "--policy", "ssp", "--max-clocks-ahead", "-1"], ["--max-clocks-ahead -1", ">= 0"]),
    (["simulate", "--momentum", "1.5"], ["--momentum 1.5", "--momentum must be"]),
    (["simulate", "--batch-size", "0"], ["--batch-size 0", "--batch-size must be"]),
    (["simulate", "--workers", "3", "--compute-times", "1", "2"], ["--compute-times 1 2", "3 numbers"]),
    (["simulate", "--compute-times", "1", "1", "4"],
     ["--compute-times 1 1 4", "--workers is 2 unless given"]),
    (["train", "--no-lock", "--engine", "processes"], ["--no-lock is not allowed with --engine processes"]),
    (["train", "--workers", "2", "--slowdown", "0", "0", "0"], ["--slowdown 0 0 0", "2 numbers"]),
    (["train", "--timeout", "0"], ["--timeout 0", "--timeout must be"]),
])
def test_a_value_refused_by_the_python_api_is_said_in_flags(argv, words, capsys):
    """RunConfig's message names its keywords (max_clocks_ahead=2, policy='async'); the command
    line's names the flags, with the values as they were typed."""
    first, line = usage_error(argv, capsys)
    assert first == f"usage: asyncps {argv[0]} [options]"
    for word in words:
        assert word in line, (word, line)
    assert not re.search(r"\b[a-z]+(_[a-z]+)*=", line), line              # no keyword=value
    assert not re.search(r"\b(max_clocks_ahead|compute_times|batch_size|lock=)", line), line


def test_in_flags_writes_every_keyword_of_a_field_with_a_flag_as_the_flag():
    flags = cli.build_parser().runs["train"].flags
    said = ("policy='ssp' needs max_clocks_ahead=s; lock=False with engine='processes', "
            "slowdown=[0.0, 0.5], batch_size=None: max_clocks_ahead must be >= 0; lock-free; 3 workers; "
            "steps must be an integer; resume: it has 3 workers; use max_clocks_ahead= instead")
    assert cli.in_flags(said, flags) == (
        "--policy ssp needs --max-clocks-ahead s; --no-lock with --engine processes, "
        "--slowdown 0 0.5, --batch-size none: --max-clocks-ahead must be >= 0; lock-free; 3 workers; "
        "--steps must be an integer; resume: it has 3 workers; use --max-clocks-ahead instead")
    assert cli.in_flags("--resume: x", flags) == "--resume: x"                  # already a flag
    assert cli.in_flags("resume: the checkpoint has 3 workers", flags).startswith("--resume: ")
    # a key the user wrote in a --config file stays as written
    assert cli.in_flags("max_clocks_ahead=2 with policy='async'", flags, keep={"policy"}) == \
        "--max-clocks-ahead 2 with policy='async'"


def test_a_config_value_is_named_as_the_file_s_key(tmp_path, capsys):
    (tmp_path / "run.json").write_text(json.dumps({"policy": "async", "max_clocks_ahead": 2}))
    _, line = usage_error(["simulate", "--config", str(tmp_path / "run.json")], capsys)
    assert f"--config {tmp_path / 'run.json'}: max_clocks_ahead=2" in line and "policy='async'" in line
    _, line = usage_error(["simulate", "--config", str(tmp_path / "run.json"), "--max-clocks-ahead", "1"],
                          capsys)
    assert "--max-clocks-ahead 1 is not allowed with policy='async'" in line


@pytest.mark.parametrize("text,words", [
    ('{"workers": 2, "wokers": 3}', ["'wokers'", "did you mean 'workers'?"]),
    ('{"engine": "threads"}', ["'engine'", "train only"]),
    ('{"staleness": 1}', ["'staleness'", "renamed", "'max_clocks_ahead'"]),
    ("workers: 4\npolicy: ssp\n", ["not valid JSON", "one JSON object"]),
    ("[4, 2]", ["one JSON object", "not a list"]),
])
def test_a_bad_config_file_gets_one_line_naming_the_file(text, words, tmp_path, capsys):
    (tmp_path / "run.json").write_text(text)
    first, line = usage_error(["simulate", "--config", str(tmp_path / "run.json")], capsys)
    assert first == "usage: asyncps simulate [options]" and f"--config {tmp_path / 'run.json'}:" in line
    for word in words:
        assert word in line, (word, line)


def test_files_that_cannot_be_written_or_read_are_refused_before_the_run(tmp_path, capsys, monkeypatch):
    from asyncps import engines
    monkeypatch.setattr(engines, "simulate", lambda *a, **k: pytest.fail("the run started"))
    monkeypatch.setattr(engines, "train", lambda *a, **k: pytest.fail("the run started"))
    missing = tmp_path / "results"
    for flag in ("--out", "--chrome"):
        _, line = usage_error(["simulate", flag, str(missing / "t.json")], capsys)
        assert f"argument {flag}: the folder {missing} does not exist" in line
    _, line = usage_error(["simulate", "--out", str(tmp_path)], capsys)
    assert f"argument --out: {tmp_path} is a folder" in line
    _, line = usage_error(["train", "--checkpoint", str(missing / "c.npz")], capsys)
    assert "argument --checkpoint: the folder" in line
    _, line = usage_error(["train", "--resume", str(tmp_path / "run.npz")], capsys)
    assert line.endswith(f"argument --resume: no such file: {tmp_path / 'run.npz'}")
    (tmp_path / "notes.txt").write_text("notes\n")
    _, line = usage_error(["train", "--resume", str(tmp_path / "notes.txt")], capsys)
    assert "notes.txt is not a run saved by --out RUN.npz or --checkpoint" in line
    assert not missing.exists()


def test_resume_continues_a_saved_run(tmp_path):
    assert cli.main(["train", "--steps", "6", "--out", str(tmp_path / "a.npz")]) == 0
    assert cli.main(["train", "--steps", "10", "--resume", str(tmp_path / "a.npz"),
                     "--out", str(tmp_path / "b.npz")]) == 0
    assert len(aps.load_run(tmp_path / "b.npz").losses) - 1 == 10


def test_an_error_raised_by_the_run_is_said_in_flags_without_python_s_exception_names(monkeypatch,
                                                                                      capsys):
    from asyncps import engines

    def refuses(problem, resume=None, **arguments):
        raise ValueError("device='cuda' is not allowed here: no GPU; use device='cpu'")
    monkeypatch.setattr(engines, "train", refuses)
    _, line = usage_error(["train", "--steps", "3"], capsys)
    assert line == "asyncps train: error: --device cuda is not allowed here: no GPU; use --device cpu"

    def fails(problem, **arguments):
        raise RuntimeError("simulation stalled at v3 with max_clocks_ahead=1")
    monkeypatch.setattr(engines, "simulate", fails)
    assert cli.main(["simulate", "--steps", "3"]) == 1
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line == ("asyncps simulate: error: the run failed: simulation stalled at v3 with "
                    "--max-clocks-ahead 1")


def test_a_file_that_cannot_be_written_after_the_run_ends_one_line(tmp_path, monkeypatch, capsys):
    def refuses(self, path):
        raise PermissionError(13, "Permission denied", str(path) + ".1234.tmp")
    monkeypatch.setattr(aps.Trace, "to_json", refuses)
    assert cli.main(["simulate", "--steps", "3", "--out", str(tmp_path / "t.json")]) == 1
    out, err = capsys.readouterr()
    assert "3 versions" in out
    assert err.strip().splitlines()[-1] == (f"asyncps simulate: error: the run ended, but --out "
                                            f"{tmp_path / 't.json'} cannot be written: Permission denied")


def test_help_says_what_the_tool_does_not_its_history():
    done = asyncps("--help")
    assert done.returncode == 0
    assert "used to" not in done.stdout and "python -m" not in done.stdout
    assert "parameter server" in done.stdout and "asyncps simulate --workers" in done.stdout
