"""First sight: every committed notebook of the course, opened as a newcomer opens a fresh clone —
untrusted, nothing run — and then trusted, in JupyterLab and in Notebook 7, shows its pictures.

What a frontend shows of an output (asyncps/widgets/picture.py): of a bundle it takes the best
MIME type it may render; for an untrusted notebook only "safe" ones, text/html after sanitising
(inline <svg> removed, its words left loose; <img src="data:…"> kept). The committed outputs carry
no widget view (scripts/notebooks.py drops it: without saved widget state a trusted notebook would
say "Error displaying widget: model not found") and each picture as an <img> in text/html.

Two servers (JupyterLab, which serves Notebook 7 at /notebooks/ too), each with a data dir of its
own: one empty, so no signature makes a notebook trusted; in the other every notebook with outputs
is signed (what "Trust" does; trust is about outputs), checked through the server first. A kernel
starts for each notebook opened, as it does for a learner, and nothing runs in it. Each frontend
and trust is a test of its own. Per notebook and frontend, the checks:
- each picture the committed notebook holds (an <img> in text/html, a PNG) is an <img> in the page
  that loaded (naturalWidth > 0) and has a box (width and height > 0), scrolled into view;
- no inline <svg> in any output, none of the pictures' titles as loose text (what a stripped SVG
  leaves behind), no widget error, no widget repr ("VBox(children=…"), no "Loading widget".
Screenshots of each notebook's first screen, and of the cell of its first picture (-picture.png):
build/browser/first-sight/{lab,notebook7}-TRUST/FOLDER-NAME.png. docs/first-sight-*.png are copies.
"""
import json
import re
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

from asyncps.widgets.picture import label_of, svgs_in, top_level_svgs
from servers import chromium, lab

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "browser" / "first-sight"
COURSE = [p.relative_to(ROOT).as_posix() for folder in ("notebooks", "exercises", "solutions")
          for p in sorted((ROOT / folder).glob("*.ipynb"))]
WRONG = ("Error displaying widget", "model not found", "Loading widget", "children=(",
         "Cannot display", "Javascript Error", "<IPython.core.display")
IMG = re.compile(r"<img\b")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# trust is about outputs: a notebook without any (the exercises) shows the same either way
TRUSTED = [p for p in COURSE if any(c.get("outputs") for c in nbformat.read(ROOT / p, 4).cells)]
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"     # the notebook in front
MEASURE = """async () => {
  const PANEL = '""" + PANEL + """';
  const seen = [];
  for (const out of document.querySelectorAll(`${PANEL} .jp-OutputArea-output`)) {
    out.scrollIntoView();
    await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    const images = [...out.querySelectorAll('img')];
    await Promise.all(images.map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; })));
    seen.push({text: out.innerText, svgs: out.querySelectorAll('svg').length,
               images: images.map(i => { const b = i.getBoundingClientRect();
                 return {natural: i.naturalWidth, width: b.width, height: b.height}; })});
  }
  return seen;
}"""


def expected(path):
    """(pictures, titles) of a committed notebook: how many pictures its outputs mean to show (an
    <img>, an inline <svg>, a PNG; a widget view with no picture: one), and the titles of its SVG
    pictures, which must never show as loose text. Read from what the outputs mean, not from how
    they are written: an inline <svg> counts, though an untrusted notebook drops it."""
    pictures, titles = 0, []
    for cell in nbformat.read(ROOT / path, 4).cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            html = data.get("text/html", "")
            html = "".join(html) if isinstance(html, list) else html
            inline = top_level_svgs(html)
            pictures += len(IMG.findall(html)) + len(inline)
            titles += [label_of(svg) for svg in svgs_in(html) + inline]
            if not html and ("image/png" in data or "image/jpeg" in data or WIDGET_VIEW in data):
                pictures += 1
    return pictures, [t for t in titles if t]


