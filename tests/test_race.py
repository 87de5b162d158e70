"""aps.race: each contender's lr tuned around its own optimum, a race on held-out seeds, first-touch
and stay-below times, paired wins. Checked against brute force (a fine lr grid, the stay time and
the wins recomputed from the runs) and against known values (the Wilson interval)."""
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import asyncps as aps  # noqa: E402
from asyncps.race import wilson  # noqa: E402

NOISY = aps.problems.Quadratic(curvature=[1.0, 10.0], noise=0.5)   # seeds matter: noisy gradients
COMMON = dict(workers=4, steps=60, compute_times=[1, 1, 1, 3], jitter=0.3)
TARGET = 0.05
SEEDS = dict(tune_seeds=range(0, 5), race_seeds=range(100, 108))


def median_time(run, measure):
    t = run.time_to_stay_below(TARGET) if measure == "stay" else run.time_to_reach(TARGET)
    return math.inf if t is None else t


@pytest.fixture(scope="module")
def result():
    return aps.race(NOISY, {"sync": dict(policy="sync"), "async": dict(policy="async"),
                            "ksync": dict(policy="ksync", wait_for=3)},
                    target=TARGET, lrs=(0.01, 1.0), **SEEDS, **COMMON)


# -- Run.time_to_stay_below ------------------------------------------------------------------
def hand_run(losses, diverged=False):
    """A run whose version v was made at time v + 0.5 by one push."""
    pushes = [aps.Push(0, v, v, 0, v + 0.5) for v in range(len(losses) - 1)]
    trace = aps.Trace(events=pushes, losses=list(losses), meta={"workers": 1, "policy": "async"})
    return aps.Run(trace=trace, params=np.zeros(1), diverged=diverged)


def brute_stay(run, target):
    """The first scored version whose loss and every later scored loss are <= target, by brute force."""
    losses = run.losses
    scored = [v for v in range(len(losses)) if not math.isnan(losses[v])]
    for v in scored:
        if all(losses[u] <= target for u in scored if u >= v):
            return float(run.trace.version_times()[v])
    return None


def test_stay_is_after_the_last_bounce_and_skips_versions_not_scored():
    nan = float("nan")
    run = hand_run([5.0, 0.5, nan, 2.0, nan, 0.4, 0.3, nan, 0.2])
    assert run.time_to_reach(1.0) == 0.5                      # v1 touches it...
    assert run.versions_to_stay_below(1.0) == 5 and run.time_to_stay_below(1.0) == 4.5   # ...v3 bounces
    assert run.time_to_stay_below(0.45) == 4.5 and run.time_to_stay_below(0.3) == 5.5
    assert run.time_to_stay_below(0.1) is None                # never below
    assert hand_run([5.0, 0.5, 3.0]).time_to_stay_below(1.0) is None      # ends above: never stays
    assert hand_run([5.0, 0.5, nan, nan]).time_to_stay_below(1.0) == 0.5  # trailing NaN: skipped
    assert hand_run([0.5, 0.4]).time_to_stay_below(1.0) == 0.0            # below from v0
    assert hand_run([5.0, 0.5, 0.4], diverged=True).time_to_stay_below(1.0) is None
    for target in (0.2, 0.3, 0.4, 0.5, 1.0, 2.0, 5.0):
        assert run.time_to_stay_below(target) == brute_stay(run, target), target


@pytest.mark.parametrize("seed", range(6))
def test_stay_matches_brute_force_and_is_never_before_first_touch_on_simulated_runs(seed):
    run = aps.simulate(NOISY, policy="async", lr=0.045, seed=seed, loss_every=3, progress=False,
                       **COMMON)
    assert np.isnan(run.losses).any()                           # loss_every leaves gaps
    for target in (0.02, 0.05, 0.1, 0.3):
        stay, touch = run.time_to_stay_below(target), run.time_to_reach(target)
        assert stay == brute_stay(run, target)
        assert stay is None or (touch is not None and stay >= touch)


def test_a_noisy_run_near_instability_touches_the_target_before_it_stays_below_it():
    runs = [aps.simulate(NOISY, policy="async", lr=0.045, seed=s, progress=False, **COMMON)
            for s in range(6)]
    touch = [r.time_to_reach(TARGET) for r in runs]
    stay = [r.time_to_stay_below(TARGET) for r in runs]
    assert all(s is None or s >= t for s, t in zip(stay, touch))
    assert any(s is None or s > t for s, t in zip(stay, touch) if t is not None)


