"""Wrong answers lose points: each catalogued wrong answer (tests/wrong/*.py) loses exactly the
points of the graded cells it names, and no others (asyncps.grade, with the hidden tests)."""
import runpy
from concurrent.futures import ThreadPoolExecutor
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


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", [n for n in assignments() if (CATALOGUES / f"{n}.py").exists()])
def test_each_wrong_answer_loses_exactly_its_tasks_points(name, tmp_path):
    """Graded two at a time (each in its own kernel: this machine has 2 cores)."""
    wrong = catalogue(name)

    def outcome(k):
        folder = tmp_path / str(k)
        folder.mkdir()
        results = grader.grade(submission(name, wrong[k], folder), SOLUTIONS)
        lost = sorted(r.grade_id for r in results if r.points < r.max_points)
        if lost != sorted(wrong[k]["loses"]) or any(r.points for r in results if r.grade_id in lost):
            return f"{wrong[k]['why']}: lost {lost}, expected {sorted(wrong[k]['loses'])}\n" + \
                grader.report(results, name)
        return None

    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(outcome, range(len(wrong))) if f]
    assert failures == [], "\n\n".join(failures)
