"""`asyncps`: parameter-server runs from a shell, and the assignment notebooks' tests.

    asyncps simulate --problem least-squares --workers 4 --policy async --lr 0.05 --steps 300 \\
        --compute-times 1 1 1 4 --seed 0 --out trace.json
    asyncps simulate --config run.json --out trace.json     (keys: the flags' names, and "problem")
    asyncps train --engine processes --workers 2 --steps 200 --out run.npz
    asyncps grade STUDENT.ipynb --solutions solutions/       (and check, assignments, bench, launch)
    asyncps classroom serve --problem lsq --workers 30 --steps 3000 --out run.npz   (the lecturer)
    ASYNCPS_TOKEN='T' asyncps classroom join tcp://HOST:PORT --name ada --problem lsq  (a student)

`simulate` and `train` build the run here (the problem from a few built-ins, the rest a
RunConfig, checked by RunConfig itself) and write the trace: JSON (`Trace.from_json` reads it
back), or with `--out NAME.npz` the whole Run (`aps.load_run`). The other subcommands hand the
rest of the command line, unchanged, to their module's `main(argv, prog)`. `classroom serve`
opens an asyncps.classroom room on a built-in problem of asyncps.launch, printing the join line
its students type (the token in ASYNCPS_TOKEN, not on a command line other users can read), and
starts the run on Enter or once --start-with students are seated; `classroom join` is one
student's worker.

A mistake is a usage error in the command line's own terms: the subcommand's usage, then one
line naming the flag (`--max-clocks-ahead 2`, never the Python keyword `max_clocks_ahead=2`; an
unknown flag gets the closest one), exit status 2. A run that fails once started says so in one
line, exit status 1.
"""
import argparse
import ast
import difflib
import importlib
import json
import math
import os
import re
import shlex
import sys
from dataclasses import fields
from pathlib import Path

DESCRIPTION = """\
Run a parameter server from a shell (workers pushing gradients to a server under
the sync, async or SSP policy) and write its trace for the notebooks' views;
check or grade the assignment notebooks."""
EPILOG = """\
start with:
  %(prog)s simulate --workers 4 --policy ssp --compute-times 1 1 1 4 --out trace.json
  %(prog)s check exercises/02-async-push.ipynb
`%(prog)s COMMAND --help` lists a command's options."""

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
NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _count(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: it must be an integer >= 1")
    return value


def _integer(text):
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: it must be an integer") from None


def _optional_int(text):
    if text.lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: it must be an integer or none") from None


def _number(text):
    try:
        return float(text)
    except ValueError:
        pass
    if re.fullmatch(r"-?\d*,\d+", text):                      # 0,1: a decimal comma
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: write the number with a decimal "
                                         f"point: {text.replace(',', '.')}")
    raise argparse.ArgumentTypeError(f"{text!r} is not allowed: it must be a number")


def _numbers(text):
    """One of several numbers (nargs="+"): 1,1,4 gets `separate them with spaces`."""
    try:
        return float(text)
    except ValueError:
        pass
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if "," in text and all(NUMBER.fullmatch(part) for part in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: separate the numbers with spaces, "
                                         f"not commas: {' '.join(parts)}")
    raise argparse.ArgumentTypeError(f"{text!r} is not allowed: it must be a number")


def _choice(allowed, hints=None):
    """An argparse type for `choices=allowed`: a wrong value names the allowed ones and the closest."""
    def choose(text):
        if text in allowed:
            return text
        same = [a for a in allowed if a.lower() == text.lower().replace("-", "_")]
        close = same or difflib.get_close_matches(text.lower(), allowed, n=1, cutoff=0.6)
        hint = (hints or {}).get(text.lower()) or (f"did you mean {close[0]!r}?" if close else "")
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from "
                                         f"{', '.join(map(repr, allowed))})" + (f"; {hint}" if hint else ""))
    return choose


POLICY_HINTS = {"hogwild": "lock-free (Hogwild-style) updates are the train command's "
                           "--policy async --no-lock",
                "bsp": "did you mean 'sync' (bulk-synchronous)?",
                "asp": "did you mean 'async'?", "asynchronous": "did you mean 'async'?",
                "synchronous": "did you mean 'sync'?"}
ENGINE_HINTS = {"gpu": "to compute on a GPU, keep the engine and add --device cuda",
                "cuda": "to compute on a GPU, keep the engine and add --device cuda",
                "simulate": "a run in virtual time is the simulate command, not an engine of train"}
DEVICE_HINTS = {"gpu": "did you mean 'cuda'?"}
# flags a user may reach for, and the one meant (an unknown flag is matched against both)
ALIASES = {"--learning-rate": "--lr", "--rate": "--lr", "--eta": "--lr", "--step-size": "--lr",
           "--num-workers": "--workers", "--n-workers": "--workers", "--nworkers": "--workers",
           "--iterations": "--steps", "--iters": "--steps", "--threshold": "--max-clocks-ahead",
           "--ssp-threshold": "--max-clocks-ahead", "--batch": "--batch-size",
           "--delay": "--comm-delay", "--output": "--out", "--gpu": "--device", "--cuda": "--device"}


