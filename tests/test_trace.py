"""One trace: deterministic, lossless JSON, honest summaries."""
import json

import numpy as np
import pytest

import asyncps as aps

ARGS = dict(workers=4, policy="ssp", max_clocks_ahead=2, lr=0.05, steps=150, compute_times=[1, 1.5, 2, 4],
            jitter=0.3, comm_delay=0.1, batch_size=32, seed=11)


def test_same_arguments_give_the_same_json_trace_bit_for_bit(lsq):
    a, b = aps.simulate(lsq, **ARGS), aps.simulate(lsq, **ARGS)
    assert a.trace.to_json() == b.trace.to_json()
    assert np.array_equal(a.params, b.params)


def test_a_different_seed_gives_a_different_trace(lsq):
    a = aps.simulate(lsq, **ARGS)
    b = aps.simulate(lsq, **{**ARGS, "seed": 12})
    assert a.trace.to_json() != b.trace.to_json()


def test_simulate_leaves_global_random_state_alone(lsq):
    np.random.seed(5)
    expected = np.random.random()
    np.random.seed(5)
    aps.simulate(lsq, **ARGS)
    assert np.random.random() == expected


def test_json_round_trip_is_lossless(lsq, tmp_path):
    trace = aps.simulate(lsq, **ARGS).trace
    path = tmp_path / "trace.json"
    trace.to_json(path)
    back = aps.Trace.from_json(path)
    assert back == trace and back.to_json() == trace.to_json()
    assert aps.Trace.from_json(trace.to_json()) == trace


def test_from_json_says_what_is_wrong(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "asyncps-trace", "format_version": 1, "events": [{"kind": "jump"}]}')
    with pytest.raises(ValueError, match="event 0 has kind 'jump'"):
        aps.Trace.from_json(bad)
    bad.write_text('{"format": "asyncps-trace", "format_version": 99}')
    with pytest.raises(ValueError, match="format_version 99"):
        aps.Trace.from_json(bad)
    bad.write_text('{"format": "asyncps-trace", "format_ver')
    with pytest.raises(ValueError, match="not valid JSON"):
        aps.Trace.from_json(bad)
    with pytest.raises(ValueError, match="not an asyncps trace"):
        aps.Trace.from_json(json.dumps([1, 2]).replace("[", "{\"a\": [").replace("]", "]}"))


def test_summaries_agree_with_the_events(lsq):
    run = aps.simulate(lsq, workers=3, policy="sync", lr=0.05, steps=20, compute_times=[1, 2, 3])
    trace = run.trace
    assert trace.pushes_per_worker().tolist() == [20, 20, 20]
    assert trace.staleness_histogram().tolist() == [60]
    # per round the workers idle 2 and 1 time units (the slowest takes 3)
    assert trace.idle_time_per_worker().tolist() == [40.0, 20.0, 0.0]
    assert trace.summary()["versions"] == 20 and trace.duration == pytest.approx(60.0)
    assert "sync" in repr(run)


def test_versions_and_time_to_reach_a_target(lsq):
    run = aps.simulate(lsq, workers=4, policy="sync", lr=0.05, steps=100, compute_times=[1, 1, 1, 4])
    target = run.losses[0] / 10
    v = run.versions_to_reach(target)
    assert run.losses[v] <= target < run.losses[v - 1]
    assert run.time_to_reach(target) == pytest.approx(4.0 * v)       # one round every 4 time units
    assert run.versions_to_reach(-1.0) is None and run.time_to_reach(-1.0) is None


def test_event_times_are_plain_floats(lsq):
    run = aps.simulate(lsq, workers=2, lr=0.05, steps=5, jitter=0.2, compute_times=[1, 2])
    assert all(type(getattr(e, "time", getattr(e, "start", 0.0))) is float for e in run.trace.events)
