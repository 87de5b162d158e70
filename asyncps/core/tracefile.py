"""A Trace on disk: JSON that reads back exactly, and says what and where when it is damaged."""
import math
import numbers
from dataclasses import asdict, fields

import numpy as np

from . import atomic
from .events import CONTROLS, EVENT_TYPES

FORMAT = "asyncps-trace"
FORMAT_VERSION = 1

INTEGER_FIELDS = {"worker", "version", "computed_on", "applied_to", "staleness"}
REAL_FIELDS = {"time", "start", "end", "value"}      # "value": a Control's seconds or lr


def to_dict(trace):
    data = {"format": FORMAT, "format_version": FORMAT_VERSION, "meta": trace.meta,
            "losses": [float(x) for x in trace.losses],
            "params": [[float(x) for x in p] for p in trace.params],
            "events": [{"kind": e.kind, **asdict(e)} for e in trace.events]}
    if trace.limit is not None:
        data["limit"] = trace.limit
    if trace.beyond:
        data["beyond"] = trace.beyond
    if trace.metrics:
        data["metrics"] = {name: [float(x) for x in values] for name, values in trace.metrics.items()}
    return data


def write_atomically(path, text):
    """The JSON text to `path`, atomically (never a half-written file)."""
    atomic.write_atomically(path, lambda f: f.write(text.encode()))


def _event(raw, i, where):
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: event {i} is {type(raw).__name__}, not an object")
    raw = dict(raw)
    kind = raw.pop("kind", None)
    if not isinstance(kind, str) or kind not in EVENT_TYPES:
        raise ValueError(f"{where}: event {i} has kind {kind!r}; allowed kinds are {', '.join(EVENT_TYPES)}")
    cls = EVENT_TYPES[kind]
    names = {f.name for f in fields(cls)}
    if set(raw) != names:
        missing, extra = sorted(names - set(raw)), sorted(set(raw) - names)
        raise ValueError(f"{where}: event {i} ({kind}) has the wrong fields"
                         + (f"; missing {missing}" if missing else "") + (f"; unknown {extra}" if extra else ""))
    for name, value in raw.items():
        if kind == "control" and name in ("worker", "value") and value is None:
            continue                             # a control of the whole run, or without a value
        if name in INTEGER_FIELDS and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"{where}: event {i} ({kind}): {name}={value!r} must be an integer >= 0")
        if name in REAL_FIELDS and (isinstance(value, bool) or not isinstance(value, numbers.Real)
                                    or not math.isfinite(value)):
            raise ValueError(f"{where}: event {i} ({kind}): {name}={value!r} must be a finite number")
        if name == "reason" and not isinstance(value, str):
            raise ValueError(f"{where}: event {i} ({kind}): reason={value!r} must be text")
        if name == "what" and value not in CONTROLS:
            raise ValueError(f"{where}: event {i} ({kind}): what={value!r} must be one of "
                             f"{', '.join(CONTROLS)}")
    return cls(**{k: (float(v) if k in REAL_FIELDS and v is not None else v) for k, v in raw.items()})


def from_dict(cls, data, where="trace"):
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{where} is not an asyncps trace: expected a JSON object with "
                         f"\"format\": \"{FORMAT}\"")
    if data.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{where} has format_version {data.get('format_version')!r}; this asyncps "
                         f"reads format_version {FORMAT_VERSION}")
    for key, kind in (("events", list), ("losses", list), ("params", list), ("meta", dict), ("beyond", dict),
                      ("metrics", dict)):
        if key in data and not isinstance(data[key], kind):
            raise ValueError(f"{where}: \"{key}\" must be a JSON {'array' if kind is list else 'object'}")
    events = [_event(raw, i, where) for i, raw in enumerate(data.get("events", []))]
    losses = []
    for v, x in enumerate(data.get("losses", [])):
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise ValueError(f"{where}: losses[{v}]={x!r} must be a number")
        losses.append(float(x))
    metrics = {}
    for name, values in data.get("metrics", {}).items():
        if not isinstance(values, list) or any(isinstance(x, bool) or not isinstance(x, numbers.Real)
                                               for x in values):
            raise ValueError(f"{where}: metrics[{name!r}] must be a list of numbers, one per version")
        metrics[name] = [float(x) for x in values]
    dtype = np.float32 if data.get("meta", {}).get("dtype") == "float32" else float
    try:
        params = [np.array(p, dtype=dtype) for p in data.get("params", [])]
    except (TypeError, ValueError):
        raise ValueError(f"{where}: \"params\" must be lists of numbers, one per version") from None
    if len({p.shape for p in params}) > 1 or any(p.ndim != 1 for p in params):
        raise ValueError(f"{where}: \"params\" must be lists of the same length, one per version")
    limit = data.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"{where}: limit={limit!r} must be an integer >= 0")
    meta = dict(data.get("meta", {}))
    if "staleness" in meta:                   # written before the SSP threshold was renamed
        meta["max_clocks_ahead"] = meta.pop("staleness")
    return cls(events=events, losses=losses, meta=meta, params=params, metrics=metrics,
               limit=limit, beyond=dict(data.get("beyond", {})))