def _run_options(entry):
    """(RunConfig field, flag options) offered by `simulate` or `train`: the rest of
    RunConfig's fields are defaults here, or come from --config."""
    from .core import ALL_POLICIES, LR_SCHEDULES, policies
    from .core.config import DEVICES, ENGINES, PARTITIONS

    s = getattr(policies, "SSP_MAX_CLOCKS_AHEAD", None)        # ssp's threshold when none is given

    shared = [
        ("workers", dict(type=_integer, help="workers (one gradient at a time each)")),
        ("policy", dict(type=_choice(ALL_POLICIES, POLICY_HINTS), choices=ALL_POLICIES,
                        help="consistency policy")),
        ("max_clocks_ahead", dict(type=_optional_int, metavar="S", help="the SSP threshold (policy "
                                  "ssp): clocks the fastest worker may run ahead of the slowest"
                                  + ("" if s is None else f" (default with --policy ssp: {s})"))),
        ("wait_for", dict(type=_optional_int, metavar="K", help="the pushes that close a round "
                          "(policy ksync or kasync)")),
        ("lr", dict(type=_number, help="learning rate")),
        ("lr_schedule", dict(type=_choice(tuple(LR_SCHEDULES)), choices=tuple(LR_SCHEDULES),
                             help="the rate a push is applied with")),
        ("momentum", dict(type=_number, help="server-side momentum in [0, 1)")),
        ("steps", dict(type=_integer, help="server versions after v0")),
        ("partition", dict(type=_choice(PARTITIONS), choices=PARTITIONS,
                           help="how the data is split among the workers")),
        ("batch_size", dict(type=_optional_int, help="minibatch per gradient (none: the whole shard)")),
        ("fetch_every", dict(type=_optional_int, help="pull every n-th step (none: after each push)")),
        ("push_every", dict(type=_optional_int, help="push every n-th local step (none: never)")),
        ("seed", dict(type=_integer, help="seed of the workers' randomness (and of the data)")),
        ("loss_every", dict(type=_integer, help="score every n-th version only")),
        ("trace_limit", dict(type=_optional_int, help="keep the first n events, summaries of the rest")),
    ]
    if entry == "simulate":
        return shared + [
            ("compute_times", dict(type=_numbers, nargs="+", metavar="T",
                                   help="time units per gradient, one per worker, e.g. 1 1 1 4 "
                                        "(default: 1 each)")),
            ("jitter", dict(type=_number, help="seeded lognormal spread of the compute times")),
            ("random_delay", dict(type=_number, help="mean of a seeded exponential time added to "
                                  "each gradient (random stragglers)")),
            ("comm_delay", dict(type=_number, help="time a pull or a push takes to travel")),
        ]
    return shared + [
        ("engine", dict(type=_choice(ENGINES, ENGINE_HINTS), choices=ENGINES,
                        help="threads, processes or rpc (torch.distributed)")),
        ("device", dict(type=_choice(DEVICES, DEVICE_HINTS), choices=DEVICES,
                        help="where the workers compute")),
        ("slowdown", dict(type=_numbers, nargs="+", metavar="SECONDS",
                          help="extra seconds per gradient, one per worker, e.g. 0 0 0 0.02 "
                               "(default: 0 each)")),
        ("lock", dict(action="store_false", flag="--no-lock",
                      help="lock-free (Hogwild-style) updates: threads, async, cpu only "
                               "(default: locked)")),
        ("timeout", dict(type=_number, help="seconds without progress before the run fails")),
        ("checkpoint", dict(metavar="PATH.npz", help="save the run here every --checkpoint-every versions")),
        ("checkpoint_every", dict(type=_integer, help="versions between checkpoints")),
    ]


def _add_run_parser(sub, entry, description):
    from .core.config import RunConfig

    p = sub.add_parser(entry, help=description, description=description, usage="%(prog)s [options]",
                       argument_default=argparse.SUPPRESS)   # only what is given overrides --config
    defaults = {f.name: f.default for f in fields(RunConfig)}
    defaults["engine"] = "threads"
    flags = {}                                      # a name in a message: its flag
    added = []                                      # every option: an unknown flag's closest
    run = p.add_argument_group("the run (a value given here overrides the same key in --config)")
    for name, options in _run_options(entry):
        flag, text, default = options.pop("flag", _option(name)), options.pop("help"), defaults[name]
        if "default" not in text:
            text += f" (default: {'none' if default is None else default})"
        added.append(run.add_argument(flag, dest=name, help=text, **options))
        flags[name] = flag
    problem = p.add_argument_group("the problem (built in; data generated from a seed)")
    added += [
        problem.add_argument("--problem", type=_choice(PROBLEMS), choices=PROBLEMS,
                             help="what is optimised (default: least-squares)"),
        problem.add_argument("--dim", type=_count, help="parameters (inputs) of the problem (default: 10)"),
        problem.add_argument("--samples", type=_count, help="data points, split among the workers "
                             "(default: 512; quadratic has none)"),
        problem.add_argument("--problem-seed", type=_integer, help="seed of the data (default: --seed)")]
    flags.update(problem="--problem", dim="--dim", samples="--samples")
    files = p.add_argument_group("files")
    added.append(files.add_argument(
        "--config", type=Path, metavar="RUN.json", help='a JSON object: the options above as keys, '
        'spelt with "_" ("max_clocks_ahead": 1), and "problem" (a name, or {"name", "dim", "samples", '
        '"seed"})'))
    if entry == "train":
        added.append(files.add_argument("--resume", metavar="RUN.npz", help="continue a run saved by "
                                        "--out RUN.npz or --checkpoint"))
        flags["resume"] = "--resume"
    added += [
        files.add_argument("--out", type=Path, metavar="TRACE.json",
                           help="write the trace (JSON), or the whole Run when the name ends in .npz"),
        files.add_argument("--chrome", type=Path, metavar="CHROME.json",
                           help="also write the trace in Chrome's trace-event format (Perfetto)")]
    p.set_defaults(run=_run, subparser=p)
    p.flags = flags                                 # RunConfig field (or problem, resume): its flag
    p.options = [s for action in added for s in action.option_strings]
    return p


