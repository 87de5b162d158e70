"""The lecture site (`make site`): every page built offline, in the lecture's order, linked, with
no answer in it and nothing fetched from a network when it is opened.

The site is built here from the repository as it is, by `scripts/site.py`, inside a private
network namespace (`unshare -n`: no network at all) where that is permitted.
"""
import html
import importlib.util
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from asyncps.assignments import MARKERS
from test_student_bundle import secret_lines

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "site.py"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def load_site():
    spec = importlib.util.spec_from_file_location("site_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def offline_prefix():
    """`unshare -n` (a network namespace holding only a loopback that is down) where permitted."""
    if shutil.which("unshare") is None:
        return []
    done = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    return ["unshare", "-n"] if done.returncode == 0 else []


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    done = subprocess.run([*offline_prefix(), sys.executable, str(SCRIPT), str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


class Links(HTMLParser):
    """Every URL a page refers to, by tag and attribute, and the text of its <style> blocks."""

    def __init__(self):
        super().__init__()
        self.urls, self.styles, self._in_style = [], [], False

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.urls.append((tag, name, value))
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.styles.append(data)


def parse(path):
    links = Links()
    links.feed(path.read_text(encoding="utf-8"))
    return links


def text_of(path):
    """What a reader sees of a page: its text, tags removed, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def expected_pages():
    lecture = load_site().lecture_order(ROOT)
    return ([f"notebooks/{p.stem}.html" for p in lecture] + ["notebooks/playground.html"]
            + [f"exercises/{p.stem}.html" for p in sorted((ROOT / "exercises").glob("*.ipynb"))])


def test_the_lecture_order_is_the_one_the_notebooks_readme_gives():
    readme = (ROOT / "notebooks" / "README.md").read_text()
    order = [p.stem for p in load_site().lecture_order(ROOT)]
    assert sorted(order) == sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9]*.ipynb"))
    positions = [readme.index(f"`{name}`") for name in order]
    assert positions == sorted(positions), order


def test_every_page_is_built_and_the_index_lists_them_in_order(site):
    pages = expected_pages()
    built = sorted(str(p.relative_to(site)) for p in site.rglob("*.html"))
    assert built == sorted(pages + ["index.html"])
    listed = [value for tag, _, value in parse(site / "index.html").urls if tag == "a"]
    assert listed == pages, "the index links every page once, in reading order"


def test_every_link_resolves_to_a_file_of_the_site(site):
    broken = []
    for page in site.rglob("*.html"):
        for tag, attr, url in parse(page).urls:
            if re.match(r"^[a-z][a-z0-9+.-]*:", url) or url.startswith("#"):
                continue                              # https:, mailto:, data: and anchors
            target = (page.parent / url.split("#")[0]).resolve()
            if not target.is_file() or site.resolve() not in target.parents:
                broken.append(f"{page.relative_to(site)}: <{tag} {attr}={url!r}>")
    assert broken == []


def test_every_page_links_the_previous_page_the_index_and_the_next(site):
    pages = expected_pages()
    for i, name in enumerate(pages):
        nav = re.findall(r'<nav class="site-nav">(.*?)</nav>', (site / name).read_text(), re.S)
        assert len(nav) == 2, f"{name}: a navigation bar at the top and at the bottom"
        hrefs = re.findall(r'href="([^"]+)"', nav[0])
        expected = ([f"../{pages[i - 1]}"] if i > 0 else []) + ["../index.html"] + \
                   ([f"../{pages[i + 1]}"] if i + 1 < len(pages) else [])
        assert hrefs == expected, name


def test_no_solution_notebook_and_no_line_of_an_answer_or_a_hidden_test(site):
    assert not [p for p in site.rglob("*") if "solution" in p.name.lower()]
    secrets = secret_lines()
    assert len(secrets) > 50, "the solutions hold solution regions and hidden tests"
    for begin, end in MARKERS.values():
        secrets |= {begin, end}
    leaked = []
    for page in site.rglob("*.html"):
        lines = {line.strip() for line in text_of(page).splitlines()}
        leaked += [f"{page.relative_to(site)}: {line}" for line in sorted(lines & secrets)]
    assert leaked == []
    # and the stubs are there: the exercises are the student copies
    assert "NotImplementedError" in text_of(site / "exercises" / "02-async-push.html")


def test_the_site_refuses_a_notebook_holding_an_answer(tmp_path):
    root = tmp_path / "course"
    shutil.copytree(ROOT / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns("src"))
    (root / "exercises").mkdir()
    shutil.copy2(ROOT / "solutions" / "02-async-push.ipynb", root / "exercises")
    with pytest.raises(ValueError, match="02-async-push.ipynb.*BEGIN SOLUTION.*never solutions"):
        load_site().build(tmp_path / "site", root=root)


def test_nothing_on_any_page_loads_from_a_network(site):
    remote = re.compile(r"^\s*(https?:)?//", re.I)
    fetched = []
    for page in site.rglob("*.html"):
        links = parse(page)
        for tag, attr, url in links.urls:
            if tag != "a" and remote.match(url):      # a link a reader may follow is fine
                fetched.append(f"{page.name}: <{tag} {attr}={url!r}>")
            if tag == "script":
                fetched.append(f"{page.name}: <script src={url!r}> (the pages need no script)")
        css = "\n".join(links.styles)
        fetched += [f"{page.name}: CSS {m}" for m in
                    re.findall(r"(?:url\(\s*['\"]?\s*(?:https?:)?//[^)]*\)|@import[^;]*)", css, re.I)]
    assert fetched == []


def test_each_widget_shows_its_static_picture(site):
    """Not an empty widget box (nbconvert's default picks the widget view, which needs stored
    widget state and a widget manager from a CDN): the fallback the widget stored, or a note."""
    for source in [*(ROOT / "notebooks").glob("[0-9]*.ipynb"), ROOT / "notebooks" / "playground.ipynb"]:
        page = (site / "notebooks" / f"{source.stem}.html").read_text(encoding="utf-8")
        assert WIDGET_VIEW not in page and "jupyter-widgets" not in page, source.name
        static = re.compile(r'class="[^"]*\basyncps-static\b')
        pictures = [o["data"] for c in nbformat.read(source, 4).cells for o in c.get("outputs", [])
                    if static.search(o.get("data", {}).get("text/html", ""))]
        assert len(static.findall(page)) >= len(pictures), source.name
        assert page.count("<img") >= sum(d["text/html"].count("<img") for d in pictures), source.name
        assert 'class="site-widget-note"' not in page, source.name     # every widget has a picture
