"""The lecture notebooks: present, in order, committed executed from their sources, with slides.

Strict nbval (run by `make test` on notebooks/) re-executes each one and compares every text output.
"""
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LECTURE = ["00-start-here", "01-synchronous-ps", "02-asynchronous-ps", "03-does-it-still-converge",
           "04-stale-synchronous-parallel", "05-local-updates", "06-threads-processes-gpus",
           "07-several-machines", "08-real-digits", "09-bias-momentum-allreduce"]
ALL = LECTURE + ["playground"]


def load(name):
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", 4)


def test_every_lecture_notebook_is_there():
    present = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
    assert present == sorted(ALL)


@pytest.mark.parametrize("name", ALL)
def test_committed_executed_in_order(name):
    code = [c for c in load(name).cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), \
        f"{name}: run scripts/notebooks.py {name[:2]} (unexecuted or out of order)"
    assert any(c.outputs for c in code), f"{name}: no outputs committed"
    assert not any(o.get("output_type") == "error" for c in code for o in c.outputs)


def test_notebooks_match_their_sources():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "notebooks.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout


@pytest.mark.parametrize("name", LECTURE)
def test_goals_first_check_last_and_slides_everywhere(name):
    cells = load(name).cells
    assert cells[0].cell_type == "markdown" and "Learning goals" in cells[0].source
    assert "Check your understanding" in cells[-1].source
    assert all("slide_type" in c.metadata.get("slideshow", {}) for c in cells)
    links = re.findall(r"\]\(([^)]+\.ipynb)\)", cells[-1].source)
    assert links, f"{name}: the last cell links to the next notebook and an exercise"
    for link in links:
        if not link.startswith("../exercises/"):            # exercises: tests/test_exercises.py
            assert (NOTEBOOKS / link).exists(), f"{name} links to missing {link}"


@pytest.mark.parametrize("name", ALL)
def test_nothing_reaches_the_network(name):
    code = "\n".join(c.source for c in load(name).cells if c.cell_type == "code")
    for needle in ("urllib", "requests", "http://", "https://", "download", "wget", "curl"):
        assert needle not in code, f"{name} uses {needle}"


@pytest.mark.parametrize("name", ALL)
def test_only_real_engine_cells_ignore_their_output(name):
    for cell in load(name).cells:
        if "nbval-ignore-output" in cell.metadata.get("tags", []) or "NBVAL_IGNORE_OUTPUT" in cell.source:
            assert "aps.train" in cell.source or "engine=" in cell.source, cell.source[:80]
            assert "assert" in cell.source, "an ignored cell still asserts what it shows"


def test_slides_build(tmp_path):
    out = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "slides",
                          str(NOTEBOOKS / "02-asynchronous-ps.ipynb"), "--output-dir", str(tmp_path)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "02-asynchronous-ps.slides.html").read_text()
    slides = sum(c.metadata["slideshow"]["slide_type"] == "slide" for c in load("02-asynchronous-ps").cells)
    assert html.count("<section") >= slides > 5
