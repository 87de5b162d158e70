"""The student's self-check (asyncps check) answers in the student's terms: each failure on the task
whose code caused it, a syntax error as a syntax error, "fix Task N first" instead of a failure
counted twice, and no measured answer given away before the student has predicted it."""
import ast
import builtins
import copy
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from asyncps import grade as grader
from asyncps.check import check

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS, EXERCISES = ROOT / "solutions", ROOT / "exercises"


def answered(name, folder, wrong=None):
    """The exercise `name` with every task answered as the solution does, but cells in `wrong`."""
    wrong = wrong or {}
    nb = nbformat.read(EXERCISES / f"{name}.ipynb", 4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(
        SOLUTIONS / f"{name}.ipynb", 4).cells if c.metadata.get("nbgrader", {}).get("solution")}
    for c in nb.cells:
        grade_id = c.metadata.get("nbgrader", {}).get("grade_id")
        if c.metadata.get("nbgrader", {}).get("solution"):
            c.source = wrong.get(grade_id, answers[grade_id])
    path = Path(folder) / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def by_task(results):
    return {r.task.split(":")[0]: r for r in results}


OFF_BY_ONE = '''def async_push(params, version, grad, computed_on, lr):
    return params - lr * grad, version + 1, version - computed_on + 1
'''


def test_a_failing_task_is_blamed_once_and_a_task_that_uses_it_waits_for_it(tmp_path):
    results = by_task(check(answered("02-async-push", tmp_path, {"async-push": OFF_BY_ONE})))
    assert results["Task 2.1"].points == 0 and "stale by 1" in results["Task 2.1"].detail
    assert results["Task 2.2"].points == 0
    assert results["Task 2.2"].detail == ("not checked: it uses async_push from Task 2.1, which "
                                          "fails; fix Task 2.1 first")
    assert results["Task 2.4"].points == results["Task 2.4"].max_points   # does not use async_push
    report = grader.report(list(results.values()), "x", tool="asyncps.check")
    assert report.splitlines()[-1].startswith("first to fix: Task 2.1: ")


@pytest.mark.slow
def test_the_self_check_gives_no_measured_answer_away_and_the_grade_still_grades_it(tmp_path):
    """A wrong prediction of the right form passes the visible check, which says nothing of the
    measurement; the instructor's grade (hidden tests) fails it. Control: the right one passes."""
    wrong = answered("02-async-push", tmp_path, {"predict-staleness": "predicted_staleness = 1\n"})
    seen = by_task(check(wrong))["Task 2.3"]
    assert (seen.points, seen.detail) == (1, "passed")
    graded = by_task(grader.grade(wrong, SOLUTIONS))["Task 2.3"]
    assert graded.points == 0 and "stale by 3" in graded.detail
    right = tmp_path / "right"
    right.mkdir()
    assert by_task(grader.grade(answered("02-async-push", right), SOLUTIONS))["Task 2.3"].points == 1


def predict_tasks():
    for path in sorted(EXERCISES.glob("*.ipynb")):
        nb = nbformat.read(path, 4)
        for cell in nb.cells:
            grader_ = cell.metadata.get("nbgrader", {})
            if grader_.get("grade") and grader_["grade_id"].startswith("check-predict"):
                yield pytest.param(path.stem, grader_["grade_id"], id=f"{path.stem}:{grader_['grade_id']}")