def build_parser(prog="asyncps"):
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    from . import __version__
    parser.add_argument("--version", action="version", version=f"asyncps {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                title="commands (each has --help)")
    parser.runs = {
        "simulate": _add_run_parser(sub, "simulate", "simulate a run in virtual time (deterministic, "
                                    "any number of workers on one core) and write its trace"),
        "train": _add_run_parser(sub, "train", "train for real on threads, processes or rpc and write "
                                 "the trace (wall-clock time)"),
    }
    sub.add_parser("classroom", help=CLASSROOM_HELP, add_help=False)   # never parsed here: see main
    for name, (_, description) in DELEGATES.items():
        sub.add_parser(name, help=description, add_help=False)   # never parsed here: see main
    return parser


# -- a mistake in the command line's terms ----------------------------------------------------
def _option(name):
    return "--no-lock" if name == "lock" else "--" + name.replace("_", "-")


def _shown(value):
    """A Python value as it is typed after its flag: 'ssp' -> ssp, [1.0, 2.0] -> 1 2, None -> none."""
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value
    if parsed is None:
        return "none"
    if isinstance(parsed, str):
        return parsed if parsed and not re.search(r"\s", parsed) else value
    if isinstance(parsed, (list, tuple)):
        return " ".join(_shown(repr(item)) for item in parsed)
    if isinstance(parsed, float) and parsed.is_integer() and abs(parsed) < 1e15:
        return repr(parsed)[:-2]                                # 1.0 -> 1, as it was typed
    return value


VALUE = r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\[[^\]]*\]|\([^)]*\)|[^\s,;:)\]]+"""


def in_flags(text, flags, keep=()):
    """`text` (a message from the Python API) with each keyword of a field that has a flag written
    as the flag: `max_clocks_ahead=2` -> `--max-clocks-ahead 2`, `policy='async'` -> `--policy async`,
    `lock=False` -> `--no-lock`, a bare `max_clocks_ahead` (or `steps must`) -> its flag. Names in
    `keep` (keys the user wrote in a --config file) stay as written."""
    names = [n for n in flags if n not in keep]
    if not names:
        return text
    pattern = re.compile(r"(?<![\w.'\"`-])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
                         + r")(?![\w-])(=(" + VALUE + r")?)?")

    def put(m):
        name, equals, value = m.group(1), m.group(2), m.group(3)
        flag = flags[name]
        if equals is None:                      # a bare name: only where it is the argument's
            rest = text[m.end():]
            if "_" in name or re.match(r"\s+must\b", rest) or (m.start() == 0 and rest.startswith(":")):
                return flag
            return m.group(0)
        if value is None:
            return flag
        tail = ""
        if value.endswith(".") and _shown(value) == value and _shown(value[:-1]) != value[:-1]:
            value, tail = value[:-1], "."         # lr=0.5. : the sentence's full stop
        if flag.startswith("--no-"):              # store_false: lock=False is --no-lock
            return (flag if value == "False" else m.group(0)) + tail
        return f"{flag} {_shown(value)}{tail}"

    return pattern.sub(put, text)


def _flag_hint(flag, parser, runs):
    """What an unknown `flag` most likely meant (a renamed flag, the other command's, the closest
    one or an alias), or where the options are listed."""
    from .core.config import RENAMED

    entry = parser.prog.rsplit(" ", 1)[-1]
    bare = flag.lstrip("-").lower().replace("_", "-")
    if bare.replace("-", "_") in RENAMED:
        return f"it was renamed: use {_option(RENAMED[bare.replace('-', '_')][0])}"
    if "--" + bare in parser.options:
        return f"did you mean --{bare}?"
    for other, p in runs.items():
        if other != entry and "--" + bare in p.options:
            return f"it is an option of {p.prog}, not of {entry}"
    if not flag.startswith("--"):               # -w: the flags that start so
        starting = [o for o in parser.options if o.startswith("--" + bare) and len(bare) == 1]
        if starting:
            return f"did you mean {' or '.join(starting[:3])}?"
    known = {o[2:]: o for o in parser.options}
    known.update({a[2:]: o for a, o in ALIASES.items() if o in parser.options})
    close = difflib.get_close_matches(bare, list(known), n=1, cutoff=0.6)
    if close:
        return f"did you mean {known[close[0]]}?"
    return f"{parser.prog} --help lists the options"


def _unrecognized(extras, parser, runs):
    """One line for what `parser` did not know: each unknown flag with the closest known one."""
    said, loose, k = [], [], 0
    while k < len(extras):
        word = extras[k]
        k += 1
        if word.startswith("-") and not NUMBER.fullmatch(word):
            while k < len(extras) and (not extras[k].startswith("-") or NUMBER.fullmatch(extras[k])):
                k += 1                          # its values
            flag = word.split("=", 1)[0]
            said.append(f"unrecognized argument {flag}: {_flag_hint(flag, parser, runs)}")
        else:
            loose.append(word)
    if loose:
        hint = (f"; did you mean --config {loose[0]}?" if loose[0].endswith(".json") else
                "; every value follows its flag, e.g. --workers 4")
        said.append(f"unrecognized argument{'s' * (len(loose) > 1)} {' '.join(loose)}{hint}")
    return "; ".join(said)


def _fail(parser, err, flags, config=None, keep=()):
    """argparse's usage error (exit status 2) for a value RunConfig, a problem or a run refused,
    in flags: `--max-clocks-ahead 2 is not allowed ...`, or `--config run.json: ...` where the
    value came from the file."""
    text = str(err)
    named = re.match(r"\W*(\w+)\b", text)
    from_file = config is not None and (named is None or named.group(1) not in flags
                                        or any(re.search(rf"\b{k}\b", text) for k in keep))
    text = in_flags(text, flags, keep)
    if from_file:
        text = f"--config {config}: {text}"
    parser.error(text)


def _read_config(path, entry):
    """{RunConfig field: value} and the problem's spec from a JSON file, or a ValueError saying why."""
    from .core.config import RENAMED, argument_names, refuse_renamed

    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise ValueError(f"cannot read it: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON (line {err.lineno}, column {err.colno}): {err.msg}; it must "
                         f'hold one JSON object, e.g. {{"workers": 4, "policy": "ssp"}}') from None
    except UnicodeDecodeError:
        raise ValueError('not a text file; it must hold one JSON object, e.g. {"workers": 4}') from None
    if not isinstance(data, dict):
        kind = {"list": "a list", "str": "a string", "bool": "true or false", "NoneType": "null"}
        raise ValueError('it must hold one JSON object, e.g. {"workers": 4, "policy": "ssp"}, not '
                         + kind.get(type(data).__name__, "a number"))
    for old, (new, _) in RENAMED.items():
        if old in data:
            raise ValueError(f"key {old!r} was renamed: use {new!r}")
    refuse_renamed(data)
    allowed = [n for n in argument_names(entry) if n not in HOOKS] + ["problem"]
    other = "train" if entry == "simulate" else "simulate"
    for key in data:
        if key not in allowed:
            if key in argument_names(other) and key not in HOOKS:
                hint = f"it is a key of {other} only"
            else:
                close = difflib.get_close_matches(str(key).lower().replace("-", "_"), allowed, n=1)
                hint = f"did you mean {close[0]!r}?" if close else "allowed: " + ", ".join(allowed)
            raise ValueError(f"key {key!r} is not allowed in a config for {entry}: {hint}")
    problem = data.pop("problem", {})
    if isinstance(problem, str):
        problem = {"name": problem}
    if not isinstance(problem, dict) or set(problem) - {"name", "dim", "samples", "seed"}:
        raise ValueError(f"problem={problem!r} is not allowed: problem must be a name ("
                         f"{', '.join(PROBLEMS)}) or an object with keys name, dim, samples, seed")
    return data, problem


