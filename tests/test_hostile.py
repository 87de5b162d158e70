"""Hostile input, searched by Hypothesis: every public argument of simulate, train, Trace.from_json,
the widgets' constructors and the grader either works or raises ValueError/TypeError naming the
argument — never a hang, a crash, a numpy warning leaking out, or a half-written file."""
import json
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncps as aps

LSQ = aps.problems.LeastSquares(n=64, dim=3, seed=0)
QUAD = aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0])
garbage = st.one_of(st.none(), st.booleans(), st.text(max_size=3), st.floats(allow_nan=True),
                    st.lists(st.integers(), max_size=2))
special = st.sampled_from([float("nan"), float("inf"), -float("inf")])
number = st.one_of(st.floats(min_value=-5, max_value=50), special, st.integers(-3, 30), garbage)
small_int = st.one_of(st.integers(-3, 6), garbage)

SIM = dict(
    workers=small_int, policy=st.sampled_from(["sync", "async", "ssp", "hogwild", 3, None]),
    max_clocks_ahead=st.one_of(st.none(), st.integers(-2, 5), garbage), lr=number,
    lr_schedule=st.sampled_from(["constant", "divide_by_staleness", "cosine", None, 5]), momentum=number,
    steps=st.one_of(st.integers(-3, 40), garbage),
    compute_times=st.one_of(st.none(), st.lists(number, max_size=7), garbage), jitter=number,
    comm_delay=number, partition=st.sampled_from(["iid", "by_label", "sorted", "random", None]),
    batch_size=st.one_of(st.none(), st.integers(-2, 80), garbage),
    fetch_every=st.one_of(st.none(), st.integers(-1, 5), garbage),
    push_every=st.one_of(st.none(), st.integers(-1, 5), garbage),
    seed=st.one_of(st.integers(-2, 2 ** 40), garbage), loss_every=st.one_of(st.integers(-1, 5), garbage),
    trace_limit=st.one_of(st.none(), st.integers(-1, 50), garbage))