@pytest.mark.parametrize("name, grade_id", list(predict_tasks()))
def test_the_visible_check_of_a_prediction_checks_only_its_form(name, grade_id):
    """It reads the prediction and nothing the notebook measured: only the names its own task's
    cell defines, `your`, numpy and Python's builtins."""
    nb = nbformat.read(EXERCISES / f"{name}.ipynb", 4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    test = next(c for c in cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    solution = [c for c in cells[:cells.index(test)] if c.metadata.get("nbgrader", {}).get("solution")][-1]
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(
        SOLUTIONS / f"{name}.ipynb", 4).cells if c.metadata.get("nbgrader", {}).get("solution")}
    own, _ = grader._names(answers[solution.metadata["nbgrader"]["grade_id"]])
    its_own, read = grader._names(test.source)
    assert own and read - its_own - own - {"your", "np"} - set(dir(builtins)) == set(), test.source


def test_a_syntax_error_is_shown_as_one_with_its_line(tmp_path):
    broken = "def async_push(params, version, grad, computed_on, lr):\n    return params - lr * grad,, 1\n"
    results = by_task(check(answered("02-async-push", tmp_path, {"async-push": broken})))
    detail = results["Task 2.1"].detail
    assert detail.startswith("your code raises SyntaxError at line 2 (return params - lr * grad,, 1)")
    assert "NameError" not in detail
    assert results["Task 2.2"].detail.startswith("not checked: it uses async_push from Task 2.1")


# -- the attribution, on notebooks made here (no kernel) ------------------------------------
def cell(source, grade_id=None, solution=False, grade=False, task=None, error=None, ran=True):
    c = new_code_cell(source)
    if grade_id:
        c.metadata["nbgrader"] = dict(grade_id=grade_id, solution=solution, grade=grade, points=1)
    if task:
        c.metadata["asyncps"] = {"task": task}
    c.execution_count = 1 if ran else None
    c.outputs = [] if error is None else [nbformat.v4.new_output(
        "error", ename=error[0], evalue=error[1], traceback=[])]
    return c


def test_a_dependency_through_a_locked_cell_is_found_and_an_own_error_wins():
    nb = new_notebook(cells=[
        cell("import numpy as np"),
        cell("def push(p):\n    return p", "push", solution=True, task="Task 1.1: push"),
        cell("assert push(1) == 2, 'wrong'", "check-push", grade=True, error=("AssertionError", "wrong")),
        cell("run = [push(k) for k in range(3)]"),                  # a locked cell: uses push
        cell("def total(r):\n    return sum(r)", "total", solution=True, task="Task 1.2: total"),
        cell("assert total(run) == 6", "check-total", grade=True, error=("AssertionError", "")),
        cell("x = = 1", "other", solution=True, task="Task 1.3: other",
             error=("SyntaxError", "invalid syntax (1.py, line 1)")),
        cell("assert x == 1", "check-other", grade=True, error=("NameError", "name 'x' is not defined")),
    ])
    results = by_task(grader.score(nb, copy.deepcopy(nb)))
    assert results["Task 1.1"].detail == "AssertionError: wrong"
    assert results["Task 1.2"].detail == ("not checked: it uses push from Task 1.1, which fails; "
                                          "fix Task 1.1 first")
    assert results["Task 1.3"].detail == "your code raises SyntaxError at line 1: invalid syntax"


def test_a_task_that_passes_is_never_blamed_on_others():
    nb = new_notebook(cells=[
        cell("def push(p):\n    return p", "push", solution=True, task="Task 1.1: push"),
        cell("assert push(1) == 2", "check-push", grade=True, error=("AssertionError", "")),
        cell("y = push(2)", "uses", solution=True, task="Task 1.2: uses"),
        cell("assert y == 2", "check-uses", grade=True),
    ])
    results = by_task(grader.score(nb, copy.deepcopy(nb)))
    assert (results["Task 1.2"].points, results["Task 1.2"].detail) == (1, "passed")


def test_names_are_read_by_ast_and_by_a_regex_where_the_cell_does_not_parse():
    defined, read = grader._names("import numpy as np\nx, y = 1, 2\ndef f(a):\n    return g(a)\n")
    assert defined == {"np", "x", "y", "f"} and "g" in read and "x" not in read
    assert grader._names("%matplotlib inline\nz = w")[0] == {"z"}
    assert grader._names("def f(:\n    pass\nq = 3")[0] == {"f", "q"}


# -- aps.check() in the notebook, a wrong-shaped answer, and a Python that is not the project's ----
SCALAR_MEAN = '''def average(grads, workers):
    if len(grads) < workers:
        return None
    return np.mean(list(grads.values()))
'''


def test_aps_check_in_a_jupyterlab_kernel_checks_its_notebook_as_saved_and_a_scalar_mean_fails_task_1_1(
        tmp_path):
    """The notebook runs in a kernel started as JupyterLab starts one (JPY_SESSION_NAME: its path);
    its last cell, aps.check(), checks the saved file in a fresh kernel, where that cell must not
    check again. A scalar np.mean answer to Task 1.1 fails Task 1.1, not Task 1.3, and the cells
    that hand it to the server show the learner's cell and the message, no asyncps frame."""
    import os
    import re

    stub = ("def robust_average(grads, workers):\n    raise NotImplementedError(\"Task 1.4: a round "
            "that survives a broken worker — replace this line with your code\")\n")
    path = answered("01-sync-round", tmp_path, {"average": SCALAR_MEAN, "robust-average": stub})
    nb = nbformat.read(path, 4)
    assert nb.cells[-1].source.splitlines()[-1] == "aps.check()" and "import asyncps as aps" in nb.cells[-1].source
    env = dict(os.environ, JPY_SESSION_NAME=str(path))
    env.pop("ASYNCPS_CHECKING", None)
    grader.execute(nb, env=env, timeout=120, allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}})
    shown = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    lines = shown.strip().splitlines()
    assert lines[0].startswith("aps.check(): 01-sync-round.ipynb as saved at "), shown
    assert "Ctrl+S" in lines[-1] and len(lines) <= 9 and max(map(len, lines[1:-2])) < 130, shown
    assert re.search(r"Task 1\.1: barrier and average +0 / 3 +AssertionError: both pushed", shown)
    assert re.search(r"Task 1\.3: one big batch +0 / 1 +not checked: it uses average from Task 1\.1", shown)
    assert lines[-2].startswith("first to fix: Task 1.1") and "shape ()" in lines[-2], shown
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    from_server = [e for e in errors if e.ename == "ValueError"]
    assert len(from_server) == 3, [(e.ename, e.evalue) for e in errors]
    for e in from_server:
        assert e.evalue.startswith("average returned an array of shape () (one number) for "
                                   "gradients of shape (5,): your average(grads, workers) must "
                                   "return one gradient of shape (5,)"), e.evalue
        text = grader.ANSI.sub("", "\n".join(e.traceback))
        assert "[... 7 frames inside asyncps hidden]" in text and "Cell In[" in text, text
        assert "asyncps/" not in text and "File " not in text, text
    inside = [e for e in errors if e.ename == "NotImplementedError" and "for bad in range(4)" in
              grader.ANSI.sub("", "\n".join(e.traceback))]      # raised in their hook: the cell,
    assert len(inside) == 1                                      # the hidden frames, their function
    text = grader.ANSI.sub("", "\n".join(inside[0].traceback))
    assert re.search(r"Cell In\[\d+\], line 2\n(.*\n)*\[\.\.\. \d+ frames inside asyncps hidden\]\n"
                     r"Cell In\[\d+\], line 2, in robust_average", text), text
    assert "asyncps/" not in text and "File " not in text, text


