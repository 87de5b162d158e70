"""Every slide of every deck fits its 1280×720 slide, and the split into sub-slides loses nothing.

The decks are built once (scripts/slides.py, as `make slides`) and opened from disk in Chromium
with a 1280×720 window. Each slide is shown in turn through reveal.js's API and measured: its
content's height and width (scrollHeight, scrollWidth: what a presenter would have to scroll to),
and any element inside it that clips or scrolls what it holds. A failure names the deck, the slide
(h/v as in the deck's address, #/h/v) and its size. Then the text and the pictures of the deck as
shown are compared with those of the deck's file: splitting a slide only moves content.
A made-up deck adds what the lecture holds little of (a long numbered list, a long table, a
picture taller than a slide); one deck is also opened on a small screen and at an address.
"""
import importlib.util
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from servers import CHROME_ARGS, CHROMIUM, require_browser

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WIDTH, HEIGHT = 1280, 720
DECKS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9]*.ipynb"))

# every slide, shown in turn, without transitions: its size, and what clips inside it
MEASURE = """() => {
  Reveal.configure({transition: "none", backgroundTransition: "none"});
  const slides = [];
  Reveal.getHorizontalSlides().forEach((stack, h) => {
    const vertical = Array.from(stack.children).filter(c => c.tagName === "SECTION");
    (vertical.length ? vertical : [stack]).forEach((slide, v) => {
      Reveal.slide(h, v);
      const clipped = Array.from(slide.querySelectorAll("*")).filter(e => {
        const s = getComputedStyle(e);
        return (s.overflowX !== "visible" && e.scrollWidth > e.clientWidth + 1) ||
               (s.overflowY !== "visible" && e.scrollHeight > e.clientHeight + 1);
      }).map(e => `${e.tagName.toLowerCase()}.${String(e.className).split(" ")[0]} holds ` +
                  `${e.scrollWidth}×${e.scrollHeight} in ${e.clientWidth}×${e.clientHeight}`);
      slides.push({h, v, width: slide.scrollWidth, height: slide.scrollHeight, clipped,
                   current: Reveal.getCurrentSlide() === slide});
    });
  });
  const shown = document.querySelector(".reveal .slides").cloneNode(true);
  shown.querySelectorAll(".fit-repeat").forEach(e => e.remove());    // a split table's header again
  return {config: [Reveal.getConfig().width, Reveal.getConfig().height], slides,
          text: shown.textContent, pictures: shown.querySelectorAll("img, svg:not(svg svg)").length};
}"""


FITTED = "() => document.querySelector('.reveal').dataset.fitted !== undefined"


class SlidesText(HTMLParser):
    """The text and the number of pictures inside the deck file's <div class="slides">."""

    def __init__(self):
        super().__init__()
        self.depth, self.text, self.pictures, self.svg = 0, [], 0, 0     # svg: inside one

    def handle_starttag(self, tag, attrs):
        if self.depth:
            self.depth += tag not in VOID
            self.pictures += tag == "img" or (tag == "svg" and not self.svg)
            self.svg += tag == "svg"
        elif tag == "div" and "slides" in (dict(attrs).get("class") or "").split():
            self.depth = 1

    def handle_startendtag(self, tag, attrs):
        if self.depth:
            self.pictures += tag == "img" or (tag == "svg" and not self.svg)

    def handle_endtag(self, tag):
        if self.depth and tag not in VOID:
            self.depth -= 1
            self.svg -= tag == "svg"

    def handle_data(self, data):
        if self.depth:
            self.text.append(data)


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
squeeze = lambda text: re.sub(r"\s+", "", text)  # noqa: E731


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    require_browser()
    out = tmp_path_factory.mktemp("slides")
    spec = importlib.util.spec_from_file_location("slides_script", ROOT / "scripts" / "slides.py")
    slides = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(slides)
    built = {p.name.removesuffix(".slides.html"): p for p in slides.build(out)}
    assert sorted(built) == DECKS, f"slides.py built {sorted(built)}, the lecture has {DECKS}"
    return built


