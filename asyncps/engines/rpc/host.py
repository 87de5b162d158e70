"""What runs on rank 0 ("ps"): the one ParameterServer, and the handlers the workers call.

Every handler runs under one condition variable (TensorPipe calls them on its own threads), so
no update is lost; `rpc_gate` blocks in the server until the barrier or SSP gate opens. Each call
carries the worker's own trace events (Compute, Wait) since its last call.
"""
import threading
import time

from .rendezvous import join

_STATE = {}     # in the server process: the ParameterServer, its condition variable, the bookkeeping


def _record(server, events):
    for event in events:
        server.record(event)


def rpc_pull(k, time, events):
    import torch

    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _record(server, events)
        params, version = server.pull(k, time)
    return torch.from_numpy(params), version


def rpc_push(k, grad, computed_on, time, then_pull, events):
    """Apply a push; with then_pull (the plain async loop), also return the next pull's answer."""
    import torch

    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _record(server, events)
        server.push(k, grad.numpy(), computed_on, time, checked=True)   # the worker loop checked it
        cond.notify_all()                              # a push may open the barrier / SSP gate
        pulled = None
        if then_pull and not server.done:
            params, version = server.pull(k, time)
            pulled = (torch.from_numpy(params), version)
        return server.may_start(k), server.done, pulled


def rpc_gate(k, events):
    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _record(server, events)
        opened = cond.wait_for(lambda: server.may_start(k) or _STATE["failed"], _STATE["timeout"])
        if not opened:
            _STATE["failed"] = TimeoutError(
                f"worker {k} waited {_STATE['timeout']:g} s at the {server.policy.wait_reason} gate at "
                f"v{server.version} without progress (clocks {server.clocks})")
            cond.notify_all()
        return server.done


def rpc_stop(k, message, events):
    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _record(server, events)
        server.stop(message)
        cond.notify_all()


def rpc_done(k, local, events):
    """A worker is finished. Returns whether everyone can shut down gracefully (nobody was lost)."""
    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _record(server, events)
        _STATE["copies"][k] = local.numpy().copy()
        _STATE["finished"].add(k)
        cond.notify_all()
        return not _STATE["lost"]


def start_time():
    return _STATE["start"]


def serve(server, world, method, timeout, offset, lost=None):
    """Rank 0: host `server` until every worker has finished (or was lost). Returns their copies.

    `lost` (optional) is a pipe on which the caller reports dead workers as ("lost", k, reason);
    the server reports its version on it as ("version", v) every 0.2 s (the caller's progress bar).
    """
    import torch.distributed.rpc as rpc

    cond = threading.Condition()
    _STATE.update(server=server, cond=cond, timeout=timeout, failed=None, copies={},
                  finished=set(), lost=set(), start=time.time())
    join("ps", 0, world, method, timeout)
    report = time.monotonic()
    with cond:
        while len(_STATE["finished"] | _STATE["lost"]) < world - 1 and not _STATE["failed"]:
            cond.wait(0.05)
            if lost is not None and time.monotonic() >= report:
                lost.send(("version", server.version))
                report = time.monotonic() + 0.2
            while lost is not None and lost.poll():
                _, k, reason = lost.recv()
                _STATE["lost"].add(k)
                try:
                    server.lose(k, offset + time.time() - _STATE["start"], reason)
                except RuntimeError as err:
                    _STATE["failed"] = err
                cond.notify_all()
        if _STATE["failed"]:
            raise _STATE["failed"]
    if _STATE["lost"] and lost is not None:
        # No graceful barrier with a dead rank: wait until the caller saw every live worker
        # receive its last reply, or a shutdown now would cut that reply off.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (lost.poll(0.05) and lost.recv()[0] == "finish"):
            pass
    rpc.shutdown(graceful=not _STATE["lost"])
    return _STATE["copies"]
