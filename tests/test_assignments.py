"""Assignments: exercises/ is generated from solutions/, leaks nothing, and the grader can fail.

Strict nbval runs every solution notebook (solutions/ is in pytest's testpaths).
"""
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from asyncps import grade as grader
from asyncps.assignments import MARKERS, generate

# minutes in all: make test runs them, make test-fast does not
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS, EXERCISES = ROOT / "solutions", ROOT / "exercises"
# Assignment N practises lecture N (03a and 03c: the parts of lecture 03).
NAMES = ["01-sync-round", "02-async-push", "03a-gradient-similarity", "03c-staleness-lr",
         "04-ssp-gate", "05-local-updates", "06-real-engines", "07-several-machines"]

def test_every_assignment_has_a_solution_and_an_exercise():
    assert sorted(p.stem for p in SOLUTIONS.glob("*.ipynb")) == NAMES
    assert sorted(p.stem for p in EXERCISES.glob("*.ipynb")) == NAMES


def test_regenerating_the_exercises_changes_nothing(tmp_path):
    assert generate(SOLUTIONS, EXERCISES, check=True) == []
    out = subprocess.run([sys.executable, "-m", "asyncps.assignments", "--check", str(SOLUTIONS),
                          str(EXERCISES)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout
    hand_edited = tmp_path / "exercises"
    generate(SOLUTIONS, hand_edited)
    first = sorted(hand_edited.glob("*.ipynb"))[0]
    first.write_text(first.read_text().replace("Task", "Tsak", 1))
    assert generate(SOLUTIONS, hand_edited, check=True) == [first]


def _inside_markers(source, begin, end):
    lines, inside = [], False
    for line in source.splitlines():
        if line.strip() == begin:
            inside = True
        elif line.strip() == end:
            inside = False
        elif inside and line.strip():
            lines.append(line.strip())
    return lines


@pytest.mark.parametrize("name", NAMES)
def test_no_solution_or_hidden_test_leaks_into_the_exercise(name):
    solution = nbformat.read(SOLUTIONS / f"{name}.ipynb", 4)
    exercise = nbformat.read(EXERCISES / f"{name}.ipynb", 4)
    student_text = "\n".join(c.source for c in exercise.cells)
    for begin, end in MARKERS.values():
        assert begin not in student_text and end not in student_text
    secret = [line for c in solution.cells for begin, end in MARKERS.values()
              for line in _inside_markers(c.source, begin, end)]
    assert secret, f"{name} has no solution or hidden-test lines at all"
    leaked = [line for line in secret if len(line) > 12 and line in student_text]
    assert leaked == [], f"{name} shows solution or hidden-test lines: {leaked}"
    assert all(not c.get("outputs") for c in exercise.cells if c.cell_type == "code")


@pytest.mark.parametrize("name", NAMES)
def test_nbgrader_metadata_is_complete(name):
    cells = nbformat.read(SOLUTIONS / f"{name}.ipynb", 4).cells
    ids = [c.metadata["nbgrader"]["grade_id"] for c in cells]
    assert len(ids) == len(set(ids))
    graded = [c for c in cells if c.metadata["nbgrader"]["grade"]]
    solutions = [c for c in cells if c.metadata["nbgrader"]["solution"]]
    assert graded and solutions and all(c.metadata["nbgrader"]["points"] > 0 for c in graded)
    assert all("### BEGIN SOLUTION" in c.source for c in solutions)
    assert all(c.metadata["nbgrader"]["locked"] for c in cells if c not in solutions)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", NAMES)
def test_the_solution_scores_full_points(name):
    results = grader.grade(SOLUTIONS / f"{name}.ipynb", SOLUTIONS)
    assert results and all(r.points == r.max_points for r in results), grader.report(results, name)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", NAMES)
def test_the_exercise_runs_with_its_stubs_and_scores_zero(name):
    nb = nbformat.read(EXERCISES / f"{name}.ipynb", 4)
    grader.execute(nb, timeout=120, allow_errors=True, resources={"metadata": {"path": str(EXERCISES)}})
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert {e.ename for e in errors} == {"NotImplementedError"}, [(e.ename, e.evalue) for e in errors]
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            assert any(o.output_type == "error" and o.ename == "NotImplementedError"
                       for o in cell.outputs), cell.source[:80]
    results = grader.grade(EXERCISES / f"{name}.ipynb", SOLUTIONS)
    assert sum(r.points for r in results) == 0, grader.report(results, name)
    assert all("NotImplementedError" in r.detail or r.detail.startswith("not checked: it uses ")
               for r in results), grader.report(results, name)         # a stub of an earlier task


def test_exercise_cells_are_locked_as_nbgrader_releases_them():
    for name in NAMES:
        for cell in nbformat.read(EXERCISES / f"{name}.ipynb", 4).cells:
            grader = cell.metadata["nbgrader"]
            if grader.get("solution"):
                assert cell.metadata.get("deletable") is False and "editable" not in cell.metadata
            else:
                assert cell.metadata.get("deletable") is False and cell.metadata.get("editable") is False


@pytest.mark.timeout(180)
def test_an_edit_to_a_locked_setup_cell_counts_for_nothing(tmp_path):
    """As in nbgrader's autograde, the grader puts every locked cell back as the solution has it."""
    nb = nbformat.read(SOLUTIONS / "02-async-push.ipynb", 4)
    setup = next(c for c in nb.cells if c.cell_type == "code" and not c.metadata["nbgrader"]["solution"]
                 and not c.metadata["nbgrader"]["grade"])
    setup.source = "raise RuntimeError('a student broke the setup cell')"
    tests = next(c for c in nb.cells if c.metadata["nbgrader"]["grade"])
    tests.source = "pass  # a student emptied the tests"
    path = tmp_path / "02-async-push.ipynb"
    nbformat.write(nb, path)
    results = grader.grade(path, SOLUTIONS)
    assert all(r.points == r.max_points for r in results), grader.report(results, "edited")


def test_grading_in_a_kernel_closes_its_client_s_sockets():
    """aps.check() grades inside the learner's kernel, as often as they like: each grading must
    close its kernel client's four sockets (nbclient does so only for a manager it made itself;
    left to the garbage collector they warned "Unclosed socket" in an unrelated later test)."""
    import gc
    import warnings

    grader.grade(EXERCISES / "01-sync-round.ipynb", SOLUTIONS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
    unclosed = [str(w.message) for w in caught if "Unclosed socket" in str(w.message)]
    assert not unclosed, unclosed


def test_the_grader_command_line(tmp_path):
    run = lambda *args: subprocess.run([sys.executable, "-m", "asyncps.grade", *args],   # noqa: E731
                                       capture_output=True, text=True, timeout=180)
    missing = run(str(tmp_path / "nope.ipynb"), "--solutions", str(SOLUTIONS))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    total = sum(c.metadata["nbgrader"].get("points", 0)
                for c in nbformat.read(SOLUTIONS / "02-async-push.ipynb", 4).cells if c.metadata["nbgrader"]["grade"])
    full = run(str(SOLUTIONS / "02-async-push.ipynb"), "--solutions", str(SOLUTIONS))
    assert full.returncode == 0 and "total" in full.stdout and f"{total:g} / {total:g}" in full.stdout
    zero = run(str(EXERCISES / "02-async-push.ipynb"), "--solutions", str(SOLUTIONS))
    assert zero.returncode == 1 and f"0 / {total:g}" in zero.stdout
    bad = tmp_path / "broken.ipynb"
    bad.write_text("{not json")
    broken = run(str(bad), "--solutions", str(SOLUTIONS))
    assert broken.returncode == 2 and "not a readable notebook" in broken.stderr
