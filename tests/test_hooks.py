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


# -- a hook with the wrong signature is refused when it is given, with the signature expected --
WRONG_SIGNATURES = [
    (dict(apply=lambda params, grad: params - 0.1 * grad),
     ["apply=<function <lambda>> is not allowed", "it takes (params, grad)",
      "apply(params, version, grad, computed_on, lr)", "(new_params, new_version, staleness)"]),
    (dict(policy="sync", average=lambda grads: sum(grads.values()) / len(grads)),
     ["average=<function <lambda>>", "it takes (grads)", "average(grads, workers)", "None"]),
    (dict(policy="ssp", gate=lambda clock, clocks: clock - min(clocks) <= 1),
     ["gate=<function <lambda>>", "it takes (clock, clocks)", "gate(clock, clocks, max_ahead)",
      "True or False"]),
    (dict(lr_schedule=lambda staleness: 0.1 / (staleness + 1)),
     ["lr_schedule=<function <lambda>>", "it takes (staleness)", "lr_schedule(lr, staleness)"]),
]


@pytest.mark.parametrize("hook, words", WRONG_SIGNATURES, ids=["apply", "average", "gate", "lr_schedule"])
def test_a_hook_with_the_wrong_signature_is_refused_before_the_run_with_the_one_expected(hook, words):
    for make in (lambda: aps.RunConfig(**hook),                     # at the door: no push made
                 lambda: aps.simulate(LSQ, workers=2, steps=5, **hook),
                 lambda: aps.train(LSQ, workers=2, steps=5, **hook)):
        with pytest.raises(TypeError) as info:
            make()
        message = str(info.value)
        assert "\n" not in message and all(word in message for word in words), message


def test_a_named_function_and_a_class_are_named_and_told_what_to_do():
    def my_apply(params, version, grad, computed_on):
        return params, version + 1, version - computed_on

    with pytest.raises(TypeError, match=r"apply=<function my_apply> is not allowed: it takes "
                                        r"\(params, version, grad, computed_on\)"):
        aps.simulate(LSQ, apply=my_apply)

    class MyPush:
        def __call__(self, params, version, grad, computed_on, lr):
            return params - lr * grad, version + 1, version - computed_on

    with pytest.raises(TypeError, match=r"apply=<class MyPush> .* pass an instance, MyPush\(\.\.\.\)"):
        aps.simulate(LSQ, apply=MyPush)
    assert aps.simulate(LSQ, workers=2, steps=5, apply=MyPush()).trace.to_json() == \
        aps.simulate(LSQ, workers=2, steps=5).trace.to_json()


def test_hooks_the_server_can_call_are_accepted_whatever_their_form():
    import functools

    def with_extra(scale, params, version, grad, computed_on, lr):
        return params - scale * lr * grad, version + 1, version - computed_on

    def with_default(params, version, grad, computed_on, lr, scale=1.0):
        return params - scale * lr * grad, version + 1, version - computed_on

    plain = aps.simulate(LSQ, workers=2, steps=10).params
    for apply in (functools.partial(with_extra, 1.0), with_default,
                  lambda *args: good_apply(*args), lambda params, *rest, **kw: good_apply(params, *rest)):
        assert np.array_equal(aps.simulate(LSQ, workers=2, steps=10, apply=apply).params, plain)
    # a builtin whose signature cannot be read is trusted (max(lr, staleness) is lr while s < lr)
    assert np.array_equal(aps.simulate(LSQ, workers=1, steps=10, lr=1.5, lr_schedule=max).params,
                          aps.simulate(LSQ, workers=1, steps=10, lr=1.5).params)


# -- what a hook returns, and an error raised inside one ---------------------------------------
def test_what_a_hook_returns_is_explained_on_one_line():
    cases = [
        (TypeError, ["apply returned an array of shape (4,)", "new parameters alone",
                     "return new_params, version + 1, version - computed_on"],
         dict(apply=lambda p, v, g, c, lr: p - lr * g)),
        (TypeError, ["apply returned a list of 3 items", "must return a tuple"],
         dict(apply=lambda p, v, g, c, lr: [p - lr * g, v + 1, v - c])),
        (TypeError, ["average returned a list of 1 item", "shaped like the parameters (4,)", "None"],
         dict(policy="sync", average=lambda grads, workers: list(grads.values()))),
        (TypeError, ["gate returned None", "clock 0", "True or False", "return"],
         dict(policy="ssp", max_clocks_ahead=1, gate=lambda clock, clocks, max_ahead: None)),
        (ValueError, ["lr_schedule(0.1, 1) returned 0.0", "stale by 1", "> 0", "lr / (staleness + 1)"],
         dict(workers=3, compute_times=[1, 1, 3], lr=0.1, lr_schedule=lambda lr, s: lr - 0.1 * s)),
    ]
    for error, words, hook in cases:
        with pytest.raises(error) as info:
            aps.simulate(LSQ, steps=20, **{"workers": 2, **hook})
        message = str(info.value)
        assert "\n" not in message and all(word in message for word in words), message


@pytest.mark.parametrize("hook, words", [
    (dict(apply=lambda p, v, g, c, lr: (p - lr * g * (1 / (v - c)), v + 1, v - c)),
     ["ZeroDivisionError came from your apply=", "push that was to make v1", "computed on v0"]),
    (dict(policy="sync", average=lambda grads, workers: grads[5]),
     ["KeyError came from your average=", "workers [0] of workers=2"]),
    (dict(policy="ssp", gate=lambda clock, clocks, max_ahead: clocks[2] <= clock),
     ["IndexError came from your gate=", "clock 0", "clocks=[0, 0]", "max_ahead=2"]),
    (dict(lr_schedule=lambda lr, s: lr / s),
     ["ZeroDivisionError came from your lr_schedule=", "lr_schedule(0.1, 0)", "stale by 0"]),
], ids=["apply", "average", "gate", "lr_schedule"])
def test_an_error_inside_a_hook_keeps_its_type_and_says_which_hook_and_which_push(hook, words):
    with pytest.raises(Exception) as info:
        aps.simulate(LSQ, workers=2, steps=5, lr=0.1, **hook)
    notes = getattr(info.value, "__notes__", [])
    assert len(notes) == 1 and all(word in notes[0] for word in words), notes
    assert type(info.value).__name__ in notes[0] and "\n" not in notes[0]


def test_an_error_inside_a_hook_on_a_real_engine_says_which_hook_too():
    def broken(params, version, grad, computed_on, lr):
        return params - lr * grad * (1 / (version - computed_on)), version + 1, version - computed_on

    with pytest.raises(ZeroDivisionError) as info:
        aps.train(LSQ, workers=2, steps=5, engine="threads", apply=broken)
    assert "came from your apply=" in info.value.__notes__[0]
