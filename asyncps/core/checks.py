"""Argument checks that speak the learner's language.

Every public entry point (the server, the problems, the engines) checks its
arguments here, so a mistake gets one kind of message everywhere: which
argument, the value given, and what is allowed.
"""
import math
import numbers

import numpy as np


def _show(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def bad(name, value, allowed, kind=ValueError):
    """An error that names the argument, the value given and what is allowed."""
    return kind(f"{name}={_show(value)} is not allowed: {name} must be {allowed}")


def integer(name, value, minimum=None, maximum=None):
    """An int (not a bool, not a float) within [minimum, maximum]."""
    allowed = "an integer" + (f" >= {minimum}" if minimum is not None else "")
    if maximum is not None:
        allowed += f" and <= {maximum}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise bad(name, value, allowed, TypeError)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise bad(name, value, allowed)
    return int(value)


def real(name, value, minimum=None, positive=False, below=None):
    """A finite real number; `positive` means > minimum (default 0) strictly."""
    if positive and minimum is None:
        minimum = 0.0
    allowed = "a finite number"
    if minimum is not None:
        allowed += f" {'>' if positive else '>='} {minimum:g}"
    if below is not None:
        allowed += f" and < {below:g}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise bad(name, value, allowed, TypeError)
    value = float(value)
    if not math.isfinite(value):
        raise bad(name, value, allowed)
    if minimum is not None and (value <= minimum if positive else value < minimum):
        raise bad(name, value, allowed)
    if below is not None and value >= below:
        raise bad(name, value, allowed)
    return value


def choice(name, value, allowed):
    """One of a few strings."""
    if not isinstance(value, str) or value not in allowed:
        listed = ", ".join(repr(a) for a in allowed)
        raise bad(name, value, f"one of {listed}", ValueError if isinstance(value, str) else TypeError)
    return value


FLOATS = (np.float32, np.float64)


def vector(name, value, length=None, minimum=None, positive=False):
    """A non-empty 1-D array of finite floats (optionally of a given length, all > 0), a copy.
    A float32 array stays float32 (a torch model's parameters); anything else becomes float64."""
    if isinstance(value, (str, bytes)) or value is None:
        raise bad(name, value, "a list or 1-D array of numbers", TypeError)
    dtype = value.dtype if isinstance(value, np.ndarray) and value.dtype in FLOATS else float
    try:
        array = np.array(value, dtype=dtype)
    except (TypeError, ValueError):
        raise bad(name, value, "a list or 1-D array of numbers", TypeError) from None
    if array.ndim != 1 or array.size == 0:
        raise bad(name, value, "a non-empty list or 1-D array of numbers")
    if length is not None and array.size != length:
        raise bad(name, value, f"a list of {length} numbers (one per worker), not {array.size}")
    if not np.all(np.isfinite(array)):
        raise bad(name, value, "a list of finite numbers (no NaN or inf)")
    if minimum is not None:
        ok = np.all(array > minimum) if positive else np.all(array >= minimum)
        if not ok:
            raise bad(name, value, f"a list of numbers {'>' if positive else '>='} {minimum:g}")
    return array


def all_finite(array):
    """True when no entry is NaN or inf: one summing pass (a non-finite entry makes the sum
    non-finite), and the exact test only when the sum itself overflowed."""
    try:
        with np.errstate(all="ignore"):
            if math.isfinite(float(np.sum(array))):
                return True
    except (TypeError, ValueError):
        pass
    return bool(np.all(np.isfinite(array)))


def gradient(value, like, source="the gradient"):
    """A gradient must be a finite float array shaped like the parameters."""
    try:
        g = np.asarray(value, dtype=getattr(like, "dtype", float))
    except (TypeError, ValueError):
        raise TypeError(f"{source} returned {_show(value)}: it must return an array of numbers "
                        f"shaped like the parameters {np.shape(like)}") from None
    if g.shape != np.shape(like):
        raise ValueError(f"{source} returned an array of shape {g.shape}: it must have the "
                         f"parameters' shape {np.shape(like)}")
    if not all_finite(g):
        raise ValueError(f"{source} returned NaN or inf at finite parameters: a gradient must be "
                         f"finite (check the function for a division by zero or a log of 0)")
    return g
