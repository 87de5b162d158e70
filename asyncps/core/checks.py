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


TINY = 32             # all_finite: entries up to which Python's math.isfinite beats numpy's
SMALL = 1024          # all_finite: entries up to which np.isfinite beats the sum of squares


def all_finite(array):
    """True when no entry is NaN or inf. A float array up to TINY entries: math.isfinite on
    each (at 10 entries 3x faster than np.isfinite(...).all(), whose calls cost more than the
    work); up to SMALL entries: np.isfinite, which needs no floating-point state saved and
    restored (2-3x faster than the sum below at 10 entries); a larger one: one pass that sums the
    squares (a non-finite entry makes the sum non-finite; BLAS's dot product runs 1.4-3x faster
    than np.sum), and the exact test only when the sum itself overflowed."""
    if isinstance(array, np.ndarray) and array.dtype.kind == "f" and array.size <= SMALL:
        if array.size <= TINY and array.dtype.itemsize <= 8:      # a Python float holds it
            return all(map(math.isfinite, array.ravel().tolist()))
        return bool(np.isfinite(array).all())
    try:
        with np.errstate(all="ignore"):
            flat = array.reshape(-1) if isinstance(array, np.ndarray) and array.dtype.kind == "f" else None
            quick = np.dot(flat, flat) if flat is not None else np.sum(array)
            if math.isfinite(float(quick)):
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


def data(name, array):
    """Examples as a numpy array: numbers (not text, not objects), one row per example, at least
    one row, every entry finite. Says which argument, what it holds and what to do."""
    kind = array.dtype.kind
    if kind in "USa":
        raise TypeError(f"{name} holds text (dtype {array.dtype}): {name} must hold numbers; drop "
                        f"any header or text columns and convert it, e.g. {name}.astype(np.float32)")
    if kind == "O":
        raise TypeError(f"{name} holds Python objects (dtype object), e.g. rows of different "
                        f"lengths: {name} must be an array of numbers whose rows all have the same "
                        f"length (pad or cut them, then np.asarray({name}, dtype=np.float32))")
    if kind not in "biuf":
        raise TypeError(f"{name} holds {array.dtype} values: {name} must hold real numbers "
                        f"(integers or floats)")
    if array.ndim == 0:
        raise ValueError(f"{name}={_show(array)} is not allowed: {name} must hold one row per "
                         f"example, not a single number")
    if len(array) == 0:
        raise ValueError(f"{name} holds no examples (shape {array.shape}): {name} must have at "
                         f"least one row")
    return finite_data(name, array)


def finite_data(name, array):
    """`array` itself when every entry is finite; else a ValueError naming the first bad one:
    'X holds NaN at row 3, column 1 (X[3, 1]): the data must be finite ...'."""
    if array.dtype.kind != "f" or all_finite(array):
        return array
    bad = ~np.isfinite(array)
    where = np.unravel_index(int(np.argmax(bad)), array.shape)
    value = array[where]
    what = "NaN" if np.isnan(value) else ("inf" if value > 0 else "-inf")
    at = f"row {where[0]}"
    if array.ndim == 2:
        at += f", column {where[1]}"
    elif array.ndim > 2:
        at += f", position {tuple(int(i) for i in where[1:])} within the row"
    at += f" ({name}[{', '.join(str(int(i)) for i in where)}])"
    count = int(bad.sum())
    more = f"; {count} entries are NaN or inf" if count > 1 else ""
    fix = "drop or fill the missing values" if what == "NaN" else "drop or clip the infinite values"
    raise ValueError(f"{name} holds {what} at {at}{more}: the data must be finite ({fix})")
