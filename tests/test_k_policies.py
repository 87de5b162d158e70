"""ksync (backup workers, Chen et al. 2016) and kasync (K-async, Dutta et al. 2018): a round closes on
k pushes. Their invariants on every engine, their two ends checked against sync and async (an
independent baseline: other code paths), the gate after a push, lost workers, the random-straggler
compute model against Dutta et al.'s expected-runtime formula, and the errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asyncps as aps
from engines import ALL, nothing_left_behind, run_on  # noqa: F401 (a fixture)

LSQ = aps.problems.LeastSquares(n=256, dim=8, seed=0)
QUAD = aps.problems.Quadratic(curvature=[1.0, 0.5], x0=[1.0, -1.0])


def rounds_of(trace):
    """{version made: the workers whose pushes made it}, replayed from the events alone."""
    rounds = {}
    for p in trace.pushes:
        rounds.setdefault(p.applied_to + 1, []).append(p.worker)
    return rounds


def check_rounds(run, policy, k, steps):
    """Every version is made by k pushes from k workers; ksync's are fresh, its drops stale; a
    worker that pushed does not pull until its round closed."""
    trace = run.trace
    rounds = rounds_of(trace)
    assert sorted(rounds) == list(range(1, steps + 1)) and len(run.losses) == steps + 1
    assert all(len(w) == k and len(set(w)) == k for w in rounds.values()), rounds
    if policy == "ksync":
        assert all(p.staleness == 0 for p in trace.pushes)
        assert all(d.computed_on < d.version for d in trace.drops)
    else:
        assert trace.drops == []
    waiting, seen = set(), {}
    for e in trace.events:
        if e.kind == "push":
            waiting.add(e.worker)
            seen[e.applied_to] = seen.get(e.applied_to, 0) + 1
            if seen[e.applied_to] == k:
                waiting = set()                                  # its round closed
        elif e.kind == "pull" and len(seen) < steps:
            assert e.worker not in waiting, f"{e}: pulled while its push waited in the round"
    assert aps.violations(trace) == []


@pytest.mark.usefixtures("nothing_left_behind")
@pytest.mark.timeout(120)
@pytest.mark.parametrize("engine", ALL)
@pytest.mark.parametrize("policy", ["ksync", "kasync"])
def test_rounds_of_k_on_every_engine(engine, policy):
    slow = dict(compute_times=[1, 1.3, 3]) if engine == "simulate" else dict(slowdown=[0, 0.002, 0.01])
    run = run_on(engine, LSQ, workers=3, policy=policy, wait_for=2, lr=0.05, steps=60, **slow)
    check_rounds(run, policy, 2, 60)
    assert run.trace.meta["engine"] == engine and run.trace.meta["wait_for"] == 2
    assert run.losses[-1] < 0.2 * run.losses[0]


def test_the_slowest_worker_s_gradients_are_dropped_under_ksync_and_used_under_kasync():
    times = dict(workers=4, wait_for=3, lr=0.05, steps=60, compute_times=[1, 1, 1, 2.5], seed=0)
    ksync = aps.simulate(LSQ, policy="ksync", **times)
    kasync = aps.simulate(LSQ, policy="kasync", **times)
    assert {d.worker for d in ksync.trace.drops} == {3} and 3 not in {p.worker for p in ksync.trace.pushes}
    assert 3 in {p.worker for p in kasync.trace.pushes}
    assert max(p.staleness for p in kasync.trace.pushes) > 0


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), workers=st.integers(1, 5), jitter=st.floats(0.0, 1.0),
       delay=st.floats(0.0, 2.0))
def test_k_equal_to_n_is_sync_and_kasync_with_k_1_is_async(seed, workers, jitter, delay):
    setup = dict(workers=workers, lr=0.05, steps=40, jitter=jitter, random_delay=delay, seed=seed,
                 compute_times=[1.0 + 0.5 * k for k in range(workers)])
    sync = aps.simulate(QUAD, policy="sync", **setup)
    for policy in ("ksync", "kasync"):
        run = aps.simulate(QUAD, policy=policy, wait_for=workers, **setup)
        assert run.trace.pushes == sync.trace.pushes and run.losses == sync.losses
    asynchronous = aps.simulate(QUAD, policy="async", **setup)
    run = aps.simulate(QUAD, policy="kasync", wait_for=1, **setup)
    assert run.trace.pushes == asynchronous.trace.pushes and run.losses == asynchronous.losses


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), workers=st.integers(2, 6), data=st.data(),
       policy=st.sampled_from(["ksync", "kasync"]), delay=st.floats(0.0, 3.0))
def test_rounds_of_k_hold_for_any_k_and_random_stragglers(seed, workers, data, policy, delay):
    k = data.draw(st.integers(1, workers))
    run = aps.simulate(QUAD, workers=workers, policy=policy, wait_for=k, lr=0.05, steps=50,
                       random_delay=delay, seed=seed)
    check_rounds(run, policy, k, 50)


def test_kasync_s_step_takes_the_lr_of_its_stalest_push():
    seen = []

    def schedule(lr, staleness):
        seen.append(staleness)
        return lr

    run = aps.simulate(LSQ, workers=4, policy="kasync", wait_for=2, lr=0.05, steps=40,
                       compute_times=[1, 1, 1, 2.5], lr_schedule=schedule)
    rounds = {}
    for p in run.trace.pushes:
        rounds.setdefault(p.applied_to, []).append(p.staleness)
    assert seen == [max(rounds[v]) for v in range(40)] and max(seen) > 0


def test_ksync_and_kasync_go_on_while_k_workers_are_left():
    for policy in ("ksync", "kasync"):
        server = aps.ParameterServer([1.0, 1.0], workers=3, policy=policy, wait_for=2, lr=0.1)
        server.push(0, np.ones(2), 0)
        server.lose(2, 0.0, "killed")                      # 2 workers left: rounds of 2 still close
        server.push(1, np.ones(2), 0)
        assert server.version == 1 and server.may_start(0) and server.may_start(1)
        with pytest.raises(RuntimeError, match=r"needs 2 pushes per round and 1 workers are left"):
            server.lose(1, 0.0, "killed")


def test_a_worker_that_pushed_waits_until_its_round_closes():
    server = aps.ParameterServer([1.0, 1.0], workers=3, policy="ksync", wait_for=2, lr=0.1)
    server.push(0, np.ones(2), 0)
    assert not server.may_start(0) and server.may_start(1) and server.may_start(2)
    server.push(1, np.ones(2), 0)
    assert server.version == 1 and server.may_start(0)
    assert server.push(2, np.ones(2), 0).kind == "drop" and server.version == 1
    np.testing.assert_allclose(server.params, [0.9, 0.9])     # the mean of two, once


def harmonic(n):
    return sum(1.0 / i for i in range(1, n + 1))


@pytest.mark.parametrize("policy,k", [("sync", 4), ("kasync", 1), ("kasync", 2), ("kasync", 3)])
def test_exponential_compute_times_match_dutta_et_al_s_expected_runtime(policy, k):
    # i.i.d. exponential times of mean 1 (compute_times 0): a round of k pushes among N running
    # workers takes (H_N - H_{N-k}) on average (Dutta et al. 2018), 1/N for async (k = 1)
    extra = {} if policy == "sync" else {"wait_for": k}
    per_version = [aps.simulate(QUAD, workers=4, policy=policy, lr=0.01, steps=1000,
                                compute_times=[0] * 4, random_delay=1.0, seed=seed, loss_every=500,
                                **extra).trace.pushes[-1].time / 1000 for seed in range(4)]
    assert np.mean(per_version) == pytest.approx(harmonic(4) - harmonic(4 - k), rel=0.04)


def test_ksync_without_cancelling_is_slower_than_the_formula_that_cancels():
    # Dutta et al.'s K-sync cancels the late workers' computation; ksync here lets them finish
    # (their gradient is dropped) as in Chen et al.: rounds take longer than H_N - H_{N-k}
    run = aps.simulate(QUAD, workers=4, policy="ksync", wait_for=2, lr=0.01, steps=1000,
                       compute_times=[0] * 4, random_delay=1.0, seed=0, loss_every=500)
    assert run.trace.pushes[-1].time / 1000 > 1.3 * (harmonic(4) - harmonic(2))


def test_random_delay_is_seeded_and_adds_an_exponential_time():
    setup = dict(workers=3, policy="async", lr=0.05, steps=300, compute_times=[0.5] * 3,
                 random_delay=2.0)
    a, b = (aps.simulate(QUAD, seed=7, **setup) for _ in range(2))
    c = aps.simulate(QUAD, seed=8, **setup)
    assert a.trace.events == b.trace.events and a.trace.events != c.trace.events
    extra = np.array([e.end - e.start - 0.5 for e in a.trace.computes])
    assert extra.min() >= 0 and np.mean(extra) == pytest.approx(2.0, rel=0.15)
    assert np.std(extra) == pytest.approx(2.0, rel=0.2)        # an exponential: sd = mean
    assert a.trace.meta["random_delay"] == 2.0


@pytest.mark.parametrize("arguments,message", [
    (dict(policy="ksync"), r"policy='ksync' needs wait_for=k"),
    (dict(policy="kasync", wait_for=5), r"wait_for=5 is not allowed with workers=4"),
    (dict(policy="kasync", wait_for=0), r"wait_for"),
    (dict(policy="async", wait_for=2), r"wait_for=2 is not allowed with policy='async'"),
    (dict(policy="ksync", wait_for=2, max_clocks_ahead=1), r"max_clocks_ahead=1 is not allowed"),
    (dict(policy="ksync", wait_for=2, gate=lambda c, cs, m: True), r"gate= is not allowed"),
    (dict(policy="async", compute_times=[0, 1, 1, 1]), r"compute_times"),
])
def test_wrong_settings_say_what_is_allowed(arguments, message):
    with pytest.raises((ValueError, TypeError), match=message):
        aps.simulate(QUAD, workers=4, lr=0.05, steps=5, **arguments)


def test_ksync_on_a_worker_pushing_twice_in_a_round_is_refused():
    server = aps.ParameterServer([1.0], workers=3, policy="kasync", wait_for=3, lr=0.1)
    server.push(0, np.ones(1), 0)
    with pytest.raises(RuntimeError, match="pushed twice in the round"):
        server.push(0, np.ones(1), 0)
    assert math.isfinite(server.params[0])


@pytest.mark.usefixtures("nothing_left_behind")
@pytest.mark.timeout(90)
@pytest.mark.parametrize("engine", ["processes", "rpc"])
@pytest.mark.parametrize("policy", ["ksync", "kasync"])
def test_a_killed_worker_is_lost_and_rounds_of_k_go_on(engine, policy):
    import test_faults as faults

    prob = faults.least_squares_with(faults.victim_hook(faults.sigkill_self))
    run = aps.train(prob, workers=3, policy=policy, wait_for=2, lr=0.05, steps=300, engine=engine,
                    slowdown=[0.001] * 3)
    (lost,) = run.trace.lost
    assert lost.worker == 1 and len(run.losses) == 301
    check_rounds(run, policy, 2, 300)
    assert all(p.worker != 1 for p in run.trace.pushes if p.time > lost.time + 0.5)


@pytest.mark.usefixtures("nothing_left_behind")
@pytest.mark.timeout(90)
@pytest.mark.parametrize("engine", ["processes", "rpc"])
def test_a_killed_worker_stops_rounds_that_need_every_worker_saying_why(engine):
    import test_faults as faults

    prob = faults.least_squares_with(faults.victim_hook(faults.sigkill_self))
    with pytest.raises(RuntimeError, match=r"worker 1 was lost .*needs 3 pushes per round and 2 "
                                           r"workers are left"):
        aps.train(prob, workers=3, policy="kasync", wait_for=3, lr=0.05, steps=10_000, engine=engine,
                  timeout=10)
