"""Every learner mistake in tests/mistakes/ gets a message in the learner's terms, as its last line.

Each mistake runs as the user meets it: a script run with `python`, or `python -m asyncps ...`.
It must fail (a non-zero exit status), and the last non-empty line the user sees must hold the
catalogued words and must not be a traceback frame (the README's promise: bad input raises a
ValueError or TypeError naming the argument, the value given and what is allowed)."""
import os
import runpy
import subprocess
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

# minutes in all: make test runs them, make test-fast does not
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "tests" / "mistakes"


def mistakes():
    found = []
    for path in sorted(CATALOGUE.glob("*.py")):
        for m in runpy.run_path(str(path))["MISTAKES"]:
            found.append(pytest.param(m, id=m["name"], marks=m.get("marks", ())))
    return found


def test_the_catalogue_holds_at_least_30_mistakes_each_named_once():
    names = [p.values[0]["name"] for p in mistakes()]
    assert len(names) >= 30, len(names)
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    for p in mistakes():
        m = p.values[0]
        assert set(m) <= {"name", "before", "script", "argv", "says", "marks", "timeout"}, m["name"]
        assert ("script" in m) != ("argv" in m) and m["says"] and m["before"], m["name"]


def last_line(text):
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def seen(m, folder):
    """(exit status, the last line the user sees, all they see) for one mistake."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    if "script" in m:
        (folder / "mistake.py").write_text(m["script"].strip() + "\n")
        command = [sys.executable, "mistake.py"]
    else:
        command = [sys.executable, "-m", "asyncps", *m["argv"]]
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True,
                          timeout=m.get("timeout", 120))
    shown = done.stderr if done.stderr.strip() else done.stdout
    return done.returncode, last_line(shown), done.stdout + done.stderr


@pytest.fixture(scope="module")
def outcomes(request, tmp_path_factory):
    """What every selected mistake shows, run two at a time (each is a Python of its own; this
    machine has 2 cores)."""
    selected = [item.callspec.params["m"] for item in request.session.items
                if getattr(item, "originalname", None) == "test_a_mistake_ends_with_its_message"]
    # each mistake's folder made here, before the threads: pytest makes its base temp folder on the
    # first mktemp, and two threads doing that at once raced (FileExistsError, under load)
    folders = {m["name"]: tmp_path_factory.mktemp(m["name"]) for m in selected}

    def one(m):
        try:
            return seen(m, folders[m["name"]])
        except Exception:                       # noqa: BLE001 - that mistake's test says what
            return None, "", traceback.format_exc()

    with ThreadPoolExecutor(max_workers=2) as pool:
        return {m["name"]: result for m, result in zip(selected, pool.map(one, selected))}


# the first test's setup runs every mistake (`outcomes`): 86 s quiet, 142 s with the machine busy,
# against pytest-timeout's 300 s for the whole test; each mistake has a timeout of its own (120 s)
@pytest.mark.timeout(900)
@pytest.mark.parametrize("m", mistakes())
def test_a_mistake_ends_with_its_message(m, outcomes):
    status, line, everything = outcomes[m["name"]]
    assert status is not None, f"{m['name']}: could not be run:\n{everything}"
    assert status != 0, f"{m['name']}: exit status 0; it printed:\n{everything[-3000:]}"
    assert not line.startswith((" ", "\t", "Traceback")), \
        f"{m['name']}: the last line is a traceback frame: {line!r}\n{everything[-3000:]}"
    missing = [word for word in m["says"] if word not in line]
    assert not missing, f"{m['name']}: the last line {line!r} lacks {missing}\n{everything[-3000:]}"
