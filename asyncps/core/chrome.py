"""A trace in the Chrome trace-event format: open it in Perfetto (ui.perfetto.dev) or chrome://tracing.

One process, "asyncps run", with one thread per lane of the timeline widget:

    tid 0      server     one slice per push it applied ("apply to v3 → v4"); counters: its
                          version and the loss of each version
    tid k + 1  worker k   compute slices (args: computed_on), waits (at the barrier, the SSP
                          gate, or until its round closes), and pulls, pushes, drops and a loss
                          as instants
    (global)              a live run's controls (slow, lr, pause, resume, kill, stop) as instants
                          across every lane

Each push is also a flow arrow from the compute slice that made the gradient to the server slice
that applied it: a stale push is an arrow that lands on a later version than it left from.
A dropped gradient (ksync: it came after its round closed) reaches no server slice: it is an
instant on its worker's lane, "dropped (computed on v3, server at v5)", and no arrow. Under an
averaging policy (sync, ksync, kasync) the pushes before the last of a round "join the round on
v3"; the last one applies it, "apply to v3 → v4".
The server applies pushes one at a time: its slices are drawn a short, fixed width (2% of a
typical compute), one after another, in the order the server saw them.

Times are microseconds. Virtual time (simulate) is drawn 1 unit = 1 ms, so a compute time of 1
reads as 1 ms; wall-clock seconds (real engines) are drawn as they were. ``otherData`` holds the
run's meta and says which (``time_unit``).
"""
import math

PID = 1
SERVER = 0                                        # the server's tid; worker k is tid k + 1
WAIT_NAMES = {"barrier": "wait (barrier)", "ssp": "wait (SSP gate)", "round": "wait (round)"}


def chrome_trace(trace):
    """The trace as a dict in the Chrome trace-event format (json.dump it to open in Perfetto)."""
    if not all(hasattr(trace, a) for a in ("events", "losses", "meta", "pushes", "policy")):
        raise TypeError(f"trace={trace!r:.60} is not allowed: trace must be an asyncps Trace "
                        f"(run.trace)")
    wall = trace.meta.get("clock") == "wall"
    scale = 1e6 if wall else 1e3                              # seconds or virtual units -> µs
    events = _names(trace) + [_counter(0.0, "server", "version", 0)]
    if len(trace.losses) and math.isfinite(trace.losses[0]):
        events.append(_counter(0.0, "loss", "value", float(trace.losses[0])))
    server = _Server(trace, scale)
    last_compute = {}                                         # worker -> its latest Compute
    for e in trace.events:
        if e.kind == "push":
            events += server.apply(e, last_compute.pop(e.worker, None))
        elif e.kind == "control":
            events.append(_control(e, scale))
        elif e.kind == "drop":                                # its gradient is never applied:
            last_compute.pop(e.worker, None)                  # no arrow leaves its compute
            events.append(_drop(e, scale))
        else:
            if e.kind == "compute":
                last_compute[e.worker] = e
            events.append(_on_worker(e, scale))
    other = dict(trace.meta)
    other["time_unit"] = ("wall-clock seconds, drawn as they were" if wall else
                          "virtual time: 1 unit (one compute time of 1) is drawn as 1 ms")
    if getattr(trace, "beyond", {}).get("events"):
        other["events_not_kept"] = trace.beyond["events"]     # past trace_limit: summaries only
    timed = sorted((e for e in events if e["ph"] != "M"), key=lambda e: e["ts"])
    return {"traceEvents": [e for e in events if e["ph"] == "M"] + timed,
            "displayTimeUnit": "ms", "otherData": other}


