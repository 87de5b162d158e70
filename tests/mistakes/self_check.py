"""Mistakes a student makes in an assignment, seen through the self-check (`asyncps check`).

Each script writes a student's notebook: the exercise, every task answered as the solution
answers it, except one cell, which holds the mistake; then it runs `asyncps check` on it."""
STUDENT = '''
import sys
from pathlib import Path

import nbformat

import asyncps
from asyncps.cli import main

ROOT = Path(asyncps.__file__).resolve().parents[1]


def check(name, cell, code):
    nb = nbformat.read(ROOT / "exercises" / f"{name}.ipynb", 4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source
               for c in nbformat.read(ROOT / "solutions" / f"{name}.ipynb", 4).cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for c in nb.cells:
        grade_id = c.metadata.get("nbgrader", {}).get("grade_id")
        if c.metadata.get("nbgrader", {}).get("solution"):
            c.source = code if grade_id == cell else answers[grade_id]
    nbformat.write(nb, f"{name}.ipynb")
    sys.exit(main(["check", f"{name}.ipynb"], prog="asyncps"))
'''


def student(name, cell, code):
    return STUDENT + f"\ncheck({name!r}, {cell!r}, {code.strip() + chr(10)!r})\n"


MISTAKES = [
    dict(name="check-syntax-error",
         before="'NameError: name 'async_push' is not defined' in Task 2.1 and again in Task 2.2",
         script=student("02-async-push", "async-push", '''
def async_push(params, version, grad, computed_on, lr):
    staleness = version - computed_on
    return params - lr * grad, version + 1 staleness
'''),
         says=["first to fix: Task 2.1", "SyntaxError at line 3", "version + 1 staleness"]),
    dict(name="check-returns-only-params",
         before="'ValueError: not enough values to unpack (expected 3, got 2)' (2: the array's length)",
         script=student("02-async-push", "async-push", '''
def async_push(params, version, grad, computed_on, lr):
    return params - lr * grad
'''),
         says=["Task 2.1", "async_push must return a tuple (new_params, new_version, staleness)"]),
    dict(name="check-off-by-one-staleness",
         before="Task 2.2, untouched, failed too: 'apply returned staleness=1 ...'",
         script=student("02-async-push", "async-push", '''
def async_push(params, version, grad, computed_on, lr):
    return params - lr * grad, version + 1, version - computed_on + 1
'''),
         says=["first to fix: Task 2.1", "stale by 1"]),
    dict(name="check-prediction-as-text",
         before="(a prediction's form was not checked: 'you predicted '3'; most pushes are stale by 3')",
         script=student("02-async-push", "predict-staleness", 'predicted_staleness = "3"\n'),
         says=["Task 2.3", "predicted_staleness='3'", "whole number"]),
    dict(name="check-prediction-in-percent",
         before="'AssertionError: predicted_idle_share=66: a fraction between 0 and 1, please' "
                "(unchanged: it was already the form's message)",
         script=student("01-sync-round", "predict-idle", "predicted_idle_share = 66\n"),
         says=["Task 1.2", "predicted_idle_share=66", "a fraction between 0 and 1"]),
    dict(name="check-task-not-done",
         before="'NotImplementedError: Task 2.2: compare with the built-in server — replace this "
                "line with your code' (kept; now the last line says it is the first thing to fix)",
         script=student("02-async-push", "same-as-builtin", '''
def same_as_builtin(run):
    raise NotImplementedError("Task 2.2: compare with the built-in server — replace this line with your code")
'''),
         says=["first to fix: Task 2.2", "not done yet"]),
    dict(name="check-forgot-return",
         before="'AssertionError: ' (no message)",
         script=student("02-async-push", "same-as-builtin", '''
def same_as_builtin(run):
    builtin = aps.simulate(quadratic, workers=2, policy="async", lr=0.1, steps=8, compute_times=[1, 1.5])
    run.trace.to_json() == builtin.trace.to_json()
'''),
         says=["Task 2.2", "same_as_builtin(mine) returned None", "must be True"]),
    dict(name="check-a-lecture-notebook",
         before="'total 0 / 0', exit status 0",
         script='''
import sys
from pathlib import Path

import asyncps
from asyncps.cli import main

sys.exit(main(["check", str(Path(asyncps.__file__).resolve().parents[1] / "notebooks" /
                            "00-start-here.ipynb")], prog="asyncps"))
''',
         says=["00-start-here.ipynb has no graded tasks", "exercises/02-async-push.ipynb"]),
]
