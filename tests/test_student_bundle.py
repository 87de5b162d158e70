"""The student bundle: the lecture and the exercises, no answers; self-check works from it."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from asyncps.assignments import MARKERS

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"


def secret_lines():
    """Every line (longer than 12 characters) of a solution region or a hidden test."""
    lines = set()
    for path in SOLUTIONS.glob("*.ipynb"):
        for cell in nbformat.read(path, 4).cells:
            for begin, end in MARKERS.values():
                inside = False
                for line in cell.source.splitlines():
                    if line.strip() == begin:
                        inside = True
                    elif line.strip() == end:
                        inside = False
                    elif inside and len(line.strip()) > 12:
                        lines.add(line.strip())
    return lines


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("course") / "student-bundle"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "student_bundle.py"), str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


def test_the_bundle_holds_the_lecture_and_the_exercises_only(bundle):
    assert sorted(p.name for p in bundle.iterdir()) == ["README.md", "exercises", "notebooks"]
    assert sorted(p.name for p in (bundle / "exercises").glob("*.ipynb")) == \
        sorted(p.name for p in SOLUTIONS.glob("*.ipynb"))
    assert not list(bundle.rglob("*solution*")) and not list(bundle.rglob("tests"))
    assert (bundle.parent / "student-bundle.zip").is_file()


def test_no_line_of_any_answer_or_hidden_test_is_in_the_bundle(bundle):
    secrets = secret_lines()
    assert len(secrets) > 50, "the solutions hold solution regions and hidden tests"
    for begin, end in MARKERS.values():
        secrets |= {begin, end}
    leaked = []
    for path in bundle.rglob("*"):
        if path.suffix == ".ipynb":
            texts = [c.source for c in nbformat.read(path, 4).cells]
        elif path.suffix == ".md":
            texts = [path.read_text()]
        else:
            continue
        lines = {line.strip() for text in texts for line in text.splitlines()}
        leaked += [f"{path.name}: {line}" for line in sorted(lines & secrets)]
    assert leaked == []


@pytest.mark.slow
def test_self_check_works_from_the_bundle_and_never_reads_solutions(bundle, tmp_path):
    course = tmp_path / "student"
    shutil.copytree(bundle, course)
    exercise = course / "exercises" / "02-async-push.ipynb"

    def check():
        return subprocess.run([sys.executable, "-m", "asyncps.check", str(exercise)], cwd=course,
                              capture_output=True, text=True, timeout=300)
    blank = check()
    assert blank.returncode == 1 and "visible tests only" in blank.stdout, blank.stdout + blank.stderr
    assert "NotImplementedError" in blank.stdout
    # the student writes the push (the task's answer), then checks again: the visible tests pass
    nb = json.loads(exercise.read_text())
    solved = nbformat.read(SOLUTIONS / "02-async-push.ipynb", 4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in solved.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for cell in nb["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell["source"] = answers[grade_id]
    exercise.write_text(json.dumps(nb))
    done = check()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NotImplementedError" not in done.stdout


def test_grading_needs_the_solutions_folder_named():
    done = subprocess.run([sys.executable, "-m", "asyncps.grade", str(ROOT / "exercises" / "02-async-push.ipynb")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--solutions" in done.stderr
