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
LAST_REPLY = 2.0   # seconds a launched world's live workers get to receive their last reply


def _heard(server, k, events):
    """Worker k called (the condition variable held): it is alive now; record its events."""
    _STATE["heard"][k] = time.monotonic()
    for event in events:
        server.record(event)


def rpc_pull(k, time, events):
    import torch

    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _heard(server, k, events)
        params, version = server.pull(k, time)
    return torch.from_numpy(params), version


def rpc_push(k, grad, computed_on, time, then_pull, events):
    """Apply a push; with then_pull (the plain async loop), also return the next pull's answer."""
    import torch

    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _heard(server, k, events)
        if k in server.lost:                           # declared lost, yet alive: it is over for k
            return True, True, None
        server.push(k, grad.numpy(), computed_on, time, checked=True)   # the worker loop checked it
        cond.notify_all()                              # a push may open the barrier / SSP gate
        pulled = None
        if then_pull and not server.done:
            params, version = server.pull(k, time)
            pulled = (torch.from_numpy(params), version)
        return server.may_start(k), server.done, pulled


def rpc_gate(k, events):
    """Wait until worker k may start (at most GATE_SLICE s, or the gate's timeout if shorter:
    then (False, done), and k asks again). Fails the run once k waited the gate's timeout in all
    without the gate opening; a pause is no lack of progress."""
    server, cond, timeout = _STATE["server"], _STATE["cond"], _STATE["gate_timeout"]
    with cond:
        _heard(server, k, events)
        since, until = _STATE["waiting"], time.monotonic() + min(GATE_SLICE, timeout)
        _STATE["inside"].add(k)                        # waiting here: not silent
        try:
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
        finally:
            _STATE["inside"].discard(k)
        since.pop(k, None)
        return True, server.done


def rpc_stop(k, message, events):
    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _heard(server, k, events)
        server.stop(message)
        cond.notify_all()


def rpc_done(k, local, events):
    """A worker is finished. Returns, once every worker has finished or is known to be lost,
    whether everyone can shut down gracefully (nobody was lost: a graceful shutdown is a barrier
    that a dead rank would never reach)."""
    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _heard(server, k, events)
        _STATE["copies"][k] = local.numpy().copy()
        _STATE["finished"].add(k)
        cond.notify_all()
        settled = cond.wait_for(lambda: _STATE["failed"] or len(_STATE["finished"] | _STATE["lost"])
                                >= _STATE["workers"], _STATE["timeout"] + 5.0)
        return bool(settled) and not _STATE["lost"] and not _STATE["failed"]


def start_time(events=()):
    return _STATE["start"]


def serve(server, world, method, timeout, offset, caller=None, live=False, formed=None, flags=None):
    """Rank 0: host `server` until every worker has finished (or was lost). Returns their copies.

    `caller` (optional): the pipe to the process that started the world (aps.train). On it the
    caller reports dead workers, ("lost", k, reason), and a live run's changes, ("control", what,
    worker, value); rank 0 reports ("version", v) every 0.2 s, or in a live run every
    NEWS_EVERY s the events since the last report (`news`). `formed()` (optional) is called
    once every rank has joined. `flags` (optional): the done and paused flags the workers read
    (controls.py), shared with the caller, who sets them; rank 0 lifts a pause once it has recorded
    the resume.
    """
    import torch.distributed.rpc as rpc

    cond = threading.Condition()
    start = time.time()
    clock = lambda: offset + time.time() - start                   # noqa: E731 - the world's clock
    # Launched (no caller), a dead worker is found by its silence after `timeout` s; the gate's
    # own timeout is then only a safety net, so that a lost worker is named, not the gate.
    gate_timeout = timeout if caller is not None else 2 * timeout
    _STATE.update(server=server, cond=cond, timeout=timeout, failed=None, copies={}, workers=world - 1,
                  finished=set(), lost=set(), start=start, waiting={}, inside=set(), heard={},
                  gate_timeout=gate_timeout,
                  controls=base.Controls(server, server.config, clock, lock=cond))   # rank 0's copy
    if flags is not None:
        _STATE["controls"].flags = flags
    join("ps", 0, world, method, timeout)
    if formed is not None:
        formed()
    report, sent = time.monotonic(), {}
    with cond:
        now = time.monotonic()                         # the world has formed: a worker may have
        for k in range(world - 1):                     # called already, the others are heard of now
            _STATE["heard"].setdefault(k, now)
        while len(_STATE["finished"] | _STATE["lost"]) < world - 1 and not _STATE["failed"]:
            cond.wait(0.05)
            if caller is None:                         # launched: nobody watches the processes
                _lose_the_silent(server, clock, timeout)
                continue
            if time.monotonic() >= report:
                caller.send(news(server, sent, start) if live else ("version", server.version))
                report = time.monotonic() + (NEWS_EVERY if live else 0.2)
            while caller.poll():
                _hear(server, caller.recv(), clock)
        if _STATE["failed"]:
            raise _STATE["failed"]
    if _STATE["lost"]:
        # No graceful barrier with a dead rank: wait until every live worker has received its
        # last reply (the caller sees them leave; launched, we give them LAST_REPLY seconds), or
        # a shutdown now would cut that reply off.
        deadline = time.monotonic() + (timeout if caller is not None else LAST_REPLY)
        while time.monotonic() < deadline and not (caller is not None and caller.poll(0.05)
                                                   and caller.recv()[0] == "finish"):
            time.sleep(0.05)
    rpc.shutdown(graceful=not _STATE["lost"])
    return _STATE["copies"]


def _lose_the_silent(server, clock, timeout):
    """A launched world (torchrun): a worker rank that has not called for `timeout` s is lost.
    Nobody here can see its process; a rank killed with its machine says nothing more. Async
    goes on without it; sync and ssp fail (their error is raised by serve)."""
    now = time.monotonic()
    for k, heard in _STATE["heard"].items():
        if k in _STATE["finished"] | _STATE["lost"] | _STATE["inside"] or now - heard <= timeout:
            continue
        _lose(server, k, clock, f"no word from rank {k + 1} for {timeout:g} s: its process died, "
                                f"or one gradient takes longer than --timeout")
        _STATE["cond"].notify_all()


def _lose(server, k, clock, reason):
    """Worker k is gone: its Lost event; under sync and ssp the run fails (serve raises it)."""
    _STATE["lost"].add(k)
    try:
        server.lose(k, clock(), reason)
    except RuntimeError as err:
        _STATE["failed"] = err


def _hear(server, message, clock):
    """A message from the caller (the condition variable held): a dead worker or a live change."""
    kind, *args = message
    if kind == "lost":
        k, reason = args
        _lose(server, k, clock, reason)
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
