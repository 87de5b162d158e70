"""The assignments in a real nbgrader course: generate_assignment, then autograde three students per
assignment (a blank submission, the solution, and one who makes several catalogued mistakes at once)
and read the scores from the gradebook. They must be what asyncps.grade gives: blank 0, solved full
marks, the mixed student loses exactly the cells its mistakes lose (tests/test_assignments.py and
tests/test_wrong_answers.py check asyncps.grade on each wrong answer alone)."""
import functools
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


@functools.cache
def mistakes(name):
    """Catalogued wrong answers (tests/wrong/) a student could make together: each in a cell of its
    own, losing cells no other one loses, nor the cell another one replaces, together at most half
    the graded cells (the student keeps the others' points). The mixed student makes all of them
    and must lose exactly the union of what they lose (nbgrader scores each graded cell on its own;
    a cell that loses with two mistakes but not with one would show here). One submission instead
    of one per catalogued set of cells: each costs a kernel and a whole run, and asyncps.grade runs
    every wrong answer alone (tests/test_wrong_answers.py)."""
    path = CATALOGUES / f"{name}.py"
    graded = sum(bool(c.metadata.get("nbgrader", {}).get("grade"))
                 for c in nbformat.read(SOLUTIONS / f"{name}.ipynb", 4).cells)
    chosen, cells, lost = [], set(), set()
    for wrong in runpy.run_path(str(path))["WRONG"] if path.exists() else []:
        loses = set(wrong["loses"])
        if wrong["cell"] in cells or wrong["cell"] in lost or loses & lost or loses & cells \
                or len(lost | loses) > graded // 2:
            continue
        chosen.append(wrong)
        cells.add(wrong["cell"])
        lost |= loses
    return chosen


def grade_in_a_course(root, names):
    """A course holding the assignments `names`: generate them, submit a blank, a solved and every
    catalogued wrong notebook of each, autograde them all, and return
    {assignment: {student: {graded cell: (score, max score)}}}. One nbgrader command per step for
    all of them ("*": nbgrader globs assignment ids), as an instructor grades a course; each
    command is a Python that imports nbgrader (3 s of CPU)."""
    root.mkdir(parents=True)
    shutil.copy2(SOLUTIONS / "nbgrader_config.py", root / "nbgrader_config.py")
    for name in names:
        (root / "source" / name).mkdir(parents=True)
        shutil.copy2(SOLUTIONS / f"{name}.ipynb", root / "source" / name / f"{name}.ipynb")
    nbgrader_cli(root, "generate_assignment", "*", "--force")
    submissions = {}
    for name in names:
        mixed = nbformat.read(SOLUTIONS / f"{name}.ipynb", 4)
        for wrong in mistakes(name):
            (cell,) = [c for c in mixed.cells if c.metadata.get("nbgrader", {}).get("grade_id") == wrong["cell"]]
            cell.source = wrong["code"].strip()
        submissions[name] = {"blank": nbformat.read(root / "release" / name / f"{name}.ipynb", 4),
                             "solved": nbformat.read(SOLUTIONS / f"{name}.ipynb", 4), "mixed": mixed}
        for student, nb in submissions[name].items():
            folder = root / "submitted" / student / name
            folder.mkdir(parents=True)
            nbformat.write(nb, folder / f"{name}.ipynb")
    nbgrader_cli(root, "autograde", "*", "--force")
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        return {name: {student: {grade.name: (grade.score, grade.max_score)
                                 for grade in gradebook.find_submission_notebook(name, name, student).grades}
                       for student in students}
                for name, students in submissions.items()}


@pytest.fixture(scope="module")
def gradebooks(tmp_path_factory):
    """The assignments in two courses, every other one in each, graded at once (this machine has 2
    cores)."""
    root = tmp_path_factory.mktemp("courses")
    courses = [NAMES[0::2], NAMES[1::2]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        graded = list(pool.map(lambda k: grade_in_a_course(root / f"course-{k}", courses[k]), range(2)))
    return {name: scores for course in graded for name, scores in course.items()}


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", NAMES)
def test_nbgrader_grades_like_asyncps_grade(gradebooks, name):
    scores = gradebooks[name]
    full, blank = scores["solved"], scores["blank"]
    assert full and all(score == best for score, best in full.values()), full
    assert all(score == 0 for score, _ in blank.values()), blank
    expected = sorted({cell for wrong in mistakes(name) for cell in wrong["loses"]})
    assert expected and len(expected) < len(full), (name, expected)   # some lose, some keep
    got = scores["mixed"]
    lost = sorted(cell for cell, (score, best) in got.items() if score < best)
    assert lost == expected, ([w["why"] for w in mistakes(name)], got)
    assert all(score == 0 for cell, (score, _) in got.items() if cell in lost), got
