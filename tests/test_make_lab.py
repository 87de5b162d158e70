"""`make lab` as a newcomer meets it: a browser where one can show it, the URL last where none
can, a quiet install that still shows pip's errors, no news pop-up and no update check.

Nothing here installs anything into the project's venv or starts a real browser: `make -n` prints
the recipes, `-o FILE` keeps make from remaking FILE, and a fake `id` or `uname` on PATH (which
make's $(shell ...) finds first) plays another user or system.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UNREACHABLE = "http://127.0.0.1:9/simple"          # nothing listens on port 9: refused at once
NEWS_OFF = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}


def _make(*args, env=None, venv, timeout=60):
    """make in the repository with VENV=venv, never remaking the venv's lab install."""
    return subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), f"VENV={venv}",
                           "-o", f"{venv}/.installed-lab", *args],
                          env=env or dict(os.environ), capture_output=True, text=True, timeout=timeout)


def _fake(bin_dir, name, output):
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / name).write_text(f"#!/bin/sh\necho {output}\n")
    (bin_dir / name).chmod(0o755)


def _lab_dry_run(tmp_path, uid="1000", system="Linux", *args, **env_vars):
    fakes = tmp_path / "fakes"
    _fake(fakes, "id", uid)
    _fake(fakes, "uname", system)
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "SSH_CONNECTION", "SSH_TTY", "OPEN_BROWSER", "VERBOSE")}
    env.update(env_vars, PATH=f"{fakes}:{os.environ['PATH']}")
    out = _make("-n", "lab", *args, env=env, venv=tmp_path / "venv")
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("uid, system, env, args, opens, why", [
    ("1000", "Linux", {"DISPLAY": ":0"}, [], True, None),
    ("1000", "Linux", {"WAYLAND_DISPLAY": "wayland-0"}, [], True, None),
    ("1000", "Darwin", {}, [], True, None),
    ("1000", "Linux", {}, [], False, "no DISPLAY or WAYLAND_DISPLAY"),
    ("0", "Linux", {"DISPLAY": ":0"}, [], False, "running as root"),
    ("1000", "Linux", {"DISPLAY": "localhost:10.0", "SSH_CONNECTION": "10.0.0.2 5 10.0.0.1 22"}, [],
     False, "an SSH session"),
    ("1000", "Darwin", {"SSH_TTY": "/dev/pts/1"}, [], False, "an SSH session"),
    ("1000", "Linux", {"DISPLAY": ":0"}, ["OPEN_BROWSER=no"], False, "OPEN_BROWSER=no"),
    ("0", "Linux", {}, ["OPEN_BROWSER=yes"], True, None),
])
def test_make_lab_opens_a_browser_only_where_one_can_show(tmp_path, uid, system, env, args, opens, why):
    recipe = _lab_dry_run(tmp_path, uid, system, *args, **env)
    assert f"--ServerApp.open_browser={opens}" in recipe
    if why:
        assert f"make lab: no browser opened ({why}): open the URL JupyterLab prints last" in recipe
    else:
        assert "no browser opened" not in recipe


def test_a_wrong_open_browser_value_is_refused(tmp_path):
    out = _make("-n", "lab", "OPEN_BROWSER=maybe", venv=tmp_path / "venv")
    assert out.returncode != 0 and "use OPEN_BROWSER=auto (the default), yes or no" in out.stderr


def test_make_lab_turns_off_jupyters_news_and_update_checks(tmp_path):
    recipe = _lab_dry_run(tmp_path, DISPLAY=":0")
    assert "--LabApp.news_url=None" in recipe
    assert "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate" in recipe
    # the server logs warnings only, so that its "copy and paste one of these URLs" block is last
    assert "--ServerApp.log_level=WARN" in recipe and "--LabApp.log_level=WARN" in recipe
    # and the settings override, written for real into a venv of our own
    venv = tmp_path / "venv"
    override = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    out = _make(str(override), venv=venv)
    assert out.returncode == 0, out.stderr
    assert json.loads(override.read_text()) == NEWS_OFF


