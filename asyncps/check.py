"""Check your own assignment notebook: the visible tests, and nothing else.

    python -m asyncps.check exercises/02-async-push.ipynb [--timeout 120]

Your notebook runs top to bottom as it is; every graded test cell that runs without an error
counts as passed. These are the tests you can see: your instructor's grade also runs hidden tests
(more cases of the same task), so a pass here is necessary, not sufficient. This command never
reads any solutions.
"""
import argparse
import copy
import sys

from .grade import _graded, read_notebook, report, run_graded


def check(notebook, timeout=120):
    """Run `notebook` as it is; return one Result per graded cell (visible tests only)."""
    from .core import checks

    notebook, student = read_notebook(notebook)
    timeout = checks.real("timeout", timeout, positive=True)
    if not _graded(student):
        raise ValueError(f"{notebook} has no graded tasks to check: asyncps check runs the visible "
                         f"tests of an assignment notebook, e.g. exercises/02-async-push.ipynb")
    return run_graded(notebook, student, copy.deepcopy(student), timeout)


def main(argv=None, prog="python -m asyncps.check"):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", help="your notebook (.ipynb)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a cell may run")
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        parser.error(f"--timeout={args.timeout} is not allowed: it must be a number of seconds > 0")
    try:
        results = check(args.notebook, args.timeout)
    except (FileNotFoundError, ValueError, TypeError) as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 2
    print(report(results, f"{args.notebook} (visible tests only; your grade also runs hidden tests)",
                 tool="asyncps.check"))
    return 0 if all(r.points == r.max_points for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
