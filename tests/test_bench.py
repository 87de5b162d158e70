"""The benchmark's plumbing (its numbers come from `make bench`, never from assertions here)."""
from engines import nothing_left_behind  # noqa: F401 (a fixture)

import asyncps as aps
from asyncps.bench import __main__ as bench
from asyncps.bench import baselines, experiments


def fake_results():
    cell = {"threads": 90.0, "processes": 85.0, "rpc": 40.0, "torch_rpc_loop": 38.0, "ray_actor": None}
    return {"quick": True, "machine": "test", "date": "today",
            "throughput": [{"size": "1e6", "params": 1_011_010, "floor": 100.0, "engines": {1: cell}}],
            "server_cost": {"push": 3.0, "update": 1.0, "params": 10},
            "simulator": {"pushes_per_s": 25_000.0, "pushes_per_s_loss_every_100": 40_000.0},
            "straggler": {"target": 0.1, "delay": 0.004, "measured": {"threads": {"sync": 1.0, "async": 0.5, "ssp": 0.6}},
                          "simulated": {"sync": 1.0, "async": 0.25, "ssp": 0.5}},
            "scaling": {"target": 1.0, "delay": 0.05, "jitter": 0.5,
                        "rows": [{"workers": 1, "sync": 2.0, "async": 2.0}, {"workers": 8, "sync": 5.0, "async": None}]}}


def test_targets_compare_ratios_in_the_right_direction():
    results = fake_results()
    targets = {t["target"]: t for t in bench.targets(results)}
    floor = targets["processes, 1 worker, 1e6 params / compute-only floor"]
    assert floor["achieved"] == 0.85 and floor["met"] is True
    cost = targets["threads server push / one in-place update, 1e6 (lower is better, <= 2)"]
    assert cost["achieved"] == 3.0 and cost["met"] is False
    assert targets["rpc engine / hand-written torch rpc loop, 1e6, 1 worker(s)"]["met"] is True
    results["targets"] = bench.targets(results)
    text = bench.markdown(results)
    assert "| 1e6 (1,011,010) | 1 | 100 | 90 | 85 | 40 | 38 | not installed | 0.85 |" in text
    assert "**no**" in text and "never" in text


def test_the_experiments_run_small():
    assert experiments.simulator(steps=300)["pushes_per_s"] > 0
    rows = experiments.scaling([1, 2], log=lambda *_: None)["rows"]
    assert [r["workers"] for r in rows] == [1, 2] and rows[0]["sync"] == rows[0]["async"]
    cost = experiments.server_cost(size=1000, repeat=5)
    assert cost["push"] > 0 and cost["update"] > 0


def test_the_hand_written_rpc_baseline_runs_on_loopback_and_leaves_nothing(nothing_left_behind):
    rate = baselines.torch_rpc_loop(aps.problems.LeastSquares(n=256, dim=4, seed=0), 1, 30)
    assert rate > 0
