"""Installing asyncps as its users do: the Makefile's two steps without a network, a bare
`pip install .`, and every import declared in pyproject.toml."""
import ast
import json
import os
import platform
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UNREACHABLE = "http://127.0.0.1:9/simple"          # nothing listens on port 9: refused at once
# import name -> distribution, where they differ
DISTRIBUTION = {"sklearn": "scikit-learn", "yaml": "pyyaml", "zmq": "pyzmq"}


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(reqs):
    return {r.split("[")[0].split(">")[0].split("<")[0].split("=")[0].split(";")[0].strip().lower()
            for r in reqs}


def _third_party_imports(path):
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "asyncps"}


def test_every_import_of_the_package_is_declared():
    project = _project()
    base = _names(project["dependencies"])
    declared = base.union(*(_names(reqs) for reqs in project["optional-dependencies"].values()))
    for path in (ROOT / "asyncps").rglob("*.py"):
        used = {DISTRIBUTION.get(m, m).lower() for m in _third_party_imports(path)}
        assert used <= declared, f"{path.relative_to(ROOT)} imports undeclared {used - declared}"
        layer = path.relative_to(ROOT / "asyncps").parts[0]
        if layer in ("core", "widgets", "plot.py", "__init__.py"):          # `pip install asyncps`
            assert used <= base, f"{path.relative_to(ROOT)} needs {used - base} beyond the base list"


def _venv(where):
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    return where / "bin" / "python"


def _index_reachable():
    try:
        urllib.request.urlopen("https://pypi.org/simple/pip/", timeout=5).close()
        return True
    except OSError:
        return False


def _local_torch_wheels():
    folders = [Path(p) for p in os.environ.get("PIP_FIND_LINKS", "").split() if p]
    return [w for f in folders if f.is_dir() for w in f.glob("torch-*+cpu-*.whl")]


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(platform.system() != "Linux", reason="the CPU index matters on Linux only")
def test_the_makefile_installs_cpu_torch_with_the_index_unreachable(tmp_path):
    """`make torch` (step 1 of make lab) with no index: the local wheel cache serves torch's CPU
    build; step 2 then resolves the whole test set without one CUDA package and keeps that torch."""
    if not _local_torch_wheels():
        pytest.skip("no local wheel cache of torch's CPU build (PIP_FIND_LINKS): nothing to install offline")
    venv = tmp_path / "venv"
    offline = dict(os.environ, PIP_INDEX_URL=UNREACHABLE, PIP_EXTRA_INDEX_URL=UNREACHABLE,
                   PIP_RETRIES="0")
    step1 = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "torch", f"VENV={venv}"],
                           env=offline, capture_output=True, text=True, timeout=500)
    assert step1.returncode == 0, step1.stdout[-2000:] + step1.stderr[-2000:]
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
                            capture_output=True, text=True, check=True).stdout
    installed = {p["name"].lower(): p["version"] for p in json.loads(listed)}
    assert installed["torch"].endswith("+cpu")
    assert not [n for n in installed if n.startswith("nvidia")]
    if not _index_reachable():
        pytest.skip("step 1 passed offline; step 2 needs the package index, which is unreachable here")
    report = tmp_path / "report.json"
    step2 = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "packages", f"VENV={venv}",
                            "EXTRAS=test", f"PIP_FLAGS=--dry-run --report {report}"],
                           capture_output=True, text=True, timeout=500)
    assert step2.returncode == 0, step2.stdout[-2000:] + step2.stderr[-2000:]
    resolved = [item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]]
    assert "jupyterlab" in resolved and "nbgrader" in resolved
    assert "torch" not in resolved and not [n for n in resolved if n.startswith("nvidia")], resolved


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_bare_pip_install_simulates_and_renders_a_timeline(tmp_path):
    """`pip install .` with no extras, into a clean venv: no torch, no JupyterLab, and still the
    core, the simulator and the widgets work."""
    if not _index_reachable() and not os.environ.get("PIP_FIND_LINKS"):
        pytest.skip("the package index is unreachable and there is no local cache")
    python = _venv(tmp_path / "venv")
    src = tmp_path / "src"            # a copy, so that the build leaves nothing in the checkout
    src.mkdir()
    subprocess.run(["cp", "-r", *(str(ROOT / name) for name in
                                  ("asyncps", "pyproject.toml", "README.md", "LICENSE")), str(src)],
                   check=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", str(src)],
                          capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stderr[-3000:]
    code = """
import importlib.util, asyncps as aps
run = aps.simulate(aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0]), workers=2,
                   policy="async", lr=0.1, steps=6, compute_times=[1, 2])
timeline = aps.widgets.Timeline(run)
svg = aps.widgets.timeline_svg(aps.widgets.TimelineModel(run.trace), 3)
print(len(run.trace.pushes), importlib.util.find_spec("torch") is None,
      importlib.util.find_spec("jupyterlab") is None, type(timeline).__name__, svg.startswith("<svg"))
"""
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["6", "True", "True", "Timeline", "True"]