def _writable(parser, label, path, example):
    """A usage error now, before the run, where `path` cannot be written."""
    path = Path(path)
    if path.is_dir():
        parser.error(f"{label}: {path} is a folder; give a file name in it, e.g. {path / example}")
    folder = path.parent
    if not folder.exists():
        parser.error(f"{label}: the folder {folder} does not exist; create it first "
                     f"(mkdir -p {folder}) or write somewhere else")
    if not folder.is_dir():
        parser.error(f"{label}: {folder} is a file, not a folder, so {path} cannot be written")


def _resumed(parser, path):
    """The Run --resume continues, read now: a usage error where it is missing or not a run."""
    from .core.run import load_run

    if not Path(path).exists():
        parser.error(f"argument --resume: no such file: {path}")
    try:
        return load_run(path)
    except (OSError, ValueError, KeyError, TypeError):
        parser.error(f"argument --resume: {path} is not a run saved by --out RUN.npz or --checkpoint")


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
    flags = parser.flags
    given = {name for name in flags if hasattr(args, name)}
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
    keep = (set(arguments) | ({"problem"} if spec else set()) | (set(spec) & {"dim", "samples"})) - given
    fields_given = given - {"problem", "dim", "samples", "resume"}      # RunConfig's
    arguments.update({name: getattr(args, name) for name in fields_given})
    for key, flag in (("name", "problem"), ("dim", "dim"), ("samples", "samples"), ("seed", "problem_seed")):
        if hasattr(args, flag):
            spec[key] = getattr(args, flag)
    spec.setdefault("name", "least-squares")
    spec.setdefault("seed", arguments.get("seed", 0))
    try:
        configure(entry, dict(arguments))           # every value checked before anything runs
        problem = make_problem(spec["name"], spec.get("dim", 10), spec.get("samples", 512), spec["seed"])
    except (ValueError, TypeError) as err:
        if "workers" not in given | keep and re.match(r"(compute_times|slowdown)=", str(err)):
            err = f"{err} (--workers is {configure(entry, {}).workers} unless given)"
        _fail(parser, err, flags, config, keep)
    for name, path, example in (("out", getattr(args, "out", None), "trace.json"),
                                ("chrome", getattr(args, "chrome", None), "chrome.json"),
                                ("checkpoint", arguments.get("checkpoint"), "run.npz")):
        if path is not None:
            label = f"--config {config}: key 'checkpoint'" if name in keep else f"argument --{name}"
            _writable(parser, label, path, example)
    resume = _resumed(parser, args.resume) if getattr(args, "resume", None) is not None else None

    from . import engines
    try:
        if entry == "simulate":
            run = engines.simulate(problem, **arguments)
        else:
            run = engines.train(problem, resume=resume, **arguments)
    except (ValueError, TypeError) as err:          # an argument refused as the run started
        _fail(parser, err, flags, config, keep)
    except (RuntimeError, TimeoutError, OSError) as err:
        text = str(err)
        if isinstance(err, OSError) and err.strerror:   # not [Errno 2] ...
            text = err.strerror + (f": {err.filename}" if err.filename else "")
        print(f"{parser.prog}: error: the run failed: {in_flags(text, flags, keep)}", file=sys.stderr)
        return 1
    written = []
    for flag, path, write in (
            ("--out", getattr(args, "out", None), lambda path: run.save(path) if path.suffix == ".npz"
             else run.trace.to_json(path)),     # the whole Run (aps.load_run), or the trace (JSON)
            ("--chrome", getattr(args, "chrome", None), lambda path: run.trace.to_chrome_trace(path))):
        if path is None:
            continue
        try:
            write(path)
        except OSError as err:
            print(_summary(entry, spec["name"], run, written))
            print(f"{parser.prog}: error: the run ended, but {flag} {path} cannot be written: "
                  f"{err.strerror or err}", file=sys.stderr)
            return 1
        written.append(path)
    print(_summary(entry, spec["name"], run, written))
    return 0


# -- asyncps classroom serve | join: the room over the network (asyncps/classroom) -------------
CLASSROOM_HELP = "a room your students' machines join as workers (classroom serve | join)"
CLASSROOM_FIELDS = ("workers", "policy", "max_clocks_ahead", "wait_for", "lr", "lr_schedule",
                    "momentum", "steps", "partition", "batch_size", "seed")
ROOM_PROBLEM_HINTS = {"least-squares": "did you mean 'lsq'?", "least_squares": "did you mean 'lsq'?",
                      "leastsquares": "did you mean 'lsq'?"}
WILDCARDS = ("0.0.0.0", "*", "::", "[::]")
TOKEN_VARIABLE = "ASYNCPS_TOKEN"        # where `classroom join` reads the token (a command line is public)
TICK = 0.2                              # seconds between two looks at the room, the seats and Enter


def _positive(text):
    value = _number(text)
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: it must be a number > 0")
    return value


