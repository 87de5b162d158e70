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
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .kernel_env import CHECKING, SESSION

SAVE_WAIT = 2.0        # seconds a notebook read empty or half-written is read again (read_notebook)


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
    # JupyterLab saves a notebook by truncating the file and writing it (jupyter_server's "atomic"
    # writing keeps a copy for a failed write, not for readers): aps.check() run just after Ctrl+S
    # can read it empty or half-written. Such a read is tried again for up to SAVE_WAIT seconds.
    deadline = time.monotonic() + SAVE_WAIT
    while True:
        try:
            return notebook, nbformat.read(notebook, 4)
        except Exception as err:                               # noqa: BLE001 - say what is wrong
            if isinstance(err, nbformat.reader.NotJSONError) and time.monotonic() < deadline:
                time.sleep(0.1)
                continue
            raise ValueError(f"{notebook} is not a readable notebook: {err}") from None


def _by_id(nb):
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade_id")}


def run_graded(notebook, student, reference, timeout):
    """Execute `student` in the notebook's folder; score each graded cell of `reference`."""
    for cell in student.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    try:
        execute(student, env=_kernel_env(), timeout=timeout, allow_errors=True,
                resources={"metadata": {"path": str(notebook.resolve().parent)}})
    except Exception as err:                                   # noqa: BLE001 - e.g. a cell timed out
        failure = f"{type(err).__name__}: {str(err).strip().splitlines()[-1] if str(err).strip() else ''}"
    else:
        failure = None
    return score(student, reference, failure)


def execute(nb, env=None, **options):
    """Run `nb` in place, as nbclient's NotebookClient(nb, **options).execute(env=env) does, in a
    python3 kernel on Unix sockets where the system has them (_kernel_manager); the kernel is
    stopped and its client's sockets closed when it ends. Returns the executed notebook."""
    from nbclient import NotebookClient

    with _kernel_manager() as km:
        client = NotebookClient(nb, km=km, kernel_name="python3", **options)
        try:
            return client.execute() if env is None else client.execute(env=env)
        finally:          # nbclient closes its client's sockets only for a manager it made itself
            if client.kc is not None:
                client.kc.stop_channels()


def score(student, reference, failure=None):
    """One Result per graded cell of `reference`, from the outputs of the executed `student`.

    A failing test is blamed on the cell that caused it: on its own task's code when that raised
    (a syntax error is shown as one, with its line), else on an earlier task whose names it uses
    and which fails itself ("not checked: ... fix Task 2.1 first"), else on the test's own error."""
    present, solution_errors = _graded(student), {}
    for grade_id, cell in _by_id(student).items():
        error = _error(cell)
        if error is not None and cell.metadata["nbgrader"].get("solution"):
            solution_errors[grade_id] = error
    uses, owner = _dependencies(reference)
    raw = []
    for grade_id, reference_cell in _graded(reference).items():
        points = reference_cell.metadata["nbgrader"].get("points", 1)
        task, source = _task_of(reference, reference_cell), owner.get(grade_id)
        cell = present.get(grade_id)
        if cell is None:
            raw.append([grade_id, task, 0, points, "missing: the test cell was deleted"])
        elif _error(cell) is not None:
            raw.append([grade_id, task, 0, points, _describe(_error(cell))])
            if source in solution_errors:                       # its own code raised: say that
                raw[-1][4] = "your code " + _describe(solution_errors[source], code=True)
        elif cell.get("execution_count") is None:
            raw.append([grade_id, task, 0, points, failure or "did not run"])
        else:
            raw.append([grade_id, task, points, points, "passed"])
    failing = {task for _, task, got, best, _ in raw if got < best}
    failing |= {_task_name(reference, gid) for gid in solution_errors}
    results = []
    for grade_id, task, got, best, detail in raw:
        own = owner.get(grade_id)
        if got < best and not (own in solution_errors) and detail != "missing: the test cell was deleted":
            for other, name in uses.get(grade_id, {}).items():
                if other != task and other in failing:
                    detail = (f"not checked: it uses {name} from {_short(other)}, which fails; "
                              f"fix {_short(other)} first")
                    break
        results.append(Result(grade_id, task, got, best, detail))
    return results


def _short(task):
    """'Task 2.1' of 'Task 2.1: the asynchronous push'."""
    return task.split(":")[0]


def _task_name(nb, solution_id):
    cell = _by_id(nb).get(solution_id)
    return cell.metadata.get("asyncps", {}).get("task", solution_id) if cell is not None else solution_id


def _error(cell):
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    return errors[0] if errors else None


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _describe(error, code=False):
    """One line for an error output: a syntax error with its line, else 'Name: message'."""
    name, value = error.get("ename", "Error"), str(error.get("evalue", "")).strip()
    if name in ("SyntaxError", "IndentationError", "TabError"):
        text = ANSI.sub("", "\n".join(error.get("traceback", []))).splitlines()
        where = [i for i, line in enumerate(text) if re.search(r"\bline \d+", line)]
        line = re.search(r"\bline (\d+)\)$", value)             # IPython's "(123.py, line 3)"
        value, shown = re.sub(r"\s*\([^()]*, line \d+\)$", "", value), ""
        if where:
            line = re.search(r"\bline (\d+)", text[where[-1]])
            shown = text[where[-1] + 1].strip() if where[-1] + 1 < len(text) else ""
        shown = f" ({shown[:60]})" if shown and not set(shown) <= {"^", " "} else ""
        at = f" at line {line.group(1)}" if line else ""
        return f"{'raises ' if code else ''}{name}{at}{shown}: {value}"
    if name == "NotImplementedError":
        if value.endswith("replace this line with your code"):   # the stub the exercise holds
            return ("is " if code else "") + ("not done yet: replace the line `raise "
                                               "NotImplementedError(...)` in the task's cell with your code")
        said = f": {value.splitlines()[0][:200]}" if value else ""
        return ("is " if code else "") + f"not done yet (NotImplementedError){said}"
    return ("raises " if code else "") + f"{name}: {value}".strip().splitlines()[0][:300]


