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

A hook is checked twice: when the run is configured (`check`: does the policy use it, and can the
server call it with the arguments above?), and on every call (`checked_*`: what it returns). An
error raised inside a learner's hook gets a last line naming the hook and the push it was at.
In a notebook, such an error (and one in what a hook returned) shows the learner's own code only:
IPython asks an error for `_render_traceback_()` before it draws one, and `shown` gives the error
one that asks the renderer registered here (the package registers asyncps/check.py's, which draws
the traceback without the frames inside asyncps; the core never imports IPython).
"""
import inspect
import numbers

import numpy as np

from . import checks

# How the server calls each hook (every argument positional) and what it expects back.
CALLS = {"apply": ("apply(params, version, grad, computed_on, lr)",
                   "(new_params, new_version, staleness)"),
         "average": ("average(grads, workers)",
                     "the averaged gradient (or None while the barrier stays closed)"),
         "gate": ("gate(clock, clocks, max_ahead)", "True or False"),
         "lr_schedule": ("lr_schedule(lr, staleness)", "the push's learning rate (a number > 0)")}


def show(value):
    """A value on one line, short: functions by name, arrays by shape (an error is one line)."""
    if inspect.isfunction(value) or inspect.ismethod(value) or inspect.isbuiltin(value):
        return f"<function {value.__name__}>"
    if inspect.isclass(value):
        return f"<class {value.__name__}>"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


def items(collection):
    return f"{len(collection)} item{'' if len(collection) == 1 else 's'}"


def check_signature(name, fn):
    """Refuse a hook the server cannot call with its arguments (a function whose signature cannot
    be read, such as some builtins, is trusted)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    call, back = CALLS[name]
    count = call.count(",") + 1
    try:
        signature.bind(*range(count))
    except TypeError:
        todo = (f"pass an instance, {fn.__name__}(...), whose __call__ takes these {count} arguments"
                if inspect.isclass(fn) else f"define it with these {count} arguments, in this order")
        raise TypeError(f"{name}={show(fn)} is not allowed: it takes {signature}, but the server "
                        f"calls {call} and expects {back} back; {todo}") from None


def check(apply, average, gate, momentum, policy, lr_schedule=None):
    """Which hooks a policy can use, and that the server can call them (raises with an
    explanation). `lr_schedule` is checked when it is a function (a name is policies.py's)."""
    given = (("apply", apply), ("average", average), ("gate", gate))
    for name, fn in given:
        if fn is not None and not callable(fn):
            raise checks.bad(name, fn, f"a function {CALLS[name][0]} (or None)", TypeError)
    if apply is not None and policy.averages:
        raise ValueError(f"apply= is not allowed with policy={policy.name!r}: a {policy.name} server "
                         f"averages a round (use average=); apply= is the asynchronous push (policy "
                         f"'async' or 'ssp')")
    if average is not None and not policy.averages:
        raise ValueError(f"average= is not allowed with policy={policy.name!r}: only policy='sync' "
                         f"(and 'ksync', 'kasync') averages a round")
    if gate is not None and policy.wait_for is not None:
        raise ValueError(f"gate= is not allowed with policy={policy.name!r}: its workers wait until "
                         f"their round closes, not at a clock gate (gate= is for 'sync' and 'ssp')")
    if gate is not None and not policy.waits:
        raise ValueError(f"gate= is not allowed with policy={policy.name!r}: an async server never "
                         f"holds a worker back (use policy='ssp')")
    if apply is not None and momentum:
        raise ValueError(f"momentum={momentum!r} is not allowed with apply=: your apply decides how "
                         f"a push moves the parameters (keep momentum=0, or add it inside apply)")
    for name, fn in given + (("lr_schedule", lr_schedule if callable(lr_schedule) else None),):
        if fn is not None:
            check_signature(name, fn)


def explain(err, text):
    """Add a last line to an error raised inside a learner's hook: which hook, at which push."""
    if not any(note.startswith("asyncps:") for note in getattr(err, "__notes__", ())):
        err.add_note(f"asyncps: this {type(err).__name__} came from your {text}")
    shown(err)


_tracebacks = []      # at most one: render(err) -> IPython's traceback lines for err


def register_traceback(render):
    """Let `render(err)` (-> a list of strings, IPython's structured traceback) draw the errors
    `shown` marks; None: nobody (IPython draws them as any other)."""
    if render is not None and not callable(render):
        raise TypeError(f"render={render!r:.60} is not allowed: render must be a function "
                        f"render(err) -> a list of strings, or None")
    _tracebacks[:] = [] if render is None else [render]


class _Traceback:
    """An error's `_render_traceback_`: the registered renderer's lines for it (a class, not a
    closure, so that the error still pickles)."""

    def __init__(self, err):
        self.err = err

    def __call__(self):
        if _tracebacks:
            return _tracebacks[0](self.err)
        return [f"{type(self.err).__name__}: {self.err}", *getattr(self.err, "__notes__", ())]


