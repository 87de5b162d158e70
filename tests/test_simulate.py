"""The simulator against the lecture's claims: staleness, barriers, stragglers, local copies."""
import numpy as np
import pytest

import asyncps as aps


def test_async_with_4_equal_workers_is_3_versions_stale_in_steady_state(lsq):
    run = aps.simulate(lsq, workers=4, policy="async", lr=0.05, steps=300, seed=0)
    stale = [p.staleness for p in run.trace.pushes]
    assert stale[:4] == [0, 1, 2, 3]
    assert set(stale[4:]) == {3}
    assert len(run.losses) == 301 and len(run.trace.pushes) == 300


def test_every_async_push_is_applied_to_the_current_version(lsq):
    run = aps.simulate(lsq, workers=3, policy="async", lr=0.05, steps=100, compute_times=[1, 2, 3])
    assert [p.applied_to for p in run.trace.pushes] == list(range(100))
    assert all(p.staleness == p.applied_to - p.computed_on >= 0 for p in run.trace.pushes)


def test_sync_is_never_stale_and_4_workers_equal_full_batch_gradient_descent(lsq):
    run4 = aps.simulate(lsq, workers=4, policy="sync", lr=0.05, steps=200, compute_times=[1, 1, 1, 4])
    run1 = aps.simulate(lsq, workers=1, policy="sync", lr=0.05, steps=200)
    assert all(p.staleness == 0 for p in run4.trace.pushes)
    assert len(run4.trace.pushes) == 4 * 200 and len(run4.losses) == 201
    np.testing.assert_allclose(run4.params, run1.params, rtol=0, atol=1e-12)
    x = lsq.x0.copy()                                   # and both are plain gradient descent
    for _ in range(200):
        x -= 0.05 * lsq.gradient(x)
    np.testing.assert_allclose(run1.params, x, rtol=0, atol=1e-12)


def test_a_straggler_costs_sync_its_barrier_and_async_its_staleness(lsq):
    slow = [1, 1, 1, 4]
    asy = aps.simulate(lsq, workers=4, policy="async", lr=0.02, steps=1300, compute_times=slow)
    syn = aps.simulate(lsq, workers=4, policy="sync", lr=0.02, steps=100, compute_times=slow)
    asy_rate = len(asy.trace.pushes) / asy.trace.pushes[-1].time
    syn_rate = len(syn.trace.pushes) / syn.trace.pushes[-1].time
    assert asy_rate == pytest.approx(3.25, abs=0.02)
    assert syn_rate == pytest.approx(1.0, abs=1e-9)
    assert all(p.staleness >= 3 for p in asy.trace.pushes if p.worker == 3)
    idle = syn.trace.idle_time_per_worker()
    assert idle[3] == 0 and np.all(idle[:3] > 0)       # the fast workers wait at the barrier
    assert all(w.reason == "barrier" for w in syn.trace.waits)


def test_compute_events_say_which_version_they_read(lsq):
    run = aps.simulate(lsq, workers=2, policy="async", lr=0.05, steps=20, compute_times=[1, 3])
    last_pull = {}
    for e in run.trace.events:
        if e.kind == "pull":
            last_pull[e.worker] = e.version
        elif e.kind == "compute":
            assert e.computed_on == last_pull[e.worker] and e.end > e.start
        elif e.kind == "push":
            assert e.computed_on == last_pull[e.worker]


def test_communication_delay_slows_the_clock_not_the_semantics(lsq):
    run = aps.simulate(lsq, workers=2, policy="async", lr=0.05, steps=40, comm_delay=0.5)
    assert run.trace.pushes[-1].time == pytest.approx(20 * 2.0, abs=2.0)   # 1 compute + 2 × 0.5 per cycle


def test_minibatches_are_seeded(lsq):
    a = aps.simulate(lsq, workers=2, lr=0.05, steps=50, batch_size=16, seed=3)
    b = aps.simulate(lsq, workers=2, lr=0.05, steps=50, batch_size=16, seed=3)
    c = aps.simulate(lsq, workers=2, lr=0.05, steps=50, batch_size=16, seed=4)
    assert np.array_equal(a.params, b.params) and not np.array_equal(a.params, c.params)


