"""One command line: `asyncps SUBCOMMAND ...` for what used to take several `python -m` modules.

    asyncps simulate --problem least-squares --workers 4 --policy async --lr 0.05 --steps 300 \\
        --compute-times 1 1 1 4 --seed 0 --out trace.json
    asyncps simulate --config run.json --out trace.json     (keys: RunConfig's fields + "problem")
    asyncps train --engine processes --workers 2 --steps 200 --out run.npz
    asyncps grade STUDENT.ipynb --solutions solutions/       (and check, assignments, bench, launch)

`simulate` and `train` build the run here (the problem from a few built-ins, the rest a
RunConfig, checked by RunConfig itself) and write the trace: JSON (`Trace.from_json` reads it
back), or with `--out NAME.npz` the whole Run (`aps.load_run`). The other subcommands hand the
rest of the command line, unchanged, to their module's `main(argv, prog)`.
"""
import argparse
import importlib
import json
import math
import re
import sys
from dataclasses import fields
from pathlib import Path

# name: (module whose main(argv, prog) it runs, one-line description)
DELEGATES = {
    "launch": ("asyncps.launch", "one rank of a several-machine rpc run, for torchrun "
                                 "(torchrun ... -m asyncps launch ...)"),
    "grade": ("asyncps.grade", "grade a student's notebook with the hidden tests (instructors)"),
    "check": ("asyncps.check", "check your own notebook with the visible tests (students)"),
    "assignments": ("asyncps.assignments", "build the exercise notebooks from the solutions"),
    "bench": ("asyncps.bench.__main__", "every engine against the baselines; writes docs/benchmarks"),
}
PROBLEMS = ("quadratic", "least-squares", "logistic", "mlp")
HOOKS = ("apply", "average", "gate")            # functions: from Python only, not a command line


def make_problem(name, dim=10, samples=512, seed=0):
    """A built-in problem by name: `dim` parameters (inputs), `samples` data points, data from `seed`."""
    from . import problems
    from .core import checks

    dim, samples = checks.integer("dim", dim, minimum=1), checks.integer("samples", samples, minimum=1)
    if name == "quadratic":                     # curvatures 1 .. 0.1: one slow direction
        import numpy as np
        return problems.Quadratic(curvature=np.geomspace(1.0, 0.1, dim), x0=np.ones(dim))
    if name == "least-squares":
        return problems.LeastSquares(n=samples, dim=dim, seed=seed)
    if name == "logistic":
        return problems.Logistic(n=samples, dim=dim, seed=seed)
    if name == "mlp":
        return problems.MLP(n=samples, dim=dim, seed=seed)
    raise ValueError(f"problem={name!r} is not allowed: problem must be one of "
                     f"{', '.join(map(repr, PROBLEMS))}")