@pytest.fixture(scope="module")
def browser(decks):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def presented(browser, deck, then=MEASURE):
    """Open `deck` at 1280×720, wait for its slides to be fitted, evaluate `then`; what it
    returns, after checking every slide fits and the deck shows all its file holds."""
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    errors, remote = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
               else (remote.append(route.request.url), route.abort()))
    try:
        page.goto(deck.as_uri())
        page.wait_for_function(FITTED, timeout=30_000)
        seen = page.evaluate(MEASURE)
        extra = page.evaluate(then) if then is not MEASURE else None
    except Exception as e:
        raise AssertionError(f"{deck.name}: the deck did not finish fitting its slides: {e}; "
                             f"page errors: {errors}") from None
    finally:
        page.close()
    assert not errors and not remote, f"{deck.name}: page errors {errors}, requests off disk {remote}"
    assert seen["config"] == [WIDTH, HEIGHT], f"{deck.name}: reveal.js slide size {seen['config']}"
    slides = seen["slides"]
    assert all(s["current"] for s in slides), f"{deck.name}: reveal.js did not show every slide"
    too_big = [f"slide {s['h']}/{s['v']} is {s['width']}×{s['height']} px" for s in slides
               if s["width"] > WIDTH or s["height"] > HEIGHT]
    clipped = [f"slide {s['h']}/{s['v']}: {c}" for s in slides for c in s["clipped"]]
    assert not too_big and not clipped, (
        f"{deck.name}: of {len(slides)} slides, {len(too_big)} do not fit {WIDTH}×{HEIGHT}: "
        + "; ".join(too_big + clipped))

    parsed = SlidesText()
    parsed.feed(deck.read_text(encoding="utf-8"))
    written, shown = squeeze("".join(parsed.text)), squeeze(seen["text"])
    if written != shown:
        at = next((i for i, (a, b) in enumerate(zip(written, shown)) if a != b), min(map(len, (written, shown))))
        near = slice(max(0, at - 60), at + 60)
        raise AssertionError(f"{deck.name}: the slides as shown differ from the deck's file at character "
                             f"{at}: file …{written[near]!r}… shown …{shown[near]!r}…")
    assert parsed.pictures == seen["pictures"], (
        f"{deck.name}: {parsed.pictures} pictures in the file, {seen['pictures']} shown")
    return seen if then is MEASURE else extra


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", DECKS)
def test_every_slide_fits_1280x720_and_nothing_is_lost(decks, browser, name):
    presented(browser, decks[name])


# what the synthetic deck's split made of its list, its table and its pictures
PARTS = """() => ({
  lists: Array.from(document.querySelectorAll(".reveal .slides ol")).map(
    ol => [ol.start, ol.querySelectorAll(":scope > li").length]),
  tables: Array.from(document.querySelectorAll(".reveal .slides table")).map(
    t => [t.tHead ? t.tHead.textContent.trim() : null, t.tBodies[0] ? t.tBodies[0].rows.length : 0]),
  pictures: Array.from(document.querySelectorAll(".reveal .slides .jp-OutputArea-output img")).map(
    i => { const section = i.closest("section"); const was = section.style.display;
           section.style.display = "block"; section.parentElement.style.display = "block";
           const size = [i.offsetWidth, i.offsetHeight, i.naturalWidth, i.naturalHeight];
           section.style.display = was; section.parentElement.style.display = ""; return size; }),
})"""


def picture(width, height):
    """A PNG, width×height, as a notebook output stores it (base64)."""
    import base64
    import io

    from PIL import Image
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (0, 114, 178)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