def _seconds(text):
    value = _number(text)
    if not value >= 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: it must be a number >= 0")
    return value


def _port(text):
    value = _integer(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: a port is 0 (any free one) to 65535")
    return value


def _address(text):
    """The room's address as its join line shows it: tcp://HOST:PORT (HOST:PORT also does)."""
    address = text if text.startswith("tcp://") else "tcp://" + text
    host, sep, port = address[len("tcp://"):].rpartition(":")
    if not (sep and host and port.isdigit() and 0 < int(port) <= 65535) or "://" in host:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: give the room's address as the "
                                         f"lecturer's join line shows it, e.g. tcp://10.0.0.5:5555")
    return address


def _join_token(args, parser, prog):
    """(the token, where it came from): from ASYNCPS_TOKEN, --token-file's first line or --token,
    exactly one of them, its form checked (wire.parse_token) before anything is sent; a usage
    error otherwise. --token says once that a command line is not a secret."""
    from .classroom import wire

    sources = []
    if os.environ.get(TOKEN_VARIABLE, "").strip():
        sources.append((TOKEN_VARIABLE, os.environ[TOKEN_VARIABLE].strip()))
    if args.token_file is not None:
        sources.append((f"--token-file {args.token_file}", None))     # read once it is the one
    if args.token is not None:
        sources.append(("--token", args.token))
    if not sources:
        parser.error(f"give the room's token: {TOKEN_VARIABLE}=TOKEN {prog} join ..., as the "
                     f"lecturer's join line shows it (or --token-file PATH: a file whose first line "
                     f"is the token)")
    if len(sources) > 1:
        named = " and ".join(name.split(" ")[0] for name, _ in sources)
        unset = (f" (unset {TOKEN_VARIABLE} to use {sources[1][0].split(' ')[0]})"
                 if sources[0][0] == TOKEN_VARIABLE else "")
        parser.error(f"the token is given twice ({named}): give it one way, in {TOKEN_VARIABLE} or "
                     f"with --token-file PATH{unset}")
    source, token = sources[0]
    if token is None:
        token = _read_token(parser, args.token_file)
    try:
        wire.parse_token(token)
    except ValueError as err:
        parser.error(f"{'argument --token' if source == '--token' else source}: {err}")
    if source == "--token":
        print(f"{prog} join: warning: a token on the command line can be read by other users of "
              f"this machine (ps); give it in the environment instead: {TOKEN_VARIABLE}=TOKEN "
              f"{prog} join ...", file=sys.stderr, flush=True)
    return token, source


def _read_token(parser, path):
    """The first line of the file `path`, stripped; a usage error where there is none."""
    try:
        with open(path, encoding="utf-8") as f:
            line = f.readline(1024).strip()
    except (OSError, UnicodeDecodeError) as err:
        parser.error(f"argument --token-file: cannot read {path}: "
                     f"{getattr(err, 'strerror', None) or err}")
    if not line:
        parser.error(f"argument --token-file: {path} has no token on its first line; the room's "
                     f"serve --token-file writes one")
    return line


