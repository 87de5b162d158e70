"""Grade a student's assignment notebook without nbgrader: the instructor's grader.

    python -m asyncps.grade STUDENT.ipynb --solutions solutions/ [--timeout 120]

The student's notebook runs top to bottom as nbgrader's autograde runs it: every locked cell
(graded test cells and read-only cells) is put back as the solution notebook has it, so the graded
cells carry the visible *and* the hidden tests, and an edit to a locked setup cell counts for
nothing. A graded cell that runs without an error earns its points. The grader prints the points
per task and the total, and exits 1 unless every task earned full points.

Students check their own work with `python -m asyncps.check` (the visible tests only; it never
reads the solutions).
"""
import argparse
import contextlib
import os
import sys
import tempfile
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


def grade(notebook, solutions, timeout=120):
    """Run `notebook` with the solution's locked cells and tests; return one Result per graded cell."""
    from .core import checks

    notebook, student = read_notebook(notebook)
    if not isinstance(solutions, (str, Path)):
        raise checks.bad("solutions", solutions, "the folder of the instructor's solution notebooks "
                         "(students: python -m asyncps.check runs the visible tests)", TypeError)
    timeout = checks.real("timeout", timeout, positive=True)
    reference = Path(solutions) / notebook.name
    if not reference.is_file():
        raise NotebookNotFound(f"solutions={str(solutions)!r} is not allowed: it holds no {notebook.name} "
                               f"to take the tests from; pass the folder of the solution notebooks")
    solution = nbformat.read(reference, 4)
    present = _by_id(student)
    for grade_id, cell in _by_id(solution).items():            # as nbgrader's autograde does
        grader = cell.metadata["nbgrader"]
        if grade_id in present and (grader.get("grade") or grader.get("locked")) \
                and not grader.get("solution"):
            present[grade_id].source = cell.source              # hidden tests, untouched setup
    return run_graded(notebook, student, solution, timeout)


def read_notebook(notebook):
    """(path, notebook) for a student's .ipynb, or an error that says what is wrong."""
    from .core import checks

    if not isinstance(notebook, (str, Path)):
        raise checks.bad("notebook", notebook, "a path to a .ipynb file", TypeError)
    notebook = Path(notebook)
    if not notebook.is_file():
        raise NotebookNotFound(f"notebook={str(notebook)!r} is not allowed: no such file; notebook "
                               f"must be the path of an existing .ipynb file")
    try:
        return notebook, nbformat.read(notebook, 4)
    except Exception as err:                                   # noqa: BLE001 - say what is wrong
        raise ValueError(f"{notebook} is not a readable notebook: {err}") from None


def _by_id(nb):
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade_id")}


def run_graded(notebook, student, reference, timeout):
    """Execute `student` in the notebook's folder; score each graded cell of `reference`."""
    from nbclient import NotebookClient

    for cell in student.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    with _kernel_manager() as km:
        client = NotebookClient(student, km=km, timeout=timeout, kernel_name="python3",
                                allow_errors=True,
                                resources={"metadata": {"path": str(notebook.resolve().parent)}})
        try:
            client.execute()
        except Exception as err:                               # noqa: BLE001 - e.g. a cell timed out
            failure = f"{type(err).__name__}: {str(err).strip().splitlines()[-1] if str(err).strip() else ''}"
        else:
            failure = None
    present = _graded(student)
    results = []
    for grade_id, reference_cell in _graded(reference).items():
        points = reference_cell.metadata["nbgrader"].get("points", 1)
        task = _task_of(reference, reference_cell)
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


@contextlib.contextmanager
def _kernel_manager():
    """The grading kernel's manager: on Unix sockets where the system has them. Over TCP a kernel
    binds ports its manager found free a moment before; two notebooks graded at once (or any
    other program) can take one in between, and a client may then talk to the wrong kernel.
    The kernel is stopped when the block ends."""
    from jupyter_client.manager import KernelManager

    with tempfile.TemporaryDirectory(prefix="asyncps-grade-") as folder:
        km = (KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(folder, "kernel"))
              if os.name == "posix" else KernelManager(kernel_name="python3"))
        try:
            yield km
        finally:                            # nbclient stops only a kernel whose manager it made
            if km.has_kernel:
                km.shutdown_kernel(now=True)


def report(results, name, tool="asyncps.grade"):
    lines = [f"{tool}: {name}"]
    for r in results:
        lines.append(f"  {r.task[:48]:48s} {r.points:g} / {r.max_points:g}   {r.detail}")
    total, best = sum(r.points for r in results), sum(r.max_points for r in results)
    lines.append(f"  {'total':48s} {total:g} / {best:g}")
    return "\n".join(lines)


def main(argv=None, prog="python -m asyncps.grade"):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", help="the student's notebook (.ipynb)")
    parser.add_argument("--solutions", required=True, help="folder of the instructor's solution "
                        "notebooks (students: python -m asyncps.check NOTEBOOK)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a cell may run")
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        parser.error(f"--timeout={args.timeout} is not allowed: it must be a number of seconds > 0")
    try:
        results = grade(args.notebook, args.solutions, args.timeout)
    except (FileNotFoundError, ValueError, TypeError) as err:
        print(f"asyncps.grade: {err}", file=sys.stderr)
        return 2
    print(report(results, args.notebook))
    return 0 if all(r.points == r.max_points for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
