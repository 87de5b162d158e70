"""The `asyncps` console script: every subcommand reachable, its runs readable back, its errors
naming the argument; the modules it delegates to still work on their own."""
import json
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


@pytest.mark.parametrize("args,named", [(["--workers", "0"], "--workers"),
                                        (["--workers", "3", "--compute-times", "1", "2"], "--compute-times"),
                                        (["--dim", "0"], "--dim")])
def test_a_value_run_config_refuses_is_a_usage_error_naming_the_flag(args, named, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["simulate", *args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {named}:" in err and "usage:" in err


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