def _write_token(path, token):
    """The token in the file `path`, readable and writable by its owner only (mode 0600, also
    when the file was there before), never through a symbolic link."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)
        os.write(fd, (token + "\n").encode())
    finally:
        os.close(fd)


def _student_name(text):
    if not 0 < len(text) <= 40 or not text.isprintable():
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: a name is 1 to 40 printable "
                                         f"characters, e.g. ada")
    return text


def _classroom_parser(prog):
    """`asyncps classroom`: its two commands, each parser with `.options` (for an unknown flag's
    closest) and `.flags` (RunConfig field: its flag, for a message in flags)."""
    from . import launch
    from .classroom.room import MAX_RATE, SILENT_AFTER

    parser = argparse.ArgumentParser(
        prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The class is the cluster: the lecturer serves a room (one parameter server on "
                    "the network);\neach student's machine joins it as one worker "
                    "(docs/classroom.md).",
        epilog=f"start with:\n  {prog} serve --problem lsq --workers 3 --steps 1000 --out run.npz\n"
               f"  (it prints the join line the students type; Enter starts the run)\n"
               f"`{prog} COMMAND --help` lists a command's options.")
    sub = parser.add_subparsers(dest="action", metavar="COMMAND", title="commands (each has --help)")
    problem = dict(type=_choice(launch.PROBLEMS, ROOM_PROBLEM_HINTS), choices=launch.PROBLEMS,
                   required=True, help=f"the built-in problem ({', '.join(launch.PROBLEMS)}): the same "
                                       f"the torchrun launcher builds")

    serve = sub.add_parser("serve", help="open a room and run it until its versions are made (Ctrl-C "
                           "ends it early, still saving)", usage="%(prog)s --problem NAME [options]",
                           allow_abbrev=False,      # `--token x`, join's flag, is no --token-file x
                           description="Open a room: print the join line the students type and who "
                           "is seated as they join; start the run when you press Enter (or once "
                           "--start-with students are seated), then print a progress line every few "
                           "seconds; at the end save the run (--out).")
    from .core.config import RunConfig
    defaults = {f.name: f.default for f in fields(RunConfig)}
    added, serve.flags = [], {}
    run = serve.add_argument_group("the run (students are its workers)")
    for name, options in _run_options("train"):
        if name not in CLASSROOM_FIELDS:
            continue
        text = options.pop("help")
        if name == "workers":
            text = "seats in the room: the students who may join"
        elif name == "seed":
            text = "seed of the data and of the workers' randomness (the students give the same)"
        if "default" not in text:
            text += f" (default: {'none' if defaults[name] is None else defaults[name]})"
        added.append(run.add_argument(_option(name), dest=name, default=argparse.SUPPRESS, help=text,
                                      **options))
        serve.flags[name] = _option(name)
    room = serve.add_argument_group("the room")
    added += [
        room.add_argument("--problem", **problem),
        room.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: "
                          "127.0.0.1, this machine only; 0.0.0.0: every network, with a warning)"),
        room.add_argument("--port", type=_port, default=0, help="the TCP port (default: 0, any free one)"),
        room.add_argument("--start-with", type=_count, metavar="N",
                          help="start the run once N students are seated (default: when you press "
                               "Enter)"),
        room.add_argument("--token-file", type=Path, metavar="PATH",
                          help="also write the room's token to PATH, readable by you only (mode "
                               "0600); a student may join with --token-file"),
        room.add_argument("--silent-after", type=_positive, default=SILENT_AFTER, metavar="SECONDS",
                          help=f"a student silent this long is lost (default: {SILENT_AFTER:g})"),
        room.add_argument("--max-rate", type=_positive, default=MAX_RATE, metavar="PER_SECOND",
                          help=f"messages a second a student may send (default: {MAX_RATE:g})"),
        room.add_argument("--progress-every", type=_positive, default=5.0, metavar="SECONDS",
                          help="seconds between two progress lines (default: 5)"),
        room.add_argument("--out", type=Path, metavar="RUN.npz",
                          help="save the whole Run (aps.load_run) when the name ends in .npz, "
                               "else the trace (JSON, Trace.from_json)")]
    serve.flags.update(problem="--problem", host="--host", port="--port", silent_after="--silent-after",
                       max_rate="--max-rate", start_with="--start-with")
    serve.options = [s for action in added for s in action.option_strings]

    join = sub.add_parser("join", help="join a room as one worker, until it has made its versions",
                          usage=f"{TOKEN_VARIABLE}=TOKEN %(prog)s ADDRESS --name NAME --problem NAME "
                                f"[options]",
                          description="Join the room at ADDRESS as a worker: type the join line the "
                          f"lecturer's room printed, with your name. The token: in the environment "
                          f"variable {TOKEN_VARIABLE} (as the join line gives it), or the first line "
                          f"of a file (--token-file).")
    added = [
        join.add_argument("address", type=_address, metavar="ADDRESS",
                          help="the room's address, e.g. tcp://10.0.0.5:5555"),
        join.add_argument("--token-file", type=Path, metavar="PATH",
                          help=f"read the room's token from the first line of PATH (instead of "
                               f"{TOKEN_VARIABLE})"),
        join.add_argument("--token", metavar="TOKEN",
                          help=f"the room's token on the command line: other users of this machine "
                               f"can read it (ps); prefer {TOKEN_VARIABLE}"),
        join.add_argument("--name", type=_student_name, required=True,
                          help="your name, as the room shows it (1 to 40 characters)"),
        join.add_argument("--problem", **problem),
        join.add_argument("--seed", type=_integer, default=0, help="the room's seed: the join line "
                          "gives it (default: 0)"),
        join.add_argument("--slowdown", type=_seconds, default=0.0, metavar="SECONDS",
                          help="extra seconds per gradient: play a straggler (default: 0)"),
        join.add_argument("--timeout", type=_positive, default=30.0, metavar="SECONDS",
                          help="seconds without an answer before the room counts as lost (default: 30)")]
    join.flags = {"address": "ADDRESS", "name": "--name", "problem": "--problem"}
    join.options = [s for action in added for s in action.option_strings]
    for name, p in (("serve", serve), ("join", join)):
        p.set_defaults(subparser=p, run=_serve_room if name == "serve" else _join_room)
    parser.runs = {"serve": serve, "join": join}
    return parser


def _command(parser, argv, prog, commands, of=""):
    """(argv's first word: a command or a flag, the commands listed for an error); a usage error
    naming the commands when it is missing or none of them (the closest one suggested)."""
    listed = f"(choose from {', '.join(map(repr, commands))})"
    if not argv:
        parser.error(f"give a command {listed}; {prog} --help says what each does")
    first = argv[0].split("=", 1)[0]
    if not first.startswith("-") and first not in commands:
        close = difflib.get_close_matches(first, commands, n=1, cutoff=0.6)
        parser.error(f"{first!r} is not a command{of}"
                     + (f"; did you mean {close[0]!r}?" if close else "") + f" {listed}")
    return first, listed


def classroom_main(argv, prog="asyncps classroom"):
    """`asyncps classroom serve|join ...`: a mistake is a usage error, as every command's."""
    parser = _classroom_parser(prog)
    first, listed = _command(parser, argv, prog, list(parser.runs), of=f" of {prog}")
    if first.startswith("-") and first not in ("-h", "--help"):
        owners = [name for name, p in parser.runs.items() if first in p.options]
        if owners:
            parser.error(f"{first} is an option of a command: give the command first, e.g. "
                         f"{prog} {owners[0]} {' '.join(argv)}")
        parser.error(f"unrecognized argument {first}: give a command first {listed}")
    args, extras = parser.parse_known_args(argv)
    if extras:
        args.subparser.error(_unrecognized(extras, args.subparser, parser.runs))
    return args.run(args, args.subparser, prog)


def _reachable(host, port):
    """The address a student types: the room's own, or for a wildcard host this machine's address
    on its network (found without sending anything)."""
    if host not in WILDCARDS:
        return f"tcp://{host}:{port}"
    import socket
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))            # UDP: picks the route, sends nothing
            return f"tcp://{s.getsockname()[0]}:{port}"
    except OSError:
        return f"tcp://{socket.gethostname()}:{port}"


def _room_state(room):
    """room.state, read again if a student joined while it was being read."""
    for _ in range(5):
        try:
            return room.state
        except RuntimeError:                            # the seats changed size under the read
            continue
    return None


def _progress(room):
    state = _room_state(room)
    if state is None:
        return None
    rows = state["students"]
    names = [f"{r['name']} {r['pushes']}" + ("" if r["status"] == "in the room" else f" ({r['status']})")
             for r in rows]
    shown = ", ".join(names[:8]) + (f", and {len(names) - 8} more" if len(names) > 8 else "")
    loss = state.get("loss")
    line = (f"v{state['version']} of {state['steps']}, {len(rows)} of {room.config.workers} seats "
            f"taken" + (f" (pushes: {shown})" if rows else ", waiting for students")
            + ("" if loss is None else f", loss {loss:.4g}"))
    if state.get("paused"):
        line += ", paused"
    if state.get("refused"):
        line += ", refused: " + ", ".join(f"{k} {v}" for k, v in sorted(state["refused"].items()))
    return line


