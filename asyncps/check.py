"""Check your own assignment notebook: the visible tests, and nothing else.

    python -m asyncps.check exercises/02-async-push.ipynb [--timeout 120]
    aps.check()                  in a cell of the notebook, in JupyterLab: checks that notebook

Your notebook runs top to bottom as it is saved; every graded test cell that runs without an error
counts as passed. These are the tests you can see: your instructor's grade also runs hidden tests
(more cases of the same task), so a pass here is necessary, not sufficient. This command never
reads any solutions.

Importing this module needs only Python's standard library (asyncps/__init__.py imports it to say
what to run when a Python without numpy imports the package); nbformat and the kernel are
imported when a check runs.
"""
import argparse
import copy
import os
import shlex
import sys
import time
import types
from pathlib import Path

from .kernel_env import CHECKING, SESSION

ROOT = Path(__file__).resolve().parents[1]


def check(notebook, timeout=120):
    """Run `notebook` as it is; return one Result per graded cell (visible tests only)."""
    from .core import checks
    from .grade import _graded, read_notebook, run_graded

    notebook, student = read_notebook(notebook)
    timeout = checks.real("timeout", timeout, positive=True)
    if not _graded(student):
        raise ValueError(f"{notebook} has no graded tasks to check: asyncps check runs the visible "
                         f"tests of an assignment notebook, e.g. exercises/02-async-push.ipynb")
    return run_graded(notebook, student, copy.deepcopy(student), timeout)


# -- aps.check() in a notebook ---------------------------------------------------------------
def this_notebook():
    """The path of the notebook this kernel runs for, or None where no one said (not JupyterLab).

    jupyter_server starts a notebook's kernel with JPY_SESSION_NAME set to the notebook's path
    (ipykernel copies it to `__session__`); VS Code sets `__vsc_ipynb_file__`. A relative path is
    taken from the kernel's folder, which is the notebook's."""
    names = [os.environ.get(SESSION)]
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None:
        names += [shell.user_ns.get("__session__"), shell.user_ns.get("__vsc_ipynb_file__")]
    names = [n for n in names if isinstance(n, str) and n.endswith(".ipynb")]
    for name in names:
        for path in (Path(name), Path.cwd() / name, Path.cwd() / Path(name).name):
            if path.is_file():
                return path
    return Path(names[0]) if names else None


def in_notebook(notebook=None, timeout=120):
    """What `aps.check()` shows in a cell: a short report of the saved notebook's visible tests."""
    if os.environ.get(CHECKING):
        return "aps.check(): skipped here: this is the check's own run of the notebook"
    path = Path(notebook) if isinstance(notebook, (str, os.PathLike)) else notebook
    if path is None:
        path = this_notebook()
        if path is None:
            return ("aps.check(): this kernel does not say which notebook it runs (it was not "
                    "started by JupyterLab): pass the notebook's path, e.g. "
                    "aps.check('exercises/01-sync-round.ipynb'), or run `python -m asyncps.check "
                    "exercises/01-sync-round.ipynb` in a terminal")
        if not path.is_file():
            return (f"aps.check(): JupyterLab started this kernel for {path}, which is no longer "
                    f"there (renamed or moved?): pass its path, e.g. aps.check('{path.name}'), "
                    f"or restart the kernel")

    from .grade import report

    try:
        saved = path.stat().st_mtime if isinstance(path, Path) and path.is_file() else None
        results = check(path, timeout)
    except (FileNotFoundError, ValueError, TypeError) as err:
        return f"aps.check(): {err}"
    when = "" if saved is None else f" as saved at {time.strftime('%H:%M:%S', time.localtime(saved))} " \
                                    f"({_ago(time.time() - saved)})"
    lines = report(results, f"{path.name}{when}, visible tests only", tool="aps.check()", width=60)
    return (f"{lines}\nIt checks the file as last saved: save first (Ctrl+S) to check what you "
            f"see, then run aps.check() again.")


def _ago(seconds):
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min ago"


class _Callable(types.ModuleType):
    """`aps.check()` (this module, called) checks the notebook it runs in and prints the report."""

    def __call__(self, notebook=None, timeout=120):
        print(in_notebook(notebook, timeout))


sys.modules[__name__].__class__ = _Callable


