"""Links between notebooks, checked in their sources: every relative link to a notebook opens.

A lecture source (notebooks/src/NAME.py) is built into notebooks/NAME.ipynb, so its links are
relative to notebooks/; an assignment source (solutions/src/NAME.py) is built into
solutions/NAME.ipynb and then exercises/NAME.ipynb, so its links must hold from both folders.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^# %%(?P<md> \[markdown\])?")
# [text](target.ipynb) or [text](target.ipynb#anchor); the text may span lines, the target not
LINK = re.compile(r"\]\((?P<target>[^()\s]+?\.ipynb)(?:#[^()\s]*)?\)")
LECTURES = sorted((ROOT / "notebooks" / "src").glob("*.py"))
ASSIGNMENTS = sorted((ROOT / "solutions" / "src").glob("*.py"))


def markdown_cells(path):
    """The markdown cells of a "percent" source, as the built notebook shows them."""
    cells, current = [], None
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        m = MARKER.match(line)
        if m:
            current = [] if m["md"] else None
            if current is not None:
                cells.append(current)
        elif current is not None:
            current.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
    return ["\n".join(cell) for cell in cells]


def relative_links(text):
    return [m["target"] for m in LINK.finditer(text)
            if not re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", m["target"]) and not m["target"].startswith("/")]


def built_in(source):
    """The folders the notebook built from `source` lives in."""
    if source.parent.parent.name == "solutions":
        return [ROOT / "solutions", ROOT / "exercises"]
    return [ROOT / "notebooks"]


def broken_links(source, folders=None):
    return [f"{folder.name}/{link}" for cell in markdown_cells(source) for link in relative_links(cell)
            for folder in (folders or built_in(source)) if not (folder / link).is_file()]


@pytest.mark.parametrize("source", LECTURES + ASSIGNMENTS, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_every_relative_notebook_link_opens(source):
    assert broken_links(source) == [], f"{source.relative_to(ROOT)} links to missing notebooks"


def test_the_lecture_map_links_every_lecture_notebook_and_the_playground():
    (table,) = [cell for cell in markdown_cells(ROOT / "notebooks" / "src" / "00-start-here.py")
                if "The map of the lecture" in cell]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| notebook")]
    linked = [re.fullmatch(r"\| \[`([\w-]+)`\]\(\1\.ipynb\) \|.*", row) for row in rows]
    assert all(linked), [row for row, m in zip(rows, linked) if not m]
    expected = sorted(p.stem for p in LECTURES if p.stem[0].isdigit() and p.stem != "00-start-here")
    assert [m[1] for m in linked] == expected + ["playground"]


@pytest.mark.parametrize("source", ASSIGNMENTS, ids=lambda p: p.stem)
def test_every_assignment_links_its_lecture(source):
    first = markdown_cells(source)[0]
    line = first[first.index("Lecture notebook"):]
    assert re.match(r"Lecture notebooks?: \[[^\]]+\]\(\.\./notebooks/[\w-]+\.ipynb\)", line), line[:120]


def test_a_broken_link_is_found(tmp_path):
    source = tmp_path / "src" / "99-x.py"
    source.parent.mkdir()
    source.write_text("# %% [markdown]\n# [gone](../notebooks/99-gone.ipynb), [here](01-synchronous-ps"
                      ".ipynb#top), [web](https://example.org/a.ipynb)\n\n# %%\nx = '](nope.ipynb)'\n")
    assert relative_links(markdown_cells(source)[0]) == ["../notebooks/99-gone.ipynb", "01-synchronous-ps.ipynb"]
    assert broken_links(source, [ROOT / "notebooks"]) == ["notebooks/../notebooks/99-gone.ipynb"]
