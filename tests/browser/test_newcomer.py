"""A newcomer's first hour, end to end, on a fresh clone of this repository (issue 38):

    git clone ...; make lab          the install, then JupyterLab at 00-start-here, its URL last
    the first notebook               run top to bottom in the browser: pictures, no error
    exercises/01-sync-round.ipynb    a wrong Task 1.1 (np.mean of everything: one number), saved,
                                     aps.check() in the notebook fails it; the right one passes
    JupyterLab's terminal            python -m asyncps.check ... agrees (the venv's python)
    make slides                      a deck opens from disk
    make demo                        its last line's URL opens the Playground; Ctrl+C stops it

Nothing is reused from this checkout: the clone gets its own .venv from `make lab` (pip, with
PIP_FIND_LINKS where the machine has a wheel cache, as CI and a learner's machine do) and its own
build/ (reveal.js from the npm registry). Screenshots: build/browser/newcomer/*.png.
"""
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from servers import CHROME_ARGS, CHROMIUM, free_port, require_browser, stop_group

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "browser" / "newcomer"
WRONG = ('def average(grads, workers):\n'
         '    if len(grads) < workers:\n'
         '        return None\n'
         '    return np.mean(list(grads.values()))\n')
RIGHT = WRONG.replace("np.mean(list(grads.values()))", "np.mean(list(grads.values()), axis=0)")
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"      # the notebook in the tab shown
TASK = re.compile(r"Task 1\.1[^\n]*?(\d+) / (\d+)")


def _wait_for(log, pattern, proc, seconds):
    deadline = time.monotonic() + seconds
    while not (found := re.search(pattern, log.read_text())):
        assert proc.poll() is None, f"exited ({proc.returncode}) before {pattern!r}:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"no {pattern!r} in {seconds} s:\n{log.read_text()}"
        time.sleep(0.5)
    return found


def _task_points(text):
    found = TASK.search(text)
    assert found, f"no Task 1.1 line in the check's report:\n{text}"
    return int(found.group(1)), int(found.group(2))


def _edit_cell(page, index, code):
    """Replace cell `index`'s code as a learner does: click into it, select all, type."""
    editor = page.locator(f"{PANEL} .jp-Notebook .jp-Cell").nth(index).locator(".jp-InputArea-editor")
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(code)
    page.keyboard.press("Escape")


def _saved(path):
    """The notebook's code as saved, "" while JupyterLab is writing it (it truncates the file,
    then writes: read empty once, under load)."""
    try:
        return "".join(c.source for c in nbformat.read(path, 4).cells)
    except nbformat.reader.NotJSONError:
        return ""


def _save(page, path, code):
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while code not in _saved(path):
        assert time.monotonic() < deadline, "Ctrl+S did not save the notebook"
        time.sleep(0.3)


