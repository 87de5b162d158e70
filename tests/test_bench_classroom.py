"""The classroom benchmark (asyncps/bench/classroom.py), small: 3 student processes, short rooms.
Its structure and the run's invariants, never its timings; no process is left behind."""
import json

import pytest

import asyncps as aps
from asyncps.bench import classroom as bench
from engines import nothing_left_behind  # noqa: F401 (a fixture)

STEPS = 1500            # long enough (about a second) that every student pushes: a student hears of
                        # room.start() within a quarter of a second
pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("nothing_left_behind"),
              pytest.mark.slow]             # its rooms take most of a minute: not in make test-fast


@pytest.fixture(scope="module")
def result():
    return bench.measure(clients=3, steps=STEPS, rounds=1, profile=True, keep_runs=True,
                         log=lambda *_: None)


@pytest.mark.slow
def test_every_room_is_sustained_no_student_lost_every_student_pushed(result):
    rows, runs = result["rows"], result["runs_kept"]
    assert [(r["policy"], r["clients"]) for r in rows] == [("async", 1), ("async", 3),
                                                           ("sync", 1), ("sync", 3)]
    assert len(runs) == len(rows)
    for row, run in zip(rows, runs):
        trace = run.trace
        assert aps.violations(trace) == [] and row["violations"] == []
        assert trace.lost == [] and row["lost"] == 0 and row["errors"] == {}, row
        assert trace.meta["engine"] == "classroom"
        names = {f"student-{k:02d}" for k in range(row["clients"])}
        assert set(trace.meta["students"].values()) == names == set(row["students_in_state"])
        pushed = {p.worker for p in trace.pushes}
        assert pushed == set(range(row["clients"])) and row["every_student_pushed"]
        assert row["contributions_match"] and row["refused"] == {} and not row["diverged"]
        versions = STEPS if row["policy"] == "async" else STEPS // row["clients"]
        assert row["versions"] == versions == len(run.losses) - 1
        assert row["pushes"] == len(trace.pushes) == (versions if row["policy"] == "async"
                                                      else versions * row["clients"])
        assert row["pushes_per_s"] > 0 and row["room_thread_busy"] is not None
        assert 0 <= row["mean_staleness"] <= row["max_staleness"]
        if row["policy"] == "sync":
            assert row["max_staleness"] == 0
        assert trace.controls == []                       # no pause: the room waited, then started
        assert trace.meta["seated"] == list(range(row["clients"]))   # with the whole class seated


def test_the_summary_the_view_and_the_profile_are_reported(result):
    s = result["summary"]
    assert set(s) == {"async", "sync"}
    for p in s.values():
        assert p["lost"] == p["violations"] == p["errors"] == 0 and p["every_student_pushed"]
        assert p["ratio"] == pytest.approx(p["many"] / p["one"])
        assert p["per_student"] == pytest.approx(p["ratio"] / 3)
        assert p["ratio_range"][0] <= p["ratio"] <= p["ratio_range"][1]
    view = result["view"]
    assert view["students"] == 3 and view["pushes_in_trace"] == STEPS and view["fps"] == 10
    assert view["share_of_core"] == pytest.approx((view["room_state_ms"] + view["frame_ms"]) * 10 / 1000)
    assert result["profile"]["top"] and all(0 <= t["share"] <= 1 for t in result["profile"]["top"])
    assert result["machine"] and result["cores"] >= 1
    text = bench.report(result)
    assert "| async |" in text and "of one core at 10 fps" in text and "no student lost" in text


def test_the_result_is_kept_per_machine_beside_the_other_benchmarks(result, tmp_path):
    (tmp_path / "results.json").write_text(json.dumps(
        {"live": {"ratio": 1.0}, "classroom": {"another machine": {**result, "machine": "another machine"}}},
        default=str))
    (tmp_path / "README.md").write_text("# Benchmarks\n\n## Scaling\n\ntext\n\n"
                                        "![throughput](throughput.png)\n\n## Targets\n")
    stored = {k: v for k, v in result.items() if k != "runs_kept"}
    for _ in range(2):                                   # twice: the section is replaced, not added
        bench.write(result, tmp_path)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["live"] == {"ratio": 1.0}                 # the other benchmarks are kept
    assert list(saved["classroom"]) == ["another machine", result["machine"]]
    assert saved["classroom"][result["machine"]]["summary"] == json.loads(json.dumps(stored["summary"]))
    readme = (tmp_path / "README.md").read_text()
    assert readme.count(bench.HEADING) == 1 and readme.count(f"**{result['machine']}**") == 1
    assert readme.index("## Scaling") < readme.index(bench.HEADING) < readme.index("![throughput]")
    assert readme.index("![throughput]") < readme.index("## Targets")