def test_the_checked_run_is_marked_so_an_aps_check_cell_does_not_check_again(monkeypatch, tmp_path):
    from asyncps import check as module

    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "mine.ipynb"))
    env = grader._kernel_env()
    assert "JPY_SESSION_NAME" not in env and env["ASYNCPS_CHECKING"] == "1"
    monkeypatch.setenv("ASYNCPS_CHECKING", "1")
    assert module.in_notebook() == "aps.check(): skipped here: this is the check's own run of the notebook"


def test_an_aps_check_cell_that_has_nothing_to_check_answers_without_importing_the_grader():
    """Every assignment ends in an aps.check() cell, run again by each check, each grade and each of
    the suite's wrong answers: where it only says why it does not check, it must not import
    nbformat (a second each time). In a Python of its own: this one imported it already."""
    import os
    import subprocess
    import sys

    script = ("import os, sys; import asyncps as aps; aps.check(); os.environ.pop('ASYNCPS_CHECKING'); "
              "aps.check(); print(sorted(m for m in ('nbformat', 'nbclient', 'asyncps.grade') if m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
    done = subprocess.run([sys.executable, "-c", script], env={**env, "ASYNCPS_CHECKING": "1"},
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).parent)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[-1] == "[]", done.stdout + done.stderr
    assert lines[0].startswith("aps.check(): skipped here") and "does not say which notebook" in lines[1], lines


