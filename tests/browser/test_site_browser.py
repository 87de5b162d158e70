"""The lecture site in Chromium, opened from disk (file://): its index, a lecture page whose Timeline
plays with no kernel and no script, and the links between pages; nothing is fetched from a network.

The site is built here from a copy of the course in which 00-start-here is executed anew
(scripts/notebooks.py), so the page shows what today's widgets store as their fallback, not what
the committed notebook stored when it was last built.
"""
import importlib.util
import re
import shutil
import time
from pathlib import Path

import pytest

from servers import CHROME_ARGS, CHROMIUM, require_browser

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "browser"
LECTURE = "00-start-here"


def script(name):
    spec = importlib.util.spec_from_file_location(f"{name}_script", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    require_browser()
    base = tmp_path_factory.mktemp("site")
    course = base / "course"
    shutil.copytree(ROOT / "notebooks", course / "notebooks", ignore=shutil.ignore_patterns("src"))
    shutil.copytree(ROOT / "exercises", course / "exercises")
    script("notebooks").build(ROOT / "notebooks" / "src" / f"{LECTURE}.py", course / "notebooks")
    pages = script("site").build(base / "site", root=course)
    return base / "site", pages


@pytest.mark.timeout(240)
def test_the_site_opens_from_disk_and_its_timeline_plays_without_a_kernel(site):
    from playwright.sync_api import expect, sync_playwright

    folder, pages = site
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(30_000)
        remote, errors = [], []

        def only_files(route):
            if route.request.url.startswith("file:"):
                route.continue_()
            else:
                remote.append(route.request.url)
                route.abort()
        page.route("**/*", only_files)
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            page.goto((folder / "index.html").as_uri())
            links = page.locator("li a")
            expect(links).to_have_count(len(pages))
            assert [links.nth(i).get_attribute("href") for i in range(len(pages))] == \
                [p.target for p in pages]
            links.filter(has_text=re.compile(r"^00 ")).first.click()
            expect(page).to_have_url(re.compile(rf"/notebooks/{LECTURE}\.html$"))
            # the Timeline's animated picture, an <img> (what every frontend shows): it plays
            picture = page.locator(".asyncps-animated img").first
            expect(picture).to_be_visible()
            assert picture.evaluate("i => i.complete && i.naturalWidth > 0")
            seen, deadline = [picture.screenshot()], time.time() + 15
            while time.time() < deadline and len(set(seen)) < 3:
                time.sleep(0.25)
                shot = picture.screenshot()
                if shot != seen[-1]:
                    seen.append(shot)
            assert len(set(seen)) >= 3, f"the animation did not advance: {len(set(seen))} pictures seen"
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "site_lecture.png"))
            # the navigation: next, previous and the index
            page.locator("nav.site-nav a", has_text="next").first.click()
            expect(page).to_have_url(re.compile(rf"/{re.escape(pages[1].target)}$"))
            page.locator("nav.site-nav a", has_text="previous").first.click()
            expect(page).to_have_url(re.compile(rf"/notebooks/{LECTURE}\.html$"))
            page.locator("nav.site-nav a", has_text="index").first.click()
            expect(page).to_have_url(re.compile(r"/index\.html$"))
        except BaseException:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "FAILED-site.png"), full_page=True)
            raise
        finally:
            browser.close()
        assert remote == [], f"the site asked the network for {remote}"
        assert errors == []
