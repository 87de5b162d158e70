"""Bounded staleness, searched over seeds, bounds, worker counts and jitter (Hypothesis)."""
from hypothesis import given, settings
from hypothesis import strategies as st

import asyncps as aps
from asyncps.core.policies import SSP_MAX_CLOCKS_AHEAD

QUAD = aps.problems.Quadratic(curvature=[1.0, 0.5], x0=[1.0, -1.0])


def replay_clocks(trace):
    """Yield (event, clocks before it) with clocks = pushes per worker so far."""
    clocks = [0] * trace.workers
    for event in trace.events:
        yield event, list(clocks)
        if event.kind == "push":
            clocks[event.worker] += 1


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), bound=st.integers(0, 4), workers=st.integers(2, 6),
       jitter=st.floats(0.0, 1.5), slow=st.floats(1.0, 6.0))
def test_ssp_never_lets_a_worker_run_more_than_s_clocks_ahead(seed, bound, workers, jitter, slow):
    times = [1.0] * (workers - 1) + [slow]
    run = aps.simulate(QUAD, workers=workers, policy="ssp", max_clocks_ahead=bound, lr=0.05, steps=300,
                       compute_times=times, jitter=jitter, seed=seed)
    assert len(run.losses) == 301
    for event, clocks in replay_clocks(run.trace):
        # the gate: a worker starts an iteration (its pull) at most s clocks ahead of the slowest
        if event.kind == "pull":
            assert clocks[event.worker] - min(clocks) <= bound
        # so no finished clock is ever more than s + 1 ahead
        assert max(clocks) - min(clocks) <= bound + 1
        if event.kind == "push":
            assert event.staleness == event.applied_to - event.computed_on >= 0


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), workers=st.integers(1, 6), jitter=st.floats(0.0, 1.5),
       policy=st.sampled_from(["sync", "async", "ssp"]))
def test_versions_increase_by_one_per_update_and_no_push_is_lost(seed, workers, jitter, policy):
    run = aps.simulate(QUAD, workers=workers, policy=policy, lr=0.05, steps=120, jitter=jitter,
                       seed=seed)                          # ssp: its default threshold, no special case
    pushes = run.trace.pushes
    applied = [p.applied_to for p in pushes]
    assert applied == sorted(applied)
    per_version = 1 if policy != "sync" else workers
    assert len(pushes) == per_version * 120                 # every push counted, none lost
    assert sorted(set(applied)) == list(range(120))
    if policy == "sync":
        assert all(p.staleness == 0 for p in pushes)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), workers=st.integers(2, 6), jitter=st.floats(0.0, 1.5),
       slow=st.floats(1.0, 6.0))
def test_ssp_without_a_threshold_keeps_the_default_one_and_records_it(seed, workers, jitter, slow):
    times = [1.0] * (workers - 1) + [slow]
    run = aps.simulate(QUAD, workers=workers, policy="ssp", lr=0.05, steps=150, compute_times=times,
                       jitter=jitter, seed=seed)
    assert run.trace.meta["max_clocks_ahead"] == SSP_MAX_CLOCKS_AHEAD
    for event, clocks in replay_clocks(run.trace):
        if event.kind == "pull":
            assert clocks[event.worker] - min(clocks) <= SSP_MAX_CLOCKS_AHEAD
    assert not aps.violations(run.trace)


def test_the_recorded_default_threshold_survives_json_checkpoints_and_resume(tmp_path):
    run = aps.simulate(QUAD, workers=3, policy="ssp", lr=0.05, steps=60, compute_times=[1, 1, 5])
    back = aps.Trace.from_json(run.trace.to_json())
    assert back == run.trace and back.meta["max_clocks_ahead"] == SSP_MAX_CLOCKS_AHEAD
    assert back.policy.max_ahead == SSP_MAX_CLOCKS_AHEAD and not aps.violations(back)
    # the invariants check the threshold the meta records: this run used 2 clocks, so 1 is broken
    gap = max(clocks[e.worker] - min(clocks) for e, clocks in replay_clocks(run.trace) if e.kind == "pull")
    assert gap == SSP_MAX_CLOCKS_AHEAD
    text = run.trace.to_json()
    tighter = aps.Trace.from_json(text.replace('"max_clocks_ahead": 2', '"max_clocks_ahead": 1'))
    assert aps.violations(tighter)
    run.save(tmp_path / "run.npz")
    assert aps.load_run(tmp_path / "run.npz").trace.meta["max_clocks_ahead"] == SSP_MAX_CLOCKS_AHEAD
    path = tmp_path / "ckpt.npz"
    first = aps.train(QUAD, workers=2, policy="ssp", lr=0.05, steps=30, checkpoint=path,
                      checkpoint_every=10, slowdown=[0.0, 0.002])
    more = aps.train(QUAD, workers=2, policy="ssp", lr=0.05, steps=50, resume=path)
    assert first.trace.meta["max_clocks_ahead"] == more.trace.meta["max_clocks_ahead"] == SSP_MAX_CLOCKS_AHEAD
    assert len(more.losses) == 51 and not aps.violations(more.trace)