def test_the_override_matches_jupyterlabs_own_schema():
    """The keys and values JupyterLab's notification plugin defines (a typo would be ignored)."""
    schema_file = (Path(sys.prefix) / "share" / "jupyter" / "lab" / "schemas" / "@jupyterlab"
                   / "apputils-extension" / "notification.json")
    if not schema_file.is_file():
        pytest.skip(f"no JupyterLab in {sys.prefix} (the lab extra)")
    properties = json.loads(schema_file.read_text())["properties"]
    settings = NEWS_OFF["@jupyterlab/apputils-extension:notification"]
    assert settings["fetchNews"] in [choice["const"] for choice in properties["fetchNews"]["oneOf"]]
    assert properties["checkForUpdates"]["type"] == "boolean"
    assert set(settings) <= set(properties)


def test_the_install_steps_are_quiet_and_keep_the_torch_first_order(tmp_path):
    venv = tmp_path / "venv"
    lines = lambda out: [line for line in out.splitlines() if " -m pip install " in line]  # noqa: E731
    env = {k: v for k, v in os.environ.items() if k != "VERBOSE"}
    quiet = lines(subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "-n", f"VENV={venv}",
                                  "torch", "packages", "EXTRAS=torch,lab"],
                                 env=env, capture_output=True, text=True, timeout=60).stdout)
    assert len(quiet) == 2
    torch, packages = quiet
    assert "--no-deps" in torch and '"torch==' in torch and '"torch==' in packages
    for line in quiet:
        assert " -qq " in line and "--disable-pip-version-check" in line, line
    loud = lines(subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "-n", f"VENV={venv}",
                                 "VERBOSE=1", "torch", "packages", "EXTRAS=lab"],
                                capture_output=True, text=True, timeout=60).stdout)
    assert len(loud) == 2 and not any(" -qq " in line for line in loud)
    # every pip install in the Makefile goes through the same quiet flags
    text = (ROOT / "Makefile").read_text()
    assert all("$(QUIET_PIP)" in line for line in text.splitlines() if "pip install" in line
               and not line.lstrip().startswith("#"))
    # and the venv's two installs compile no bytecode up front (Python caches what it imports)
    installs = [line for line in text.splitlines() if "pip install" in line and "TORCH_REQ" in line]
    assert len(installs) == 2 and all("$(NO_COMPILE)" in line for line in installs), installs
    assert "NO_COMPILE = --no-compile" in text


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_quiet_install_still_shows_pips_error(tmp_path):
    """pip -qq hides warnings, not errors: a requirement nobody can serve says so, in few lines."""
    venv = tmp_path / "venv"
    env = dict(os.environ, PIP_INDEX_URL=UNREACHABLE, PIP_EXTRA_INDEX_URL=UNREACHABLE, PIP_RETRIES="0",
               PIP_FIND_LINKS=str(tmp_path))
    env.pop("VERBOSE", None)
    out = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), f"VENV={venv}",
                          f"PYTHON={sys.executable}", "torch", "TORCH_INDEX=",
                          "TORCH_REQ=asyncps-no-such-distribution==1.0"],
                         env=env, capture_output=True, text=True, timeout=110)
    said = out.stdout + out.stderr
    assert out.returncode != 0
    assert "ERROR: No matching distribution found for asyncps-no-such-distribution==1.0" in said, said
    assert "WARNING" not in said and len(said.splitlines()) < 10, said


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("open_browser", ["yes", "no"])
def test_make_lab_ends_with_the_url_and_opens_the_browser_it_is_told_to(tmp_path, open_browser):
    """The real `make lab` on this venv (nothing reinstalled, no settings written) with a fake browser
    (Python's webbrowser runs $BROWSER): the last lines are the URL with its token."""
    venv = Path(sys.prefix)
    if not (venv / "bin" / "jupyter-lab").exists():
        pytest.skip(f"no JupyterLab in {venv} (the lab extra)")
    opened = tmp_path / "opened"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o755)
    port = _free_port()
    env = dict(os.environ, BROWSER=str(browser), JUPYTER_PORT=str(port),
               JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"))
    log = tmp_path / "make-lab.log"
    override = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    with open(log, "w") as out:
        proc = subprocess.Popen(["make", "--no-print-directory", "-C", str(ROOT), f"VENV={venv}",
                                 "-o", f"{venv}/.installed-lab", "-o", str(override), "lab",
                                 f"OPEN_BROWSER={open_browser}"],
                                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = re.compile(rf"^\s+(http://127\.0\.0\.1:{port}/lab/tree/notebooks/00-start-here\.ipynb\?token=\w+)$")
    try:
        deadline = time.monotonic() + 120
        while not any(url.match(line) for line in log.read_text().splitlines()):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        if open_browser == "yes":
            while not opened.exists() and time.monotonic() < deadline:
                time.sleep(0.2)
        time.sleep(1.5)                                # whatever else the server says at start
        lines = [line for line in log.read_text().splitlines() if line.strip()]
        assert url.match(lines[-1]), "\n".join(lines[-8:])
        assert "Or copy and paste one of these URLs:" in lines[-2]
        if open_browser == "yes":
            assert opened.read_text().startswith("file://")         # JupyterLab's page with the token
        else:
            assert not opened.exists()
            assert "make lab: no browser opened (OPEN_BROWSER=no)" in lines[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def test_make_lab_runs_the_server_in_its_venv_with_the_repositorys_config(tmp_path):
    """The real recipe with a fake JupyterLab: make lab prints only what the learner acts on (no
    command echoed), and runs the server with the venv first on PATH and VIRTUAL_ENV set (the
    kernels' `!` commands and the terminals find its python) and etc/jupyter/lab/ first on
    JUPYTER_CONFIG_PATH (its log filter, the terminals' rc file, the kernels' encryption)."""
    venv = tmp_path / "venv"
    (venv / "share" / "jupyter" / "lab" / "settings").mkdir(parents=True)
    seen = tmp_path / "seen.json"
    (venv / "bin").mkdir()
    (venv / "bin" / "jupyter").write_text(
        f"#!/bin/sh\n{sys.executable} -c 'import json, os, shutil, sys; json.dump(dict(argv=sys.argv[1:], "
        f"path=os.environ[\"PATH\"], venv=os.environ.get(\"VIRTUAL_ENV\"), "
        f"config=os.environ.get(\"JUPYTER_CONFIG_PATH\")), open(\"{seen}\", \"w\"))' \"$@\"\n")
    (venv / "bin" / "jupyter").chmod(0o755)
    env = dict(os.environ, JUPYTER_CONFIG_PATH="/elsewhere")
    env.pop("VIRTUAL_ENV", None)
    out = _make("lab", "OPEN_BROWSER=no", "-o", f"{venv}/share/jupyter/lab/settings/overrides.json",
                env=env, venv=venv)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines() == ["make lab: no browser opened (OPEN_BROWSER=no): open the URL JupyterLab "
                                       "prints last"], out.stdout
    got = json.loads(seen.read_text())
    assert got["argv"][0] == "lab" and "--ServerApp.ip=127.0.0.1" in got["argv"]
    assert got["path"].split(":")[0] == f"{venv}/bin" and got["venv"] == str(venv)
    assert got["config"] == f"{ROOT}/etc/jupyter/lab:/elsewhere"
    assert (ROOT / "etc" / "jupyter" / "lab" / "jupyter_server_config.py").is_file()
    assert (ROOT / "etc" / "jupyter" / "lab" / "terminal.bashrc").is_file()


def _in_terminal(port, token, name, command, timeout=60):
    """What JupyterLab's terminal `name` prints for `command` (its websocket, as the page talks to it)."""
    from tornado.ioloop import IOLoop
    from tornado.websocket import websocket_connect

    async def talk():
        import asyncio
        ws = await websocket_connect(f"ws://127.0.0.1:{port}/terminals/websocket/{name}?token={token}")
        said, deadline = "", time.monotonic() + timeout
        ws.write_message(json.dumps(["stdin", f"{command}; echo END-OF-$((6*7))\r"]))
        while "END-OF-42" not in said and time.monotonic() < deadline:
            try:
                kind, *rest = json.loads(await asyncio.wait_for(ws.read_message(), 1))
            except asyncio.TimeoutError:
                continue
            said += rest[0] if kind == "stdout" else ""
        ws.close()
        return said
    return IOLoop.current().run_sync(talk)


def _in_kernel(port, token, kernel_id, code, timeout=60):
    """The stream output of `code` run in a kernel through the server's websocket, as JupyterLab runs it."""
    import uuid

    from tornado.ioloop import IOLoop
    from tornado.websocket import websocket_connect

    async def talk():
        import asyncio
        session = uuid.uuid4().hex
        ws = await websocket_connect(f"ws://127.0.0.1:{port}/api/kernels/{kernel_id}/channels"
                                     f"?session_id={session}&token={token}")
        msg_id = uuid.uuid4().hex
        ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "username": "test", "session": session, "date": "",
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                        "allow_stdin": False}}))
        out, deadline = "", time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = json.loads(await asyncio.wait_for(ws.read_message(), 1))
            except asyncio.TimeoutError:
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                out += msg["content"]["text"]
            elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        ws.close()
        return out
    return IOLoop.current().run_sync(talk)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_make_lab_is_quiet_and_its_kernels_and_terminals_use_the_venv(tmp_path):
    """The real `make lab` on this venv while a learner opens notebooks, runs a `!` command and opens
    a terminal: its log stays at the URL (no "is not trusted" per notebook, no kernel warning that
    TCP is unencrypted, no DeprecationWarning), and `python` in the `!` command and in the terminal
    is the venv's, the terminal's after the learner's ~/.bashrc put another python first."""
    venv = Path(sys.prefix)
    if not (venv / "bin" / "jupyter-lab").exists():
        pytest.skip(f"no JupyterLab in {venv} (the lab extra)")
    bash = subprocess.run(["sh", "-c", "command -v bash"], capture_output=True, text=True).stdout.strip()
    if not bash:
        pytest.skip("no bash: JupyterLab's terminal starts the learner's own shell")
    home = tmp_path / "home"
    other = home / "other-python"
    other.mkdir(parents=True)
    (other / "python").write_text("#!/bin/sh\necho not-the-venvs-python\n")
    (other / "python").chmod(0o755)
    (home / ".bashrc").write_text(f'export PATH="{other}:$PATH"; LEARNERS_BASHRC=read\n')   # as pyenv's init
    port = _free_port()
    env = dict(os.environ, HOME=str(home), SHELL=bash, JUPYTER_PORT=str(port),
               JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
               JUPYTER_DATA_DIR=str(tmp_path / "data"), JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"))
    env.pop("VIRTUAL_ENV", None)
    env.pop("JUPYTER_CONFIG_PATH", None)
    log = tmp_path / "make-lab.log"
    override = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    with open(log, "w") as out:
        proc = subprocess.Popen(["make", "--no-print-directory", "-C", str(ROOT), f"VENV={venv}",
                                 "-o", f"{venv}/.installed-lab", "-o", str(override), "lab", "OPEN_BROWSER=no"],
                                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (found := re.search(rf"http://127\.0\.0\.1:{port}/\S*\?token=(\w+)", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        token = found.group(1)

        def api(method, path, body=None):
            request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                             data=json.dumps(body).encode() if body is not None else None,
                                             headers={"Authorization": f"token {token}"})
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read() or b"null")

        kernels = []
        for notebook in ("notebooks/00-start-here.ipynb", "notebooks/01-synchronous-ps.ipynb"):
            api("GET", f"/api/contents/{notebook}?content=1")         # what opening a notebook reads
            session = api("POST", "/api/sessions", {"path": notebook, "type": "notebook", "name": notebook,
                                                     "kernel": {"name": "python3"}})
            kernels.append(session["kernel"]["id"])
        said = _in_kernel(port, token, kernels[0], '!python -c "import nbformat, sys; print(sys.prefix)"')
        assert said.strip() == str(venv), said
        terminal = api("POST", "/api/terminals")["name"]
        said = _in_terminal(port, token, terminal, 'echo "[$LEARNERS_BASHRC] $(command -v python)'
                            ' $(python -c "import nbformat, sys; print(sys.prefix)") $VIRTUAL_ENV"')
        assert f"[read] {venv}/bin/python {venv} {venv}" in said, said
        for kernel in kernels:
            api("DELETE", f"/api/kernels/{kernel}")
        api("DELETE", f"/api/terminals/{terminal}")
        time.sleep(1)
        lines = [line for line in log.read_text().splitlines() if line.strip()]
        url_at = max(i for i, line in enumerate(lines) if "?token=" in line)
        # before the URL: "no browser opened" and JupyterLab's own block; after it: nothing
        assert lines[0].startswith("make lab: no browser opened") and "ServerApp]" in lines[1], "\n".join(lines)
        assert lines[url_at + 1:] == [], "\n".join(lines)
        said = "\n".join(lines)
        for noise in ("is not trusted", "without encryption", "DeprecationWarning", "nbgrader_config", "Retrying"):
            assert noise not in said, said
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
