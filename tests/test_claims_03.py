"""What notebook 03 teaches, checked fast: each assertion is a measured result that could come out
the other way (see notebooks/src/03a-similar-gradients.py,
03b-more-iterations.py and 03c-staleness-and-the-lr.py)."""
import math

import numpy as np
import pytest

import asyncps as aps

LSQ = aps.problems.LeastSquares(n=512, dim=10, seed=0)
TARGET = 0.01
SEEDS = range(10)


def cosine(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def times(policy, lr, compute_times, seeds=SEEDS, **kw):
    out = []
    for seed in seeds:
        run = aps.simulate(LSQ, workers=4, policy=policy, lr=lr, steps=60 if policy == "sync" else 240,
                           compute_times=compute_times, jitter=0.3, seed=seed, **kw)
        t = run.time_to_reach(TARGET)
        out.append(math.inf if t is None else t)
    return np.array(out)


def test_iid_minibatch_cosine_rises_with_batch_size_and_falls_near_the_optimum():
    problem = aps.problems.Logistic(n=2048, dim=10, seed=0)
    shard0, shard1 = problem.shards(2, "iid", seed=0)
    rng = np.random.default_rng(0)

    def mean_cosine(params, b):
        return np.mean([cosine(problem.gradient(params, rng.choice(shard0, b, replace=False)),
                               problem.gradient(params, rng.choice(shard1, b, replace=False)))
                        for _ in range(100)])

    at_v0 = [mean_cosine(problem.x0, b) for b in (8, 32, 512)]
    assert at_v0[0] < at_v0[1] < at_v0[2], at_v0
    assert at_v0[2] - at_v0[0] > 0.4, at_v0
    w = problem.x0.copy()
    for _ in range(3000):
        w = w - problem.gradient(w)
    assert abs(mean_cosine(w, 32)) < 0.2                      # near the optimum: mostly noise
    assert cosine(problem.gradient(w, shard0), problem.gradient(w, shard1)) < -0.9   # they sum to ~0


def test_async_speedup_at_each_best_lr_needs_the_straggler():
    lrs = [0.1, 0.2, 0.5, 1.0]
    speedup = {}
    for scenario, compute_times in [("straggler", [1, 1, 1, 4]), ("none", [1, 1, 1, 1])]:
        best = {}
        for policy in ["sync", "async"]:
            sweep = {lr: times(policy, lr, compute_times) for lr in lrs}
            best[policy] = sweep[min(lrs, key=lambda lr: np.median(sweep[lr]))]
        speedup[scenario] = np.median(best["sync"] / best["async"])
    assert speedup["straggler"] > 1.2, speedup                 # async wins with a straggler ...
    assert speedup["none"] < 0.9, speedup                      # ... and loses without one
    assert speedup["straggler"] / speedup["none"] > 1.8, speedup


def test_same_lr_comparison_overstates_async():
    same_lr = np.median(times("sync", 0.1, [1, 1, 1, 1], seeds=range(3)) /
                        times("async", 0.1, [1, 1, 1, 1], seeds=range(3)))
    assert same_lr > 4, same_lr                                # without any straggler


GRID = [0.01, 0.015, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0]


def by_hand(params, version, grad, computed_on, lr):
    """lr / (s + 1) written out as a push rule: a control that shares no code with lr_schedule."""
    stale = version - computed_on
    return params - lr / (stale + 1) * grad, version + 1, stale


SCHEDULES = {"constant": {}, "divide_by_staleness": {"lr_schedule": "divide_by_staleness"},
             "by hand": {"apply": by_hand}}


def test_divide_by_staleness_moves_the_usable_lr_window_up_it_does_not_widen_it():
    seeds = range(40, 43)                                      # the notebook uses 0-9 and 10-39
    window = {}
    for name, kw in SCHEDULES.items():
        usable = [lr for lr in GRID if np.all(np.isfinite(times("async", lr, [1, 1, 1, 4], seeds, **kw)))]
        window[name] = usable[0], usable[-1]
    (c_lo, c_hi), (d_lo, d_hi) = window["constant"], window["divide_by_staleness"]
    assert window["by hand"] == window["divide_by_staleness"], window
    assert d_lo >= 2 * c_lo and d_hi >= 2 * c_hi, window              # moved up
    assert d_hi / d_lo <= 1.5 * (c_hi / c_lo), window                 # not wider


@pytest.mark.slow
def test_with_a_straggler_the_schedule_is_faster_at_each_rules_tuned_lr_on_fresh_seeds():
    def tuned(kw):
        return min(GRID, key=lambda lr: np.median(times("async", lr, [1, 1, 1, 4], range(40, 50), **kw)))
    fresh = {name: times("async", tuned(kw), [1, 1, 1, 4], range(50, 70), **kw)
             for name, kw in SCHEDULES.items()}
    for name in ["divide_by_staleness", "by hand"]:
        assert np.sum(fresh[name] < fresh["constant"]) >= 15, (name, fresh)


def test_non_iid_with_a_straggler_biases_async_and_the_schedule_makes_it_worse():
    noisy = aps.problems.LeastSquares(n=512, dim=10, noise=1.0, seed=0)
    w_star = np.linalg.lstsq(noisy.A, noisy.b, rcond=None)[0]

    def distance(lr, schedule, compute_times, steps):
        run = aps.simulate(noisy, workers=4, policy="async", lr=lr, lr_schedule=schedule, steps=steps,
                           compute_times=compute_times, partition="sorted")
        return np.linalg.norm(run.params - w_star)

    fair = [distance(0.05, "constant", [1, 1, 1, 1], 800), distance(0.02, "constant", [1, 1, 1, 1], 2000)]
    assert fair[1] < 0.6 * fair[0], fair                       # no straggler: only noise, shrinks with lr
    biased = [distance(0.05, "constant", [1, 1, 1, 4], 800), distance(0.02, "constant", [1, 1, 1, 4], 2000)]
    assert biased[1] > 0.8 * biased[0] and biased[1] > 5 * fair[1], biased   # straggler: a bias
    scheduled = distance(0.08, "divide_by_staleness", [1, 1, 1, 4], 2000)
    assert scheduled > 1.2 * biased[1], (scheduled, biased)


def test_non_iid_costs_async_most_with_a_straggler():
    mlp = aps.problems.MLP(n=2048, dim=16, hidden=32, classes=4, seed=0)
    versions = {(partition, tuple(ct)): aps.simulate(mlp, workers=4, policy="async", lr=0.5, steps=20,
                                                     compute_times=ct, partition=partition).versions_to_reach(0.05)
                for partition in ["iid", "by_label"] for ct in ([1, 1, 1, 1], [1, 1, 1, 4])}
    assert None not in versions.values(), versions
    both = versions["by_label", (1, 1, 1, 4)]
    assert both > 2 * max(v for k, v in versions.items() if k != ("by_label", (1, 1, 1, 4))), versions


def test_delay_bound_on_the_quadratic():
    quad = aps.problems.Quadratic(curvature=[1.0], x0=[1.0])
    limit = 2 * math.sin(math.pi / (2 * (2 * 3 + 1)))           # tau = 3: 4 async workers
    for lr, expected in [(limit - 0.01, False), (limit + 0.01, True)]:
        run = aps.simulate(quad, workers=4, policy="async", lr=lr, steps=2000)
        grew = bool(run.diverged or run.losses[-1] >= run.losses[0])
        assert grew is expected, (lr, run.losses[-1])
