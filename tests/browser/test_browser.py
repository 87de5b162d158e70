"""Real browser: JupyterLab, Notebook 7 and Voila on 127.0.0.1, headless Debian Chromium driven by Playwright."""
import shutil
import time
from pathlib import Path

import nbformat
import pytest

import asyncps as aps
from servers import CHROME_ARGS, CHROMIUM, lab, notebook7, require_browser, voila

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "browser"
RUN = ("run = aps.simulate(aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0]), workers=2,\n"
       "                   policy='async', lr=0.1, steps=4, compute_times=[1, 1.5])")
CELLS = ["import asyncps as aps", RUN, "tl = aps.widgets.Timeline(run, interval=250)\ntl"]


def expected_model():
    namespace = {"aps": aps}
    exec(RUN, namespace)
    return aps.widgets.TimelineModel(namespace["run"].trace)


@pytest.fixture
def browser_page(tmp_path):
    require_browser()
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1200})
        page.set_default_timeout(30_000)
        errors = []
        page.on("pageerror", lambda e: errors.append((str(e), e.stack or "")))
        try:
            yield page
            errors = [(message, stack) for message, stack in errors if not _upstream(message, stack)]
            assert not errors, errors
        finally:
            browser.close()


def _upstream(message, stack):
    """Notebook 7.6.5 raises this while loading its settings, on any notebook (seen with a notebook
    holding only `1+1`, no extension of ours, no settings of ours): not ours to fail on."""
    return "reading 'schema'" in message and "/static/notebook/notebook_core." in stack


def failed(page, name):
    """Keep what the browser saw when a check failed."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"FAILED-{name}.png"), full_page=True)


@pytest.mark.timeout(240)
def test_timeline_plays_in_jupyterlab(tmp_path, browser_page):
    from playwright.sync_api import expect

    page = browser_page
    model = expected_model()
    server = lab(_notebook(tmp_path, CELLS), tmp_path, "timeline.ipynb")
    try:
        page.goto(server.url)
        idle = page.locator("#jp-main-statusbar").get_by_text("Python 3 (ipykernel) | Idle")
        expect(idle).to_be_visible(timeout=90_000)
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        status = page.locator(".jp-OutputArea-output svg.asyncps-timeline text.aps-status")
        caption = page.locator(".jp-OutputArea-output .asyncps-caption")
        expect(status).to_contain_text("server at v0", timeout=90_000)
        expect(page.locator("svg.asyncps-timeline text", has_text="v0").first).to_be_visible()
        # every button says what it is: Play's icon-only buttons too (asyncps/widgets/icon_names.py)
        for name in ("play", "stop, back to the first frame", "◀ step", "step ▶"):
            expect(page.get_by_role("button", name=name, exact=True).first).to_be_visible()
        assert page.locator(".widget-play").first.get_attribute("title").startswith("play or pause")
        # Play: the frames advance in the browser until the last one
        page.get_by_role("button", name="play", exact=True).first.click()
        seen, deadline = [], time.time() + 30
        last = model.frames - 1
        while time.time() < deadline:
            t = status.text_content()
            if not seen or seen[-1] != t:
                seen.append(t)
            if t.endswith(f"server at v{model.version_at(last)}") and \
                    caption.text_content() == aps.widgets.caption(model, last):
                break
            time.sleep(0.05)
        assert any(s.endswith("server at v1") for s in seen), seen
        assert seen[-1].endswith(f"server at v{model.version_at(last)}") and len(seen) >= 3, seen
        expect(page.locator(".widget-play button").first.locator("i.fa-play")).to_be_attached()
        # the slider, back two frames by keyboard
        handle = page.locator(".widget-slider .noUi-handle").first
        handle.focus()
        handle.press("ArrowLeft")
        handle.press("ArrowLeft")
        expect(caption).to_have_text(aps.widgets.caption(model, last - 2))
        # to the first stale push: Home, then one frame at a time
        stale = model.first_stale_push()
        handle.press("Home")
        for _ in range(stale):
            handle.press("ArrowRight")
        expect(caption).to_have_text(aps.widgets.caption(model, stale))
        assert "(stale by 1)" in caption.text_content()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.locator(".jp-Cell", has=page.locator(".widget-play")).screenshot(
            path=str(ARTIFACTS / "lab_timeline.png"))              # docs/timeline-stale-push.png
        shutil.copy(ARTIFACTS / "lab_timeline.png", tmp_path / "lab_timeline.png")
    except BaseException:
        failed(page, "lab")
        raise
    finally:
        server.stop()


def _notebook(tmp_path, cells, name="timeline.ipynb"):
    """A folder holding one notebook of `cells` (code), for a server to open."""
    root = tmp_path / "root"
    root.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    nbformat.write(nb, root / name)
    return root


@pytest.mark.timeout(240)
def test_timeline_plays_in_notebook_7(tmp_path, browser_page):
    """Under load this once failed with NameError: name 'aps' is not defined: the timeline's cell
    ran in a kernel where the import cell had not. The test used to click Run All before the
    kernel was connected and, on a retry, click "Select" in a late "Select Kernel" dialog, which
    changes the kernel: the import could run in one kernel and the cells after it in another.
    Now: one cell (nothing can run without its import), Run All only once the kernel reads idle,
    and an error in the cell fails at once, saying what it was."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    page = browser_page
    model = expected_model()
    server = notebook7(_notebook(tmp_path, ["\n".join(CELLS)]), tmp_path, "timeline.ipynb")
    try:
        page.goto(server.url)
        status = page.locator(".jp-OutputArea-output svg.asyncps-timeline text.aps-status")
        idle = page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]')
        error = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
        for _ in range(3):          # a Run All taken before the kernel is attached does nothing
            expect(page.locator(".jp-Notebook")).to_be_visible(timeout=90_000)
            select = page.locator(".jp-Dialog button", has_text="Select")
            if select.count():      # "Select Kernel", asked when the session came up late
                select.first.click()
            expect(idle).to_be_attached(timeout=90_000)
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            try:
                expect(status.or_(error)).to_be_attached(timeout=30_000)
                break
            except (AssertionError, PlaywrightTimeout):
                continue
        assert not error.count(), error.first.text_content()
        expect(status).to_contain_text("server at v0")
        page.locator(".widget-play button").first.click()
        last = f"server at v{model.version_at(model.frames - 1)}"
        expect(status).to_contain_text(last, timeout=30_000)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "notebook7_timeline.png"), full_page=True)
    except BaseException:
        failed(page, "notebook7")
        raise
    finally:
        server.stop()