def _check_in_notebook(page):
    """Run the notebook's last cell (aps.check()), alone, as a learner who just saved does, and
    return its report once it is there."""
    last = page.locator(f"{PANEL} .jp-CodeCell").filter(has_text="aps.check()").last
    last.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    out = last.locator(".jp-OutputArea-output")
    deadline = time.monotonic() + 240
    while "total" not in (text := " ".join(out.all_inner_texts())):
        assert "Traceback" not in text, text
        assert time.monotonic() < deadline, f"aps.check() printed no report in 240 s: {text!r}"
        time.sleep(1)
    return text


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_newcomer_clones_installs_learns_checks_presents_and_demos(tmp_path):
    require_browser()
    from playwright.sync_api import expect, sync_playwright

    clone = tmp_path / "asyncps"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "JUPYTER_CONFIG_PATH", "JUPYTER_PATH", "PYTHONPATH", "MAKEFLAGS",
                        "MAKELEVEL", "OPEN_BROWSER", "VERBOSE")}
    env.update(PATH=":".join(p for p in os.environ["PATH"].split(":") if not p.startswith(str(ROOT))),
               JUPYTER_PORT=str(port), JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"))
    log = tmp_path / "make-lab.log"
    with open(log, "w") as out:
        lab = subprocess.Popen(["make", "--no-print-directory", "lab", "OPEN_BROWSER=no"], cwd=clone,
                               env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    demo = None
    try:
        url = _wait_for(log, rf"http://127\.0\.0\.1:{port}/\S*\?token=\w+", lab, 900).group(0)
        time.sleep(1)
        assert "?token=" in log.read_text().rstrip().splitlines()[-1], f"the URL comes last:\n{log.read_text()}"
        base, token = f"http://127.0.0.1:{port}", url.split("token=")[1]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(60_000)
            idle = page.locator("#jp-main-statusbar").get_by_text("Python 3 (ipykernel) | Idle")

            # 1. the URL as printed opens the first notebook; run it all
            page.goto(url)
            expect(page.locator(".jp-NotebookPanel").first).to_be_visible(timeout=120_000)
            expect(idle).to_be_visible(timeout=120_000)
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).first.click()
            prompts = page.locator(f"{PANEL} .jp-InputPrompt")
            deadline = time.monotonic() + 300
            while any("*" in t for t in prompts.all_inner_texts()) or not idle.is_visible():
                assert time.monotonic() < deadline, "00-start-here did not finish in 300 s"
                time.sleep(1)
            errors = [t for t in page.locator(".jp-OutputArea-output").all_inner_texts()
                      if "Traceback" in t or re.search(r"^\w*Error\b", t, re.M)]
            assert not errors, errors
            assert page.locator(".jp-OutputArea-output svg, .jp-OutputArea-output img").count() > 0
            page.screenshot(path=str(ARTIFACTS / "1-first-notebook.png"))

            # 2. the exercise: a wrong answer, saved, fails its own task in aps.check(); then the right one
            exercise = clone / "exercises" / "01-sync-round.ipynb"
            page.goto(f"{base}/lab/tree/exercises/01-sync-round.ipynb?token={token}")
            expect(page.get_by_role("tab", name="01-sync-round.ipynb")).to_be_visible(timeout=120_000)
            expect(idle).to_be_visible(timeout=120_000)
            _edit_cell(page, 3, WRONG)
            _save(page, exercise, "np.mean(list(grads.values()))\n")
            report = _check_in_notebook(page)
            got, best = _task_points(report)
            assert got < best and "first to fix: Task 1.1" in report, report
            page.screenshot(path=str(ARTIFACTS / "2-check-wrong.png"), full_page=True)
            _edit_cell(page, 3, RIGHT)
            _save(page, exercise, "axis=0")
            report = _check_in_notebook(page)
            assert _task_points(report) == (best, best), report
            assert "first to fix: Task 1.1" not in report, report
            page.screenshot(path=str(ARTIFACTS / "3-check-right.png"), full_page=True)

            # 3. the same check from JupyterLab's terminal, whose python is the venv's
            page.get_by_role("menuitem", name="File", exact=True).click()
            page.locator(".lm-Menu-itemLabel").get_by_text("New", exact=True).first.click()
            page.locator(".lm-Menu-itemLabel").get_by_text("Terminal", exact=True).first.click()
            screen = page.locator(".jp-Terminal").first
            expect(screen).to_be_visible(timeout=120_000)
            time.sleep(2)                                   # the shell's prompt, after ~/.bashrc
            screen.click()
            page.keyboard.type("python -m asyncps.check exercises/01-sync-round.ipynb > check.txt 2>&1; "
                               "echo exit $? >> check.txt\n")
            result, deadline = clone / "check.txt", time.monotonic() + 240
            while not (result.exists() and "exit " in result.read_text()):
                assert time.monotonic() < deadline, "the terminal's check did not finish in 240 s"
                time.sleep(1)
            text = result.read_text()
            assert _task_points(text) == (best, best), text
            assert "No module named" not in text, text
            page.screenshot(path=str(ARTIFACTS / "4-terminal.png"))

            # 4. make slides: the decks present from disk
            slides = subprocess.run(["make", "--no-print-directory", "slides"], cwd=clone, env=env,
                                    capture_output=True, text=True, timeout=600)
            assert slides.returncode == 0, slides.stdout + slides.stderr
            deck = clone / "build" / "slides" / "00-start-here.slides.html"
            assert deck.is_file(), sorted(p.name for p in deck.parent.iterdir())
            page.goto(deck.as_uri())
            expect(page.locator(".reveal .slides section.present").first).to_be_visible(timeout=120_000)
            page.screenshot(path=str(ARTIFACTS / "5-slides.png"))

            # 5. make demo: the URL its last lines print opens the Playground; Ctrl+C stops it
            demo_log = tmp_path / "make-demo.log"
            demo_port = free_port()
            with open(demo_log, "w") as out:
                demo = subprocess.Popen(["make", "--no-print-directory", "demo", f"DEMO_PORT={demo_port}"],
                                        cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True)
            demo_url = _wait_for(demo_log, rf"http://127\.0\.0\.1:{demo_port}/\?token=\w+", demo, 180).group(0)
            assert "Ctrl+C" in demo_log.read_text()
            page.goto(demo_url)
            expect(page.locator(".jupyter-widgets").first).to_be_visible(timeout=120_000)
            page.screenshot(path=str(ARTIFACTS / "6-demo.png"))
            browser.close()
            os.killpg(demo.pid, signal.SIGINT)                  # Ctrl+C in its terminal
            demo.wait(30)
    finally:
        if demo is not None:
            stop_group(demo, signal.SIGINT, 30)
        stop_group(lab, signal.SIGINT, 30)
