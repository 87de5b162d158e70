"""JupyterLab, Notebook 7 and Voila on 127.0.0.1 for the browser tests: own config dirs, a token, stopped by PID.

Adapted from shared/recipes/lab_widget_check.py (the races it found are handled here too: wait for
the kernel to be attached *and* idle, take the first "Run All Cells", wait for the Play icon).
"""
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage"]


def require_browser():
    """Skip (or, with CI=true, fail) when Chromium or Playwright is missing, naming what is."""
    missing = []
    if not os.path.exists(CHROMIUM):
        missing.append(f"Chromium at {CHROMIUM} (Debian: apt-get install chromium; `make test` does "
                       f"this when run as root; or set CHROMIUM=/path/to/chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the Python package playwright (pip install playwright; `make test` does)")
    if missing:
        message = "browser test needs " + " and ".join(missing)
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI=true: " + message)
        pytest.skip(message)
    # expect()'s default wait is 5 s: a page still loading on a busy machine (CI: JupyterLab's
    # workspace restoring before it opens a second notebook) failed there. 30 s, as for actions.
    from playwright.sync_api import expect
    expect.set_options(timeout=30_000)


@contextlib.contextmanager
def chromium():
    """Debian's Chromium under Playwright, headless, closed at the end (skips as require_browser)."""
    require_browser()
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _isolated_env(work):
    settings = work / "settings" / "@jupyterlab"
    (settings / "notebook-extension").mkdir(parents=True)
    (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"}))            # every cell's output stays in the DOM
    (settings / "apputils-extension").mkdir(parents=True)
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    return dict(os.environ, JUPYTER_CONFIG_DIR=str(work / "cfg"), JUPYTER_RUNTIME_DIR=str(work / "rt"),
                JUPYTERLAB_SETTINGS_DIR=str(work / "settings"),
                JUPYTERLAB_WORKSPACES_DIR=str(work / "ws"))


class Server:
    """A server process in its own process group, so its kernels go down with it."""

    def __init__(self, cmd, work, url_path, env):
        self.port, self.token = free_port(), secrets.token_hex(16)
        cmd = [c.format(port=self.port, token=self.token) for c in cmd]
        self.log = work / "server.log"
        self.proc = subprocess.Popen(cmd, env=env, stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.url = f"http://127.0.0.1:{self.port}{url_path}?token={self.token}"
        self._wait(f"http://127.0.0.1:{self.port}/api/status?token={self.token}")

    def _wait(self, url=None, seconds=90):
        """Until `url` answers 200 (without `url`: until the port takes a connection)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("the server exited:\n" + self.log.read_text())
            try:
                if url is None:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return
                with urllib.request.urlopen(url, timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise TimeoutError("the server did not come up:\n" + self.log.read_text())

    def stop(self):
        stop_group(self.proc)


def stop_group(proc, sig=signal.SIGTERM, seconds=15):
    """Stop a process started in a session of its own, and whatever is left in its group, by PID:
    `sig`, then SIGKILL after `seconds`."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
            proc.wait(seconds)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(10)


def lab(root, work, notebook, extra=(), env=None):
    """JupyterLab on `root`, opening `notebook`; `extra`: more command-line options; `env`: more
    environment (JUPYTER_DATA_DIR, say: where it keeps the signatures that make a notebook trusted).
    The same server serves Notebook 7 at /notebooks/PATH."""
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--port={port}",
           "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--ServerApp.port_retries=0", "--allow-root", "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", *extra]
    return Server(cmd, work, f"/lab/tree/{notebook}", {**_isolated_env(work), **(env or {})})


def notebook7(root, work, notebook):
    """Jupyter Notebook 7 (the classic interface rebuilt on JupyterLab's components)."""
    cmd = [sys.executable, "-m", "jupyter", "notebook", "--no-browser", "--port={port}",
           "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--ServerApp.port_retries=0", "--allow-root", "--JupyterNotebookApp.news_url=None"]
    # no JupyterLab settings files here: Notebook 7 lacks some of their plugins, and a settings file
    # for a plugin it does not have raises "Cannot read properties of undefined (reading 'schema')"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(work / "cfg"), JUPYTER_RUNTIME_DIR=str(work / "rt"),
               JUPYTERLAB_SETTINGS_DIR=str(work / "nb7-settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(work / "ws"))
    return Server(cmd, work, f"/notebooks/{notebook}", env)


REPO = Path(__file__).resolve().parents[2]
VOILA_TEMPLATES = REPO / "share" / "jupyter"        # share/jupyter/voila/templates/asyncps, as `make demo`
VOILA_CONFIG = REPO / "etc" / "jupyter"             # voila.json: the template, the extensions left out


def voila_env(env):
    """`env` with the repository's Voila settings and template found first (what `make demo` sets),
    its Font Awesome copy fetched once (scripts/vendor.py, as `make demo` does)."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import vendor
    finally:
        sys.path.pop(0)
    icons = VOILA_TEMPLATES / "voila" / "templates" / "asyncps" / "static" / "fontawesome"
    if not (icons / "css" / "all.min.css").exists():
        vendor.install("fontawesome", icons)
    first = {"JUPYTER_PATH": VOILA_TEMPLATES, "JUPYTER_CONFIG_PATH": VOILA_CONFIG}
    return dict(env, **{name: os.pathsep.join([str(path)] + ([env[name]] if env.get(name) else []))
                        for name, path in first.items()})


def voila(root, work, notebook):
    """Voila serving `notebook` as `make demo` does (its template included)."""
    cmd = [sys.executable, "-m", "voila", str(Path(root) / notebook), "--no-browser", "--port={port}",
           "--Voila.ip=127.0.0.1", "--token={token}", "--Voila.port_retries=0"]
    server = Server.__new__(Server)
    server.port, server.token = free_port(), secrets.token_hex(16)
    cmd = [c.format(port=server.port, token=server.token) for c in cmd]
    server.log = work / "server.log"
    server.proc = subprocess.Popen(cmd, env=voila_env(_isolated_env(work)), stdout=open(server.log, "w"),
                                   stderr=subprocess.STDOUT, start_new_session=True)
    server.url = f"http://127.0.0.1:{server.port}/?token={server.token}"
    # Not a GET of server.url: Voila executes the notebook for each request, in a kernel of its
    # own, and a busy machine took longer than the 1 s timeout, so every retry started another
    # kernel (live.ipynb: four worker processes each) while the test's page waited behind them.
    server._wait()
    return server
