"""Checkpoints: a Run on disk, written atomically, read back exactly.

One .npz file holds the parameters, the server state (version, clocks,
momentum buffer) and the trace as JSON. It is written to a temporary file in
the same folder and renamed over the old one, so a crash during a save leaves
the previous checkpoint intact. Nothing is pickled: loading runs no code.
"""
import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from .trace import Run, Trace


def save_run(run, path):
    path = Path(path)
    state = dict(run.server_state)
    velocity = state.pop("velocity", None)
    meta = {"diverged": run.diverged, "message": run.message, "server_state": state}
    arrays = {"params": run.params, "meta": np.array(json.dumps(meta)),
              "trace": np.array(run.trace.to_json())}
    if velocity is not None:
        arrays["velocity"] = velocity
    if run.worker_params:
        arrays["worker_params"] = np.stack(run.worker_params)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_run(path):
    """Read a Run written by Run.save (or by a training checkpoint)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            state = dict(meta["server_state"])
            state["velocity"] = data["velocity"].copy() if "velocity" in data else None
            workers = list(data["worker_params"]) if "worker_params" in data else []
            return Run(trace=Trace.from_json(str(data["trace"])), params=data["params"].copy(),
                       diverged=meta["diverged"], message=meta["message"], worker_params=workers,
                       server_state=state)
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise ValueError(f"{path} is not a readable asyncps checkpoint: {err}") from None