@pytest.mark.timeout(120)
def test_a_long_list_table_output_and_a_tall_picture_are_split_or_scaled(decks, browser):
    """What the lecture's decks hold only some of, in one made-up deck: a numbered list of 40
    items goes on counting on its sub-slides, a table of 60 rows repeats its header on each, 90
    lines of output go over several, and a picture taller than a slide is scaled to fit one."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    spec = importlib.util.spec_from_file_location("slides_script", ROOT / "scripts" / "slides.py")
    slides = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(slides)
    rows = "".join(f"<tr><td>{i}</td><td>{i * i}</td></tr>" for i in range(60))
    slide = {"slideshow": {"slide_type": "slide"}}
    nb = new_notebook(cells=[
        new_markdown_cell("# Made up\n\n" + "\n".join(f"1. item number {i}" for i in range(1, 41)),
                          metadata=slide),
        new_code_cell("table()", metadata=slide, outputs=[new_output(
            "execute_result", {"text/html": f"<table><thead><tr><th>n</th><th>n squared</th></tr></thead>"
                                            f"<tbody>{rows}</tbody></table>"}, execution_count=1)]),
        new_code_cell("for i in range(90): print(i)", metadata=slide, outputs=[new_output(
            "stream", name="stdout", text="".join(f"line {i}\n" for i in range(90)))]),
        new_code_cell("tall()", metadata=slide, outputs=[new_output(
            "display_data", {"image/png": picture(300, 1500)})]),
    ])
    nbformat.validate(nb)
    body, _ = slides.exporter().from_notebook_node(nb, resources={"metadata": {"name": "made up"}})
    deck = next(iter(decks.values())).with_name("made-up.slides.html")   # beside reveal.js/
    deck.write_text(body, encoding="utf-8")
    parts = presented(browser, deck, PARTS)

    assert len(parts["lists"]) > 1, f"the 40 items were not split: {parts['lists']}"
    numbers = [start + i for start, count in parts["lists"] for i in range(count)]
    assert numbers == list(range(1, 41)), f"the list's numbers on its sub-slides: {parts['lists']}"
    assert len(parts["tables"]) > 1, f"the 60 rows were not split: {parts['tables']}"
    assert all(head == "nn squared" for head, _ in parts["tables"]), parts["tables"]
    assert sum(count for _, count in parts["tables"]) == 60, parts["tables"]
    [(width, height, natural_width, natural_height)] = parts["pictures"]
    assert (natural_width, natural_height) == (300, 1500)
    assert 300 < height <= HEIGHT and abs(width / height - 0.2) < 0.01, (
        f"the 300×1500 picture is shown {width}×{height}: not scaled to fit, or out of shape")


# each slide, by what it holds: the same list on two screens means the same split
SPLIT = """() => Reveal.getSlides().map(s => s.textContent.replace(/\\s+/g, "").length)"""


@pytest.mark.timeout(120)
def test_the_split_is_the_same_on_a_small_screen_and_an_address_finds_its_sub_slide(decks, browser):
    """The speaker view's previews and a phone show the deck small: they must split it as the
    projector does, or a slide's address (#/h/v, also what the speaker view follows) would name
    other content there. A deck opened at an address counted after the split goes to it."""
    deck = decks["04c-backup-workers-and-k-async"]
    seen = {}
    for width, height in ((WIDTH, HEIGHT), (480, 640)):
        page = browser.new_page(viewport={"width": width, "height": height})
        try:
            page.goto(deck.as_uri())
            page.wait_for_function(FITTED, timeout=30_000)
            seen[width] = page.evaluate(SPLIT)
        finally:
            page.close()
    assert len(seen[WIDTH]) > 7, f"{deck.name}: no slide was split: {seen[WIDTH]}"
    assert seen[480] == seen[WIDTH], (
        f"{deck.name}: split differently at 480×640: {seen[480]} vs at {WIDTH}×{HEIGHT}: {seen[WIDTH]}")

    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        h, v = page_address = (4, 3)                   # slide 4 holds the race: split into 4 or more
        page.goto(f"{deck.as_uri()}#/{h}/{v}")
        page.wait_for_function(FITTED, timeout=30_000)
        at = page.evaluate("() => Reveal.getIndices()")
    finally:
        page.close()
    assert (at["h"], at["v"]) == page_address, f"{deck.name}#/{h}/{v} opened at {at}"
