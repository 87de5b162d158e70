"""Claim A read in time (notebook 03c, "Claim A in time"), checked on seeds 100-109, which the
notebook does not use: a stale gradient is close to its shard's fresh one while lr · τ is small,
and no longer close near the stability limit; every push respects the smoothness bound
L · lr · τ · G; the MLP shows the same trend at a larger lr · τ.

The baseline is a hand-written delayed-gradient recursion, x_{t+1} = x_t − lr ∇f_k(x_{t−τ}) with a
fixed τ = N − 1 and round-robin shards of its own, with the gradient written out by hand: it shares
no code with the notebook's measurement nor with the simulator. The simulator-based measurement
below is written here again, independently of the notebook's.
"""
import math

import numpy as np
import pytest

import asyncps as aps

LSQ = aps.problems.LeastSquares(n=512, dim=10, seed=0)
A, B = LSQ.A, LSQ.b
LAMBDA_MAX = float(np.linalg.eigvalsh(A.T @ A / len(B))[-1])
SEEDS = range(100, 110)
WORKERS = [2, 4, 8]
FRACTIONS = [0.02, 0.05, 0.1, 0.2, 0.4, 0.7, 0.9]       # of the stability limit for τ = N − 1


def limit_lr(tau):
    """x_{t+1} = x_t − a x_{t−τ} converges iff 0 < a < 2 sin(π / (2(2τ + 1))), a = lr · λ_max."""
    return 2 * math.sin(math.pi / (2 * (2 * tau + 1))) / LAMBDA_MAX


def norm(v):
    return float(np.sqrt(v @ v))


def by_hand_gradient(x, rows):
    """∇ of ½ mean((A w − b)²) over `rows`, written out."""
    residual = A[rows] @ x - B[rows]
    return A[rows].T @ residual / len(rows)


def delayed_recursion(lr, workers, seed, steps=200):
    """Relative errors ‖∇f_k(x_{t−τ}) − ∇f_k(x_t)‖ / ‖∇f_k(x_t)‖ of x_{t+1} = x_t − lr ∇f_k(x_{t−τ}),
    τ = workers − 1, worker k = t mod workers on a shard of its own, for t ≥ τ."""
    tau = workers - 1
    own_shards = np.array_split(np.random.default_rng([seed, 99]).permutation(len(B)), workers)
    xs, errors = [np.zeros(A.shape[1])], []
    for t in range(steps):
        rows = own_shards[t % workers]
        g_stale, g_fresh = by_hand_gradient(xs[max(t - tau, 0)], rows), by_hand_gradient(xs[t], rows)
        if t >= tau:
            errors.append(norm(g_stale - g_fresh) / norm(g_fresh))
        xs.append(xs[t] - lr * g_stale)
    return np.array(errors)


def simulated(problem, workers, lr, seed, steps=200, smoothness=None):
    """Per stale push of an async run (jitter 0.3, equal compute times): columns lr · τ,
    ‖g_stale − g_fresh‖/‖g_fresh‖ (same shard), cosine, bound L · lr · τ · G / ‖g_fresh‖ (NaN without
    `smoothness`), ‖g_stale − g_fresh‖/‖Δx‖, cosine with the whole-data gradient."""
    version_params, pushed = {}, {}

    def keep(params, version, grad, computed_on, lr):
        version_params[version], pushed[version] = params.copy(), grad.copy()
        return params - lr * grad, version + 1, version - computed_on

    run = aps.simulate(problem, policy="async", workers=workers, lr=lr, steps=steps, seed=seed,
                       jitter=0.3, compute_times=[1.0] * workers, apply=keep)
    shards = problem.shards(workers, "iid", seed=seed)
    out = []
    for p in run.trace.pushes:
        if p.staleness < 1:
            continue
        x_then, x_now, g_stale = version_params[p.computed_on], version_params[p.applied_to], pushed[p.applied_to]
        g_fresh = problem.gradient(x_now, shards[p.worker])
        g_whole = problem.gradient(x_now, np.arange(problem.n))
        gap = norm(g_stale - g_fresh)
        largest = max(norm(pushed[v]) for v in range(p.computed_on, p.applied_to))
        bound = (math.nan if smoothness is None else
                 smoothness(shards[p.worker]) * lr * p.staleness * largest / norm(g_fresh))
        out.append([lr * p.staleness, gap / norm(g_fresh), g_stale @ g_fresh / (norm(g_stale) * norm(g_fresh)),
                    bound, gap / norm(x_then - x_now), g_stale @ g_whole / (norm(g_stale) * norm(g_whole))])
    return np.array(out)


def shard_L(rows):
    return float(np.linalg.eigvalsh(A[rows].T @ A[rows] / len(rows))[-1])


@pytest.fixture(scope="module")
def measured():
    """{(workers, fraction): rows of every seed}, on the notebook's grid, with seeds 100-109."""
    return {(n, f): np.concatenate([simulated(LSQ, n, f * limit_lr(n - 1), seed, smoothness=shard_L)
                                    for seed in SEEDS])
            for n in WORKERS for f in FRACTIONS}


def pooled(measured, low, high):
    rows = np.concatenate(list(measured.values()))
    return rows[(rows[:, 0] >= low) & (rows[:, 0] < high)]