def test_the_course_has_pictures_to_look_at():
    """The check below is not vacuous: the lecture's first notebook holds the README's Timeline."""
    pictures, titles = expected("notebooks/00-start-here.ipynb")
    assert pictures >= 1 and any(t.startswith("timeline") for t in titles), (pictures, titles)
    assert sum(expected(p)[0] for p in COURSE) >= 30


@pytest.fixture(scope="module")
def browser():
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module", params=["untrusted", "trusted"])
def course(request, tmp_path_factory):
    """A fresh clone's course folders, served by one JupyterLab with a data dir of its own:
    empty (no notebook trusted, as on a fresh clone), or with every notebook that has outputs
    signed in it (what "Trust" does) — checked through the server before any page opens."""
    from nbformat.sign import NotebookNotary

    trust = request.param
    work = tmp_path_factory.mktemp(f"first-sight-{trust}")
    root = work / "clone"
    for folder in ("notebooks", "exercises", "solutions"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("src", "*.py"))
    data = work / "data"
    data.mkdir()
    settings = work / "settings" / "@jupyterlab" / "notebook-extension"
    server = lab(root, work, COURSE[0], extra=["--LabApp.expose_app_in_browser=True",
                                              "--JupyterNotebookApp.expose_app_in_browser=True"],
                 env={"JUPYTER_DATA_DIR": str(data)})
    try:
        (settings / "tracker.jupyterlab-settings").write_text(json.dumps(
            {"windowingMode": "none", "kernelShutdown": True}))   # a closed notebook's kernel ends
        assert all(trusted_cells(server, p) <= {False} for p in COURSE), "a notebook is trusted already"
        if trust == "trusted":
            notary = NotebookNotary(data_dir=str(data))
            for path in TRUSTED:
                notary.sign(nbformat.read(root / path, 4))
            assert all(trusted_cells(server, p) == {True} for p in TRUSTED), "signing made nothing trusted"
        yield server, trust
    finally:
        server.stop()


def trusted_cells(server, path):
    """What the server says of `path`'s code cells with outputs: True/False per cell."""
    url = f"http://127.0.0.1:{server.port}/api/contents/{path}?content=1&token={server.token}"
    with urllib.request.urlopen(url, timeout=30) as r:
        cells = json.load(r)["content"]["cells"]
    return {c["metadata"].get("trusted") for c in cells if c["cell_type"] == "code" and c["outputs"]}


def shut_down_kernels(server):
    """End every kernel the server started (Notebook 7 keeps a page's kernel when it is left)."""
    base = f"http://127.0.0.1:{server.port}/api/kernels"
    with urllib.request.urlopen(f"{base}?token={server.token}", timeout=30) as r:
        kernels = json.load(r)
    for kernel in kernels:
        request = urllib.request.Request(f"{base}/{kernel['id']}?token={server.token}", method="DELETE")
        try:
            urllib.request.urlopen(request, timeout=30).close()
        except urllib.error.HTTPError as err:
            if err.code != 404:     # 404: it ended between the list and the DELETE (its page left)
                raise
    deadline = time.monotonic() + 30
    while True:
        with urllib.request.urlopen(f"{base}?token={server.token}", timeout=30) as r:
            left = json.load(r)
        if not left:
            return
        assert time.monotonic() < deadline, f"kernels still running: {left}"
        time.sleep(0.2)


