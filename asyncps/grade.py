"""Grade a student's assignment notebook without nbgrader.

    python -m asyncps.grade exercises/02-async-push.ipynb [--solutions solutions/] [--timeout 120]

The student's notebook runs top to bottom with every graded test cell replaced by the
solution's version of it (the visible tests *and* the hidden ones, which the student copy does
not contain). A graded cell that runs without an error earns its points. The grader prints the
points per task and the total, and exits 1 unless every task earned full points.
"""
import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat


@dataclass
class Result:
    grade_id: str
    task: str
    points: float
    max_points: float
    detail: str


def _graded(nb):
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade")}


def _task_of(nb, test_cell):
    """The task a test cell checks: the last solution cell before it."""
    task = test_cell.metadata["nbgrader"]["grade_id"]
    for cell in nb.cells:
        if cell is test_cell:
            return task
        if cell.metadata.get("nbgrader", {}).get("solution"):
            task = cell.metadata.get("asyncps", {}).get("task", task)
    return task


class NotebookNotFound(FileNotFoundError, ValueError):
    """A path that names no notebook (a ValueError too: it is a bad argument)."""


def grade(notebook, solutions=None, timeout=120):
    """Run `notebook` with the solution's tests; return one Result per graded cell."""
    from nbclient import NotebookClient

    from .core import checks

    if not isinstance(notebook, (str, Path)):
        raise checks.bad("notebook", notebook, "a path to a .ipynb file", TypeError)
    if solutions is not None and not isinstance(solutions, (str, Path)):
        raise checks.bad("solutions", solutions, "a folder path or None", TypeError)
    timeout = checks.real("timeout", timeout, positive=True)
    notebook = Path(notebook)
    if not notebook.is_file():
        raise NotebookNotFound(f"notebook={str(notebook)!r} is not allowed: no such file; notebook "
                               f"must be the path of an existing .ipynb file")
    try:
        student = nbformat.read(notebook, 4)
    except Exception as err:                                   # noqa: BLE001 - say what is wrong
        raise ValueError(f"{notebook} is not a readable notebook: {err}") from None
    solutions = Path(solutions) if solutions else notebook.resolve().parent.parent / "solutions"
    reference = solutions / notebook.name
    if not reference.is_file():
        raise NotebookNotFound(f"no solution notebook {reference} to take the tests from; pass "
                                f"--solutions DIR")
    solution = nbformat.read(reference, 4)
    tests = _graded(solution)
    present = _graded(student)
    for grade_id, cell in present.items():                     # the real tests, hidden ones too
        if grade_id in tests:
            cell.source = tests[grade_id].source
    for cell in student.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    client = NotebookClient(student, timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(notebook.resolve().parent)}})
    try:
        client.execute()
    except Exception as err:                                   # noqa: BLE001 - e.g. a cell timed out
        failure = f"{type(err).__name__}: {str(err).strip().splitlines()[-1] if str(err).strip() else ''}"
    else:
        failure = None
    results = []
    for grade_id, reference_cell in tests.items():
        points = reference_cell.metadata["nbgrader"].get("points", 1)
        task = _task_of(solution, reference_cell)
        cell = present.get(grade_id)
        if cell is None:
            results.append(Result(grade_id, task, 0, points, "missing: the test cell was deleted"))
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            detail = f"{errors[0]['ename']}: {errors[0]['evalue']}".strip().splitlines()[0][:120]
            results.append(Result(grade_id, task, 0, points, detail))
        elif cell.get("execution_count") is None:
            results.append(Result(grade_id, task, 0, points, failure or "did not run"))
        else:
            results.append(Result(grade_id, task, points, points, "passed"))
    return results


def report(results, name):
    lines = [f"asyncps.grade: {name}"]
    for r in results:
        lines.append(f"  {r.task[:48]:48s} {r.points:g} / {r.max_points:g}   {r.detail}")
    total, best = sum(r.points for r in results), sum(r.max_points for r in results)
    lines.append(f"  {'total':48s} {total:g} / {best:g}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m asyncps.grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", help="the student's notebook (.ipynb)")
    parser.add_argument("--solutions", default=None, help="folder of the solution notebooks "
                        "(default: ../solutions next to the notebook's folder)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a cell may run")
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        parser.error(f"--timeout={args.timeout} is not allowed: it must be a number of seconds > 0")
    try:
        results = grade(args.notebook, args.solutions, args.timeout)
    except (FileNotFoundError, ValueError) as err:
        print(f"asyncps.grade: {err}", file=sys.stderr)
        return 2
    print(report(results, args.notebook))
    return 0 if all(r.points == r.max_points for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
