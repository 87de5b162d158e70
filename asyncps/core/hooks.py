"""Exercise hooks: a learner's own piece of the server, run inside the real one.

    apply(params, version, grad, computed_on, lr) -> (new_params, new_version, staleness)
        the asynchronous push (exercise 1): apply `grad`, computed on `computed_on`, to the
        current `params` (at `version`)
    average(grads, workers) -> averaged gradient, or None while the barrier stays closed
        the synchronous round (exercise 2): `grads` maps each worker that pushed to its gradient
    gate(clock, clocks, bound) -> bool
        the SSP gate (exercise 3): may a worker whose clock is `clock` start, given every
        live worker's clock and the bound s?

The server checks what a hook returns and says, in the learner's terms, what is wrong,
instead of running on with a broken state.
"""
import numbers

import numpy as np

from . import checks


def check(apply, average, gate, policy):
    for name, fn in (("apply", apply), ("average", average), ("gate", gate)):
        if fn is not None and not callable(fn):
            raise checks.bad(name, fn, "a function (or None)", TypeError)
    if apply is not None and policy == "sync":
        raise ValueError("apply= is not allowed with policy='sync': a sync server averages a round "
                         "(use average=); apply= is the asynchronous push (policy 'async' or 'ssp')")
    if average is not None and policy != "sync":
        raise ValueError(f"average= is not allowed with policy={policy!r}: only policy='sync' "
                         f"averages a round")
    if gate is not None and policy == "async":
        raise ValueError("gate= is not allowed with policy='async': an async server never holds a "
                         "worker back (use policy='ssp')")
    return apply, average, gate


def run_apply(apply, params, version, grad, event, lr):
    result = apply(params.copy(), version, grad.copy(), event.computed_on, lr)
    if not isinstance(result, tuple) or len(result) != 3:
        raise TypeError(f"apply returned {result!r:.60}: it must return a tuple "
                        f"(new_params, new_version, staleness)")
    new_params, new_version, staleness = result
    new_params = np.asarray(new_params, dtype=float)
    if new_params.shape != params.shape:
        raise ValueError(f"apply returned new_params of shape {new_params.shape}: the parameters "
                         f"have shape {params.shape}")
    if new_version != version + 1:
        raise ValueError(f"apply returned new_version={new_version!r}: the server is at v{version}, "
                         f"so this push must make v{version + 1}")
    if staleness != event.staleness:
        raise ValueError(f"apply returned staleness={staleness!r}: a gradient computed on "
                         f"v{event.computed_on} and applied to v{version} is stale by "
                         f"{event.staleness}")
    return new_params


def run_average(average, grads, workers, params):
    step = average(grads, workers)
    if step is None:
        return None
    step = np.asarray(step, dtype=float)
    if step.shape != params.shape:
        raise ValueError(f"average returned an array of shape {step.shape}: the parameters have "
                         f"shape {params.shape} (or return None while the barrier is closed)")
    return step


def run_gate(gate, clock, clocks, bound):
    answer = gate(clock, list(clocks), bound)
    if not isinstance(answer, (bool, np.bool_)) and not (isinstance(answer, numbers.Integral)
                                                         and answer in (0, 1)):
        raise TypeError(f"gate returned {answer!r:.60}: it must return True or False")
    return bool(answer)
