"""Mistakes on the `asyncps` command line (`python -m asyncps ...`, asyncps/cli.py).

Each ends with argparse's one-line usage error (exit status 2) after the usage of the subcommand
that was misused, in the command line's own terms: its flags (`--max-clocks-ahead 2`), never the
Python keywords (`max_clocks_ahead=2`). `before` is the last line before issue 25, as printed by
`python -m asyncps` (so prog reads `python -m asyncps`)."""


def _through_a_file(setup, *argv):
    """A script that writes a file, then runs `python -m asyncps ARGV` on it (for the mistakes
    that need a file: the catalogue's argv runs in an empty folder)."""
    return (f"import pathlib, subprocess, sys\n{setup}\n"
            f"sys.exit(subprocess.run([sys.executable, '-m', 'asyncps', *{list(argv)!r}]).returncode)\n")


MISTAKES = [
    # -- an unknown flag: the subcommand's usage, and the flag meant ---------------------------
    dict(name="cli-misspelt-flag",
         before="python -m asyncps: error: unrecognized arguments: --lerning-rate 0.1 (after the "
                "top-level usage, not simulate's)",
         argv=["simulate", "--lerning-rate", "0.1"],
         says=["asyncps simulate: error", "--lerning-rate", "did you mean --lr?"]),
    dict(name="cli-flag-spelt-as-the-python-keyword",
         before="python -m asyncps: error: unrecognized arguments: --max_clocks_ahead 2",
         argv=["simulate", "--policy", "ssp", "--max_clocks_ahead", "2"],
         says=["asyncps simulate: error", "--max_clocks_ahead", "did you mean --max-clocks-ahead?"]),
    dict(name="cli-renamed-flag-staleness",
         before="python -m asyncps: error: unrecognized arguments: --staleness 2",
         argv=["simulate", "--policy", "ssp", "--staleness", "2"],
         says=["--staleness", "renamed", "--max-clocks-ahead"]),
    dict(name="cli-option-of-the-other-command",
         before="python -m asyncps: error: unrecognized arguments: --compute-times 1 2",
         argv=["train", "--compute-times", "1", "2"],
         says=["asyncps train: error", "--compute-times", "asyncps simulate"]),
    dict(name="cli-value-without-its-flag",
         before="python -m asyncps: error: unrecognized arguments: 3",
         argv=["simulate", "3"],
         says=["asyncps simulate: error", "3", "every value follows its flag"]),
    # -- the command itself --------------------------------------------------------------------
    dict(name="cli-no-command",
         before="python -m asyncps: error: the following arguments are required: COMMAND",
         argv=[],
         says=["give a command", "'simulate'", "'check'", "--help"]),
    dict(name="cli-misspelt-command",
         before="python -m asyncps: error: argument COMMAND: invalid choice: 'simulat' (choose from "
                "'simulate', 'train', 'launch', 'grade', 'check', 'assignments', 'bench')",
         argv=["simulat", "--workers", "4"],
         says=["'simulat' is not a command", "did you mean 'simulate'?"]),
    dict(name="cli-option-before-the-command",
         before="python -m asyncps: error: argument COMMAND: invalid choice: '3' (choose from "
                "'simulate', 'train', 'launch', 'grade', 'check', 'assignments', 'bench')",
         argv=["--workers", "3", "simulate"],
         says=["--workers", "give the command first", "simulate --workers 3"]),
    # -- a value: the flag and the value as typed ----------------------------------------------
    dict(name="cli-threshold-without-ssp",
         before="python -m asyncps simulate: error: argument --max-clocks-ahead: max_clocks_ahead=2 "
                "is not allowed with policy='async': it is the SSP threshold, used only with "
                "policy='ssp'",
         argv=["simulate", "--policy", "async", "--max-clocks-ahead", "2"],
         says=["--max-clocks-ahead 2", "--policy async", "--policy ssp"]),
    dict(name="cli-negative-threshold",
         before="python -m asyncps simulate: error: argument --max-clocks-ahead: max_clocks_ahead=-1 "
                "is not allowed: max_clocks_ahead must be an integer >= 0",
         argv=["simulate", "--policy", "ssp", "--max-clocks-ahead", "-1"],
         says=["--max-clocks-ahead -1 is not allowed", "--max-clocks-ahead must be an integer >= 0"]),
    dict(name="cli-lock-free-on-processes",
         before="python -m asyncps train: error: argument --no-lock: lock=False is not allowed with "
                "engine='processes', policy='async', device='cpu': lock-free (Hogwild-style) updates "
                "are offered for engine='threads', policy='async' on the CPU only",
         argv=["train", "--no-lock", "--engine", "processes", "--steps", "5"],
         says=["--no-lock is not allowed with --engine processes", "--engine threads"]),
    dict(name="cli-compute-times-count",
         before="python -m asyncps simulate: error: argument --compute-times: compute_times=[1.0, "
                "2.0] is not allowed: compute_times must be a list of 3 numbers (one per worker), "
                "not 2",
         argv=["simulate", "--workers", "3", "--compute-times", "1", "2"],
         says=["--compute-times 1 2 is not allowed", "3 numbers"]),
    dict(name="cli-compute-times-for-the-default-workers",
         before="python -m asyncps simulate: error: argument --compute-times: compute_times=[1.0, "
                "1.0, 4.0] is not allowed: compute_times must be a list of 2 numbers (one per "
                "worker), not 3",
         argv=["simulate", "--compute-times", "1", "1", "4"],
         says=["--compute-times 1 1 4", "2 numbers", "--workers is 2 unless given"]),
    dict(name="cli-compute-times-with-commas",
         before="python -m asyncps simulate: error: argument --compute-times: invalid float value: "
                "'1,1,4'",
         argv=["simulate", "--workers", "3", "--compute-times", "1,1,4"],
         says=["--compute-times", "'1,1,4'", "spaces", "1 1 4"]),
    dict(name="cli-decimal-comma",
         before="python -m asyncps simulate: error: argument --lr: invalid float value: '0,1'",
         argv=["simulate", "--lr", "0,1"],
         says=["--lr", "'0,1'", "decimal point", "0.1"]),
    dict(name="cli-workers-in-words",
         before="python -m asyncps simulate: error: argument --workers: invalid int value: 'two'",
         argv=["simulate", "--workers", "two"],
         says=["--workers", "'two'", "integer"]),
    dict(name="cli-policy-hogwild",
         before="python -m asyncps simulate: error: argument --policy: invalid choice: 'hogwild' "
                "(choose from 'sync', 'async', 'ssp')",
         argv=["simulate", "--policy", "hogwild"],
         says=["--policy", "'hogwild'", "'ssp'", "--no-lock"]),
    dict(name="cli-engine-gpu",
         before="python -m asyncps train: error: argument --engine: invalid choice: 'gpu' (choose "
                "from 'threads', 'processes', 'rpc')",
         argv=["train", "--engine", "gpu"],
         says=["--engine", "'gpu'", "--device cuda"]),
    # -- files -----------------------------------------------------------------------------------
    dict(name="cli-out-into-a-missing-folder",
         before="FileNotFoundError: [Errno 2] No such file or directory: "
                "'results/trace.json.9e29c0f7.tmp' (a traceback, after the whole run; the hex "
                "digits vary)",
         argv=["simulate", "--steps", "5", "--out", "results/trace.json"],
         says=["--out", "the folder results does not exist", "mkdir -p results"]),
    dict(name="cli-out-is-a-folder",
         before="ValueError: PosixPath('.') has an empty name (a traceback, after the whole run)",
         argv=["simulate", "--steps", "5", "--out", "."],
         says=["--out", "is a folder", "trace.json"]),
    dict(name="cli-resume-a-missing-file",
         before="asyncps train: FileNotFoundError: [Errno 2] No such file or directory: 'run.npz'",
         argv=["train", "--steps", "5", "--resume", "run.npz"],
         says=["--resume", "no such file", "run.npz"]),
    dict(name="cli-resume-not-a-run",
         before="asyncps train: ValueError: notes.txt is not a readable asyncps checkpoint: This "
                "file contains pickled (object) data. If you trust the file you can load it unsafely "
                "using the `allow_pickle=` keyword argument or `pickle.load()`.",
         script=_through_a_file("pathlib.Path('notes.txt').write_text('notes\\n')",
                                "train", "--steps", "5", "--resume", "notes.txt"),
         says=["--resume", "notes.txt is not a run saved by --out RUN.npz or --checkpoint"]),
    dict(name="cli-config-key-misspelt",
         before="python -m asyncps simulate: error: --config run.json: key 'wokers' is not allowed in "
                "a config for simulate; allowed: workers, policy, max_clocks_ahead, lr, lr_schedule, "
                "momentum, steps, partition, batch_size, fetch_every, push_every, seed, loss_every, "
                "trace_limit, compute_times, jitter, comm_delay, problem",
         script=_through_a_file("pathlib.Path('run.json').write_text('{\"workers\": 2, \"wokers\": 3}')",
                                "simulate", "--config", "run.json"),
         says=["--config run.json", "'wokers'", "did you mean 'workers'?"]),
    dict(name="cli-config-not-json",
         before="python -m asyncps simulate: error: --config run.json: not valid JSON (line 1, "
                "column 1): Expecting value",
         script=_through_a_file("pathlib.Path('run.json').write_text('workers: 4\\npolicy: ssp\\n')",
                                "simulate", "--config", "run.json"),
         says=["--config run.json", "not valid JSON", "one JSON object"]),
    # -- the delegated subcommands parse their own command line: their own usage ---------------
    dict(name="cli-check-without-a-notebook",
         before="python -m asyncps check: error: the following arguments are required: notebook",
         argv=["check"],
         says=["asyncps check: error", "notebook"]),
    dict(name="cli-grade-without-solutions",
         before="python -m asyncps grade: error: the following arguments are required: --solutions",
         argv=["grade", "student.ipynb"],
         says=["asyncps grade: error", "--solutions"]),
    dict(name="cli-bench-unknown-flag",
         before="python -m asyncps bench: error: unrecognized arguments: --bogus",
         argv=["bench", "--bogus"],
         says=["asyncps bench: error", "--bogus"]),
    dict(name="cli-check-a-file-that-is-not-a-notebook",
         before="asyncps.check: notes.txt is not a readable notebook: Notebook does not appear to be "
                "JSON: 'notes\\n'",
         script=_through_a_file("pathlib.Path('notes.txt').write_text('notes\\n')", "check", "notes.txt"),
         says=["asyncps check", "notes.txt"]),
]