# -- argument types: each error names what is allowed ---------------------------------------
def _count(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: it must be an integer >= 1")
    return value


def _optional_int(text):
    if text.lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: it must be an integer or none") from None


def _run_options(entry):
    """(RunConfig field, flag options) offered by `simulate` or `train`: the rest of
    RunConfig's fields are defaults here, or come from --config."""
    from .core import LR_SCHEDULES, POLICIES
    from .core.config import DEVICES, ENGINES, PARTITIONS

    shared = [
        ("workers", dict(type=int, help="workers (one gradient at a time each)")),
        ("policy", dict(choices=POLICIES, help="consistency policy")),
        ("max_clocks_ahead", dict(type=_optional_int, metavar="S", help="the SSP threshold (policy "
                                  "ssp): clocks the fastest worker may run ahead of the slowest")),
        ("lr", dict(type=float, help="learning rate")),
        ("lr_schedule", dict(choices=tuple(LR_SCHEDULES), help="the rate a push is applied with")),
        ("momentum", dict(type=float, help="server-side momentum in [0, 1)")),
        ("steps", dict(type=int, help="server versions after v0")),
        ("partition", dict(choices=PARTITIONS, help="how the data is split among the workers")),
        ("batch_size", dict(type=_optional_int, help="minibatch per gradient (none: the whole shard)")),
        ("fetch_every", dict(type=_optional_int, help="pull every n-th step (none: after each push)")),
        ("push_every", dict(type=_optional_int, help="push every n-th local step (none: never)")),
        ("seed", dict(type=int, help="seed of the workers' randomness (and of the data)")),
        ("loss_every", dict(type=int, help="score every n-th version only")),
        ("trace_limit", dict(type=_optional_int, help="keep the first n events, summaries of the rest")),
    ]
    if entry == "simulate":
        return shared + [
            ("compute_times", dict(type=float, nargs="+", metavar="T",
                                   help="time units per gradient, one per worker, e.g. 1 1 1 4 "
                                        "(default: 1 each)")),
            ("jitter", dict(type=float, help="seeded lognormal spread of the compute times")),
            ("comm_delay", dict(type=float, help="time a pull or a push takes to travel")),
        ]
    return shared + [
        ("engine", dict(choices=ENGINES, help="threads, processes or rpc (torch.distributed)")),
        ("device", dict(choices=DEVICES, help="where the workers compute")),
        ("slowdown", dict(type=float, nargs="+", metavar="SECONDS",
                          help="extra seconds per gradient, one per worker, e.g. 0 0 0 0.02 "
                               "(default: 0 each)")),
        ("lock", dict(action="store_false", flag="--no-lock",
                      help="lock-free (Hogwild-style) updates: threads, async, cpu only "
                               "(default: locked)")),
        ("timeout", dict(type=float, help="seconds without progress before the run fails")),
        ("checkpoint", dict(metavar="PATH.npz", help="save the run here every --checkpoint-every versions")),
        ("checkpoint_every", dict(type=int, help="versions between checkpoints")),
    ]


def _add_run_parser(sub, entry, description):
    from .core.config import RunConfig

    p = sub.add_parser(entry, help=description, description=description, usage="%(prog)s [options]",
                       argument_default=argparse.SUPPRESS)   # only what is given overrides --config
    defaults = {f.name: f.default for f in fields(RunConfig)}
    defaults["engine"] = "threads"
    run = p.add_argument_group("the run (RunConfig's fields; a value given here overrides --config)")
    for name, options in _run_options(entry):
        flag, text, default = options.pop("flag", _option(name)), options.pop("help"), defaults[name]
        if "default" not in text:
            text += f" (default: {'none' if default is None else default})"
        run.add_argument(flag, dest=name, help=text, **options)
    problem = p.add_argument_group("the problem (built in; data generated from a seed)")
    problem.add_argument("--problem", choices=PROBLEMS, help="what is optimised (default: least-squares)")
    problem.add_argument("--dim", type=_count, help="parameters (inputs) of the problem (default: 10)")
    problem.add_argument("--samples", type=_count, help="data points, split among the workers "
                         "(default: 512; quadratic has none)")
    problem.add_argument("--problem-seed", type=int, help="seed of the data (default: --seed)")
    files = p.add_argument_group("files")
    files.add_argument("--config", type=Path, metavar="RUN.json",
                       help='a JSON object: RunConfig fields and "problem" (a name, or '
                            '{"name", "dim", "samples", "seed"})')
    if entry == "train":
        files.add_argument("--resume", metavar="RUN.npz", help="continue a run saved by --out RUN.npz "
                           "or --checkpoint")
    files.add_argument("--out", type=Path, metavar="TRACE.json",
                       help="write the trace (JSON), or the whole Run when the name ends in .npz")
    files.add_argument("--chrome", type=Path, metavar="CHROME.json",
                       help="also write the trace in Chrome's trace-event format (Perfetto)")
    p.set_defaults(run=_run, subparser=p)
    return p


def build_parser(prog="asyncps"):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    from . import __version__
    parser.add_argument("--version", action="version", version=f"asyncps {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                title="commands (each has --help)")
    _add_run_parser(sub, "simulate", "simulate a run in virtual time (deterministic) and write its trace")
    _add_run_parser(sub, "train", "train for real on threads, processes or rpc and write the trace")
    for name, (_, description) in DELEGATES.items():
        sub.add_parser(name, help=description, add_help=False)   # never parsed here: see main
    return parser


# -- simulate and train ----------------------------------------------------------------------
def _read_config(path, entry):
    """{RunConfig field: value} and the problem's spec from a JSON file, or a ValueError saying why."""
    from .core.config import argument_names, refuse_renamed

    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise ValueError(f"cannot read it: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON (line {err.lineno}, column {err.colno}): {err.msg}") from None
    if not isinstance(data, dict):
        raise ValueError("it must hold a JSON object of RunConfig fields and \"problem\"")
    refuse_renamed(data)
    allowed = [n for n in argument_names(entry) if n not in HOOKS] + ["problem"]
    for key in data:
        if key not in allowed:
            raise ValueError(f"key {key!r} is not allowed in a config for {entry}; allowed: "
                             f"{', '.join(allowed)}")
    problem = data.pop("problem", {})
    if isinstance(problem, str):
        problem = {"name": problem}
    if not isinstance(problem, dict) or set(problem) - {"name", "dim", "samples", "seed"}:
        raise ValueError(f"problem={problem!r} is not allowed: problem must be a name ("
                         f"{', '.join(PROBLEMS)}) or an object with keys name, dim, samples, seed")
    return data, problem


def _option(name):
    return "--no-lock" if name == "lock" else "--" + name.replace("_", "-")


def _fail(parser, err, given, config):
    """argparse's usage error for a value RunConfig or a problem refused, naming the argument."""
    text = str(err)
    named = re.match(r"(\w+)=", text)
    if named and named.group(1) in given:
        parser.error(f"argument {_option(named.group(1))}: {text}")
    if config is not None:
        parser.error(f"--config {config}: {text}")
    parser.error(text)


def _summary(entry, name, run, written):
    s = run.trace.summary()
    scored = [x for x in run.losses if math.isfinite(x)]
    clock = " (virtual time)" if run.trace.meta.get("clock") == "virtual" else " s"
    line = (f"asyncps {entry}: {name}, {run.trace.workers} workers, {run.trace.meta.get('policy')}, "
            f"{s['versions']} versions, {s['pushes']} pushes, final loss "
            f"{scored[-1] if scored else float('nan'):.4g}, mean staleness {s['mean_staleness']:.2f}, "
            f"duration {s['duration']:.4g}{clock}")
    if run.diverged:
        line += ", DIVERGED"
    return line + ("; wrote " + ", ".join(map(str, written)) if written else "")


def _run(args, parser):
    """`asyncps simulate` / `asyncps train`: build the run, run it, write the files, say how it went."""
    from .core.config import configure

    entry = args.command
    given = {name for name, _ in _run_options(entry) if hasattr(args, name)}
    config = getattr(args, "config", None)
    if getattr(args, "chrome", None) is not None:
        from .core import Trace
        if getattr(Trace, "to_chrome_trace", None) is None:
            parser.error("argument --chrome: this asyncps has no Trace.to_chrome_trace yet, so it "
                         "cannot write the Chrome trace-event format; leave out --chrome")
    arguments, spec = {}, {}
    if config is not None:
        try:
            arguments, spec = _read_config(config, entry)
        except (ValueError, TypeError) as err:
            parser.error(f"--config {config}: {err}")
    arguments.update({name: getattr(args, name) for name in given})
    for key, flag in (("name", "problem"), ("dim", "dim"), ("samples", "samples"), ("seed", "problem_seed")):
        if hasattr(args, flag):
            spec[key] = getattr(args, flag)
    spec.setdefault("name", "least-squares")
    spec.setdefault("seed", arguments.get("seed", 0))
    try:
        configure(entry, dict(arguments))           # every value checked before anything runs
        problem = make_problem(spec["name"], spec.get("dim", 10), spec.get("samples", 512), spec["seed"])
    except (ValueError, TypeError) as err:
        _fail(parser, err, given | {name for name in ("problem", "dim", "samples") if hasattr(args, name)},
              config)

    from . import engines
    try:
        if entry == "simulate":
            run = engines.simulate(problem, **arguments)
        else:
            run = engines.train(problem, resume=getattr(args, "resume", None), **arguments)
    except (ValueError, TypeError, RuntimeError, TimeoutError, OSError) as err:
        print(f"asyncps {entry}: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    written = []
    if getattr(args, "out", None) is not None:
        if args.out.suffix == ".npz":
            run.save(args.out)                      # the whole Run: aps.load_run reads it
        else:
            run.trace.to_json(args.out)             # the trace: aps.Trace.from_json reads it
        written.append(args.out)
    if getattr(args, "chrome", None) is not None:
        run.trace.to_chrome_trace(args.chrome)     # checked above: it exists
        written.append(args.chrome)
    print(_summary(entry, spec["name"], run, written))
    return 0


def main(argv=None, prog="asyncps"):
    """The `asyncps` console script: run one subcommand and return its exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in DELEGATES:               # the module parses the rest itself
        module = importlib.import_module(DELEGATES[argv[0]][0])
        return module.main(argv[1:], prog=f"{prog} {argv[0]}") or 0
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    return args.run(args, args.subparser)