@pytest.mark.timeout(240)
def test_playground_renders_in_voila(tmp_path, browser_page):
    from playwright.sync_api import expect

    page = browser_page
    root = tmp_path / "root"
    shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns("*.md"))
    server = voila(root, tmp_path, "playground.ipynb")
    try:
        page.goto(server.url)
        play = page.locator(".widget-play button").first
        expect(play).to_be_visible(timeout=120_000)
        caption = page.locator(".asyncps-caption").first
        before = caption.text_content()
        # once, as soon as it is there, as a lecturer would. Once the page renders, the lr slider
        # (FloatLogSlider) snaps 0.05 to its grid and sends 0.0501 to the kernel: the Playground
        # re-runs. It used to show a new Timeline for it, and a click that had landed on the old
        # one played a widget no longer shown; now the same Timeline shows the new run (set_run).
        play.click()
        expect(caption).not_to_have_text(before, timeout=15_000)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "voila_playground.png"), full_page=True)
    except BaseException:
        failed(page, "voila")
        raise
    finally:
        server.stop()


LIVE_CELLS = [
    "import threading\nimport asyncps as aps",
    "live = aps.train(aps.problems.LeastSquares(n=256, dim=8, seed=0), workers=2, policy='async',\n"
    "                 lr=0.05, steps=10**6, slowdown=[0.005, 0.005], engine='threads', live=True)\n"
    "live",
    "run = live.result(timeout=60)\n"
    "print('controls:', [(e.what, e.worker) for e in run.trace.controls])\n"
    "import time\n"
    "def left(): return [t.name for t in threading.enumerate() if t.name.startswith('asyncps')]\n"
    "deadline = time.time() + 10          # the view draws the run's end once, then its thread ends\n"
    "while left() and time.time() < deadline: time.sleep(0.05)\n"
    "print('left:', left())",
]


