"""The suite's own scheduling (conftest.py): which tests a worker takes whole, and the durations
file that sends the longest first (scripts/durations.py)."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
conftest = importlib.util.module_from_spec(_spec)        # the repository's, not tests/conftest.py
_spec.loader.exec_module(conftest)


def test_a_spread_file_s_tests_are_units_of_their_own_and_other_files_go_whole():
    spread = "tests/test_wrong_answers.py::test_each_wrong_answer_loses_exactly_its_tasks_points[03a]"
    assert conftest.unit_of(spread) == spread
    assert conftest.unit_of("tests/test_trace.py::test_round_trip[x]") == "tests/test_trace.py"
    assert conftest.unit_of("notebooks/02-asynchronous-ps.ipynb::Cell 4") == "notebooks/02-asynchronous-ps.ipynb"
    assert all((ROOT / path).exists() for path in conftest.SPREAD)


def test_durations_sum_each_unit_s_phases_and_drop_what_no_longer_exists(tmp_path, monkeypatch):
    log = tmp_path / "log.txt"
    log.write_text("""============================== slowest durations ==============================
12.50s call     tests/test_trace.py::test_a
0.50s setup    tests/test_trace.py::test_a
1.00s call     tests/test_trace.py::test_b
3.25s call     tests/test_wrong_answers.py::test_each_wrong_answer_loses_exactly_its_tasks_points[01-sync-round]
9.00s call     tests/test_gone_long_ago.py::test_x
2.00s call     tests/test_wrong_answers.py::test_renamed_away[01]
""")
    out = tmp_path / "durations.json"
    script = f"import sys; sys.path.insert(0, {str(ROOT)!r}); import conftest; conftest.DURATIONS = {str(out)!r}; " \
             f"sys.argv = ['durations.py', {str(log)!r}]; import runpy; " \
             f"runpy.run_path({str(ROOT / 'scripts' / 'durations.py')!r}, run_name='__main__')"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(json.loads(out.read_text()).items()) == [
        ("tests/test_trace.py", 14.0),
        ("tests/test_wrong_answers.py::test_each_wrong_answer_loses_exactly_its_tasks_points[01-sync-round]", 3.2)]