# -- the lr search -----------------------------------------------------------------------------
def test_the_lr_search_leaves_a_coarse_grid_s_edge_and_brackets_the_best_lr():
    start = [0.001, 0.002, 0.004]                               # all far below async's best lr
    got = aps.race(NOISY, {"async": dict(policy="async")}, target=TARGET, lrs=start,
                   tune_seeds=range(5), race_seeds=range(100, 102), **COMMON)["async"]
    lrs, scores = np.array(got.tried).T
    assert set(start) <= set(lrs) and lrs.max() > 2 * max(start)        # it left the edge
    assert list(lrs) == sorted(lrs) and len(lrs) <= 30
    i = list(lrs).index(got.lr)
    assert 0 < i < len(lrs) - 1 and got.bracketed
    assert lrs[i + 1] / got.lr <= 1.15 + 1e-12 and got.lr / lrs[i - 1] <= 1.15 + 1e-12
    assert np.isfinite(scores[i]) and (scores[i] <= scores).all()
    # an independent control: a brute-force log grid, x1.05 steps, on the same tuning seeds
    fine = np.geomspace(0.01, 0.08, int(np.log(8) / np.log(1.05)) + 1)
    brute = [np.median([median_time(aps.simulate(NOISY, policy="async", lr=float(lr), seed=s,
                                                 progress=False, **COMMON), "stay")
                        for s in range(5)]) for lr in fine]
    assert np.isfinite(min(brute)) and scores[i] <= 1.1 * min(brute)


def test_a_contender_that_never_meets_the_target_is_named_with_the_range_tried():
    with pytest.raises(ValueError, match=r"contender 'sync' never met the target.*\[0\.001"):
        aps.race(NOISY, {"sync": dict(policy="sync", steps=3)}, target=1e-6, lrs=(0.001, 0.01),
                 max_evals=8, **SEEDS, **{k: v for k, v in COMMON.items() if k != "steps"})


# -- the race ----------------------------------------------------------------------------------
def test_held_out_seeds_must_be_disjoint_from_the_tuning_seeds():
    with pytest.raises(ValueError, match=r"race_seeds=.*held out.*\[3, 4\]"):
        aps.race(NOISY, {"async": dict(policy="async")}, target=TARGET, tune_seeds=range(5),
                 race_seeds=range(3, 8), **COMMON)


def test_the_same_arguments_give_the_same_race_and_leave_global_random_state_alone(result):
    np.random.seed(5)
    expected = np.random.random()
    np.random.seed(5)
    again = aps.race(NOISY, {"sync": dict(policy="sync"), "async": dict(policy="async"),
                             "ksync": dict(policy="ksync", wait_for=3)},
                     target=TARGET, lrs=(0.01, 1.0), **SEEDS, **COMMON)
    assert again == result and again.table() == result.table()
    assert np.random.random() == expected


def test_each_contender_is_raced_on_the_held_out_seeds_at_its_tuned_lr(result):
    assert result.race_seeds == tuple(range(100, 108)) and result.tune_seeds == tuple(range(5))
    for c in result.contenders:
        assert dict(c.tried)[c.lr] == min(s for _, s in c.tried)
        runs = [aps.simulate(NOISY, policy=c.name, wait_for=3 if c.name == "ksync" else None,
                             lr=c.lr, seed=s, progress=False, **COMMON) for s in result.race_seeds]
        assert c.stay == tuple(median_time(r, "stay") for r in runs)
        assert c.first_touch == tuple(median_time(r, "first_touch") for r in runs)
        assert all(s >= t for s, t in zip(c.stay, c.first_touch))
        assert c.median() == np.median(c.stay) and c.spread("first_touch") == (min(c.first_touch),
                                                                              max(c.first_touch))


def test_paired_wins_counted_by_hand_equal_the_report(result):
    for a in result.contenders:
        for b in result.contenders:
            if a is b:
                continue
            pair = result.pair(a.name, b.name)
            wins = sum(x < y for x, y in zip(a.stay, b.stay))
            losses = sum(x > y for x, y in zip(a.stay, b.stay))
            assert (pair.wins, pair.losses, pair.ties) == (wins, losses, 8 - wins - losses)
            assert pair.win_interval == wilson(wins, wins + losses)
            assert pair.ratio == np.median([x / y for x, y in zip(a.stay, b.stay)])
            assert pair.ratio_interval[0] <= pair.ratio <= pair.ratio_interval[1]
    assert len(result.pairs) == 6


def test_ties_and_seeds_that_never_meet_the_target_on_a_race_built_by_hand():
    def stays_at(k):                                           # stays below from version k on
        return hand_run([5.0] * k + [0.01]) if k else hand_run([5.0, 5.0])    # 0: never
    plan = {"a": {10: 2, 11: 3, 12: 4, 13: 0}, "b": {10: 3, 11: 3, 12: 2, 13: 0}}
    got = aps.race(None, {name: (lambda lr, seed, ks=ks: stays_at(ks.get(seed, 1)))
                          for name, ks in plan.items()},
                   target=0.1, lrs=[0.1, 0.2, 0.4], max_evals=4, tune_seeds=[0],
                   race_seeds=[10, 11, 12, 13])
    assert got["a"].stay == (1.5, 2.5, 3.5, math.inf) and got["b"].stay == (2.5, 2.5, 1.5, math.inf)
    assert not got["a"].bracketed and len(got["a"].tried) == 4      # a flat score: capped
    pair = got.pair("a", "b")
    assert (pair.wins, pair.losses, pair.ties) == (1, 1, 2)         # 11 and 13 (never, never) tie
    assert pair.win_interval == wilson(1, 2) and pair.ratio == 1.0  # median of 0.6, 1, 7/3, 1
    assert got.pair("b", "a").ratio == 1.0 and got["a"].spread() == (1.5, math.inf)
    assert "never" in got.table() and "3/4" in got.table()