@pytest.mark.timeout(240)
def test_a_live_run_moves_in_jupyterlab_and_obeys_its_controls(tmp_path, browser_page):
    from playwright.sync_api import expect

    page = browser_page
    server = lab(_notebook(tmp_path, LIVE_CELLS, "live.ipynb"), tmp_path, "live.ipynb")
    try:
        page.goto(server.url)
        idle = page.locator("#jp-main-statusbar").get_by_text("Python 3 (ipykernel) | Idle")
        expect(idle).to_be_visible(timeout=90_000)
        page.locator(".jp-Cell .jp-InputArea-editor").first.click()
        page.keyboard.press("Shift+Enter")            # the imports
        page.keyboard.press("Shift+Enter")            # the live run: the cell ends, the run goes on
        header = page.locator(".asyncps-live-view svg text", has_text="server at v").first
        expect(header).to_be_visible(timeout=60_000)
        expect(idle).to_be_visible(timeout=30_000)    # nothing else runs in the kernel now...

        def version():
            return int(header.text_content().split("server at v")[1].split()[0])

        first, deadline = version(), time.time() + 20
        while version() <= first + 5 and time.time() < deadline:
            time.sleep(0.2)
        assert version() > first + 5, "...and yet the version shown goes up"
        handle = page.locator(".asyncps-live-view .widget-slider .noUi-handle").first
        handle.focus()
        for _ in range(5):
            handle.press("ArrowRight")                # worker 0's slowdown, 5 steps up
        page.locator(".asyncps-live-view button", has_text="stop").first.click()
        page.locator(".jp-Cell").nth(2).click()
        page.keyboard.press("Shift+Enter")            # the result, the controls, the threads left
        out = page.locator(".jp-Cell").nth(2).locator(".jp-OutputArea-output")
        expect(out).to_contain_text("left: []", timeout=60_000)
        assert "('slow', 0)" in out.text_content() and "('stop', None)" in out.text_content()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "lab_live.png"), full_page=True)
    except BaseException:
        failed(page, "live")
        raise
    finally:
        server.stop()



def _kernels(server):
    """{pid: Process} of the Voila server's kernels (one per page opened, and one for the page
    servers.voila fetched to see the server up: that one runs the notebook too, with no browser)."""
    import psutil
    found = {}
    for p in psutil.Process(server.proc.pid).children():
        try:
            if "ipykernel" in " ".join(p.cmdline()):
                found[p.pid] = p
        except psutil.NoSuchProcess:      # ended while we looked (a zombie too): culled, not ours
            pass
    return found


def _run_of(kernel, workers=4, seconds=60.0):
    """Every process under `kernel` (fork server, resource tracker, workers) once its `workers`
    worker processes (the fork server's children) are there; and those workers."""
    deadline = time.time() + seconds
    while True:
        everything = kernel.children(recursive=True)
        started = [p for p in everything if p.ppid() != kernel.pid]
        if len(started) >= workers or time.time() > deadline:
            return everything, started
        time.sleep(0.2)


def _still_running(processes, seconds=10.0):
    """Those of `processes` still running after waiting up to `seconds` for them to end."""
    import psutil
    _, alive = psutil.wait_procs(processes, timeout=seconds)
    running = []
    for p in alive:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                running.append((p.pid, " ".join(p.cmdline())[-60:]))
        except psutil.Error:
            pass
    return running


CULLING = ("--MappingKernelManager.cull_idle_timeout", "--MappingKernelManager.cull_interval")


