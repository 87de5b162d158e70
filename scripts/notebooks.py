#!/usr/bin/env python
"""Build the lecture notebooks and the assignment solutions from their sources, executed with the
package (never edited by hand).

    python scripts/notebooks.py              build every notebooks/src/*.py -> notebooks/*.ipynb
    python scripts/notebooks.py 02 03        build those whose names start with 02, 03
    python scripts/notebooks.py --solutions  build solutions/src/*.py -> solutions/*.ipynb
    python scripts/notebooks.py --check      do all .ipynb cells match their sources? (exit 1 if not)

A source is a Python file in "percent" format. A cell starts with a marker line:

    # %% [markdown] slide          a markdown cell (its lines start with "# ") on a new slide
    # %%                           a code cell that continues the current slide
    # %% fragment tags=nbval-ignore-output

Slide types: slide, subslide, fragment, skip, notes, - (default: a markdown cell that opens with
a heading starts a slide, every other cell continues). `make slides` turns them into a deck.

Assignment solutions also carry nbgrader cell metadata (every other cell is locked):

    # %% solution id=push task="Task 1.1: the asynchronous push"   code between ### BEGIN/END SOLUTION
    # %% tests id=check-push points=2                              graded; may hold ### BEGIN HIDDEN TESTS
"""
import os
import shlex
import re
import sys
import time
from pathlib import Path

import nbformat

from asyncps import grade

ROOT = Path(__file__).resolve().parents[1]
# The kernels run as nbval's do (conftest.py): no progress bars (one shown after a delay makes
# outputs timing-dependent), torch's CPU kernels at one instruction set (AVX2) and one thread on
# every machine.
sys.path.insert(0, str(ROOT))
import conftest  # noqa: E402,F401 - sets conftest.REPRODUCIBLE in os.environ
sys.path.pop(0)
SOURCES, OUT = ROOT / "notebooks" / "src", ROOT / "notebooks"
COURSE = {"notebooks": (SOURCES, OUT), "solutions": (ROOT / "solutions" / "src", ROOT / "solutions")}
MARKER = re.compile(r"^# %%(?P<md> \[markdown\])?(?P<rest>.*)$")
SLIDE_TYPES = ("slide", "subslide", "fragment", "skip", "notes", "-")
KERNEL = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def parse(path, grader=None):
    """The notebook a source describes (no outputs); `grader`: lock every cell for nbgrader."""
    path = Path(path)
    grader = path.parent.parent.name == "solutions" if grader is None else grader
    cells, current = [], None
    for line in Path(path).read_text().splitlines():
        m = MARKER.match(line)
        if m:
            current = {"markdown": bool(m["md"]), "lines": [], "slide": None, "tags": [], "grader": {}}
            for word in shlex.split(m["rest"]):
                key, _, value = word.partition("=")
                if key == "tags":
                    current["tags"] = value.split(",")
                elif word in SLIDE_TYPES:
                    current["slide"] = word
                elif key in ("solution", "tests", "id", "points", "task"):
                    current["grader"][key] = value or True
                else:
                    raise ValueError(f"{path}: unknown word {word!r} in cell marker {line!r}")
            cells.append(current)
        elif current is not None:
            current["lines"].append(line)
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": KERNEL,
                                                  "language_info": {"name": "python"}})
    for cell in cells:
        lines = cell["lines"]
        while lines and not lines[-1].strip():
            lines.pop()
        if cell["markdown"]:
            source = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in lines)
            new = nbformat.v4.new_markdown_cell(source)
            default = "slide" if source.startswith("#") else "-"
        else:
            new = nbformat.v4.new_code_cell("\n".join(lines))
            default = "-"
        new.metadata["slideshow"] = {"slide_type": cell["slide"] or default}
        if cell["tags"]:
            new.metadata["tags"] = cell["tags"]
        if grader or cell["grader"]:
            new.metadata["nbgrader"] = _nbgrader(cell["grader"], len(notebook.cells))
            if "task" in cell["grader"]:
                new.metadata["asyncps"] = {"task": cell["grader"]["task"]}
        notebook.cells.append(new)
    return notebook