def look(page, path, shot):
    """Check what the open notebook `path` shows against its committed outputs."""
    pictures, titles = expected(path)
    outputs = sum(len(c.get("outputs", [])) for c in nbformat.read(ROOT / path, 4).cells)
    if outputs:
        page.locator(f"{PANEL} .jp-OutputArea-output").first.wait_for(timeout=60_000)
    seen = page.evaluate(MEASURE)
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.evaluate("() => document.querySelector('.jp-Notebook, .jp-NotebookPanel')?.scrollTo?.(0, 0)")
    page.locator(f"{PANEL} .jp-Cell").first.scroll_into_view_if_needed()
    page.screenshot(path=str(shot))
    first = page.locator(f"{PANEL} .jp-Cell", has=page.locator(".asyncps-static")).first
    if first.count():                                   # the first picture's cell, whole
        first.scroll_into_view_if_needed()
        first.screenshot(path=str(shot.with_name(shot.stem + "-picture.png")))
    images = [i for s in seen for i in s["images"]]
    shown = [i for i in images if i["natural"] > 0 and i["width"] > 0 and i["height"] > 0]
    text = "\n".join(s["text"] for s in seen)
    problems = []
    if len(shown) < pictures:
        problems.append(f"{len(shown)} of {pictures} pictures shown ({images})")
    if any(s["svgs"] for s in seen):
        problems.append("an inline <svg> in an output")
    problems += [f"loose caption text {t[:60]!r}" for t in titles if t[:40] in text]
    problems += [f"{w!r} in an output" for w in WRONG if w in text]
    return problems


class Lab:
    """JupyterLab, loaded once: each notebook opened as a tab, then closed (its kernel ends)."""

    def __init__(self, page, server):
        self.page = page
        page.goto(f"http://127.0.0.1:{server.port}/lab?reset&token={server.token}")   # no tab open
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=90_000)
        page.evaluate("async () => { await window.jupyterapp.restored; }")

    def open(self, server, path):
        self.page.evaluate("async p => { await window.jupyterapp.commands.execute("
                           "'docmanager:open', {path: p}); }", path)
        self.page.wait_for_function("p => window.jupyterapp.shell.currentWidget?.context?.path === p",
                                    arg=path)

    def close(self, server):
        self.page.evaluate("() => window.jupyterapp.commands.execute('application:close-all')")


class Notebook7:
    """Notebook 7: a page per notebook; a page left keeps its kernel, so it is shut down."""

    def __init__(self, page, server):
        self.page = page

    def open(self, server, path):
        self.page.goto(f"http://127.0.0.1:{server.port}/notebooks/{path}?token={server.token}")

    def close(self, server):
        self.page.goto("about:blank")
        shut_down_kernels(server)


def _pass(browser, server, frontend, trust):
    """{notebook: problems} of every notebook opened in `frontend` (Lab or Notebook7)."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.set_default_timeout(60_000)
    problems, folder = {}, ARTIFACTS / f"{frontend.__name__.lower()}-{trust}"
    shutil.rmtree(folder, ignore_errors=True)
    try:
        shown = frontend(page, server)
        for path in COURSE if trust == "untrusted" else TRUSTED:
            shown.open(server, path)
            page.locator(f"{PANEL} .jp-Notebook").first.wait_for(timeout=90_000)
            # the notebook's own cells, not the empty cell a panel shows before its file has loaded
            # (an exercise has no output to wait for: the page was looked at, and its screenshot
            # taken, before its cells replaced that one, which then left the page under the test)
            cells = len(nbformat.read(ROOT / path, 4).cells)
            page.wait_for_function("([panel, n]) => document.querySelectorAll(`${panel} .jp-Cell`).length === n",
                                   arg=[PANEL, cells], timeout=90_000)
            time.sleep(0.3)
            found = look(page, path, folder / f"{Path(path).parent.name}-{Path(path).stem}.png")
            if found:
                problems[path] = found
            shown.close(server)
    finally:
        shut_down_kernels(server)
        page.close()
    return problems


@pytest.mark.timeout(600)
@pytest.mark.parametrize("frontend", [Lab, Notebook7], ids=["lab", "notebook7"])
def test_every_notebook_shows_its_pictures(course, browser, frontend):
    """Untrusted: every notebook of the course; trusted: those with outputs (trust is about them)."""
    server, trust = course
    problems = _pass(browser, server, frontend, trust)
    assert not problems, json.dumps(problems, indent=1)[:6000]
