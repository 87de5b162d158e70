"""A script that starts worker processes outside `if __name__ == "__main__":` is refused before any
worker starts (tests/mistakes/processes.py: the message); a guarded one, and `python -c`, run."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = ('aps.train(aps.problems.LeastSquares(n=64, dim=3, seed=0), engine="processes", workers=2, '
       'steps=10, progress=False)')


def python(args, folder):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, *args], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("guard", ['if __name__ == "__main__":', "if '__main__' == __name__:"])
def test_a_guarded_script_runs(guard, tmp_path):
    """(A line outside the guard still runs in each worker, as Python's spawn and forkserver import
    the script there: here every line is inside.)"""
    (tmp_path / "ok.py").write_text(f"import asyncps as aps\n\n\n"
                                    f"def main():\n    print('before the run')\n    run = {RUN}\n"
                                    f"    print('versions', run.trace.summary()['versions'])\n\n\n"
                                    f"{guard}\n    main()\n")
    done = python(["ok.py"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["before the run", "versions 10"], done.stdout


def test_an_unguarded_script_is_refused_before_anything_runs_again(tmp_path):
    (tmp_path / "bad.py").write_text(f"import asyncps as aps\nprint('before the run')\n{RUN}\n")
    done = python(["bad.py"], tmp_path)
    assert done.returncode == 1 and done.stdout.splitlines() == ["before the run"], done.stdout
    assert "asyncps-worker" not in done.stderr and "did not start" not in done.stderr


@pytest.mark.slow
def test_python_c_needs_no_guard(tmp_path):
    done = python(["-c", f"import asyncps as aps; run = {RUN}; print(run.trace.summary()['versions'])"],
                  tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "10", done.stderr