def _serve_room(args, parser, prog):
    """`asyncps classroom serve`: open the room, print its join line and who is seated, start the
    run on Enter (or --start-with), print its progress, save it."""
    import warnings

    from . import classroom, launch

    given = {name: getattr(args, name) for name in CLASSROOM_FIELDS if hasattr(args, name)}
    if args.out is not None:
        _writable(parser, "argument --out", args.out, "run.npz")
    if args.token_file is not None:
        _writable(parser, "argument --token-file", args.token_file, "token.txt")
    seed = given.get("seed", 0)
    problem = launch.make_problem(args.problem, seed)
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            room = classroom.serve(problem, host=args.host, port=args.port, silent_after=args.silent_after,
                                   max_rate=args.max_rate, start_with=args.start_with, **given)
    except (ValueError, TypeError) as err:              # RunConfig (or the room) refused a value
        _fail(parser, err, parser.flags)
    except OSError as err:                              # a port taken, a host not of this machine
        print(f"{prog} serve: error: {in_flags(str(err), parser.flags)}", file=sys.stderr, flush=True)
        return 1
    enter = None
    if args.start_with is None:
        if not _interactive(sys.stdin):
            room.stop()
            parser.error("the run starts when you press Enter, but stdin is not a terminal (or is "
                         "closed, or this is a background job): give --start-with N to start once N "
                         "students are seated")
        enter = _EnterKey(sys.stdin)
    for warning in warned:                              # a host beyond this machine: said, once
        print(f"{prog} serve: warning: {warning.message}", file=sys.stderr, flush=True)
    if args.token_file is not None:
        try:
            _write_token(args.token_file, room.token)
        except OSError as err:
            room.stop()
            parser.error(f"argument --token-file: cannot write {args.token_file}: "
                         f"{err.strerror or err}")
    port = room.address.rsplit(":", 1)[1]
    join_line = (f"{TOKEN_VARIABLE}={shlex.quote(room.token)} asyncps classroom join "
                 f"{_reachable(args.host, port)} --name NAME --problem {args.problem} --seed {seed}")
    print(f"{prog} serve: room open at {room.address} ({problem.name}, {room.config.workers} seats, "
          f"{room.config.policy.name}, {room.config.steps} versions); each student types: "
          f"{join_line}", flush=True)
    if args.token_file is not None:
        print(f"{prog} serve: the token is also in {args.token_file} (readable by you only); a "
              f"student with a copy joins with --token-file FILE instead of {TOKEN_VARIABLE}",
              flush=True)
    print(f"{prog} serve: " + (f"the run starts once {args.start_with} students are seated"
                               if enter is None else "press Enter to start the run with the "
                                                     "students seated then"), flush=True)
    import signal
    import threading
    import time

    why = ["Ctrl-C"]

    def terminated(signum, frame):                      # `kill PID`: the same clean stop as Ctrl-C
        why[0] = "SIGTERM"
        raise KeyboardInterrupt

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminated) if main_thread else None
    stopped, said, seen, shown_at = "", None, {"seats": {}, "started": False}, -math.inf

    def look():                                         # who took or freed a seat; the start
        seen["seats"] = _say_seats(room, seen["seats"], prog)
        if room.started and not seen["started"]:
            seen["started"] = True
            names = [name for _, name in sorted(seen["seats"].items())]
            print(f"{prog} serve: the run starts with {len(names)} students: {', '.join(names)}",
                  flush=True)

    try:
        while True:
            try:
                run = room.result(timeout=TICK)
                look()                                  # what happened in the last moments
                break
            except TimeoutError:
                pass
            look()
            if not room.started and enter is not None:
                pressed = enter.poll()
                if pressed == "enter":
                    _start(room, prog)
                elif pressed == "closed":
                    room.stop()
                    print(f"{prog} serve: error: stdin closed before Enter was pressed: the room is "
                          f"closed without a run (--start-with N starts without Enter)",
                          file=sys.stderr, flush=True)
                    return 1
            if seen["started"] and time.monotonic() - shown_at >= args.progress_every:
                shown_at, line = time.monotonic(), _progress(room)
                if line and line != said:               # a line when something changed
                    print(f"{prog} serve: {line}", flush=True)
                    said = line
    except KeyboardInterrupt:                           # result() has stopped the room already
        stopped = f", stopped by {why[0]}"
        try:
            room.stop()
            run = room.result(timeout=60)
        except KeyboardInterrupt:
            print(f"{prog} serve: error: interrupted again while the room was closing; nothing "
                  f"was saved", file=sys.stderr, flush=True)
            return 130
        except (RuntimeError, TimeoutError) as err:
            print(f"{prog} serve: error: the room failed: {err}", file=sys.stderr, flush=True)
            return 1
    except (RuntimeError, TimeoutError, OSError) as err:    # e.g. sync lost a student
        print(f"{prog} serve: error: the room failed: {in_flags(str(err), parser.flags)}",
              file=sys.stderr, flush=True)
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    students = sorted(run.trace.meta.get("students", {}).items(), key=lambda item: int(item[0]))
    said = (f", students: {', '.join(name for _, name in students)}" if students else ", no students")
    written = []
    if args.out is not None:
        try:
            run.save(args.out) if args.out.suffix == ".npz" else run.trace.to_json(args.out)
        except OSError as err:
            print(_summary("classroom serve", args.problem, run, written) + said + stopped, flush=True)
            print(f"{prog} serve: error: the run ended, but --out {args.out} cannot be written: "
                  f"{err.strerror or err}", file=sys.stderr, flush=True)
            return 1
        written.append(args.out)
    line = _summary("classroom serve", args.problem, run, [])
    print(line + said + stopped + ("; wrote " + ", ".join(map(str, written)) if written else ""),
          flush=True)
    return 0


