"""Present with no network: run by test_offline.py inside a private network namespace.

    python offline_probe.py DECK NOTEBOOKS WORK REPORT

Opens the reveal.js deck DECK from disk (file://), moves through it (a fragment and a slide) and
opens the speaker view; then serves NOTEBOOKS/playground.ipynb with Voila on the loopback, as
`make demo` does, and presses its Play button. Every request the browser makes, in every tab, is
recorded, with the ones that failed or were answered with an HTTP error. REPORT (JSON) gets all
of it and what each page showed; screenshots go beside it. Everything started here is stopped
here: the browser, and Voila by its process group.
"""
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from servers import CHROME_ARGS, CHROMIUM, voila  # noqa: E402

# the deck's state: where it is (slide h/v, fragment f) and what its pictures are
DECK_STATE = """() => ({indices: Reveal.getIndices(), total: Reveal.getTotalSlides(),
  pictures: Array.from(document.querySelectorAll('img[src^="data:image/svg+xml"]')).map(
    i => ({complete: i.complete, width: i.naturalWidth}))})"""
ICON_FONT = """async () => { await document.fonts.ready;
  const faces = Array.from(document.fonts).filter(f => f.family.replace(/"/g, '') === 'Font Awesome 5 Free');
  return faces.map(f => f.status); }"""


def main(deck, notebooks, work, report_path):
    from playwright.sync_api import sync_playwright

    report = {"requests": [], "failed": [], "http_errors": [], "console_errors": []}
    out = Path(report_path).parent
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            context.on("request", lambda r: report["requests"].append(r.url[:300]))
            context.on("requestfailed", lambda r: report["failed"].append(f"{r.url[:300]} {r.failure}"))
            context.on("response", lambda r: r.status >= 400 and report["http_errors"].append(
                f"{r.status} {r.url[:300]}"))
            context.on("page", lambda page: page.on("console", lambda m: m.type == "error" and
                                                     report["console_errors"].append(m.text[:300])))
            report["deck"] = present(context, Path(deck), out)
            report["voila"] = play(context, Path(notebooks), Path(work), out)
        finally:
            browser.close()
    Path(report_path).write_text(json.dumps(report, indent=1))


def present(context, deck, out):
    page = context.new_page()
    page.goto(deck.resolve().as_uri())
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30_000)
    seen = {"start": page.evaluate(DECK_STATE), "steps": []}
    for _ in range(12):                                  # on until a fragment and a new slide have shown
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(300)
        seen["steps"].append(page.evaluate("() => Reveal.getIndices()"))
    page.wait_for_timeout(1000)                          # the slide transition ends
    page.screenshot(path=str(out / "offline_deck.png"))
    with context.expect_page(timeout=15_000) as opened:
        page.keyboard.press("s")                         # the speaker view, in a window of its own
    speaker = opened.value
    speaker.wait_for_selector("#speaker-controls", timeout=15_000)
    deadline = time.monotonic() + 15
    while len(speaker.frames) < 3 and time.monotonic() < deadline:      # the current and the next
        speaker.wait_for_timeout(100)
    slides = [f for f in speaker.frames if f != speaker.main_frame]
    for frame in slides:                                 # file:// frames: reached through Playwright
        frame.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=15_000)
    page.keyboard.press("ArrowRight")                    # the speaker view follows the deck
    page.wait_for_timeout(1000)
    seen["speaker"] = {"slides": len(slides), "deck_at": page.evaluate("() => Reveal.getIndices()"),
                       "speaker_at": [f.evaluate("() => Reveal.getIndices()") for f in slides],
                       "controls": speaker.locator("#speaker-controls").inner_text()[:300]}
    speaker.screenshot(path=str(out / "offline_speaker_view.png"))
    speaker.close()
    page.close()
    return seen


def play(context, notebooks, work, out):
    server = voila(notebooks, work, "playground.ipynb")
    try:
        page = context.new_page()
        page.goto(server.url)
        button = page.locator(".widget-play button").first
        button.wait_for(state="visible", timeout=120_000)
        caption = page.locator(".asyncps-caption").first
        before = caption.text_content()
        seen = {"icon_font": page.evaluate(ICON_FONT),
                "icon_width": page.locator(".widget-play button i").first.bounding_box()["width"]}
        button.click()
        deadline = time.monotonic() + 15
        while caption.text_content() == before and time.monotonic() < deadline:
            page.wait_for_timeout(200)
        seen["caption_before"], seen["caption_after"] = before, caption.text_content()
        page.screenshot(path=str(out / "offline_voila.png"), full_page=True)
        page.close()
        seen["url"] = server.url.split("?")[0]
        return seen
    finally:
        server.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
