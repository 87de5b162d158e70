"""What runs on rank 0 ("ps"): the one ParameterServer, and the handlers the workers call.

Every handler runs under one condition variable (TensorPipe calls them on its own threads), so
no update is lost; `rpc_gate` blocks in the server until the barrier or SSP gate opens (at most
GATE_SLICE seconds a call: the worker asks again, so a long pause never outlasts an rpc's
timeout). Each call carries the worker's own trace events (Compute, Wait) since its last call.

Started by aps.train (world.py), rank 0 also talks with the caller on a pipe: it hears of dead
workers and, in a live run, of each change (slow, pause, kill, lr, stop: applied here, by the
same Controls as every engine's, so the Control events are in this trace), and it tells the
caller its version, or in a live run every new event, ten times a second (`news`).
"""
import threading
import time

from .. import controls as base
from .rendezvous import join

_STATE = {}     # in the server process: the ParameterServer, its condition variable, the bookkeeping
GATE_SLICE = 5.0   # seconds an rpc_gate call waits at most before the worker asks again
NEWS_EVERY = 0.1   # seconds between two reports to the caller in a live run (0.2 otherwise)


class Controls(base.Controls):
    """Rank 0's copy of a live run's controls: the caller's changes, applied to the server here
    (the lock is the handlers' condition variable: a change wakes a worker waiting at the gate)."""

    def _changed(self):
        self.lock.notify_all()


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
    """Wait until worker k may start (at most GATE_SLICE s, or `timeout` if shorter: then
    (False, done), and k asks again).
    Fails the run once k waited `timeout` s in all without the gate opening; a pause is no lack
    of progress."""
    server, cond, timeout = _STATE["server"], _STATE["cond"], _STATE["timeout"]
    with cond:
        _record(server, events)
        since, until = _STATE["waiting"], time.monotonic() + min(GATE_SLICE, timeout)
        while not (server.may_start(k) or _STATE["failed"]):
            now = time.monotonic()
            if k not in since or _STATE["controls"].paused:
                since[k] = now
            if now - since[k] > timeout:
                _STATE["failed"] = TimeoutError(
                    f"worker {k} waited {timeout:g} s at the {server.policy.wait_reason} gate at "
                    f"v{server.version} without progress (clocks {server.clocks})")
                cond.notify_all()
                break
            if now >= until:
                return False, server.done
            cond.wait(min(0.5, until - now))
        since.pop(k, None)
        return True, server.done


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


def serve(server, world, method, timeout, offset, caller=None, live=False):
    """Rank 0: host `server` until every worker has finished (or was lost). Returns their copies.

    `caller` (optional): the pipe to the process that started the world (aps.train). On it the
    caller reports dead workers, ("lost", k, reason), and a live run's changes, ("control", what,
    worker, value); rank 0 reports ("version", v) every 0.2 s, or in a live run every
    NEWS_EVERY s the events since the last report (`news`).
    """
    import torch.distributed.rpc as rpc

    cond = threading.Condition()
    start = time.time()
    clock = lambda: offset + time.time() - start                   # noqa: E731 - the world's clock
    _STATE.update(server=server, cond=cond, timeout=timeout, failed=None, copies={},
                  finished=set(), lost=set(), start=start, waiting={},
                  controls=Controls(server, server.config, clock, lock=cond))
    join("ps", 0, world, method, timeout)
    report, sent = time.monotonic(), {}
    with cond:
        while len(_STATE["finished"] | _STATE["lost"]) < world - 1 and not _STATE["failed"]:
            cond.wait(0.05)
            if caller is None:
                continue
            if time.monotonic() >= report:
                caller.send(news(server, sent, start) if live else ("version", server.version))
                report = time.monotonic() + (NEWS_EVERY if live else 0.2)
            while caller.poll():
                _hear(server, caller.recv(), clock)
        if _STATE["failed"]:
            raise _STATE["failed"]
    if _STATE["lost"] and caller is not None:
        # No graceful barrier with a dead rank: wait until the caller saw every live worker
        # receive its last reply, or a shutdown now would cut that reply off.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (caller.poll(0.05) and caller.recv()[0] == "finish"):
            pass
    rpc.shutdown(graceful=not _STATE["lost"])
    return _STATE["copies"]


def _hear(server, message, clock):
    """A message from the caller (the condition variable held): a dead worker or a live change."""
    kind, *args = message
    if kind == "lost":
        k, reason = args
        _STATE["lost"].add(k)
        try:
            server.lose(k, clock(), reason)
        except RuntimeError as err:                    # sync / ssp: the run fails
            _STATE["failed"] = err
    elif kind == "control":
        what, worker, value = args
        controls = _STATE["controls"]
        if what == "slow":
            controls.slow(worker, value)
        elif what in ("pause", "resume"):
            controls.pause(what == "pause")
        elif what == "kill":
            controls.kill(worker)
        elif what == "lr":
            controls.set_lr(value)
        else:
            controls.stop(value)                      # value: the message
    _STATE["cond"].notify_all()


def news(server, sent, start):
    """("news", ...) for the caller of a live run: what the server is now and what its trace
    gained since the last news (`sent` counts what was sent: the trace only grows at its end)."""
    trace = server.trace
    fresh = {}
    for name, values in [("events", trace.events), ("losses", trace.losses),
                         *((f"metric {m}", v) for m, v in trace.metrics.items())]:
        fresh[name] = values[sent.get(name, 0):]
        sent[name] = sent.get(name, 0) + len(fresh[name])
    return ("news", {"version": server.version, "lr": server.lr, "stopped": server.stopped,
                     "start": start, "beyond": dict(trace.beyond), "fresh": fresh})
