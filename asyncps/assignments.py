"""Student versions of the assignments, generated from their solutions: one source of truth.

    python -m asyncps.assignments solutions/ exercises/            write exercises/ (make exercises)
    python -m asyncps.assignments --check solutions/ exercises/    exit 1 if exercises/ is stale

In a solution cell (nbgrader metadata ``solution: true``) the code between ``### BEGIN SOLUTION``
and ``### END SOLUTION`` becomes ``raise NotImplementedError("Task 1.1: ...")`` at the same
indentation. In a graded test cell the lines between ``### BEGIN HIDDEN TESTS`` and
``### END HIDDEN TESTS`` are removed. Outputs are cleared. Cells are locked in JupyterLab as
nbgrader's release locks them (``LockCells``): solution cells cannot be deleted, graded and read-only
cells can be neither deleted nor edited. The nbgrader metadata stays, so an nbgrader course can use
the solution notebooks as source assignments unchanged.
"""
import argparse
import copy
import sys
from pathlib import Path

import nbformat

MARKERS = {"solution": ("### BEGIN SOLUTION", "### END SOLUTION"),
           "hidden": ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")}


def _replace_between(source, begin, end, replacement=None, where="a cell"):
    out, inside = [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == begin:
            if inside:
                raise ValueError(f"{where}: {begin!r} twice without {end!r}")
            inside = True
            if replacement is not None:
                out.append(line[: len(line) - len(line.lstrip())] + replacement)
        elif stripped == end:
            if not inside:
                raise ValueError(f"{where}: {end!r} without {begin!r}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{where}: {begin!r} is never closed by {end!r}")
    return "\n".join(out)


def student_version(solution):
    """The exercise notebook made from a solution notebook."""
    nb = copy.deepcopy(solution)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        grader = cell.metadata.get("nbgrader", {})
        where = f"cell {grader.get('grade_id', '?')}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("execution", None)
        if grader.get("solution"):
            task = cell.metadata.get("asyncps", {}).get("task", f"the task in {where}")
            stub = f'raise NotImplementedError("{task} — replace this line with your code")'
            if MARKERS["solution"][0] not in cell.source:
                raise ValueError(f"{where} is a solution cell without {MARKERS['solution'][0]!r}")
            cell.source = _replace_between(cell.source, *MARKERS["solution"], stub, where)
        if grader.get("grade"):
            cell.source = _replace_between(cell.source, *MARKERS["hidden"], None, where)
        _lock(cell, grader)
    return nb


def _lock(cell, grader):
    """The JupyterLab lock nbgrader's release gives a cell (nbgrader.preprocessors.LockCells)."""
    if grader.get("solution"):
        cell.metadata["deletable"] = False
    elif grader.get("grade") or grader.get("locked"):
        cell.metadata["deletable"] = False
        cell.metadata["editable"] = False


def generate(solutions, exercises, check=False):
    """Write (or, with check=True, compare) exercises/NAME.ipynb for every solutions/NAME.ipynb."""
    solutions, exercises = Path(solutions), Path(exercises)
    sources = sorted(solutions.glob("*.ipynb"))
    if not sources:
        raise FileNotFoundError(f"no solution notebooks (*.ipynb) in {solutions}")
    stale = []
    for source in sources:
        text = nbformat.writes(student_version(nbformat.read(source, 4))) + "\n"
        target = exercises / source.name
        if check:
            if not target.exists() or target.read_text() != text:
                stale.append(target)
        else:
            exercises.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    if check:
        extra = {p.name for p in exercises.glob("*.ipynb")} - {p.name for p in sources}
        stale += [exercises / name for name in sorted(extra)]
    return stale


def main(argv=None, prog="python -m asyncps.assignments"):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("solutions", type=Path)
    parser.add_argument("exercises", type=Path)
    parser.add_argument("--check", action="store_true", help="only say whether exercises/ is stale")
    args = parser.parse_args(argv)
    stale = generate(args.solutions, args.exercises, check=args.check)
    if args.check:
        for path in stale:
            print(f"{path}: stale or hand-edited; regenerate it with `make exercises`")
        return 1 if stale else 0
    print(f"wrote {len(list(args.solutions.glob('*.ipynb')))} exercise notebooks to {args.exercises}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
