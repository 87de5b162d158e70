"""Load and soak (smaller than `make reliability`, same functions): every engine keeps working,
loses nothing, and its memory stays flat."""
import pytest

from asyncps.bench import reliability
from engines import nothing_left_behind  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("nothing_left_behind")


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("engine, workers", [("threads", 64), ("processes", 16)])
@pytest.mark.parametrize("policy", ["async", "sync", "ssp"])
def test_many_workers_on_two_cores(engine, workers, policy):
    r = reliability.load(engine, workers, policy, steps=120 if engine == "threads" else 60)
    assert r["violations"] == [] and r["versions"] == (120 if engine == "threads" else 60)
    if engine == "threads":         # one process: its growth is the workers' copies plus a constant
        assert r["peak_growth_mb"] <= r["one_copy_per_worker_mb"] + 64, r


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("engine, pushes", [("threads", 20_000), ("processes", 40_000), ("rpc", 2_000)])
def test_soak_loses_nothing_and_stays_flat(engine, pushes):
    r = reliability.soak(engine, pushes)
    assert r["exact"] and r["lost"] == 0 and r["pushes"] == pushes, r
    assert r["events_kept"] == 2000 and r["events_beyond"] > 0
    assert r["growth_after_warmup"] < 0.05, r


def test_a_limited_trace_keeps_its_summaries_and_round_trips(tmp_path):
    import asyncps as aps
    lsq = aps.problems.LeastSquares(n=64, dim=3, seed=0)
    full = aps.simulate(lsq, workers=3, lr=0.05, steps=300, compute_times=[1, 2, 3])
    cut = aps.simulate(lsq, workers=3, lr=0.05, steps=300, compute_times=[1, 2, 3], trace_limit=100)
    assert len(cut.trace.events) == 100 and len(cut.trace.params) <= 100
    assert cut.trace.staleness_histogram().tolist() == full.trace.staleness_histogram().tolist()
    assert cut.trace.pushes_per_worker().tolist() == full.trace.pushes_per_worker().tolist()
    assert cut.trace.duration == full.trace.duration and cut.losses == full.losses
    assert aps.Trace.from_json(cut.trace.to_json()) == cut.trace
