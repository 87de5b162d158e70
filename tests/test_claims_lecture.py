"""What lecture notebooks 01, 02, 05 and 06 teach, asserted on the package (each test can fail).

- 02/05: a push is a delta. A stale push's gradient, evaluated at params[computed_on], is added to
  params[applied_to]: params[applied_to + 1] == params[applied_to] - lr * g, and with two pushes
  from v0, v2 == v0 - lr * (g0 + g1). Overwriting with the worker's copy would lose the other step.
- 01: the cost model. compute_times is time per gradient whatever the shard, so 4 sync workers are
  no faster than 1; with compute time proportional to the shard, they reach the target sooner.
- 05: periodic averaging on sorted shards with a constant lr plateaus above the best loss, and the
  plateau shrinks with the lr; one average at the end is near-best for IID least squares only.
"""
import numpy as np
import pytest

import asyncps as aps

QUADRATIC = dict(curvature=[1.0, 4.0], x0=[1.0, 1.0])


def stale_pushes(run):
    return [p for p in run.trace.pushes if p.staleness > 0]


@pytest.mark.parametrize("lr,times", [(0.1, [1, 1.5]), (0.05, [1, 2.5]), (0.2, [1.5, 1])])
def test_a_stale_push_is_the_gradient_at_computed_on_added_to_applied_to(lr, times):
    q = aps.problems.Quadratic(**QUADRATIC)
    run = aps.simulate(q, workers=2, policy="async", lr=lr, steps=12, compute_times=times)
    params = run.trace.params
    assert len(params) == 13
    late = stale_pushes(run)
    assert late, "the run must contain stale pushes"
    for push in late:
        v, u = push.computed_on, push.applied_to
        g = q.gradient(params[v])
        np.testing.assert_allclose(params[u + 1], params[u] - lr * g, rtol=0, atol=1e-12)
        # ... and not the gradient at the version it was applied to: that is the staleness error
        assert not np.allclose(params[u + 1], params[u] - lr * q.gradient(params[u]))


def test_deltas_commute_so_the_late_push_loses_nothing():
    q = aps.problems.Quadratic(**QUADRATIC)
    lr = 0.1
    run = aps.simulate(q, workers=2, policy="async", lr=lr, steps=12, compute_times=[1, 1.5])
    first, second = run.trace.pushes[:2]
    assert (first.computed_on, first.applied_to) == (0, 0)
    assert (second.computed_on, second.applied_to, second.staleness) == (0, 1, 1)
    v0, v1, v2 = (run.trace.params[k] for k in range(3))
    g0 = g1 = q.gradient(v0)                        # both computed on v0
    np.testing.assert_allclose(v2, v0 - lr * (g0 + g1), atol=1e-12)
    np.testing.assert_allclose(v2, v1 - lr * g1, atol=1e-12)
    overwrite = v0 - lr * g1                         # the late worker's own copy
    lost = overwrite - v2
    np.testing.assert_allclose(lost, lr * g0, atol=1e-12)   # exactly the other worker's step
    assert np.abs(lost).max() > 0.1


def test_a_local_steps_push_is_the_copys_delta():
    q = aps.problems.Quadratic(**QUADRATIC)
    lr, n = 0.05, 5
    run = aps.simulate(q, workers=2, policy="async", lr=lr, steps=6, compute_times=[1, 1.5],
                       push_every=n)
    late = stale_pushes(run)
    assert late
    for push in late:
        v, u = push.computed_on, push.applied_to
        copy = run.trace.params[v].copy()
        for _ in range(n):
            copy -= lr * q.gradient(copy)
        np.testing.assert_allclose(run.trace.params[u + 1],
                                   run.trace.params[u] + (copy - run.trace.params[v]), atol=1e-12)
        assert not np.allclose(run.trace.params[u + 1], copy)   # the server did not take the copy


def test_sync_per_gradient_cost_gives_no_speed_up_but_shard_proportional_cost_does():
    problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)
    target = 0.05
    flat = {w: aps.simulate(problem, workers=w, policy="sync", lr=0.05, steps=100).time_to_reach(target)
            for w in (1, 4)}
    assert flat[1] is not None and flat[4] == pytest.approx(flat[1])   # time per gradient: no gain
    shard = {w: aps.simulate(problem, workers=w, policy="sync", lr=0.05, steps=100,
                             compute_times=[1 / w] * w) for w in (1, 4)}
    assert shard[4].versions_to_reach(target) == shard[1].versions_to_reach(target)
    assert shard[4].time_to_reach(target) == pytest.approx(shard[1].time_to_reach(target) / 4)
    slow = {w: aps.simulate(problem, workers=w, policy="sync", lr=0.05, steps=100,
                            compute_times=[1 / w] * w, comm_delay=0.05) for w in (1, 4)}
    speed_up = slow[1].time_to_reach(target) / slow[4].time_to_reach(target)
    assert 1 < speed_up < 4                          # messages eat into the speed-up


def test_periodic_averaging_plateau_on_sorted_shards_shrinks_with_the_lr():
    problem = aps.problems.LeastSquares(n=512, dim=10, noise=1.0, seed=0)
    best = aps.simulate(problem, workers=1, lr=0.5, steps=400).losses[-1]
    gap = {}
    for lr, gradients in ((0.1, 2000), (0.025, 8000)):
        run = aps.simulate(problem, workers=4, policy="sync", lr=lr, steps=gradients // 20,
                           push_every=20, partition="sorted")
        gap[lr] = run.losses[-1] - best
    assert gap[0.1] > 0.01                            # a plateau above the best loss
    assert gap[0.025] < gap[0.1] / 5                  # a smaller lr shrinks it
    iid = aps.simulate(problem, workers=4, policy="sync", lr=0.1, steps=100, push_every=20,
                       partition="iid")
    assert iid.losses[-1] - best < 0.001              # IID shards: almost no plateau


def test_one_average_at_the_end_is_near_best_for_iid_least_squares_only():
    problem = aps.problems.LeastSquares(n=512, dim=10, noise=1.0, seed=0)
    best = aps.simulate(problem, workers=1, lr=0.5, steps=400).losses[-1]
    gap = {}
    for partition in ("iid", "sorted"):
        run = aps.simulate(problem, workers=4, lr=0.1, steps=300, push_every=None, partition=partition)
        assert len(run.trace.pushes) == 0
        gap[partition] = problem.loss(np.mean(run.worker_params, axis=0)) - best
    assert gap["iid"] < 0.002 and gap["sorted"] > 0.05


def test_a_decaying_lr_removes_the_plateau_a_constant_lr_keeps():
    import copy
    problem = aps.problems.LeastSquares(n=512, dim=10, noise=1.0, seed=0)
    best = aps.simulate(problem, workers=1, lr=0.5, steps=400).losses[-1]
    constant = aps.simulate(problem, workers=4, policy="sync", lr=0.1, steps=400, push_every=20,
                            partition="sorted")
    start = problem.x0
    for lr in (0.1, 0.05, 0.025, 0.0125):            # the same 8000 gradients per worker, lr halved
        stage = copy.copy(problem)
        stage.x0 = start
        start = aps.simulate(stage, workers=4, policy="sync", lr=lr, steps=100, push_every=20,
                             partition="sorted").params
    assert constant.losses[-1] - best > 0.01
    assert problem.loss(start) - best < (constant.losses[-1] - best) / 20
