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


@pytest.mark.parametrize("seed", range(5))
def test_least_squares_loss_from_statistics_is_the_direct_mean(seed):
    """Where dim < n the loss comes from AᵀA, Aᵀb, bᵀb; it must be the direct ½ mean((Aw − b)²)
    to 1e-12 (relative) away from the minimum, and never below 0 at it (noise 0: the minimum is 0)."""
    rng = np.random.default_rng(seed)
    for noise in (0.1, 0.0):
        prob = aps.problems.LeastSquares(n=200, dim=7, noise=noise, seed=seed)
        best = np.linalg.lstsq(prob.A, prob.b, rcond=None)[0]
        for w in [prob.x0, best + rng.standard_normal(7), 1e3 * rng.standard_normal(7)]:
            r = prob.A @ w - prob.b
            assert prob.loss(w) == pytest.approx(0.5 * np.mean(r * r), rel=1e-12)
        assert 0.0 <= prob.loss(best) <= 0.5 * np.mean((prob.A @ best - prob.b) ** 2) + 1e-12
    wide = aps.problems.LeastSquares(n=5, dim=8, seed=seed)      # dim >= n: the direct sum
    w = rng.standard_normal(8)
    assert wide.loss(w) == 0.5 * float(np.add.reduce((wide.A @ w - wide.b) ** 2) / 5)


@pytest.mark.parametrize("make", [lambda: aps.problems.LeastSquares(n=60, dim=3, seed=2),
                                  lambda: aps.problems.Logistic(n=60, dim=3, seed=2)],
                         ids=["LeastSquares", "Logistic"])
def test_a_shards_rows_are_kept_and_a_writable_index_array_is_not(make):
    """rows() keeps a read-only shard's rows; the gradient stays bit for bit the direct one, and an
    index array a learner may change (writable) is gathered afresh each call."""
    prob = make()
    shards = prob.shards(3, "iid", seed=0)
    w = np.array([0.3, -0.2, 0.5])
    with pytest.raises(ValueError):
        shards[0][0] = 1                                  # a shard is read-only
    fresh = make()
    for _ in range(2):                                    # the second call uses what rows() kept
        for s in shards:
            assert np.array_equal(prob.gradient(w, s), fresh.gradient(w, np.array(s)))
    mine = np.array(shards[0])
    before = prob.gradient(w, mine)
    mine[:] = shards[1]
    assert np.array_equal(prob.gradient(w, mine), fresh.gradient(w, np.array(shards[1])))
    assert not np.array_equal(before, prob.gradient(w, mine))
    import pickle
    assert "_rows" not in pickle.loads(pickle.dumps(prob)).__dict__


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("size", [1, 10, 32, 33, 2000])
def test_all_finite_finds_one_bad_entry_at_any_size(size, dtype):
    from asyncps.core.checks import all_finite
    a = np.ones(size, dtype=dtype)
    assert all_finite(a) and all_finite(a.reshape(1, -1))
    for bad in (np.nan, np.inf, -np.inf):
        b = a.copy()
        b[size // 2] = bad
        assert not all_finite(b) and not all_finite(b.reshape(1, -1))
    huge = np.full(size, np.finfo(dtype).max, dtype=dtype)      # finite, though its squares overflow
    assert all_finite(huge)


def test_the_kept_statistics_and_rows_follow_replaced_data_and_in_place_changes_are_refused():
    """What LeastSquares keeps (AᵀA, a shard's rows) is of the arrays it was computed from: a
    replaced A or b is used at once, and changing them in place is refused (it would go unseen)."""
    prob = aps.problems.LeastSquares(n=40, dim=3, seed=0)
    shard = prob.shards(2, "iid", seed=0)[0]
    w = np.array([0.5, -1.0, 2.0])
    prob.loss(w), prob.gradient(w, shard)                   # both kept now
    with pytest.raises(ValueError):
        prob.A[0, 0] = 10.0
    prob.A = 2.0 * prob.A
    prob.b = prob.b + 1.0
    r = prob.A @ w - prob.b
    assert prob.loss(w) == pytest.approx(0.5 * np.mean(r * r), rel=1e-12)
    A, b = prob.A[shard], prob.b[shard]
    assert np.array_equal(prob.gradient(w, shard), A.T @ (A @ w - b) / len(b))
    with pytest.raises(ValueError):
        aps.problems.Logistic(n=20, dim=2, seed=0).X[0, 0] = 1.0