def test_push_every_none_never_pushes_and_local_copies_drift_apart(lsq):
    def drift(partition):
        run = aps.simulate(lsq, workers=4, policy="async", lr=0.05, steps=300, push_every=None,
                           partition=partition)
        assert run.trace.pushes == [] and run.losses == [lsq.loss(lsq.x0)]
        assert np.array_equal(run.params, lsq.x0) and len(run.trace.computes) == 4 * 300
        assert len(run.trace.pulls) == 4                  # each worker read v0, once
        return max(np.linalg.norm(p - q) for p in run.worker_params for q in run.worker_params)
    assert drift("sorted") > 3 * drift("iid") > 0


def test_push_every_sends_the_sum_of_local_gradients(lsq):
    run = aps.simulate(lsq, workers=2, policy="sync", lr=0.05, steps=30, push_every=5, fetch_every=5)
    assert len(run.trace.computes) == 2 * 5 * 30 and len(run.trace.pushes) == 2 * 30
    assert run.losses[-1] < 0.05 * run.losses[0]


def test_fetch_every_reads_the_server_less_often(lsq):
    run = aps.simulate(lsq, workers=2, policy="async", lr=0.05, steps=60, fetch_every=3)
    computes, pulls = len(run.trace.computes), len(run.trace.pulls)
    assert pulls == pytest.approx(computes / 3, abs=2)


def test_a_diverging_run_stops_cleanly(lsq, recwarn):
    run = aps.simulate(lsq, workers=4, policy="async", lr=5.0, steps=300)
    assert run.diverged and len(run.losses) < 301 and "diverged" in run.message
    assert "lr" in run.message and not recwarn.list


def test_a_diverging_local_copy_stops_cleanly(recwarn):
    q = aps.problems.Quadratic(curvature=[10.0], x0=[1.0])
    run = aps.simulate(q, workers=2, lr=1.0, steps=2000, push_every=None)
    assert run.diverged and "local copy" in run.message and not recwarn.list


def test_staleness_aware_lr_tames_the_delayed_quadratic():
    q = aps.problems.Quadratic(curvature=[1.0], x0=[1.0])
    plain = aps.simulate(q, workers=8, policy="async", lr=0.5, steps=400)
    aware = aps.simulate(q, workers=8, policy="async", lr=0.5, steps=400, lr_schedule="divide_by_staleness")
    assert plain.diverged or plain.losses[-1] > 1.0
    assert not aware.diverged and aware.losses[-1] < 1e-6


def test_steps_zero_is_just_v0(lsq):
    run = aps.simulate(lsq, workers=3, steps=0)
    assert run.losses == [lsq.loss(lsq.x0)] and run.trace.pushes == []


def test_problem_from_functions_with_a_stochastic_gradient():
    target = np.array([1.0, -2.0])
    prob = aps.problems.from_functions(
        loss=lambda x: float(np.sum((x - target) ** 2)),
        grad=lambda x, shard, rng: 2 * (x - target) + 0.01 * rng.standard_normal(2),
        x0=[0.0, 0.0])
    run = aps.simulate(prob, workers=3, policy="ssp", max_clocks_ahead=1, lr=0.1, steps=200, seed=1)
    np.testing.assert_allclose(run.params, target, atol=0.01)


def test_loss_every_scores_every_nth_version_and_the_last(lsq):
    run = aps.simulate(lsq, workers=2, lr=0.05, steps=25, loss_every=10)
    scored = [v for v, loss in enumerate(run.losses) if not np.isnan(loss)]
    assert scored == [0, 10, 20, 25] and len(run.losses) == 26 and not run.diverged
    full = aps.simulate(lsq, workers=2, lr=0.05, steps=25)
    assert [run.losses[v] for v in scored] == [full.losses[v] for v in scored]
