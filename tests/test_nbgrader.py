"""The assignments in a real nbgrader course: generate_assignment, then autograde a blank, a solved
and catalogued wrong submissions (one for each set of cells wrong answers lose), and read the
scores from the gradebook. They must be what asyncps.grade gives (blank 0, solved full marks, a wrong answer loses exactly its cells' points;
tests/test_assignments.py and tests/test_wrong_answers.py check asyncps.grade on the same)."""
import os
import runpy
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

nbgrader = pytest.importorskip("nbgrader", reason="nbgrader is a test dependency: pip install -e '.[test]'")

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS, CATALOGUES = ROOT / "solutions", ROOT / "tests" / "wrong"
NAMES = sorted(p.stem for p in SOLUTIONS.glob("*.ipynb"))


def nbgrader_cli(course, *args):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (f"nbgrader {' '.join(args)}:\n{done.stdout[-3000:]}\n"
                                  f"{first_error(done.stderr)}")
    return done


def first_error(log):
    """nbgrader's log around its first traceback or error (its last lines only say "see the above
    traceback"), and its last lines."""
    starts = [i for i in (log.find("Traceback"), log.find("| ERROR]")) if i >= 0]
    head = log[max(0, min(starts) - 1500):min(starts) + 6000] + "\n[...]\n" if starts else ""
    return head + log[-3000:]


def wrong_answers(name):
    """One catalogued wrong answer for each set of cells that wrong answers lose (36 of the 81):
    nbgrader then fails every graded cell, alone and in each combination the catalogue has, while
    tests/test_wrong_answers.py runs all 81 through asyncps.grade. Each costs a kernel and a run."""
    path = CATALOGUES / f"{name}.py"
    catalogue = runpy.run_path(str(path))["WRONG"] if path.exists() else []
    first = {}
    for wrong in catalogue:
        first.setdefault(tuple(sorted(wrong["loses"])), wrong)
    return list(first.values())


def grade_in_a_course(root, name):
    """A course holding one assignment: generate it, submit a blank, a solved and every catalogued
    wrong notebook, autograde them, and return {student: {graded cell: (score, max score)}}."""
    root.mkdir(parents=True)
    shutil.copy2(SOLUTIONS / "nbgrader_config.py", root / "nbgrader_config.py")
    (root / "source" / name).mkdir(parents=True)
    shutil.copy2(SOLUTIONS / f"{name}.ipynb", root / "source" / name / f"{name}.ipynb")
    nbgrader_cli(root, "generate_assignment", name, "--force")
    submissions = {"blank": nbformat.read(root / "release" / name / f"{name}.ipynb", 4),
                   "solved": nbformat.read(SOLUTIONS / f"{name}.ipynb", 4)}
    for k, wrong in enumerate(wrong_answers(name)):
        nb = nbformat.read(SOLUTIONS / f"{name}.ipynb", 4)
        (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == wrong["cell"]]
        cell.source = wrong["code"].strip()
        submissions[f"wrong{k}"] = nb
    for student, nb in submissions.items():
        folder = root / "submitted" / student / name
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{name}.ipynb")
    nbgrader_cli(root, "autograde", name, "--force")
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        return {student: {grade.name: (grade.score, grade.max_score)
                          for grade in gradebook.find_submission_notebook(name, name, student).grades}
                for student in submissions}


@pytest.fixture(scope="module")
def gradebooks(tmp_path_factory):
    """Every assignment in its own course, two courses at a time (this machine has 2 cores)."""
    root = tmp_path_factory.mktemp("courses")
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(NAMES, pool.map(lambda name: grade_in_a_course(root / name, name), NAMES)))


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", NAMES)
def test_nbgrader_grades_like_asyncps_grade(gradebooks, name):
    scores = gradebooks[name]
    full, blank = scores["solved"], scores["blank"]
    assert full and all(score == best for score, best in full.values()), full
    assert all(score == 0 for score, _ in blank.values()), blank
    for k, wrong in enumerate(wrong_answers(name)):
        got = scores[f"wrong{k}"]
        lost = sorted(cell for cell, (score, best) in got.items() if score < best)
        assert lost == sorted(wrong["loses"]), (wrong["why"], got)