# -- the soak (asyncps/bench/soak.py), short: 6 students and the 5 attackers --------------------------
@pytest.fixture(scope="module")
def soak():
    from asyncps.bench import soak as soak_bench

    runs = (soak_bench.RUNS[0], soak_bench.RUNS[2])       # without; with, each from its own address
    return soak_bench.measure(students=6, seconds=10, runs=runs, control=False, log=lambda *_: None)


@pytest.mark.slow
def test_under_attack_the_room_lives_bounded_and_exact_and_the_class_makes_progress(soak):
    """The soak's structure, never its timings: alive, memory within +50 MB, no invariant broken,
    nothing applied from a seat nobody joined nor from the rule breaker, every honest student
    pushed, every attack refused and counted, nothing raised inside the room."""
    without, attacked = soak["runs"]
    assert without["attack"] == [] and len(attacked["attack"]) == 5 and attacked["own_addresses"]
    for row in (without, attacked):
        assert row["lecturer_alive"] and row["lecturer_exitcode"] == 0, row
        assert row["violations"] == 0, row["violations_first"]
        assert row["unseated_pushes"] == 0
        assert row["rss_growth_mb"] <= 50, row["rss_growth_mb"]
        assert row["honest_seats"] == row["honest_seats_pushed"] == 6 and row["honest_pushes"] > 0
        assert row["student_errors"] == {} and row["lost"] == []
        assert row["errors"] == {}, row["errors"]                  # nothing had to be contained
        assert not row["diverged"]
    assert without["refused"] == {} and set(without["pushes_by_others"]) == set()
    attackers = attacked["attackers"]
    assert set(attackers) == set(soak["attackers"])
    assert all(a["exitcode"] == 0 for a in attackers.values()), attackers
    assert attackers["handshakes"]["sockets"] > 0 and attackers["idle"]["opened"] > 0
    assert attackers["garbage"]["connections"] > 0 and attackers["forged_ids"]["sockets"] > 0
    breaker = attackers["rule_breaker"]
    assert breaker["seated"] and breaker["sent"] > 0
    assert attacked["pushes_by_others"] == {breaker["name"]: 0}       # seated, nothing applied
    assert attacked["students"][str(breaker["worker"])] == breaker["name"]
    refused = attacked["refused"]
    assert refused.get("handshake", 0) > 0                            # strangers, at the door
    assert refused.get("rate", 0) + refused.get("unread", 0) > 0      # the flood: over its rate,
                                                                      # its replies never read
    assert refused.get("no_pull", 0) + refused.get("norm", 0) + refused.get("not_finite", 0) > 0


def test_the_soak_is_reported_and_kept_beside_the_classroom_tables(soak, result, tmp_path):
    from asyncps.bench import soak as soak_bench

    text = soak_bench.report(soak)
    assert "| honest pushes/s (6 students) |" in text and "Verdict, with attackers" in text
    for kind in soak["attackers"]:
        assert f"**{kind}**" in text
    (tmp_path / "README.md").write_text("# Benchmarks\n\n![throughput](throughput.png)\n\n## Targets\n")
    for _ in range(2):                                   # twice: the section is replaced, not added
        bench.write(result, tmp_path)
        soak_bench.write(soak, tmp_path)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert list(saved["classroom_soak"]) == [soak["machine"]] and list(saved["classroom"]) == [result["machine"]]
    readme = (tmp_path / "README.md").read_text()
    assert readme.count(bench.HEADING) == readme.count(soak_bench.HEADING) == 1
    assert readme.index(bench.HEADING) < readme.index(soak_bench.HEADING) < readme.index("![throughput]")
