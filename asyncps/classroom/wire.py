"""What travels between a room and its students: a small JSON header, then an array as raw bytes.

A message is one or two ZeroMQ frames: the header (UTF-8 JSON, an object, at most HEADER_BYTES)
and, for a pull's answer or a push, the array's bytes in C order. The header says the array's
`shape` and `dtype`; the receiver checks both against what it expects, the byte count against
them, and that every value is finite, before it uses a single number. Nothing received is ever
unpickled, evaluated or imported: JSON and raw bytes only, and a header is bounded before it is
parsed (its size, its nesting, valid UTF-8, no NaN) so that no header can make the parser itself
fail.

The token a student types: the room's secret (22 URL-safe characters), and for an encrypted room
"~" and the room's CurveZMQ public key (40 Z85 characters). Its form is checked before anything
is sent (`parse_token`), so a token cut short is refused at once, not after a timeout.
"""
import hashlib
import json
import re

import numpy as np

HEADER_BYTES = 4096          # a header is a few hundred bytes; anything longer is refused
BRACKETS = 16                # at most this many [ and { in a header: its nesting stays shallow
DTYPES = ("float32", "float64")
KEY_SEPARATOR = "~"          # token = secret ~ the room's public key (not a Z85 character)
SECRET = re.compile(r"[A-Za-z0-9_-]{22}")
Z85 = re.compile(r"[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}")


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


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def header_of(frame, request=True):
    """The JSON header of a message, checked to be a small, shallow object of valid UTF-8 with
    no NaN, with an "op" when it is a `request` (a reply has none); Refused otherwise."""
    frame = bytes(frame)
    if len(frame) > HEADER_BYTES:
        raise Refused("oversized", f"a header of {len(frame)} bytes (at most {HEADER_BYTES})")
    if frame.count(b"[") + frame.count(b"{") > BRACKETS:
        raise Refused("garbage", f"a header nested deeper than {BRACKETS} brackets")
    try:
        header = json.loads(frame.decode("utf-8"), parse_constant=_no_constant)
        json.dumps(header, ensure_ascii=False).encode("utf-8")   # a lone surrogate ("\ud800")
    except (UnicodeError, ValueError, RecursionError):
        raise Refused("garbage", "the header is not JSON in UTF-8") from None
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


def parse_token(token):
    """(secret, room's public key or None) of a token a student typed; ValueError saying what is
    wrong with its form (too short, a character that cannot be in it), before anything is sent."""
    if not isinstance(token, str):
        raise ValueError(f"token={token!r} is not allowed: the token is the text the room printed")
    secret, separator, key = token.strip().partition(KEY_SEPARATOR)
    if not SECRET.fullmatch(secret):
        raise ValueError(f"token={token!r} is not allowed: a room's token starts with 22 letters, "
                         f"digits, - or _ (this one has {len(secret)} characters before any ~); "
                         f"copy it whole from the room's join line")
    if separator and not Z85.fullmatch(key):
        raise ValueError(f"token={token!r} is not allowed: after ~ comes the room's key, 40 "
                         f"characters (this one has {len(key)}); copy the token whole")
    return secret, (key or None)


def door_keys(secret):
    """The key pair of the room's door, derived from its secret: a student who knows the token
    can connect with it to ask for a seat (and nothing else); a stranger cannot even connect."""
    import zmq
    from zmq.utils import z85

    door_secret = z85.encode(hashlib.sha256(b"asyncps door " + secret.encode()).digest())
    return zmq.curve_public(door_secret), door_secret