# -- how a notebook shows an error in or from a learner's hook (core/hooks.py) ---------------
def learner_traceback(err):
    """IPython's traceback of `err` through the learner's frames only (their cells and functions),
    with a line saying how many frames inside asyncps it leaves out; registered by
    asyncps/__init__.py as the renderer of the errors core/hooks.py marks."""
    import re
    import traceback

    try:
        from IPython import get_ipython

        entries, tb = [], err.__traceback__
        while tb is not None:
            entries.append(tb)
            tb = tb.tb_next
        inside = [t.tb_frame.f_globals.get("__name__", "").split(".")[0] for t in entries]
        kept = [t for t, name in zip(entries, inside) if name not in ("asyncps", "IPython")]
        if get_ipython() is None or not kept:
            raise LookupError("no learner frame to show")
        chain = None
        for t in reversed(kept):
            chain = types.TracebackType(chain, t.tb_frame, t.tb_lasti, t.tb_lineno)
        lines = get_ipython().InteractiveTB.structured_traceback(type(err), err, chain, tb_offset=0)
        last = max((i for i, text in enumerate(lines)
                    if re.sub(r"\x1b\[[0-9;]*m", "", text).startswith(type(err).__name__)),
                   default=len(lines))
        runs, hidden = [], 0               # the asyncps frames before each kept frame, and after
        for t, name in zip(entries, inside):
            if t in kept:
                runs.append(hidden)
                hidden = 0
            else:
                hidden += name == "asyncps"
        runs.append(hidden)
        first = last - len(kept)           # IPython draws each kept frame as one string
        if first < 1:
            raise LookupError("not the traceback IPython draws")
        shown = lines[:first]
        for count, frame in zip(runs, lines[first:last] + [None]):
            if count:
                shown.append(f"[... {count} frame{'' if count == 1 else 's'} inside asyncps hidden]")
            if frame is not None:
                shown.append(frame)
        return shown + lines[last:]
    except Exception:                                           # noqa: BLE001 - never fail to show it
        return traceback.format_exception(type(err), err, err.__traceback__)


# -- a Python that is not the project's ------------------------------------------------------
def _command_line():
    """`python -m asyncps... ARGS` as this process was started, or None when it was not."""
    argv = list(getattr(sys, "orig_argv", sys.argv))
    if "-m" in argv[:-1] and argv[argv.index("-m") + 1].split(".")[0] == "asyncps":
        return ["python", *argv[argv.index("-m"):]]
    return None


def instead(missing):
    """What to run instead, when this Python lacks `missing` (a module the project installs)."""
    command = shlex.join(_command_line() or ["python", "-m", "asyncps.check", "NOTEBOOK"])
    venv = ROOT / ".venv" / "bin" / "python"
    try:
        python = str(venv.relative_to(Path.cwd()))
    except ValueError:
        python = str(venv)
    run = python + command[len("python"):]
    if os.path.abspath(sys.executable) == str(venv) or Path(sys.prefix) == venv.parent.parent:
        return (f"this is the project's Python ({python}), but it has no {missing}: install the "
                f"project again with `make lab`, then run `{run}`")
    setup = "" if venv.exists() else f" (there is no {python} yet: `make lab` makes it)"
    return (f"this Python ({sys.executable}) has no {missing}: it is not the project's. Run "
            f"`{run}` instead{setup}, or `source {Path(python).parent / 'activate'}` once in this "
            f"terminal and then `{command}`")


def wrong_python(err):
    """What asyncps/__init__.py raises when this Python lacks numpy: for `python -m asyncps...`,
    the advice on one line and exit status 2 (no traceback); for an import, the ImportError with
    the advice appended."""
    command = _command_line()
    if command is not None:
        print(f"{shlex.join(command[:3])}: {instead(err.name)}", file=sys.stderr)
        return SystemExit(2)
    return ModuleNotFoundError(f"{err}: {instead(err.name)}", name=err.name)


def main(argv=None, prog="python -m asyncps.check"):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", help="your notebook (.ipynb)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a cell may run")
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        parser.error(f"--timeout={args.timeout} is not allowed: it must be a number of seconds > 0")
    try:
        from .grade import report
        results = check(args.notebook, args.timeout)
    except ModuleNotFoundError as err:
        if (err.name or "asyncps").split(".")[0] == "asyncps":
            raise
        print(f"{prog}: {instead(err.name)}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError, TypeError) as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 2
    print(report(results, f"{args.notebook} (visible tests only; your grade also runs hidden tests)",
                 tool="asyncps.check"))
    return 0 if all(r.points == r.max_points for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