def test_the_wilson_interval_matches_known_values():
    low, high = wilson(8, 10)
    assert abs(low - 0.4902) < 1e-3 and abs(high - 0.9433) < 1e-3
    low, high = wilson(0, 10)
    assert low == 0.0 and abs(high - 0.2775) < 1e-3
    assert wilson(5, 10)[0] == pytest.approx(1 - wilson(5, 10)[1])
    assert wilson(0, 0) == (0.0, 1.0)


def test_a_function_contender_races_like_the_same_dict_contender():
    kw = dict(target=TARGET, lrs=(0.01, 0.1), tune_seeds=range(3), race_seeds=range(10, 13))
    as_dict = aps.race(NOISY, {"async": dict(policy="async")}, **kw, **COMMON)
    as_function = aps.race(None, {"async": lambda lr, seed: aps.simulate(
        NOISY, policy="async", lr=lr, seed=seed, progress=False, **COMMON)}, **kw)
    assert as_function == as_dict


def test_dropped_gradients_count_as_computed_not_applied(result):
    ksync, asynchronous = result["ksync"], result["async"]
    assert ksync.computed_per_time > ksync.applied_per_time > 0
    assert asynchronous.computed_per_time == asynchronous.applied_per_time > 0
    runs = [aps.simulate(NOISY, policy="ksync", wait_for=3, lr=ksync.lr, seed=s, progress=False,
                         **COMMON) for s in result.race_seeds]
    assert all(r.trace.drops for r in runs)
    assert ksync.applied_per_time == np.median([len(r.trace.pushes) / r.trace.duration for r in runs])
    assert ksync.computed_per_time == np.median([(len(r.trace.pushes) + len(r.trace.drops))
                                                 / r.trace.duration for r in runs])


def test_wrong_arguments_are_named():
    one = {"async": dict(policy="async")}
    with pytest.raises(ValueError, match="measure='fastest'"):
        aps.race(NOISY, one, target=TARGET, measure="fastest", **COMMON)
    with pytest.raises(ValueError, match=r"contenders\['async'\] sets lr"):
        aps.race(NOISY, {"async": dict(policy="async", lr=0.1)}, target=TARGET, **COMMON)
    with pytest.raises(TypeError, match="seed=3"):
        aps.race(NOISY, one, target=TARGET, seed=3, **COMMON)
    with pytest.raises(ValueError, match="lrs="):
        aps.race(NOISY, one, target=TARGET, lrs=(0.1,), **COMMON)
    with pytest.raises(ValueError, match="refine_to=1.0"):
        aps.race(NOISY, one, target=TARGET, refine_to=1.0, **COMMON)
    with pytest.raises(TypeError, match="contender 'f' returned 3"):
        aps.race(NOISY, {"f": lambda lr, seed: 3}, target=TARGET)
    with pytest.raises(TypeError, match=r"contenders\['x'\]=5"):
        aps.race(NOISY, {"x": 5}, target=TARGET)


# -- what a learner sees -----------------------------------------------------------------------
def test_the_table_and_the_html_show_every_contender_and_pair_escaped(result):
    text = result.table()
    assert repr(result) == text
    lines = text.splitlines()
    for name in ("sync", "async", "ksync", "sync vs async", "async vs ksync"):
        assert any(line.startswith(name + " ") for line in lines), name
    head = next(line for line in lines if line.startswith("contender"))
    assert head.index("lr") == next(line for line in lines if line.startswith("ksync")).index(
        f"{result['ksync'].lr:.4g}")                            # aligned columns
    odd = aps.race(NOISY, {"<b>&": dict(policy="async")}, target=TARGET, lrs=(0.01, 0.1),
                   tune_seeds=[0], race_seeds=[1], **COMMON)
    page = odd._repr_html_()
    assert "&lt;b&gt;&amp;" in page and "<b>&" not in page and page.count("<tr>") == 2


def test_the_race_figures_draw_every_seed_and_never_show(result, monkeypatch):
    monkeypatch.setattr(plt, "show", lambda *a, **k: pytest.fail("a plotting helper called plt.show()"))
    ax = aps.plot.race(result)
    drawn = sum(c.get_offsets().shape[0] for c in ax.collections if hasattr(c, "get_offsets")
                and c.get_offsets().shape[1:] == (2,))
    finite = sum(np.isfinite(c.stay).sum() + np.isfinite(c.first_touch).sum()
                 for c in result.contenders)
    assert drawn >= finite and [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == \
        ["sync", "async", "ksync"]
    fig, given = plt.subplots()
    assert aps.plot.race_tuning(result, ax=given) is given and given.get_xscale() == "log"
    assert len(given.lines) == 3
    plt.close("all")
