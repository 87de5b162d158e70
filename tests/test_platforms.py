"""Where the process engines run: forkserver where it exists, spawn elsewhere (Windows), and a
clear message for a script that starts a run when it is imported."""
import multiprocessing
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

import asyncps as aps
from asyncps.engines import procs
from engines import nothing_left_behind  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[1]


def test_forkserver_where_it_exists_spawn_elsewhere():
    assert procs.start_method(["fork", "spawn", "forkserver"]) == "forkserver"     # Linux
    assert procs.start_method(["spawn", "fork", "forkserver"]) == "forkserver"     # macOS
    assert procs.start_method(["spawn"]) == "spawn"                                # Windows


@pytest.mark.usefixtures("nothing_left_behind")
def test_the_processes_engine_runs_where_only_spawn_exists(monkeypatch):
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert procs.context().get_start_method() == "spawn"
    run = aps.train(aps.problems.LeastSquares(n=64, dim=4, seed=0), workers=2, policy="async",
                    lr=0.05, steps=20, engine="processes", seed=0, timeout=120)
    assert not aps.violations(run.trace) and len(run.trace.pushes) == 20
    assert run.losses[-1] < run.losses[0]


def test_a_script_without_the_main_guard_is_told_what_to_write(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent("""
        import asyncps as aps
        aps.train(aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0]), workers=2,
                  policy="async", lr=0.1, steps=10, engine="processes", progress=False)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode != 0
    assert 'if __name__ == "__main__":' in done.stderr, done.stderr[-2000:]


def _readme_block(after):
    text = (ROOT / "README.md").read_text()
    return text[text.index(after):].split("```")[1].split("\n", 1)[1]


def test_the_colab_first_cell_turns_on_the_widget_manager_and_widgets_render(tmp_path):
    """README's Colab cell, run with a stand-in for google.colab (the %pip line is Colab's)."""
    cell = _readme_block("**Colab.**")
    pip = [line for line in cell.splitlines() if line.startswith("%pip")]
    assert len(pip) == 1 and '"asyncps[torch] @ {ASYNCPS}"' in pip[0]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "torch" in extras
    colab = tmp_path / "google" / "colab"
    colab.mkdir(parents=True)
    (tmp_path / "google" / "__init__.py").write_text("")
    (colab / "__init__.py").write_text("")
    (colab / "output.py").write_text("enabled = []\ndef enable_custom_widget_manager():\n"
                                     "    enabled.append(True)\n")
    python = "\n".join(line for line in cell.splitlines() if not line.startswith("%"))
    check = python + textwrap.dedent("""
        import asyncps as aps
        assert output.enabled == [True]
        run = aps.simulate(aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0]), workers=2,
                           policy="async", lr=0.1, steps=4, compute_times=[1, 1.5])
        bundle = aps.widgets.Timeline(run)._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle and "image/svg+xml" in bundle
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
