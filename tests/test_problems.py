"""Every built-in problem's gradient is the gradient of its loss; shards split the data as promised."""
import numpy as np
import pytest

import asyncps as aps


def problems():
    yield aps.problems.Quadratic(curvature=[1.0, 3.0, 0.5], x0=[1.0, -1.0, 2.0])
    yield aps.problems.LeastSquares(n=64, dim=4, seed=1)
    yield aps.problems.Logistic(n=64, dim=4, seed=1)
    yield aps.problems.MLP(n=64, dim=3, hidden=5, classes=3, seed=1)
    yield aps.problems.from_functions(lambda x: float(np.sum(np.cos(x))), lambda x: -np.sin(x), [0.3, 1.0])


@pytest.mark.parametrize("prob", list(problems()), ids=lambda p: p.name)
def test_gradient_matches_finite_differences(prob):
    x = prob.x0 + 0.1 * np.random.default_rng(0).standard_normal(prob.dim)
    g = np.asarray(prob.gradient(x, None, np.random.default_rng(0)))
    eps = 1e-6
    numeric = np.array([(prob.loss(x + eps * e) - prob.loss(x - eps * e)) / (2 * eps)
                        for e in np.eye(prob.dim)])
    np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("partition", ["iid", "by_label", "sorted"])
def test_shards_cover_every_example_once(partition):
    prob = aps.problems.Logistic(n=100, dim=3, seed=0)
    shards = prob.shards(4, partition, seed=0)
    assert sorted(np.concatenate(shards).tolist()) == list(range(100))
    assert [len(s) for s in shards] == [25, 25, 25, 25]


def test_non_iid_shards_see_fewer_labels():
    prob = aps.problems.MLP(n=400, dim=3, hidden=4, classes=4, seed=0)
    iid = prob.shards(4, "iid", seed=0)
    by_label = prob.shards(4, "by_label", seed=0)
    assert all(len(set(prob.labels[s])) == 4 for s in iid)
    assert max(len(set(prob.labels[s])) for s in by_label) <= 2


def test_the_mlp_learns():
    prob = aps.problems.MLP(n=256, dim=4, hidden=16, classes=3, seed=0)
    run = aps.simulate(prob, workers=2, policy="async", lr=0.5, steps=150, batch_size=32, seed=0)
    assert run.losses[-1] < 0.5 * run.losses[0] and prob.accuracy(run.params) > 0.8


@pytest.mark.parametrize("array, words", [
    (np.where(np.eye(4, 3) == 1, np.nan, 0.0)[1:], ["X holds NaN at row 0, column 1 (X[0, 1])",
                                                     "2 entries are NaN or inf", "drop or fill"]),
    (np.array([0.0, 1.0, np.inf]), ["X holds inf at row 2 (X[2])", "drop or clip the infinite values"]),
    (np.array([["1", "a"]]), ["X holds text (dtype <U1)", "X.astype(np.float32)"]),
    (np.array([None, 1.0]), ["X holds Python objects", "same length"]),
    (np.zeros((0, 3)), ["X holds no examples (shape (0, 3))"]),
    (np.array(3.0), ["X=array(3.) is not allowed", "one row per example"]),
])
def test_data_must_be_finite_numbers_one_row_per_example(array, words):
    from asyncps.core import checks

    with pytest.raises((ValueError, TypeError)) as refused:
        checks.data("X", array)
    assert all(w in str(refused.value) for w in words), str(refused.value)


def test_finite_data_passes_through_untouched():
    from asyncps.core import checks

    X = np.arange(12.0).reshape(4, 3)
    assert checks.data("X", X) is X and checks.data("y", np.arange(4)) is not None