@pytest.mark.timeout(240)
def test_the_live_page_runs_in_voila_and_leaves_nothing_running(tmp_path, browser_page):
    """notebooks/live.ipynb in Voila (`make demo PAGE=live`): the run starts with no click and its
    view moves; the stop button ends it and its workers. Voila 0.5 keeps a closed page's kernel
    (voila-dashboards/voila#1458), so `make demo` culls idle kernels with no page: here after
    seconds rather than minutes, the stopped page's kernel, closed, is culled with all it started.
    Stopping the server leaves nothing running."""
    import json

    import psutil
    from playwright.sync_api import expect

    demo = (ROOT / "Makefile").read_text().split("\ndemo:")[1].split("\n\n")[0]
    assert all(option in demo for option in CULLING), "make demo no longer culls idle kernels"
    page = browser_page
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy2(ROOT / "notebooks" / "live.ipynb", root)
    (tmp_path / "cfg").mkdir()
    # 10 s, not make demo's 120: the closed page's kernel goes within the test. Not less: a page
    # still loading on a busy machine has no connection yet, and before the run's workers push,
    # its kernel sends nothing (idle) — a 3 s cull took it from under the page.
    (tmp_path / "cfg" / "voila.json").write_text(json.dumps(
        {"MappingKernelManager": {"cull_idle_timeout": 10, "cull_interval": 1}}))
    server = voila(root, tmp_path, "live.ipynb")
    seen = list(_kernels(server).values())             # every process of the server, to end by PID
    try:
        page.goto(server.url)
        header = page.locator(".asyncps-live-view svg text", has_text="server at v").first
        expect(header).to_be_visible(timeout=120_000)

        def version():
            return int(header.text_content().split("server at v")[1].split()[0])

        first, deadline = version(), time.time() + 30
        while version() <= first + 20 and time.time() < deadline:
            time.sleep(0.2)
        assert version() > first + 20, "the live page's run does not move by itself"
        ours = [k for pid, k in _kernels(server).items() if pid not in {p.pid for p in seen}]
        assert len(ours) == 1, f"not one new kernel for the page: {ours}"
        everything, workers = _run_of(ours[0])
        seen += ours + everything
        assert len(workers) == 4, [" ".join(p.cmdline())[-60:] for p in everything]
        message = page.locator(".asyncps-live-view .asyncps-live-message")
        for _ in range(3):                             # a click before the comm is wired is lost
            page.locator(".asyncps-live-view button", has_text="stop").first.click()
            try:
                expect(message).to_contain_text("stopped by live.stop()", timeout=10_000)
                break
            except AssertionError:
                continue
        expect(message).to_contain_text("stopped by live.stop()")
        assert _still_running(workers) == [], "the stop button left workers running"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "voila_live.png"), full_page=True)
        page.goto("about:blank")                       # the page is closed: its kernel is culled
        assert _still_running(ours + everything, seconds=60) == [], "a closed page's kernel stayed"
    except BaseException:
        failed(page, "voila_live")
        raise
    finally:
        seen += [p for k in _kernels(server).values() for p in [k, *k.children(recursive=True)]]
        server.stop()
        left = _still_running(seen)
        for pid, _ in left:                            # leave nothing, even when the test failed
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
    assert left == [], f"still running after the Voila server stopped: {left}"


ROOM_CELLS = ["import asyncps as aps\n"
              "problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)\n"
              "room = aps.classroom.serve(problem, workers=3, policy='async', lr=0.001, steps=10**6)\n"
              "stand_ins = aps.classroom.fill(room, problem, slowdowns=[0.002, 0.002, 0.01])\n"
              "room",
              "room.stop()\n"
              "run = room.result(30)\n"
              "print(sorted(run.trace.meta['students'].values()), len(stand_ins.wait(30)),\n"
              "      aps.violations(run.trace))"]


@pytest.mark.timeout(240)
def test_the_lecturer_sees_each_student_as_a_lane_of_the_room_s_live_view(tmp_path, browser_page):
    from playwright.sync_api import expect

    page = browser_page
    server = lab(_notebook(tmp_path, ROOM_CELLS, "room.ipynb"), tmp_path, "room.ipynb")
    try:
        page.goto(server.url)
        idle = page.locator("#jp-main-statusbar").get_by_text("Python 3 (ipykernel) | Idle")
        expect(idle).to_be_visible(timeout=90_000)
        page.locator(".jp-Cell .jp-InputArea-editor").first.click()
        page.keyboard.press("Shift+Enter")            # the room, its stand-ins, its live view
        view = page.locator(".asyncps-live-view svg").first
        for name in ("stand-in 0", "stand-in 1", "stand-in 2"):
            expect(view.locator("text", has_text=name).first).to_be_visible(timeout=60_000)
        header = page.locator(".asyncps-live-view svg text", has_text="server at v").first

        def version():
            return int(header.text_content().split("server at v")[1].split()[0])

        first, deadline = version(), time.time() + 20
        while version() <= first + 5 and time.time() < deadline:
            time.sleep(0.2)
        assert version() > first + 5, "the students' pushes move the view"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "lab_room.png"), full_page=True)
        page.keyboard.press("Shift+Enter")            # stop the room: every stand-in goes home
        out = page.locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output")
        expect(out).to_contain_text("['stand-in 0', 'stand-in 1', 'stand-in 2'] 3 []", timeout=60_000)
    except BaseException:
        failed(page, "room")
        raise
    finally:
        server.stop()
