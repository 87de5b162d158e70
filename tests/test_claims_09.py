"""What lecture 09 teaches, asserted on its own settings (smaller): the non-IID x straggler bias and
its fix, asynchrony as implicit momentum, and the parameter server against all-reduce."""
import numpy as np

import asyncps as aps
from asyncps import costs

PROBLEM = aps.problems.LeastSquares(n=512, dim=10, noise=0.1, seed=0)
OPTIMUM = PROBLEM.loss(np.linalg.lstsq(PROBLEM.A, PROBLEM.b, rcond=None)[0])
TIMES = [1, 1, 1, 4]


def settled(problem, seeds=range(5), **kwargs):
    return np.median([aps.simulate(problem, workers=4, policy="async", steps=1500, compute_times=TIMES,
                                   partition="sorted", jitter=0.3, lr=0.05, loss_every=100, seed=s,
                                   **kwargs).losses[-1] - OPTIMUM for s in seeds])


def test_weighting_pushes_removes_most_of_the_non_iid_straggler_bias_and_the_staleness_lr_adds_to_it():
    plain = settled(PROBLEM)
    fair = settled(aps.problems.weighted(PROBLEM, weights=TIMES, workers=4, partition="sorted"))
    aware = settled(PROBLEM, lr_schedule="divide_by_staleness")
    assert fair < 0.5 * plain and aware > plain


def test_the_bias_needs_unequal_push_rates():
    even = np.median([aps.simulate(PROBLEM, workers=4, policy="async", steps=1500, partition="sorted",
                                   jitter=0.3, lr=0.05, loss_every=100, seed=s).losses[-1] - OPTIMUM
                      for s in range(3)])
    assert even < 0.2 * settled(PROBLEM, seeds=range(3))


def test_asynchrony_lowers_the_best_explicit_momentum():
    target = OPTIMUM + 0.01 * (PROBLEM.loss(PROBLEM.x0) - OPTIMUM)

    def best(workers, seeds):
        momenta = [0.0, 0.5, 0.8, 0.9]
        medians = []
        for m in momenta:
            v = []
            for s in seeds:
                run = aps.simulate(PROBLEM, workers=workers, policy="async", lr=0.02, momentum=m,
                                   steps=600, jitter=1.0, seed=s, loss_every=5)
                reached = run.versions_to_reach(target)
                v.append(np.inf if reached is None or run.diverged else reached)
            medians.append(np.median(v))
        return momenta[int(np.argmin(medians))]
    assert best(8, range(5)) < best(1, [0])


def test_all_reduce_beats_a_server_on_dense_models_and_loses_to_async_with_a_straggler():
    even, slow = [0.1] * 8, [0.1] * 7 + [0.4]
    rate = lambda policy, compute, size, density=1.0: costs.gradients_per_second(   # noqa: E731
        policy, compute, size, 1.25e9, density=density)
    assert rate("allreduce", even, 25e6) > 3 * rate("sync_ps", even, 25e6)
    assert rate("allreduce", even, 25e6) > 3 * rate("async_ps", even, 25e6)
    assert rate("async_ps", slow, 1e6) > 2 * rate("allreduce", slow, 1e6)
    assert rate("async_ps", even, 25e6, density=0.01) > rate("allreduce", even, 25e6)
