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
LECTURE = ["00-start-here", "01-synchronous-ps", "02-asynchronous-ps", "03a-similar-gradients",
           "03b-more-iterations", "03c-staleness-and-the-lr",
           "04a-stale-synchronous-parallel", "04b-when-ssp-pays", "04c-backup-workers-and-k-async",
           "05a-local-updates", "05b-periodic-averaging", "06-threads-processes-gpus",
           "07-several-machines", "08a-digits-race", "08b-digits-beyond-the-race",
           "09-bias-momentum-allreduce", "10-the-class-is-the-cluster"]
ALL = LECTURE + ["playground", "live"]


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
            assert any(real in cell.source for real in ("aps.train", "engine=", "room", "classroom")), \
                cell.source[:80]                  # a real engine, or the classroom's room
            assert "assert" in cell.source, "an ignored cell still asserts what it shows"


def test_slides_build(tmp_path):
    """`make slides` (scripts/slides.py): one section per slide, reveal.js beside the deck and no
    script or stylesheet from anywhere else (tests/browser/test_offline.py presents it offline)."""
    out = subprocess.run([sys.executable, str(NOTEBOOKS.parent / "scripts" / "slides.py"), str(tmp_path),
                          "02-asynchronous-ps"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "02-asynchronous-ps.slides.html").read_text()
    slides = sum(c.metadata["slideshow"]["slide_type"] == "slide" for c in load("02-asynchronous-ps").cells)
    assert html.count("<section") >= slides > 5
    loaded = re.findall(r'<(?:script|link)[^>]* (?:src|href)="([^"]+)"', html)
    assert loaded and all(url.startswith("reveal.js/") for url in loaded), loaded
    assert all((tmp_path / url).is_file() for url in loaded), loaded


# Numbers a Markdown cell may state although no cell measures them: settings, and constants of
# theory derived in the sentence that states them. Measured numbers are rendered by their cell.
THEORY = {"0.618": "2 sin(π/10), the delay bound for τ = 2",
          "0.875": "1 − 1/N for N = 8, Mitliagkas et al.'s implicit momentum",
          "0.006": "a target loss: a setting (the cell prints the minimum beside it)"}
MEASURED = re.compile(r"(?<![\w.])(\d+\.\d{3,})(?![\w.])"            # 0.9811: a measurement's precision
                      r"|(?<![\w.])(\d+(?:\.\d+)?) ?× (?:faster|sooner|speed)")   # 15× faster: an outcome


@pytest.mark.parametrize("folder", ["notebooks", "solutions"])
def test_no_markdown_cell_states_a_measured_number(folder):
    """Prose that quotes a measurement goes stale when a learner changes a setting: such numbers
    are rendered by the cell that computes them (display(Markdown(f"..."))), never typed."""
    found = []
    for path in sorted((ROOT / folder).glob("*.ipynb")):
        for cell in nbformat.read(path, 4).cells:
            if cell.cell_type != "markdown":
                continue
            text = re.sub(r"`[^`]*`", "", cell.source)           # code spans: settings, not results
            for match in MEASURED.finditer(text):
                number = match.group(1) or match.group(2)
                if number not in THEORY:
                    found.append(f"{path.name}: {match.group(0)!r} in {cell.source[:60]!r}")
    assert found == [], "typed measurements (render them from the cell instead):\n" + "\n".join(found)


def test_the_measured_number_check_can_fail():
    text = "Async wins by 15× faster; the cosine is 0.9811, lr 0.05."
    assert [m.group(0) for m in MEASURED.finditer(text)] == ["15× faster", "0.9811"]


def test_nbvals_kernels_listen_on_unix_sockets():
    """conftest.py: nbval's kernels on Unix sockets (over TCP a port was taken between its choice
    and the kernel's bind, and a notebook's 18 cells failed)."""
    import os

    import nbval.kernel

    km = nbval.kernel.KernelManager(kernel_name="python3")
    assert km.transport == "ipc" and os.path.isabs(km.ip), (km.transport, km.ip)