def test_aps_check_outside_jupyterlab_says_what_to_pass(monkeypatch, tmp_path, capsys):
    import asyncps as aps

    monkeypatch.delenv("ASYNCPS_CHECKING", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    aps.check()
    said = capsys.readouterr().out
    assert said.startswith("aps.check(): this kernel does not say which notebook it runs") and \
        "aps.check('exercises/01-sync-round.ipynb')" in said and "python -m asyncps.check" in said
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "renamed.ipynb"))
    assert "renamed.ipynb, which is no longer there" in aps.check.in_notebook()
    aps.check(tmp_path / "nope.ipynb")
    assert "no such file" in capsys.readouterr().out


def wrong_python(tmp_path, *argv, numpy=False):
    """What a Python without the project's packages says to `python -m ...argv` in the repository
    (this venv's base interpreter without its site-packages; with numpy alone where numpy=True)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if numpy:
        import numpy as np
        (tmp_path / "numpy").symlink_to(Path(np.__file__).parent)
        env["PYTHONPATH"] = str(tmp_path)
    done = subprocess.run([sys._base_executable, "-S", "-m", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("argv, numpy, missing", [
    (["asyncps.check", "exercises/01-sync-round.ipynb"], False, "numpy"),
    (["asyncps", "check", "exercises/01-sync-round.ipynb"], False, "numpy"),
    (["asyncps.check", "exercises/01-sync-round.ipynb"], True, "nbformat"),
    (["asyncps", "check", "exercises/01-sync-round.ipynb"], True, "nbformat")])
def test_a_python_that_is_not_the_projects_says_what_to_run_instead(tmp_path, argv, numpy, missing):
    status, said = wrong_python(tmp_path, *argv, numpy=numpy)
    command = " ".join(["-m", *argv])
    assert status == 2 and "Traceback" not in said and len(said.strip().splitlines()) == 1, said
    assert f"has no {missing}: it is not the project's" in said
    assert f"Run `.venv/bin/python {command}` instead" in said, said
    assert f"`source .venv/bin/activate` once in this terminal and then `python {command}`" in said


def test_a_notebook_read_while_jupyterlab_saves_it_is_read_again(tmp_path, monkeypatch):
    """jupyter_server saves by truncating and writing the file: aps.check() run just after Ctrl+S
    read it empty once (the newcomer's browser test, loaded). An empty or half-written notebook is
    read again until it parses (SAVE_WAIT); one that never does says so."""
    import threading
    import time

    path = tmp_path / "mine.ipynb"
    whole = nbformat.writes(new_notebook(cells=[new_code_cell("x = 1")]))
    path.write_text(whole[:len(whole) // 2])                  # half-written, as mid-save

    def finish():
        time.sleep(0.4)
        path.write_text(whole)
    saver = threading.Thread(target=finish)
    saver.start()
    _, nb = grader.read_notebook(path)
    saver.join()
    assert nb.cells[0].source == "x = 1"
    monkeypatch.setattr(grader, "SAVE_WAIT", 0.3)
    path.write_text("")
    with pytest.raises(ValueError, match="is not a readable notebook"):
        grader.read_notebook(path)
