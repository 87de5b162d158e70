"""The lecture hall has no network: a deck presents from disk and the classroom page plays.

One deck is built by `scripts/slides.py` (as `make slides`), then, inside a private network
namespace that holds nothing but its own loopback (`unshare -n`, `ip link set lo up`), Chromium
opens the deck from disk, moves through a fragment and a slide and opens the speaker view, and
Voila serves the Playground on that loopback, as `make demo` does, where Play is pressed
(offline_probe.py does this). Every request of every tab is recorded: none may leave the
machine (only file://, data: and the loopback's Voila), none may fail. In that namespace a
request to a CDN cannot succeed, so a page that still needed one would show it here as a failure.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from servers import require_browser

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).resolve().parent / "offline_probe.py"
DECK = "02-asynchronous-ps"
LOCAL = ("file://", "data:", "blob:", "about:")


@pytest.fixture(scope="module")
def offline(tmp_path_factory, private_network):
    """The probe's report: what the deck and the Voila page did with no network, every request."""
    require_browser()
    work = tmp_path_factory.mktemp("offline")
    built = subprocess.run([sys.executable, str(ROOT / "scripts" / "slides.py"), str(work / "slides"), DECK],
                           capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert built.returncode == 0, built.stdout + built.stderr
    (work / "root").mkdir()
    shutil.copy(ROOT / "notebooks" / "playground.ipynb", work / "root")
    report = work / "report.json"
    script = (f"ip link set lo up && exec {sys.executable} {PROBE} {work / 'slides' / (DECK + '.slides.html')} "
              f"{work / 'root'} {work} {report}")
    proc = subprocess.Popen(["unshare", "-n", "bash", "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, cwd=ROOT)
    try:
        output, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)             # everything it started, by its group
            proc.wait()
    assert proc.returncode == 0 and report.exists(), output[-4000:]
    return json.loads(report.read_text())


def test_no_request_leaves_the_machine_and_none_fails(offline):
    port = offline["voila"]["url"]                       # http://127.0.0.1:PORT/
    elsewhere = [u for u in offline["requests"] if not (u.startswith(LOCAL) or u.startswith(port))]
    assert not elsewhere, f"requests that would leave the machine: {elsewhere[:10]}"
    assert not offline["failed"], f"requests that failed with no network: {offline['failed'][:10]}"
    assert not offline["http_errors"], offline["http_errors"][:10]
    assert not offline["console_errors"], offline["console_errors"][:5]
    assert any(u.startswith("file://") for u in offline["requests"])      # the deck and reveal.js
    assert any(u.startswith(port) and "fontawesome" in u for u in offline["requests"])


def test_the_deck_presents_from_disk(offline):
    deck = offline["deck"]
    assert deck["start"]["total"] > 5
    steps = deck["steps"]
    assert any(s["f"] is not None and s["f"] >= 0 for s in steps), f"no fragment was shown: {steps}"
    assert len({s["h"] for s in steps}) > 2, f"the slides did not move on: {steps}"
    pictures = deck["start"]["pictures"]                 # the widgets' first-sight pictures
    assert pictures and all(p["complete"] and p["width"] > 0 for p in pictures), pictures


def test_the_speaker_view_opens_and_follows_the_deck(offline):
    speaker = offline["deck"]["speaker"]
    assert speaker["slides"] == 2, speaker                # the current slide and the next
    at = speaker["deck_at"]
    assert (at["h"], at["v"]) == (speaker["speaker_at"][0]["h"], speaker["speaker_at"][0]["v"]), speaker


def test_the_play_button_shows_its_icon_and_plays(offline):
    voila = offline["voila"]
    assert "loaded" in voila["icon_font"], f"Font Awesome was not loaded: {voila['icon_font']}"
    assert voila["icon_width"] > 5, voila                # the triangle, not an empty <i>
    assert voila["caption_after"] != voila["caption_before"], voila
