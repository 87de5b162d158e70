"""Exercise hooks: a learner's push, round, gate and lr schedule run inside the real server."""
import numpy as np
import pytest

import asyncps as aps

LSQ = aps.problems.LeastSquares(n=128, dim=4, seed=0)


def good_apply(params, version, grad, computed_on, lr):
    return params - lr * grad, version + 1, version - computed_on


def good_average(grads, workers):
    return None if len(grads) < workers else sum(grads.values()) / workers


def good_gate(clock, clocks, bound):
    return clock - min(clocks) <= bound


def test_correct_hooks_reproduce_the_built_in_server_exactly():
    plain = aps.simulate(LSQ, workers=3, policy="async", lr=0.05, steps=60, compute_times=[1, 2, 3])
    hooked = aps.simulate(LSQ, workers=3, policy="async", lr=0.05, steps=60, compute_times=[1, 2, 3],
                          apply=good_apply)
    assert hooked.trace.to_json() == plain.trace.to_json()
    sync = dict(workers=3, policy="sync", lr=0.05, steps=30, compute_times=[1, 2, 3])
    assert np.allclose(aps.simulate(LSQ, average=good_average, **sync).params,
                       aps.simulate(LSQ, **sync).params, rtol=0, atol=1e-14)
    ssp = dict(workers=3, policy="ssp", max_clocks_ahead=1, lr=0.05, steps=60, compute_times=[1, 2, 5])
    assert aps.simulate(LSQ, gate=good_gate, **ssp).trace.to_json() == aps.simulate(LSQ, **ssp).trace.to_json()
    rate = aps.simulate(LSQ, workers=3, lr=0.05, steps=60, lr_schedule=lambda lr, s: lr / (s + 1))
    assert np.array_equal(rate.params, aps.simulate(LSQ, workers=3, lr=0.05, steps=60,
                                                    lr_schedule="divide_by_staleness").params)


def test_a_push_applied_to_the_version_it_was_computed_on_is_refused_with_an_explanation():
    def wrong(params, version, grad, computed_on, lr):
        return params - lr * grad, computed_on + 1, 0
    with pytest.raises(ValueError, match=r"must make v\d+"):
        aps.simulate(LSQ, workers=3, policy="async", lr=0.05, steps=20, apply=wrong)


def test_wrong_staleness_and_shapes_are_explained():
    with pytest.raises(ValueError, match="is stale by"):
        aps.simulate(LSQ, workers=3, steps=20,
                     apply=lambda p, v, g, c, lr: (p - lr * g, v + 1, 0))
    with pytest.raises(TypeError, match="tuple"):
        aps.simulate(LSQ, workers=2, steps=5, apply=lambda p, v, g, c, lr: p)
    with pytest.raises(ValueError, match="shape"):
        aps.simulate(LSQ, workers=2, policy="sync", steps=5, average=lambda g, n: np.zeros(2))
    with pytest.raises(TypeError, match="True or False"):
        aps.simulate(LSQ, workers=2, policy="ssp", max_clocks_ahead=1, steps=5, gate=lambda c, cs, b: "yes")
    with pytest.raises(ValueError, match="finite number > 0"):
        aps.simulate(LSQ, workers=2, steps=5, lr_schedule=lambda lr, s: -lr)


def test_hooks_must_fit_the_policy():
    with pytest.raises(ValueError, match="apply= is not allowed with policy='sync'"):
        aps.simulate(LSQ, policy="sync", apply=good_apply)
    with pytest.raises(ValueError, match="average= is not allowed"):
        aps.simulate(LSQ, policy="async", average=good_average)
    with pytest.raises(ValueError, match="gate= is not allowed"):
        aps.simulate(LSQ, policy="async", gate=good_gate)
    with pytest.raises(TypeError, match="apply=3"):
        aps.simulate(LSQ, apply=3)


def test_a_gate_that_never_opens_is_blamed_not_the_simulator():
    with pytest.raises(ValueError, match="gate returned False for every waiting worker"):
        aps.simulate(LSQ, workers=2, policy="ssp", max_clocks_ahead=0, steps=10,
                     gate=lambda c, cs, b: c - min(cs) < b)
