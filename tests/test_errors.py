"""Bad input gets a ValueError or TypeError naming the argument and the value — never a silent run."""
import numpy as np
import pytest

import asyncps as aps

QUAD = aps.problems.Quadratic(curvature=[1.0], x0=[1.0])
LSQ = aps.problems.LeastSquares(n=64, dim=3, seed=0)

BAD = [  # (arguments, error type, text the message must contain)
    (dict(policy="hogwild"), ValueError, "policy='hogwild'"),
    (dict(policy=3), TypeError, "policy=3"),
    (dict(workers=0), ValueError, "workers=0"),
    (dict(workers=2.5), TypeError, "workers=2.5"),
    (dict(workers="4"), TypeError, "workers='4'"),
    (dict(workers=True), TypeError, "workers=True"),
    (dict(workers=3, compute_times=[1, 1]), ValueError, "compute_times"),
    (dict(workers=2, compute_times=[1, 0]), ValueError, "compute_times"),
    (dict(workers=2, compute_times=[1, -2]), ValueError, "compute_times"),
    (dict(workers=2, compute_times=[1, float("nan")]), ValueError, "compute_times"),
    (dict(workers=2, compute_times="fast"), TypeError, "compute_times"),
    (dict(lr=0), ValueError, "lr=0"),
    (dict(lr=-0.1), ValueError, "lr=-0.1"),
    (dict(lr=float("nan")), ValueError, "lr=nan"),
    (dict(lr="0.1"), TypeError, "lr='0.1'"),
    (dict(policy="sync", max_clocks_ahead=1), ValueError, "max_clocks_ahead=1"),
    (dict(max_clocks_ahead=1), ValueError, "use policy='ssp'"),
    (dict(policy="ssp", max_clocks_ahead=-1), ValueError, "max_clocks_ahead=-1"),
    (dict(policy="ssp", max_clocks_ahead=1.5), TypeError, "max_clocks_ahead=1.5"),
    (dict(policy="async", max_clocks_ahead=2), ValueError, "max_clocks_ahead=2"),
    (dict(steps=-1), ValueError, "steps=-1"),
    (dict(steps=10.0), TypeError, "steps=10.0"),
    (dict(lr_schedule="cosine"), ValueError, "lr_schedule='cosine'"),
    (dict(momentum=1.0), ValueError, "momentum=1.0"),
    (dict(jitter=-1), ValueError, "jitter=-1"),
    (dict(comm_delay=float("inf")), ValueError, "comm_delay=inf"),
    (dict(seed=-3), ValueError, "seed=-3"),
    (dict(fetch_every=0), ValueError, "fetch_every=0"),
    (dict(push_every=0), ValueError, "push_every=0"),
    (dict(partition="random"), ValueError, "partition='random'"),
]


@pytest.mark.parametrize("kwargs, error, text", BAD, ids=[str(b[0]) for b in BAD])
def test_bad_argument_names_itself(kwargs, error, text):
    with pytest.raises(error) as info:
        aps.simulate(LSQ, **kwargs)
    assert text in str(info.value)
    assert "allowed" in str(info.value) or "needs" in str(info.value)


def test_problem_must_be_a_problem():
    with pytest.raises(TypeError, match="problem="):
        aps.simulate(lambda x: x, workers=2)


def test_batch_size_larger_than_a_shard_or_without_data():
    with pytest.raises(ValueError, match="batch_size=40"):
        aps.simulate(LSQ, workers=2, batch_size=40)
    with pytest.raises(ValueError, match="batch_size=4"):
        aps.simulate(QUAD, workers=2, batch_size=4)
    with pytest.raises(ValueError, match="partition='sorted'"):
        aps.simulate(QUAD, workers=2, partition="sorted")
    with pytest.raises(ValueError, match="partition='by_label'"):
        aps.simulate(LSQ, workers=2, partition="by_label")
    with pytest.raises(ValueError, match="workers=65"):
        aps.simulate(LSQ, workers=65)


def test_a_gradient_of_the_wrong_shape_from_user_code():
    prob = aps.problems.from_functions(lambda x: 0.0, lambda x: np.zeros(3), x0=[0.0, 0.0])
    with pytest.raises(ValueError, match=r"shape \(3,\).*\(2,\)"):
        aps.simulate(prob, workers=2, steps=5)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_gradient_from_user_code(bad):
    prob = aps.problems.from_functions(lambda x: 0.0, lambda x: np.array([bad]), x0=[0.0])
    with pytest.raises(ValueError, match="NaN or inf"):
        aps.simulate(prob, workers=2, steps=5)


def test_from_functions_checks_its_arguments():
    with pytest.raises(TypeError, match="loss="):
        aps.problems.from_functions(None, lambda x: x, x0=[0.0])
    with pytest.raises(TypeError, match="grad="):
        aps.problems.from_functions(lambda x: 0.0, 3, x0=[0.0])
    with pytest.raises(ValueError, match="x0="):
        aps.problems.from_functions(lambda x: 0.0, lambda x: x, x0=[])
    with pytest.raises(ValueError, match="x0="):
        aps.problems.from_functions(lambda x: 0.0, lambda x: x, x0=[np.nan])