def shown(err):
    """`err`, marked to be drawn by the registered renderer where IPython draws it (its type and
    message stay as they are)."""
    if _tracebacks:
        err._render_traceback_ = _Traceback(err)
    return err


def checked_apply(apply):
    def push(params, version, grad, computed_on, lr):
        try:
            result = apply(params.copy(), version, grad.copy(), computed_on, lr)
        except Exception as err:
            explain(err, f"apply=, at the push that was to make v{version + 1} (a gradient "
                         f"computed on v{computed_on}, applied to v{version}, lr={lr:g})")
            raise
        if not isinstance(result, tuple) or len(result) != 3:
            what = (f"{show(result)} (the new parameters alone?)" if isinstance(result, np.ndarray)
                    else f"a {type(result).__name__} of {items(result)}"
                    if isinstance(result, (list, tuple)) else show(result))
            raise shown(TypeError(f"apply returned {what}: it must return a tuple (new_params, "
                                  f"new_version, staleness), e.g. `return new_params, version + 1, "
                                  f"version - computed_on`"))
        new_params, new_version, staleness = result
        new_params = np.asarray(new_params, dtype=params.dtype)
        if new_params.shape != params.shape:
            raise shown(ValueError(f"apply returned new_params of shape {new_params.shape}"
                                   f"{_one_number(new_params)} for parameters of shape "
                                   f"{params.shape}: your {_name(apply)} must return new "
                                   f"parameters of shape {params.shape}, like params"))
        if new_version != version + 1:
            raise shown(ValueError(f"apply returned new_version={show(new_version)}: the server is "
                                   f"at v{version}, so this push must make v{version + 1}"))
        if staleness != version - computed_on:
            raise shown(ValueError(f"apply returned staleness={show(staleness)}: a gradient computed "
                                   f"on v{computed_on} and applied to v{version} is stale by "
                                   f"{version - computed_on}"))
        return new_params, new_version, staleness
    return push


def _name(fn):
    return f"{getattr(fn, '__name__', 'function')}"


def _one_number(array):
    return " (one number)" if array.shape == () else ""


def checked_average(average):
    def round_(grads, workers):
        try:
            step = average({w: g.copy() for w, g in grads.items()}, workers)
        except Exception as err:
            explain(err, f"average=, called with the gradients of workers {sorted(grads)} of "
                         f"workers={workers}")
            raise
        if step is None:
            return None
        like = next(iter(grads.values()))
        if isinstance(step, (list, tuple, dict)):
            raise shown(TypeError(f"average returned a {type(step).__name__} of {items(step)}: it "
                                  f"must return one array shaped like the parameters {like.shape}, "
                                  f"e.g. `sum(grads.values()) / workers`, or None while not every "
                                  f"worker has pushed"))
        step, shape = np.asarray(step, dtype=like.dtype), like.shape
        if step.shape != shape:
            hint = (": np.mean(...) without axis=0 averages every entry of every gradient into one "
                    "number" if step.shape == () else "")
            raise shown(ValueError(f"average returned an array of shape {step.shape}"
                                   f"{_one_number(step)} for gradients of shape {shape}: your "
                                   f"{_name(average)}(grads, workers) must return one gradient of "
                                   f"shape {shape}, each entry the workers' entries combined (or "
                                   f"None while the barrier is closed){hint}"))
        return step
    return round_


def checked_gate(gate):
    def gate_(clock, clocks, max_ahead):
        try:
            answer = gate(clock, list(clocks), max_ahead)
        except Exception as err:
            explain(err, f"gate=, asked whether a worker at clock {clock} may start "
                         f"(clocks={list(clocks)}, max_ahead={max_ahead})")
            raise
        if not isinstance(answer, (bool, np.bool_)) and not (isinstance(answer, numbers.Integral)
                                                             and answer in (0, 1)):
            hint = " (does your gate end with `return ...`?)" if answer is None else ""
            raise shown(TypeError(f"gate returned {show(answer)} for a worker at clock {clock} "
                                  f"(clocks={list(clocks)}, max_ahead={max_ahead}): it must return "
                                  f"True or False{hint}"))
        return bool(answer)
    return gate_


def checked_schedule(schedule):
    def rate_(lr, staleness):
        try:
            rate = schedule(lr, staleness)
        except Exception as err:
            explain(err, f"lr_schedule=, called as lr_schedule({lr:g}, {staleness}) for a push "
                         f"stale by {staleness}")
            raise
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not rate > 0 \
                or rate == float("inf"):
            hint = (" (does your lr_schedule end with `return ...`?)" if rate is None else
                    "; keep it above 0 for every staleness, e.g. lr / (staleness + 1)")
            raise shown(ValueError(f"lr_schedule({lr:g}, {staleness}) returned {show(rate)} for a "
                                   f"push stale by {staleness}: a learning rate must be a finite "
                                   f"number > 0{hint}"))
        return float(rate)
    return rate_