class _Server:
    """The server's lane: a slice per applied push, a flow arrow into it, the version it makes."""

    def __init__(self, trace, scale):
        computes = sorted(c.end - c.start for c in trace.computes if c.end > c.start)
        typical = computes[len(computes) // 2] if computes else 1.0
        self.scale, self.width = scale, round(0.02 * typical * scale, 3)
        self.losses, self.averages = trace.losses, trace.policy.averages
        self.makes = {p.applied_to: i for i, p in enumerate(trace.pushes)}   # the last push onto v
        self.free, self.applied = 0.0, 0                                     # makes v + 1

    def apply(self, push, compute):
        us = lambda t: _us(t, self.scale)                       # noqa: E731
        args = {"worker": push.worker, "computed_on": push.computed_on,
                "applied_to": push.applied_to, "staleness": push.staleness}
        tid, v = push.worker + 1, push.applied_to
        stale = f"stale by {push.staleness}" if push.staleness else "fresh"
        start = max(us(push.time), self.free)
        self.free = round(start + self.width, 3)
        makes = self.makes.get(v) == self.applied and v + 1 < len(self.losses)
        self.applied += 1
        # the arrow leaves from inside the compute that made the gradient (else from the push)
        leave = (us(push.time) if compute is None else
                 us(compute.end) - min(1.0, (us(compute.end) - us(compute.start)) / 2))
        arrow = {"name": "gradient", "cat": "push", "id": self.applied, "pid": PID}
        out = [_instant(us(push.time), tid, f"push ({stale})", "push", args),
               {"name": _apply_name(v, makes, self.averages), "cat": "push",
                "ph": "X", "ts": start, "dur": self.width, "pid": PID, "tid": SERVER, "args": args},
               {**arrow, "ph": "s", "ts": round(leave, 3), "tid": tid},
               {**arrow, "ph": "f", "bp": "e", "ts": round(start + self.width / 2, 3), "tid": SERVER}]
        if makes:
            out.append(_counter(start, "server", "version", v + 1))
            if math.isfinite(self.losses[v + 1]):
                out.append(_counter(start, "loss", "value", float(self.losses[v + 1])))
        return out


def _apply_name(v, makes, averages):
    """ "apply to v3 → v4"; under an averaging policy (sync, ksync, kasync) the pushes before the
    last of a round only join it."""
    if makes:
        return f"apply to v{v} → v{v + 1}"
    return f"join the round on v{v}" if averages else f"apply to v{v}"


def _on_worker(e, scale):
    """A compute or a wait as a slice, a pull or a lost worker as an instant, on the worker's lane."""
    tid = e.worker + 1
    if e.kind in ("compute", "wait"):
        start, end = _us(e.start, scale), _us(e.end, scale)
        name, args = ((f"compute on v{e.computed_on}", {"computed_on": e.computed_on})
                      if e.kind == "compute" else
                      (WAIT_NAMES.get(e.reason, f"wait ({e.reason})"), {"reason": e.reason}))
        return {"name": name, "cat": e.kind, "ph": "X", "ts": start, "dur": round(end - start, 3),
                "pid": PID, "tid": tid, "args": {"worker": e.worker, **args}}
    if e.kind == "pull":
        return _instant(_us(e.time, scale), tid, f"pull v{e.version}", "pull",
                        {"worker": e.worker, "version": e.version})
    return _instant(_us(e.time, scale), tid, f"lost: {e.reason}", "lost",
                    {"worker": e.worker, "reason": e.reason})


def _drop(e, scale):
    """A gradient that came after its round closed (ksync), as an instant on its worker's lane."""
    return _instant(_us(e.time, scale), e.worker + 1,
                    f"dropped (computed on v{e.computed_on}, server at v{e.version})", "drop",
                    {"worker": e.worker, "computed_on": e.computed_on, "version": e.version})


def _control(e, scale):
    """A live run's control (slow, lr, pause, ...) as an instant across every lane."""
    name = f"{e.what}" + ("" if e.worker is None else f" worker {e.worker}") + (
        "" if e.value is None else f": {e.value:g}")
    return {"name": name, "cat": "control", "ph": "i", "s": "g", "ts": _us(e.time, scale), "pid": PID,
            "tid": SERVER, "args": {"what": e.what, "worker": e.worker, "value": e.value}}


def _names(trace):
    """Metadata: the process, the server's thread and one thread per worker, in that order (in a
    classroom run, one per seat taken, named by its student)."""
    title = "asyncps run" + (f" ({trace.meta['policy']})" if "policy" in trace.meta else "")
    named = [{"name": "process_name", "ph": "M", "ts": 0, "pid": PID, "tid": SERVER,
              "args": {"name": title}}]
    students = trace.meta.get("students") if trace.meta.get("engine") == "classroom" else None
    if isinstance(students, dict):            # a classroom: the seats taken, by their student
        workers = [(int(k) + 1, str(name)) for k, name in sorted(students.items(), key=lambda s: int(s[0]))]
    else:
        workers = [(k + 1, f"worker {k}") for k in range(trace.workers)]
    for tid, label in [(SERVER, "server")] + workers:
        named.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": PID, "tid": tid,
                      "args": {"name": label}})
        named.append({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": PID, "tid": tid,
                      "args": {"sort_index": tid}})
    return named


def _us(t, scale):
    return round(float(t) * scale, 3)


def _instant(ts, tid, name, cat, args):
    return {"name": name, "cat": cat, "ph": "i", "s": "t", "ts": ts, "pid": PID, "tid": tid,
            "args": args}


def _counter(ts, name, key, value):
    """A counter track (Perfetto names it "{name} {key}"): the server's version, its loss."""
    return {"name": name, "cat": "server", "ph": "C", "ts": ts, "pid": PID, "tid": SERVER,
            "args": {key: value}}
