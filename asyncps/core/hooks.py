"""A learner's own piece of the server, run inside the real one.

    apply(params, version, grad, computed_on, lr) -> (new_params, new_version, staleness)
        the asynchronous push (exercise 1): apply `grad`, computed on `computed_on`, to the
        current `params` (at `version`) with the push's learning rate `lr`
    average(grads, workers) -> averaged gradient, or None while the barrier stays closed
        the synchronous round (exercise 2): `grads` maps each worker that pushed to its gradient
    gate(clock, clocks, max_ahead) -> bool
        the SSP gate (exercise 3): may a worker whose clock is `clock` start, given every
        live worker's clock and the SSP threshold (max_clocks_ahead)?
    lr_schedule(lr, staleness) -> the learning rate of a push that is `staleness` versions stale

The built-ins have the same signatures (semantics.py, policies.py). The server calls a learner's
function through `checked(...)`: it gets copies (it cannot corrupt the server's state by
accident), and what it returns is checked and explained in the learner's terms, instead of the
run going on with a broken state.
"""
import numbers

import numpy as np

from . import checks


def check(apply, average, gate, momentum, policy):
    """Which hooks a policy can use (raises with an explanation)."""
    for name, fn in (("apply", apply), ("average", average), ("gate", gate)):
        if fn is not None and not callable(fn):
            raise checks.bad(name, fn, "a function (or None)", TypeError)
    if apply is not None and policy.averages:
        raise ValueError(f"apply= is not allowed with policy={policy.name!r}: a sync server averages a "
                         f"round (use average=); apply= is the asynchronous push (policy 'async' or 'ssp')")
    if average is not None and not policy.averages:
        raise ValueError(f"average= is not allowed with policy={policy.name!r}: only policy='sync' "
                         f"averages a round")
    if gate is not None and not policy.waits:
        raise ValueError(f"gate= is not allowed with policy={policy.name!r}: an async server never "
                         f"holds a worker back (use policy='ssp')")
    if apply is not None and momentum:
        raise ValueError(f"momentum={momentum!r} is not allowed with apply=: your apply decides how "
                         f"a push moves the parameters (keep momentum=0, or add it inside apply)")


def checked_apply(apply):
    def push(params, version, grad, computed_on, lr):
        result = apply(params.copy(), version, grad.copy(), computed_on, lr)
        if not isinstance(result, tuple) or len(result) != 3:
            raise TypeError(f"apply returned {result!r:.60}: it must return a tuple "
                            f"(new_params, new_version, staleness)")
        new_params, new_version, staleness = result
        new_params = np.asarray(new_params, dtype=params.dtype)
        if new_params.shape != params.shape:
            raise ValueError(f"apply returned new_params of shape {new_params.shape}: the parameters "
                             f"have shape {params.shape}")
        if new_version != version + 1:
            raise ValueError(f"apply returned new_version={new_version!r}: the server is at "
                             f"v{version}, so this push must make v{version + 1}")
        if staleness != version - computed_on:
            raise ValueError(f"apply returned staleness={staleness!r}: a gradient computed on "
                             f"v{computed_on} and applied to v{version} is stale by "
                             f"{version - computed_on}")
        return new_params, new_version, staleness
    return push


def checked_average(average):
    def round_(grads, workers):
        step = average({w: g.copy() for w, g in grads.items()}, workers)
        if step is None:
            return None
        like = next(iter(grads.values()))
        step, shape = np.asarray(step, dtype=like.dtype), like.shape
        if step.shape != shape:
            raise ValueError(f"average returned an array of shape {step.shape}: the parameters have "
                             f"shape {shape} (or return None while the barrier is closed)")
        return step
    return round_


def checked_gate(gate):
    def gate_(clock, clocks, max_ahead):
        answer = gate(clock, list(clocks), max_ahead)
        if not isinstance(answer, (bool, np.bool_)) and not (isinstance(answer, numbers.Integral)
                                                             and answer in (0, 1)):
            raise TypeError(f"gate returned {answer!r:.60}: it must return True or False")
        return bool(answer)
    return gate_


def checked_schedule(schedule):
    def rate_(lr, staleness):
        rate = schedule(lr, staleness)
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0 \
                or rate == float("inf"):
            raise ValueError(f"lr_schedule({lr:g}, {staleness}) returned {rate!r}: a learning rate "
                             f"must be a finite number > 0")
        return float(rate)
    return rate_