def _names(source):
    """(names a cell defines at its top level, names it reads from earlier cells) — a regex for the
    names it defines where it does not parse. A name the cell bound before it reads it, a function's
    argument or local, and a comprehension's variable are not read from earlier cells."""
    import ast

    text = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    try:
        tree = ast.parse(text)
    except SyntaxError:
        defined = set(re.findall(r"^(?:def|class)\s+(\w+)|^(\w+)\s*=", text, re.M))
        return {a or b for a, b in defined}, set()
    defined, used = set(), set()
    for node in tree.body:
        used |= _reads(node, defined)
        defined |= _binds(node)
    return defined, used


def _binds(node):
    """The names a statement binds in its own scope (not inside the functions it defines)."""
    import ast

    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    names, stack = set(), [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif not isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            stack.extend(ast.iter_child_nodes(n))
    return names


def _reads(node, bound):
    """The names `node` reads that are not bound in `bound` or in a scope of its own."""
    import ast

    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ast.Load) and node.id not in bound else set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        outer = [*args.defaults, *[d for d in args.kw_defaults if d is not None],
                 *getattr(node, "decorator_list", [])]
        inner = bound | {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                                         *filter(None, [args.vararg, args.kwarg])]}
        body = node.body if isinstance(node.body, list) else [node.body]
        for statement in body:
            inner = inner | _binds(statement)
        return set().union(*[_reads(n, bound) for n in outer], *[_reads(n, inner) for n in body])
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        inner = bound | {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        return set().union(*[_reads(n, inner) for n in ast.iter_child_nodes(node)])
    return set().union(set(), *[_reads(n, bound) for n in ast.iter_child_nodes(node)])


def _dependencies(nb):
    """({graded cell: {task: the name of that task's it uses}}, {graded cell: its task's solution
    cell}): which tasks each graded test cell relies on, through the names it reads — directly,
    or through the cells that define those names (a run built with a task's function)."""
    origin, uses, owner, solution = {}, {}, {}, None
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        grader = cell.metadata.get("nbgrader", {})
        defined, used = _names(cell.source)
        needs = {}
        for name in sorted(used):
            for task, via in origin.get(name, {}).items():
                needs.setdefault(task, via)
        if grader.get("solution"):
            solution = grader.get("grade_id")
            task = cell.metadata.get("asyncps", {}).get("task", solution)
            for name in defined:
                origin[name] = {**needs, task: name}
        else:
            for name in defined:
                origin[name] = needs
        if grader.get("grade"):
            uses[grader["grade_id"]], owner[grader["grade_id"]] = needs, solution
    return uses, owner


def _kernel_env():
    """The checked notebook's kernel's environment: this one, marked as a check's own run (an
    aps.check() cell in the notebook must not start a check of its own) and with no notebook path
    from JupyterLab (when aps.check() runs the check, its kernel has its notebook's)."""
    env = {k: v for k, v in os.environ.items() if k != SESSION}
    env[CHECKING] = "1"
    return env


def kernel_manager(folder, name="kernel"):
    """A python3 kernel's manager, its sockets Unix sockets named `name`-N in `folder` where the
    system has them. Over TCP a kernel binds ports its manager found free a moment before; two
    notebooks graded at once (or any other program) can take one in between, and a client may
    then talk to the wrong kernel."""
    from jupyter_client.manager import KernelManager

    if os.name == "posix":
        return KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(folder, name))
    return KernelManager(kernel_name="python3")


@contextlib.contextmanager
def _kernel_manager():
    """The grading kernel's manager (kernel_manager, in a folder of its own); the kernel is
    stopped when the block ends."""
    with tempfile.TemporaryDirectory(prefix="asyncps-grade-") as folder:
        km = kernel_manager(folder)
        try:
            yield km
        finally:                            # nbclient stops only a kernel whose manager it made
            if km.has_kernel:
                km.shutdown_kernel(now=True)


def report(results, name, tool="asyncps.grade", width=None):
    """Points per task, the total, and the first thing to fix; `width`: cut each task's detail to
    that many characters (the last line still says the first failure in full)."""
    lines = [f"{tool}: {name}"]
    for r in results:
        detail = r.detail if width is None or len(r.detail) <= width else r.detail[:width - 3] + "..."
        lines.append(f"  {r.task[:48]:48s} {r.points:g} / {r.max_points:g}   {detail}")
    total, best = sum(r.points for r in results), sum(r.max_points for r in results)
    lines.append(f"  {'total':48s} {total:g} / {best:g}")
    first = next((r for r in results if r.points < r.max_points
                  and not r.detail.startswith("not checked:")), None)
    if first is not None:                   # the last line says where to start
        lines.append(f"first to fix: {first.task}: {first.detail}")
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
        print(f"{prog}: {err}", file=sys.stderr)
        return 2
    print(report(results, args.notebook))
    return 0 if all(r.points == r.max_points for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