def works_or_names(call, kwargs):
    """Run call(**kwargs): fine, or a ValueError/TypeError whose message names a given argument."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # a leaking numpy warning fails the test
        try:
            return call(**kwargs)
        except (ValueError, TypeError) as err:
            message = str(err)
            assert any(f"{name}=" in message or name in message for name in kwargs), message
            assert "allowed" in message or "must" in message or "needs" in message, message
            return None


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(problem=st.sampled_from([LSQ, QUAD]), data=st.fixed_dictionaries({}, optional=SIM))
def test_simulate_survives_any_argument(problem, data):
    run = works_or_names(lambda **kw: aps.simulate(problem, **kw), data)
    if run is not None:
        steps = data.get("steps", 100)
        assert len(run.losses) <= (steps if isinstance(steps, int) else 100) + 1 or data.get("push_every", 1) is None
        assert aps.violations(run.trace) == [] or run.diverged


TRAIN = dict(workers=st.one_of(st.integers(-1, 4), garbage), policy=SIM["policy"],
             max_clocks_ahead=SIM["max_clocks_ahead"], lr=number, steps=st.one_of(st.integers(-2, 15), garbage),
             slowdown=st.one_of(st.none(), st.lists(st.one_of(st.floats(-1, 0.002), special), max_size=5), garbage),
             lock=st.one_of(st.booleans(), garbage), timeout=st.one_of(st.floats(-1, 30), garbage),
             engine=st.sampled_from(["threads", "mpi", None]), device=st.sampled_from(["cpu", "tpu", 3]),
             batch_size=SIM["batch_size"], loss_every=SIM["loss_every"])


@pytest.mark.timeout(300)
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.fixed_dictionaries({}, optional=TRAIN))
def test_train_survives_any_argument(data):
    if data.get("timeout") is not None and isinstance(data["timeout"], float) and 0 < data["timeout"] < 1:
        data["timeout"] = 1.0                     # a legal but tiny timeout may rightly fire: not this test
    run = works_or_names(lambda **kw: aps.train(LSQ, **kw), data)
    if run is not None and data.get("lock", True) is not False:
        assert aps.violations(run.trace) == []


GOOD = aps.simulate(LSQ, workers=3, policy="ssp", max_clocks_ahead=1, lr=0.05, steps=20,
                    compute_times=[1, 2, 3]).trace.to_json()


@settings(max_examples=300, deadline=None)
@given(cut=st.integers(0, len(GOOD) - 1))
def test_a_truncated_trace_file_says_where_it_breaks(cut, tmp_path_factory):
    path = tmp_path_factory.mktemp("t") / "trace.json"
    path.write_text(GOOD[:cut])
    with pytest.raises(ValueError, match="not valid JSON|not an asyncps trace"):
        aps.Trace.from_json(path)


json_value = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False)
                          | st.text(max_size=4), lambda inner: st.lists(inner, max_size=2), max_leaves=4)


@settings(max_examples=300, deadline=None)
@given(index=st.integers(0, 200), key=st.sampled_from(["worker", "version", "computed_on", "applied_to",
                                                       "staleness", "time", "start", "end", "reason", "kind",
                                                       "extra"]),
       value=json_value, drop=st.booleans())
def test_a_hand_edited_trace_works_or_says_which_event(index, key, value, drop):
    data = json.loads(GOOD)
    i = index % len(data["events"])
    if drop:
        data["events"][i].pop(key, None)
    else:
        data["events"][i][key] = value
    try:
        trace = aps.Trace.from_dict(data)
    except ValueError as err:
        assert f"event {i}" in str(err), str(err)
    else:
        assert len(trace.events) == len(data["events"])


@settings(max_examples=150, deadline=None)
@given(frame=st.one_of(st.integers(-3, 200), st.just("stale"), garbage),
       width=st.one_of(st.integers(0, 5000), garbage), interval=st.one_of(st.integers(-5, 70_000), garbage))
def test_widget_constructors_survive_any_argument(frame, width, interval):
    run = aps.simulate(QUAD, workers=2, steps=5, compute_times=[1, 1.5])
    works_or_names(lambda **kw: aps.widgets.Timeline(run, **kw),
                   dict(frame=frame, width=width, interval=interval))
    works_or_names(lambda **kw: aps.widgets.ParameterView(run, QUAD, **kw), dict(frame=frame))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.fixed_dictionaries({}, optional=dict(
    workers=st.one_of(st.integers(-1, 20), garbage), policy=SIM["policy"],
    max_clocks_ahead=st.one_of(st.integers(-1, 60), garbage), lr=number, straggler=number,
    partition=SIM["partition"], push_every=st.one_of(st.integers(-1, 12), garbage),
    steps=st.one_of(st.integers(-1, 60), garbage))))
def test_playground_constructor_survives_any_argument(data):
    works_or_names(lambda **kw: aps.widgets.Playground(**kw), data)


@settings(max_examples=40, deadline=None)
@given(notebook=st.one_of(st.text(max_size=8), garbage), solutions=st.one_of(st.text(max_size=8), garbage),
       timeout=st.one_of(number, st.just(5.0)))
def test_the_grader_and_the_self_check_survive_any_argument(notebook, solutions, timeout):
    from asyncps import check, grade
    works_or_names(lambda **kw: grade.grade(**kw), dict(notebook=notebook, solutions=solutions, timeout=timeout))
    works_or_names(lambda **kw: check.check(**kw), dict(notebook=notebook, timeout=timeout))


def test_a_trace_file_is_never_half_written(tmp_path, monkeypatch):
    path = tmp_path / "trace.json"
    path.write_text(GOOD)
    import asyncps.core.atomic as atomic

    real_replace = atomic.os.replace

    def crash(*_):
        raise OSError("disk full")
    monkeypatch.setattr(atomic.os, "replace", crash)
    with pytest.raises(OSError):
        aps.Trace.from_json(GOOD).to_json(path.with_name("other.json"))
    monkeypatch.setattr(atomic.os, "replace", real_replace)
    assert aps.Trace.from_json(path).to_json() == GOOD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.json"]