def test_a_loss_that_is_not_a_number():
    prob = aps.problems.from_functions(lambda x: "low", lambda x: x, x0=[1.0])
    with pytest.raises(TypeError, match="loss returned 'low'"):
        aps.simulate(prob, workers=1, steps=3)


def test_problem_constructors_check_their_arguments():
    with pytest.raises(ValueError, match="x0 has 2 entries"):
        aps.problems.Quadratic(curvature=[1.0], x0=[1.0, 2.0])
    with pytest.raises(ValueError, match="curvature"):
        aps.problems.Quadratic(curvature=[-1.0])
    with pytest.raises(ValueError, match="n=0"):
        aps.problems.LeastSquares(n=0)
    with pytest.raises(TypeError, match="dim=2.5"):
        aps.problems.Logistic(dim=2.5)


# -- renamed keywords ----------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda: aps.simulate(aps.problems.Quadratic(), policy="ssp", staleness=1),
    lambda: aps.train(aps.problems.Quadratic(), policy="ssp", staleness=1),
    lambda: aps.compare(staleness=1),
    lambda: aps.ParameterServer([0.0], policy="ssp", staleness=1),
    lambda: aps.widgets.Playground(staleness=1),
])
def test_the_old_ssp_keyword_raises_an_error_naming_the_new_one(call):
    with pytest.raises(TypeError, match=r"staleness= was renamed: use max_clocks_ahead="):
        call()


def test_the_old_lr_schedule_name_raises_an_error_naming_the_new_one():
    with pytest.raises(ValueError, match="lr_schedule='divide_by_staleness'"):
        aps.simulate(aps.problems.Quadratic(), lr_schedule="staleness")


def test_the_launcher_s_old_flag_names_the_new_one(capsys):
    from asyncps import launch

    with pytest.raises(SystemExit):
        launch.parse(["--staleness", "1"])
    assert "--max-clocks-ahead" in capsys.readouterr().err


def test_an_argument_of_the_other_entry_point_is_named_as_such():
    with pytest.raises(TypeError, match="argument of aps.train only"):
        aps.simulate(aps.problems.Quadratic(), slowdown=[0, 0])
    with pytest.raises(TypeError, match="argument of aps.simulate only"):
        aps.train(aps.problems.Quadratic(), compute_times=[1, 1])


# -- the SSP threshold: a stated default, and a message where it does not belong --------------
def test_every_policy_runs_with_no_special_case_and_ssp_records_its_default_threshold():
    from asyncps.core.policies import SSP_MAX_CLOCKS_AHEAD

    assert SSP_MAX_CLOCKS_AHEAD == 2
    for policy in aps.POLICIES:
        run = aps.simulate(LSQ, workers=3, policy=policy, steps=30, compute_times=[1, 1, 4])
        assert not aps.violations(run.trace)
        assert run.trace.meta["max_clocks_ahead"] == (SSP_MAX_CLOCKS_AHEAD if policy == "ssp" else None)
    explicit = aps.simulate(LSQ, workers=3, policy="ssp", max_clocks_ahead=2, steps=30,
                            compute_times=[1, 1, 4])
    default = aps.simulate(LSQ, workers=3, policy="ssp", max_clocks_ahead=None, steps=30,
                           compute_times=[1, 1, 4])
    assert default.trace.to_json() == explicit.trace.to_json() and default.trace.waits
    assert aps.RunConfig(policy="ssp").max_clocks_ahead == 2


@pytest.mark.parametrize("policy, words", [
    ("sync", ["max_clocks_ahead=1 is not allowed with policy='sync'", "SSP threshold", "barrier"]),
    ("async", ["max_clocks_ahead=1 is not allowed with policy='async'", "never holds a worker back"]),
])
def test_a_threshold_with_sync_or_async_says_what_it_means_and_what_to_do(policy, words):
    with pytest.raises(ValueError) as info:
        aps.simulate(LSQ, policy=policy, max_clocks_ahead=1)
    message = str(info.value)
    assert "\n" not in message and all(w in message for w in words), message
    assert "use policy='ssp'" in message and "leave max_clocks_ahead out" in message
    assert "s = 2" in message


def test_lr_schedule_given_a_number_points_to_lr():
    with pytest.raises(TypeError, match=r"lr_schedule=0.05 is not allowed.*pass lr=0.05"):
        aps.simulate(LSQ, lr_schedule=0.05)


# -- a misspelled or borrowed keyword: the closest argument is suggested ----------------------
@pytest.mark.parametrize("entry", ["simulate", "train"])
@pytest.mark.parametrize("given, meant", [("lerning_rate", "lr"), ("learning_rate", "lr"),
                                          ("max_clock_ahead", "max_clocks_ahead"),
                                          ("num_workers", "workers"), ("worker", "workers"),
                                          ("polcy", "policy"), ("threshold", "max_clocks_ahead")])
def test_a_misspelled_keyword_suggests_the_closest_argument(entry, given, meant):
    with pytest.raises(TypeError) as info:
        getattr(aps, entry)(LSQ, **{given: 1})
    message = str(info.value)
    assert f"unexpected keyword argument {given!r}: did you mean {meant}=?" in message, message
    assert "\n" not in message and f"The arguments of aps.{entry} are workers, policy" in message


def test_a_keyword_like_no_argument_lists_them_all():
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'banana'; allowed: workers, "):
        aps.simulate(LSQ, banana=1)