def test_the_recorded_gradient_is_the_shard_s_gradient_at_computed_on():
    """The premise of the measurement: what a push applied is its shard's gradient at computed_on."""
    kept = {}

    def keep(params, version, grad, computed_on, lr):
        kept[version] = (params.copy(), grad.copy(), computed_on)
        return params - lr * grad, version + 1, version - computed_on

    run = aps.simulate(LSQ, policy="async", workers=4, lr=0.05, steps=60, seed=100, jitter=0.3,
                       compute_times=[1.0] * 4, apply=keep)
    shards = LSQ.shards(4, "iid", seed=100)
    stale = [p for p in run.trace.pushes if p.staleness > 0]
    assert len(stale) > 40
    for p in stale:
        _, grad, computed_on = kept[p.applied_to]
        assert computed_on == p.computed_on
        assert np.allclose(grad, by_hand_gradient(kept[p.computed_on][0], shards[p.worker]), rtol=1e-12)


def test_the_recursion_alone_small_lr_tau_is_close_the_limit_is_not():
    for workers in WORKERS:
        tau = workers - 1
        small_lr = 0.05 * limit_lr(tau)
        small = np.median(np.concatenate([delayed_recursion(small_lr, workers, s) for s in SEEDS]))
        near = np.median(np.concatenate([delayed_recursion(0.9 * limit_lr(tau), workers, s) for s in SEEDS]))
        assert small < 0.1, (workers, small)
        assert 0.5 < small / (LAMBDA_MAX * small_lr * tau) < 1.5, (workers, small)   # ∝ lr · τ · λ
        assert near > 0.4, (workers, near)
        assert near > 5 * small, (workers, small, near)


@pytest.mark.slow
def test_the_simulator_s_measurement_agrees_with_the_recursion(measured):
    ratios, sim, rec = {}, [], []
    for (workers, f), rows in measured.items():
        recursion = np.concatenate([delayed_recursion(f * limit_lr(workers - 1), workers, s) for s in SEEDS])
        sim.append(np.median(rows[:, 1]))
        rec.append(np.median(recursion))
        ratios[workers, f] = sim[-1] / rec[-1]
    for (workers, f), ratio in ratios.items():
        assert 0.4 < ratio < 2.5, (workers, f, ratio)
        if f <= 0.1:                                     # far from the limit: the same numbers
            assert 0.8 < ratio < 1.25, (workers, f, ratio)
    rank = lambda v: np.argsort(np.argsort(v))           # noqa: E731
    spearman = np.corrcoef(rank(sim), rank(rec))[0, 1]
    assert spearman > 0.8, spearman                      # the same trend across the 21 settings


@pytest.mark.slow
def test_the_notebook_s_conclusion_on_fresh_seeds(measured):
    edges = [0.0, 0.03, 0.1, 0.3, 0.6, 1.0, 1.5, np.inf]
    medians = [np.median(pooled(measured, lo, hi)[:, 1]) for lo, hi in zip(edges, edges[1:])]
    assert np.all(np.diff(medians) > 0), medians          # the error grows with lr · τ
    small = pooled(measured, 0.0, 0.1)
    assert np.median(small[:, 1]) < 0.06, np.median(small[:, 1])
    assert np.quantile(small[:, 2], 0.1) > 0.999
    limits = [tau * limit_lr(tau) for tau in (1, 3, 7)] + [math.pi / (2 * LAMBDA_MAX)]
    assert 0.6 <= min(limits) and max(limits) < 1.5       # the bins the notebook calls "near"
    near = pooled(measured, 0.6, 1.5)
    assert np.median(near[:, 1]) > 0.3, np.median(near[:, 1])
    assert np.quantile(near[:, 2], 0.1) < 0.5
    assert np.mean(near[:, 2] < 0) > 0.03                 # some point against the fresh gradient
    # against the whole-data gradient, the shard, not the age, separates them at small lr · τ
    assert np.median(small[:, 5]) < np.quantile(small[:, 2], 0.1) - 0.01


def test_every_push_respects_the_smoothness_bound_which_says_nothing_near_the_limit(measured):
    rows = np.concatenate(list(measured.values()))
    assert np.all(rows[:, 1] <= rows[:, 3] * (1 + 1e-9))
    assert np.all(rows[:, 4] <= max(shard_L(s) for n in WORKERS for seed in SEEDS
                                    for s in LSQ.shards(n, "iid", seed=seed)) * (1 + 1e-9))
    assert np.median(pooled(measured, 0.0, 0.1)[:, 3]) < 0.5
    assert np.median(pooled(measured, 0.6, 1.0)[:, 3]) > 1.0


@pytest.fixture
def one_torch_thread():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
def test_the_mlp_shows_the_same_trend_at_a_larger_lr_tau(measured, one_torch_thread):
    mlp = aps.problems.MLP(n=256, dim=4, hidden=8, classes=3, seed=0)
    rows = np.concatenate([simulated(mlp, 4, lr, seed, steps=150) for lr in [0.3, 1.0, 3.0, 10.0]
                           for seed in SEEDS])
    edges = [0.0, 1.0, 3.0, 10.0, np.inf]
    medians = [np.median(rows[(rows[:, 0] >= lo) & (rows[:, 0] < hi), 1]) for lo, hi in zip(edges, edges[1:])]
    assert np.all(np.diff(medians) > 0), medians
    lsq_rows = np.concatenate(list(measured.values()))
    assert np.median(rows[:, 4]) < np.median(lsq_rows[:, 4]) / 3     # flatter along the way ...
    at_one = rows[(rows[:, 0] >= 0.3) & (rows[:, 0] < 1.0), 1]
    assert np.median(at_one) < np.median(pooled(measured, 0.3, 1.0)[:, 1]) / 2   # ... so closer
