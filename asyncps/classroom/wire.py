"""What travels between a room and its students: a small JSON header, then an array as raw bytes.

A message is one or two ZeroMQ frames: the header (UTF-8 JSON, an object, at most HEADER_BYTES)
and, for a pull's answer or a push, the array's bytes in C order. The header says the array's
`shape` and `dtype`; the receiver checks both against what it expects, the byte count against
them, and that every value is finite, before it uses a single number. Nothing received is ever
unpickled, evaluated or imported: JSON and raw bytes only.
"""
import json

import numpy as np

HEADER_BYTES = 4096          # a header is a few hundred bytes; anything longer is refused
DTYPES = ("float32", "float64")


class Refused(ValueError):
    """A message the room (or a student) does not accept; `reason` is one word, for counting."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


def pack(header, array=None):
    """The frames of a message: the header, and the array's bytes when there is one."""
    header = dict(header)
    if array is None:
        return [json.dumps(header).encode()]
    array = np.ascontiguousarray(array)
    header.update(shape=list(array.shape), dtype=str(array.dtype))
    return [json.dumps(header).encode(), array.tobytes()]


def header_of(frame, request=True):
    """The JSON header of a message, checked to be a small object, with an "op" when it is a
    `request` (a reply has none); Refused otherwise."""
    if len(frame) > HEADER_BYTES:
        raise Refused("oversized", f"a header of {len(frame)} bytes (at most {HEADER_BYTES})")
    try:
        header = json.loads(bytes(frame).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise Refused("garbage", "the header is not JSON") from None
    if not isinstance(header, dict) or (request and not isinstance(header.get("op"), str)):
        raise Refused("garbage", "the header is not a JSON object with an \"op\"")
    return header


def array_of(header, frames, like):
    """The array a message carries, checked against `like` (the parameters): the same shape and
    dtype, exactly their byte count, every value finite. A copy: the frame is not kept."""
    if len(frames) != 1:
        raise Refused("garbage", f"{len(frames)} payload frames (exactly one array expected)")
    shape, dtype = header.get("shape"), header.get("dtype")
    if dtype not in DTYPES or dtype != str(like.dtype):
        raise Refused("dtype", f"dtype {dtype!r}: the parameters are {like.dtype}")
    if shape != list(like.shape):
        raise Refused("shape", f"shape {shape!r}: the parameters have shape {list(like.shape)}")
    data = frames[0]
    if len(data) != like.nbytes:
        raise Refused("shape", f"{len(data)} bytes for {like.nbytes} expected")
    array = np.frombuffer(bytes(data), dtype=like.dtype).reshape(like.shape).copy()
    if not np.isfinite(array).all():
        raise Refused("not_finite", "the array has NaN or infinite values")
    return array


def integer(header, key, low=0, high=None):
    """header[key] as an int in [low, high] (Refused otherwise)."""
    value = header.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (
            high is not None and value > high):
        raise Refused("garbage", f"{key}={value!r} must be a whole number in [{low}, {high}]")
    return value


def seconds(header, key, high=1e6):
    """header[key] as a finite number of seconds >= 0 (0.0 when absent)."""
    value = header.get(key, 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= high:
        raise Refused("garbage", f"{key}={value!r} must be seconds in [0, {high:g}]")
    return float(value)
