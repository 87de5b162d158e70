"""Wrong answers lose points: each catalogued wrong answer (tests/wrong/*.py) loses exactly the
points of the graded cells it names, and no others (the solution's tests, hidden ones included).

The 101 wrong answers are graded by tests/forked_grading.py, which runs each notebook once and forks
where a wrong answer starts (what a fresh kernel per wrong answer did cost 20 minutes of the
suite's 40); a control grades some of them with asyncps.grade's real kernels and must agree."""
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from asyncps import grade as grader

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS, CATALOGUES = ROOT / "solutions", ROOT / "tests" / "wrong"


def catalogue(name):
    return runpy.run_path(str(CATALOGUES / f"{name}.py"))["WRONG"]


def assignments():
    return sorted(p.stem for p in SOLUTIONS.glob("*.ipynb"))


def submission(name, wrong, folder):
    """The solution notebook with one solution cell replaced by a wrong answer, written to folder."""
    nb = nbformat.read(SOLUTIONS / f"{name}.ipynb", 4)
    cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == wrong["cell"]]
    assert len(cells) == 1 and cells[0].metadata["nbgrader"].get("solution"), \
        f"{name}: {wrong['cell']!r} names no solution cell"
    cells[0].source = wrong["code"].strip()
    path = Path(folder) / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize("name", assignments())
def test_every_assignment_has_at_least_three_wrong_answers(name):
    assert (CATALOGUES / f"{name}.py").exists(), f"no tests/wrong/{name}.py"
    wrong = catalogue(name)
    assert len(wrong) >= 3
    graded = {c.metadata["nbgrader"]["grade_id"] for c in nbformat.read(SOLUTIONS / f"{name}.ipynb", 4).cells
              if c.metadata.get("nbgrader", {}).get("grade")}
    for w in wrong:
        assert set(w) == {"cell", "loses", "why", "code"}, w.keys()
        assert w["loses"] and set(w["loses"]) <= graded, (w["why"], w["loses"], graded)


def forked_grades(name, wrong, folder):
    """{"variants": [[index, error] of each graded cell wrong[k] loses], "original": the same for
    the solution itself}, indices into the solution's code cells."""
    code = [c for c in nbformat.read(SOLUTIONS / f"{name}.ipynb", 4).cells if c.cell_type == "code"]
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in code]
    request = {"folder": str(folder), "timeout": 600,
               "cells": [{"source": c.source, "graded": bool(c.metadata.get("nbgrader", {}).get("grade"))}
                         for c in code],
               "variants": [{"index": ids.index(w["cell"]), "source": w["code"].strip()} for w in wrong]}
    (folder / "request.json").write_text(json.dumps(request))
    env = {k: v for k, v in os.environ.items() if k != grader.SESSION}
    env.update({grader.CHECKING: "1", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1"})
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "forked_grading.py"), "request.json",
                           "result.json"], cwd=folder, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((folder / "result.json").read_text())
    named = lambda lost: {ids[i]: error for i, error in lost}          # noqa: E731
    return {"variants": [named(lost) for lost in result["variants"]], "original": named(result["original"])}


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("name", [n for n in assignments() if (CATALOGUES / f"{n}.py").exists()])
def test_each_wrong_answer_loses_exactly_its_tasks_points(name, tmp_path):
    wrong = catalogue(name)
    grades = forked_grades(name, wrong, tmp_path)
    assert grades["original"] == {}, f"the solution itself loses points here: {grades['original']}"
    failures = [f"{w['why']}: lost {sorted(lost)}, expected {sorted(w['loses'])}\n  " +
                "\n  ".join(f"{cell}: {error}" for cell, error in lost.items())
                for w, lost in zip(wrong, grades["variants"]) if sorted(lost) != sorted(w["loses"])]
    assert failures == [], "\n\n".join(failures)


@pytest.mark.timeout(600)
def test_the_forked_grader_grades_as_asyncps_grade_does(tmp_path):
    """The control: wrong answers of assignment 02 (one per set of cells lost, and a wrong answer
    in its last task) graded by asyncps.grade's real kernel, one each, and by the forked grader."""
    name = "02-async-push"
    sample = list({tuple(sorted(w["loses"])): w for w in catalogue(name)}.values())
    forked = forked_grades(name, sample, tmp_path)["variants"]
    for k, wrong in enumerate(sample):
        folder = tmp_path / str(k)
        folder.mkdir()
        results = grader.grade(submission(name, wrong, folder), SOLUTIONS)
        lost = sorted(r.grade_id for r in results if r.points < r.max_points)
        assert lost == sorted(forked[k]), (wrong["why"], lost, forked[k], grader.report(results, name))