def _interactive(stream):
    """Whether `stream` is a terminal this process may read from: open, a TTY, and (where the
    system says) not a background job's, which a read would stop (SIGTTIN)."""
    try:
        if stream is None or stream.closed or not stream.isatty():
            return False
        fd = stream.fileno()
    except (ValueError, OSError, AttributeError):
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except (OSError, AttributeError):                   # not this process's controlling terminal
        return True


class _EnterKey:
    """The lecturer's Enter, read from stdin by a thread: poll() is "enter" once per line, "closed"
    at the end of the input, None while nothing was typed. Read from the file descriptor, not
    sys.stdin, so that no lock of sys.stdin is held when the interpreter exits."""

    def __init__(self, stream):
        import queue
        import threading

        self._fd, self._said = stream.fileno(), queue.SimpleQueue()
        threading.Thread(target=self._read, name="asyncps-enter-key", daemon=True).start()

    def _read(self):
        while True:
            try:
                data = os.read(self._fd, 1024)
            except OSError:
                data = b""
            if not data:
                self._said.put("closed")
                return
            for _ in range(data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")):
                self._said.put("enter")

    def poll(self):
        import queue

        try:
            return self._said.get_nowait()
        except queue.Empty:
            return None


def _start(room, prog):
    """Enter: start the run with the students seated now, or say why it cannot start yet."""
    try:
        room.start()
    except RuntimeError as err:
        text = str(err).removeprefix("room.start(): ")
        if not room.seats:
            text = "nobody is seated yet"
        text = in_flags(text, {"policy": "--policy", "wait_for": "--wait-for"})
        print(f"{prog} serve: the run cannot start yet: {text}; press Enter again once students "
              f"have joined", flush=True)


def _say_seats(room, before, prog):
    """{seat: name} now; a line for each student who took a seat or left one since `before`."""
    for _ in range(5):
        try:
            now = {k: seat["name"] for k, seat in dict(room.seats).items()}
            break
        except RuntimeError:                            # the seats changed under the read
            continue
    else:
        return before
    workers = room.config.workers
    for k in sorted(set(before) | set(now)):
        if before.get(k) is not None and before.get(k) != now.get(k):
            state = _room_state(room) or {"students": []}
            why = [row.get("why") for row in state["students"]
                   if row["worker"] == k and row["name"] == before[k] and row.get("why")]
            print(f"{prog} serve: seat {k} is free: {why[-1] if why else before[k] + ' left'} "
                  f"({len(now)} of {workers} seated)", flush=True)
        if now.get(k) is not None and before.get(k) != now.get(k):
            print(f"{prog} serve: {now[k]} took seat {k} ({len(now)} of {workers} seated)", flush=True)
    return now


def _join_room(args, parser, prog):
    """`asyncps classroom join`: this machine is one worker of the room until it is done."""
    from . import classroom, launch

    token, source = _join_token(args, parser, prog)
    problem = launch.make_problem(args.problem, args.seed)
    print(f"{prog} join: joining {args.address} as {args.name} ({args.problem}, seed {args.seed})",
          flush=True)
    try:
        contribution = classroom.join(args.address, token, args.name, problem,
                                      timeout=args.timeout, slowdown=args.slowdown, progress=True)
    except classroom.RoomLost as err:
        if str(err) == "never joined":                  # Ctrl-C before the room answered
            print(f"{prog} join: error: interrupted before the room answered", file=sys.stderr)
            return 130
        print(flush=True)                               # the progress line ends first
        print(f"{prog} join: error: the room at {args.address} is lost: {err}", file=sys.stderr)
        return 1
    except RuntimeError as err:                         # refused: token, full, problem, name
        text, hint = str(err), ""
        if "token" in text:
            hint = f" (the token came from {source})"
        elif "this room trains" in text:
            hint = "; give the --problem and --seed of the lecturer's join line"
        if not isinstance(err, classroom.Refused):      # refused once seated: the progress line ends
            print(flush=True)
        print(f"{prog} join: error: {text}{hint}", file=sys.stderr)
        return 1
    except Exception as err:                            # zmq.ZMQError: an address it cannot use
        if type(err).__module__.split(".")[0] != "zmq":
            raise
        parser.error(f"cannot join {args.address}: {err}")
    print(f"{prog} join: {contribution}", flush=True)
    if contribution.stopped == "the room made its versions":
        return 0
    if contribution.stopped.startswith("left"):
        return 130
    print(f"{prog} join: error: {contribution.stopped}", file=sys.stderr)
    return 1


def main(argv=None, prog="asyncps"):
    """The `asyncps` console script: run one subcommand and return its exit status. A mistake
    exits 2 after the subcommand's usage and one line naming the flag (argparse's usage error)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in DELEGATES:               # the module parses the rest itself
        module = importlib.import_module(DELEGATES[argv[0]][0])
        return module.main(argv[1:], prog=f"{prog} {argv[0]}") or 0
    if argv and argv[0] == "classroom":             # serve | join: a parser of its own
        return classroom_main(argv[1:], prog=f"{prog} classroom")
    parser = build_parser(prog)
    commands = list(parser.runs) + ["classroom"] + list(DELEGATES)
    first, listed = _command(parser, argv, prog, commands)
    if first.startswith("-") and first not in ("-h", "--help", "--version"):
        owners = [name for name, p in parser.runs.items() if first in p.options]
        if owners:
            command = next((word for word in argv if word in commands), owners[0])
            parser.error(f"{first} is an option of a command: give the command first, e.g. "
                         f"{prog} {command} {' '.join(word for word in argv if word != command)}")
        parser.error(f"unrecognized argument {first}: give a command first {listed}")
    args, extras = parser.parse_known_args(argv)
    if extras:                                      # in the subcommand's terms, with its usage
        args.subparser.error(_unrecognized(extras, args.subparser, parser.runs))
    return args.run(args, args.subparser)