def _nbgrader(marks, index):
    """nbgrader's cell metadata (schema 3): solution cells, graded test cells, locked others."""
    meta = {"schema_version": 3, "grade_id": marks.get("id", f"cell-{index}"), "solution": False,
            "grade": False, "locked": True, "task": False}
    if marks.get("solution"):
        meta.update(solution=True, locked=False)
    if marks.get("tests"):
        meta.update(grade=True, points=int(marks.get("points", 1)))
    return meta


def _strip_ids(nb):
    return [(c.cell_type, c.source, dict(c.metadata)) for c in nb.cells]


def build(src, out_dir=OUT):
    nb = parse(src)
    start = time.perf_counter()
    grade.execute(nb, timeout=300, resources={"metadata": {"path": str(out_dir)}})   # a kernel on Unix sockets
    nb.metadata.pop("widgets", None)                    # widget state churns on every run
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"                       # stable ids: no churn in git
        cell.metadata.pop("execution", None)
        first_sight(cell, f"{src.name}, cell {i}")
        merge_streams(cell)
    out = out_dir / (src.stem + ".ipynb")
    nbformat.write(nb, out)
    return out, time.perf_counter() - start


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PICTURES = ("text/html", "image/png", "image/svg+xml")


def first_sight(cell, where):
    """What a learner sees before running anything: each widget's picture. A widget view without
    its widget's state (dropped above) is "Error displaying widget: model not found" in a trusted
    notebook, and an untrusted one skips it for the rest of the bundle; so the view goes, and the
    picture the widget put beside it (text/html: an <img>, asyncps/widgets/picture.py) is what
    shows, trusted or not, until the cell runs and the live widget replaces it. A widget that
    gave no picture stops the build: it would show as its repr."""
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if WIDGET_VIEW in data:
            if not any(kind in data for kind in PICTURES):
                raise ValueError(f"{where}: a widget with no picture for a notebook opened "
                                 f"without a kernel (only {sorted(data)}): give it one "
                                 f"(aps.widgets.interactive, Picture) instead of plain ipywidgets")
            del data[WIDGET_VIEW]
        html = data.get("text/html", "")
        html = "".join(html) if isinstance(html, list) else html
        if "<svg" in html:
            raise ValueError(f"{where}: an inline <svg> in text/html, which an untrusted notebook "
                             f"drops (its text stays as loose words): show it with "
                             f"aps.widgets.Picture(svg)")


def merge_streams(cell):
    """One output for consecutive prints to the same stream: how the kernel's flushes split them
    depends on timing, and the committed file should not."""
    merged = []
    for output in cell.get("outputs", []):
        if (merged and output.get("output_type") == "stream" == merged[-1].get("output_type")
                and output.get("name") == merged[-1].get("name")):
            merged[-1]["text"] += output["text"]
        else:
            merged.append(output)
    if "outputs" in cell:
        cell["outputs"] = merged


def check():
    bad = []
    pairs = [(src, out_dir) for sources, out_dir in COURSE.values() for src in sorted(sources.glob("*.py"))]
    for src, out_dir in pairs:
        out = out_dir / (src.stem + ".ipynb")
        if not out.exists():
            bad.append(f"{out.name}: missing (run scripts/notebooks.py {src.stem[:2]})")
            continue
        built = nbformat.read(out, 4)
        if _strip_ids(built) != _strip_ids(parse(src)):
            bad.append(f"{out.name}: its cells differ from {src.relative_to(ROOT)} (rebuild it)")
    return bad


def main(argv):
    if argv == ["--check"]:
        bad = check()
        print("\n".join(bad) or "every notebook matches its source")
        return 1 if bad else 0
    which = "solutions" if "--solutions" in argv else "notebooks"
    argv = [a for a in argv if a != "--solutions"]
    src_dir, out_dir = COURSE[which]
    sources = sorted(src_dir.glob("*.py"))
    if argv:
        sources = [s for s in sources if any(s.stem.startswith(a) for a in argv)]
    for src in sources:
        out, seconds = build(src, out_dir)
        print(f"{out.relative_to(ROOT)}: executed in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
