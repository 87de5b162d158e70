"""`make demo` as a lecturer meets it: the last lines are a URL that opens as is (its token in it,
random each run), with how to stop it; a taken port or a wrong value is refused, saying what to do.

Nothing is installed: `-o FILE` keeps make from remaking the venv's lab install and Voila's icons.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ICONS = "share/jupyter/voila/templates/asyncps/static/fontawesome/css/all.min.css"


def _demo(*args, venv=None, **kwargs):
    venv = venv or Path(sys.prefix)
    return ["make", "--no-print-directory", "-C", str(ROOT), f"VENV={venv}", "-o", f"{venv}/.installed-lab",
            "-o", ICONS, "demo", *args]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("args, said", [
    (["DEMO_PORT=eighty"], "make demo: DEMO_PORT=eighty is not allowed: use a port from 1024 to 65535"),
    (["DEMO_PORT=80"], "make demo: DEMO_PORT=80 is not allowed: use a port from 1024 to 65535"),
    (["DEMO_PORT=70000"], "make demo: DEMO_PORT=70000 is not allowed: use a port from 1024 to 65535"),
    (["PAGE=lecture"], "make demo: PAGE=lecture is not allowed: use PAGE=playground (the default) or PAGE=live"),
])
def test_a_wrong_value_is_refused(tmp_path, args, said):
    out = subprocess.run(_demo(*args, venv=tmp_path / "venv"), capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and said in out.stdout, out.stdout + out.stderr


def test_a_taken_port_is_refused_saying_what_to_do():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run(_demo(f"DEMO_PORT={port}"), capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert (f"make demo: port {port} on 127.0.0.1 is taken (another make demo?): stop what serves it "
            f"(Ctrl+C where it runs), or serve on another port: make demo DEMO_PORT={port + 1}") in out.stdout, \
        out.stdout + out.stderr


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_make_demo_prints_a_url_that_opens_and_stops_on_ctrl_c(tmp_path):
    """The real `make demo` on a free port: its last lines say how to stop it and give the URL, whose
    token is new each run; the URL serves the Playground, without the token there is no page; the
    page leaves no "is not trusted" nor unencrypted-kernel warning; Ctrl+C (SIGINT) stops it."""
    venv = Path(sys.prefix)
    if not (venv / "bin" / "voila").exists():
        pytest.skip(f"no Voila in {venv} (the lab extra)")
    if not (ROOT / ICONS).exists():
        pytest.skip(f"no {ICONS}: make demo fetches it once (scripts/vendor.py)")
    port = _free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"))
    env.pop("JUPYTER_TOKEN", None)
    log = tmp_path / "make-demo.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(_demo(f"DEMO_PORT={port}"), env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    url = re.compile(rf"^    (http://127\.0\.0\.1:{port}/\?token=([0-9a-f]{{32}}))$")
    try:
        deadline = time.monotonic() + 120
        while not any(url.match(line) for line in log.read_text().splitlines()):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        lines = log.read_text().splitlines()
        assert lines == ["make demo: Voila serves notebooks/playground.ipynb until Ctrl+C; open this URL "
                         "(its token in it):", lines[1]] and url.match(lines[1]), "\n".join(lines)
        link, token = url.match(lines[1]).groups()
        assert token not in " ".join(subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
                                     .splitlines()), "the token is on a command line"
        # a second make demo on the same port is refused
        again = subprocess.run(_demo(f"DEMO_PORT={port}"), capture_output=True, text=True, timeout=60, env=env)
        assert again.returncode != 0 and f"port {port} on 127.0.0.1 is taken" in again.stdout
        with urllib.request.urlopen(link, timeout=180) as page:
            assert page.status == 200 and "Playground" in page.read().decode()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=60) as page:
                assert "/login" in page.url and "Playground" not in page.read().decode()
        except urllib.error.HTTPError as refused:
            assert refused.code in (401, 403)
        os.killpg(proc.pid, signal.SIGINT)                      # Ctrl+C
        proc.wait(60)
        said = log.read_text()
        for noise in ("is not trusted", "without encryption", "Traceback"):
            assert noise not in said, said
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
