"""The lecturer's side: a room is one parameter server that students' kernels join over the network.

    room = aps.classroom.serve(problem, workers=30, policy="async", lr=0.1, steps=3000)
    room.address, room.token       # what students type into aps.classroom.join(...)
    run = room.result()            # a Run like any other once `steps` versions are made

The room runs the same server as every engine (asyncps/core): a student's push is applied by
`ParameterServer.push`, so versions, staleness, the barrier, the SSP gate and the invariants are
the ones of every other run, and the trace names each seat's student (trace.meta["students"]).

Transport: ZeroMQ (pyzmq, which every Jupyter kernel already runs on), one ROUTER socket; each
student is a DEALER. Messages are a JSON header and raw array bytes (wire.py): no pickle.
Security, since a room listens on a network:
- a random token per room (`secrets`), compared in constant time;
- a session key per student, issued at join and bound to that student's connection: nobody
  pushes as another; each push carries a sequence number that must grow (no replays);
- message size caps (ZeroMQ drops a larger message before it is read), a per-student rate limit;
- 127.0.0.1 unless another host is given, and then a warning;
- the traffic encrypted by CurveZMQ (`encrypt=True`, the default): the room's public key is the
  part of `room.token` after "~", so a student types one string, and an eavesdropper on the
  classroom network reads nothing;
- every refusal is counted in `room.refused` by reason, and nothing refused is applied.
A student silent for `silent_after` seconds is lost (a Lost event): async goes on, sync names
who holds the barrier.

The room is a live run (engines/live.py): `room.live` is its LiveRun, so `room.state`,
`room.pause()`, `room.slow(name, s)`, `room.remove(name)`, `room.set_lr(lr)` and `room.stop()` are
the controls of every live run, recorded as Control events, and the room displays as the live
view, one lane per student. A student learns of a change in the room's next answer: its slowdown,
or "paused" (it then holds its gradient and asks again).
"""
import collections
import hmac
import inspect
import math
import secrets
import threading
import time
import warnings

import numpy as np

from ..core.config import LOOPBACK, argument_names, configure
from ..core.events import Compute
from ..engines.controls import Controls
from ..engines.live import LiveRun
from ..engines.worker import prepare
from . import wire

SILENT_AFTER = 30.0            # seconds without a word before a student is lost
MAX_RATE = 2000.0              # messages a second a student may send (a burst of as many); an
                               # honest student refused for it waits and asks again
SILENCE_CHECK = 0.1            # seconds between two looks for silent students
FINISH_GRACE = 2.0             # seconds the room keeps answering "done" after the last version
KEY_SEPARATOR = "~"            # token = secret ~ the room's public key (not a Z85 character)
NOT_IN_A_ROOM = ("engine", "device", "slowdown", "lock", "timeout", "checkpoint",
                 "checkpoint_every", "address", "allow_remote")


def fingerprint(problem):
    """What both sides must agree on before a student may push: the problem's name, its
    parameters' count and dtype, its data size, and its loss at x0 to 6 significant digits (the
    same data: another seed's data scores x0 otherwise; 6 digits: the last bits of a sum differ
    from one machine's BLAS to another's)."""
    x0 = np.asarray(problem.x0)
    with np.errstate(all="ignore"):
        loss = float(f"{float(problem.loss(x0.copy())):.6g}")
    return {"problem": problem.name, "size": int(x0.size), "dtype": str(x0.dtype), "n": problem.n,
            "loss_at_x0": loss}


class Room:
    """A running room: a thread that serves one ROUTER socket (see the module's docstring)."""

    def __init__(self, problem, host=LOOPBACK, port=0, silent_after=SILENT_AFTER, max_rate=MAX_RATE,
                 encrypt=True, **run_arguments):
        import zmq

        if host != LOOPBACK:
            warnings.warn(f"host={host!r}: the room listens beyond this machine; anyone who can reach "
                          f"it and has the token can push. Share the token only with your class "
                          f"(docs/classroom.md: firewalls, TLS)", stacklevel=3)
        not_here = sorted(set(run_arguments) & set(NOT_IN_A_ROOM))
        if not_here:
            raise TypeError(f"serve() got {not_here}: a room's workers are its students' kernels "
                            f"(no engine, device, slowdown, lock, timeout or checkpoint to set; "
                            f"room.slow(name, seconds) slows one student down)")
        self.config = configure("train", {"engine": "threads", **run_arguments}, shown_as="serve",
                                shown_allows=serve_arguments())
        self.server, self.shards = prepare(problem, self.config)
        self.server.trace.meta.update(engine="classroom", students={})
        self.fingerprint = fingerprint(problem)
        self._secret = secrets.token_urlsafe(16)       # what a student must know to join
        self.token = self._secret                      # what a student types (with the key)
        self.silent_after, self.max_rate = float(silent_after), float(max_rate)
        self.refused = collections.Counter()         # reason -> how many messages were refused
        self.seats = {}                              # worker -> {"name", "session", "who", ...}
        self._by_connection = {}                     # ZeroMQ identity -> worker
        self._silence_checked = 0.0
        self.failed, self._lock = None, threading.RLock()   # held while a message is handled
        self._start = time.monotonic()
        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.ROUTER)
        self._socket.setsockopt(zmq.MAXMSGSIZE, self.server.params.nbytes + 2 * wire.HEADER_BYTES)
        self._socket.setsockopt(zmq.LINGER, 0)
        if encrypt:                                    # CurveZMQ: the room's key pair; the
            public, secret = zmq.curve_keypair()       # public half travels in the token
            self._socket.curve_secretkey, self._socket.curve_publickey = secret, public
            self._socket.curve_server = True
            self.token = f"{self._secret}{KEY_SEPARATOR}{public.decode()}"
        if port == 0:
            port = self._socket.bind_to_random_port(f"tcp://{host}")
        else:
            self._socket.bind(f"tcp://{host}:{port}")
        self.address = f"tcp://{host}:{port}"
        self._controls = RoomControls(self)
        self.live = LiveRun(self.server, self._controls, self._serve)      # serves in its thread

    # -- what the lecturer calls: a live run's controls, students by name ---------------------
    def result(self, timeout=None):
        """The Run once the room has made its versions (or was stopped); raises what failed it."""
        return self.live.result(timeout)

    def stop(self):
        """End the run now (the students are told in the room's next answer) and close the room."""
        self.live.stop()

    def pause(self):
        """Every student holds their next gradient until `resume()` (they keep asking)."""
        self.live.pause()

    def resume(self):
        self.live.resume()

    def set_lr(self, lr):
        self.live.set_lr(lr)

    def slow(self, name, seconds):
        """The student `name` sleeps `seconds` more per gradient from their next one (0: no more)."""
        self.live.slow(self.seat(name), seconds)

    def remove(self, name):
        """The student `name` leaves the run for good (a Lost event); async goes on, sync stops."""
        self.live.kill(self.seat(name))

    def seat(self, name):
        """The worker index of the student `name` (or a seat number, given as an int)."""
        if isinstance(name, int) and not isinstance(name, bool):
            return name
        seats = [k for k, seat in self.seats.items() if seat["name"] == name]
        if not seats:
            raise ValueError(f"name={name!r} is not in this room; its students are "
                             f"{sorted(seat['name'] for seat in self.seats.values())}")
        return seats[-1]

    def view(self, fps=10, window=40):
        """The live view under a line with the address and the token the students type: one lane
        per student, the loss falling, the controls."""
        import ipywidgets

        join = (f"aps.classroom.join(\"{self.address}\", token=\"{self.token}\", name=\"YOUR NAME\", "
                f"problem=problem)")
        header = ipywidgets.HTML(f"<div class='asyncps-room'><b>room</b> {_escape(self.address)} · "
                                 f"{self.config.workers} seats · students type: "
                                 f"<code>{_escape(join)}</code></div>")
        return ipywidgets.VBox([header, self.live.view(fps=fps, window=window)])

    def _repr_mimebundle_(self, **kwargs):
        """The view; where it cannot run (a notebook opened without a kernel), the live view's
        picture as it was when the cell ran, under the same line."""
        try:
            view = self.view()
        except ImportError:                           # no ipywidgets: the repr
            return None
        header, live = view.children
        bundle = view._repr_mimebundle_(**kwargs) or {}
        pictures = live._repr_mimebundle_(**kwargs) or {}
        for kind in ("text/html", "image/svg+xml"):
            if kind in pictures:
                bundle[kind] = (header.value + pictures[kind]) if kind == "text/html" else pictures[kind]
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self):
        return (f"Room({self.address}, token {self.token}, {len(self.seats)} of "
                f"{self.config.workers} seats taken, v{self.server.version} of {self.config.steps})")

    @property
    def state(self):
        """The live run's state, with one row per student: name, pushes, mean staleness, seconds
        since last heard, status."""
        now, pushes, stale = self._clock(), collections.Counter(), collections.Counter()
        for p in self.server.trace.pushes:                       # one pass over the trace
            pushes[p.worker] += 1
            stale[p.worker] += p.staleness
        rows = [{"worker": k, "name": seat["name"], "pushes": pushes[k],
                 "mean_staleness": stale[k] / pushes[k] if pushes[k] else math.nan,
                 "silent_for": now - seat["heard"],
                 "status": "lost" if k in self.server.lost else "left" if seat["left"] else
                 "in the room"} for k, seat in sorted(self.seats.items())]
        return {**self.live.state, "address": self.address, "students": rows,
                "refused": dict(self.refused)}

    # -- the serving thread ---------------------------------------------------------------------
    def _clock(self):
        return time.monotonic() - self._start

    def _serve(self):
        """The live run's body: answer every message until the versions are made (or the run was
        stopped or failed) and every student was told, or FINISH_GRACE seconds have passed."""
        import zmq

        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        finished_at = None
        try:
            while True:
                if poller.poll(50):
                    frames = self._socket.recv_multipart(copy=True)
                    with self._lock:
                        self._handle(frames)
                with self._lock:
                    self._lose_the_silent()
                    over = self.server.done or self.failed is not None
                if over and finished_at is None:
                    finished_at = time.monotonic()
                if finished_at is not None and (time.monotonic() - finished_at > FINISH_GRACE
                                                or self._everyone_told()):
                    break
        finally:
            if not self.server.done:
                self.server.stop("the room was closed", diverged=False)
            self._socket.close(0)
            self._context.term()
        if self.failed is not None:
            raise self.failed
        return self.server.result()

    def _everyone_told(self):
        return self.failed is None and all(seat["told_done"] or seat["left"] or k in self.server.lost
                                           for k, seat in self.seats.items())

    def _handle(self, frames):
        who, frames = frames[0], frames[1:]
        try:
            if not frames:
                raise wire.Refused("garbage", "an empty message")
            header = wire.header_of(frames[0])
            op = header["op"]
            if self.failed is not None:               # the students still asking are told why
                reply, array = {"ok": False, "refused": "failed", "why": str(self.failed)}, None
            elif op == "join":
                reply, array = self._join(who, header), None
            else:
                k = self._seat_of(who, header)
                handlers = {"pull": self._pull, "push": self._push, "gate": self._gate,
                            "leave": self._leave}          # nothing else is reachable by name
                reply, array = handlers.get(op, self._unknown)(k, header, frames[1:])
        except wire.Refused as refusal:
            self.refused[refusal.reason] += 1
            reply, array = {"ok": False, "refused": refusal.reason, "why": str(refusal)}, None
        except RuntimeError as err:                   # the semantics refused: sync lost a worker
            self.failed = self.failed or err
            reply, array = {"ok": False, "refused": "failed", "why": str(err)}, None
        self._socket.send_multipart([who] + wire.pack(reply, array))

    def _join(self, who, header):
        token = header.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token.encode(), self._secret.encode()):
            raise wire.Refused("token", "a wrong or missing token")
        name = header.get("name")
        if not isinstance(name, str) or not 0 < len(name) <= 40 or not name.isprintable():
            raise wire.Refused("garbage", "name must be printable text of 1 to 40 characters")
        if header.get("fingerprint") != self.fingerprint:
            raise wire.Refused("fingerprint", f"this room trains {self.fingerprint}; the student "
                                              f"built {header.get('fingerprint')}")
        free = [k for k in range(self.config.workers) if k not in self.seats]
        if not free:
            raise wire.Refused("full", f"all {self.config.workers} seats are taken")
        k, session = free[0], secrets.token_hex(16)
        self._by_connection[who] = k
        self.seats[k] = {"name": name, "session": session, "who": who, "seq": -1,
                         "heard": self._clock(), "allowance": self.max_rate, "told_done": False,
                         "left": False}
        self.server.trace.meta["students"][str(k)] = name
        c = self.config
        return {"ok": True, "worker": k, "session": session, "workers": c.workers,
                "policy": c.policy.name, "max_clocks_ahead": c.max_clocks_ahead,
                "wait_for": c.wait_for, "partition": c.partition, "batch_size": c.batch_size,
                "seed": c.seed, "steps": c.steps, "lr": c.lr}

    def _seat_of(self, who, header):
        """The seat of this connection, if the session key is that seat's; rate-limited."""
        session, k = header.get("session"), self._by_connection.get(who)
        seat = self.seats.get(k)
        if not isinstance(session, str) or seat is None or not hmac.compare_digest(
                session.encode(), seat["session"].encode()):
            if isinstance(session, str) and any(hmac.compare_digest(session.encode(), s["session"].encode())
                                                for s in self.seats.values()):
                raise wire.Refused("session", "a session key used from another connection")
            raise wire.Refused("session", "an unknown session key")
        now = self._clock()
        seat["allowance"] = min(self.max_rate, seat["allowance"] + (now - seat["heard"]) * self.max_rate)
        if seat["allowance"] < 1:
            raise wire.Refused("rate", f"more than {self.max_rate:g} messages a second")
        seat["allowance"] -= 1
        seat["heard"] = now
        if k in self.server.lost or seat["left"]:
            raise wire.Refused("lost", f"seat {k} was lost or left")
        return k

    def _unknown(self, k, header, payload):
        raise wire.Refused("garbage", f"op {header['op']!r} is not one of join, pull, push, gate, leave")

    def _pull(self, k, header, payload):
        snapshot = self.server.pull(k, self._clock())
        self.seats[k]["told_done"] |= self.server.done
        return {"ok": True, "version": snapshot.version, "done": self.server.done}, snapshot.params

    def _push(self, k, header, payload):
        seat = self.seats[k]
        if self._controls.paused and not self.server.done:
            return {"ok": False, "paused": True}, None          # held: the student asks again
        seq = wire.integer(header, "seq")
        if seq <= seat["seq"]:
            raise wire.Refused("replay", f"push {seq} after push {seat['seq']}")
        computed_on = wire.integer(header, "computed_on", 0, self.server.version)
        compute = wire.seconds(header, "compute_seconds")
        grad = wire.array_of(header, payload, self.server.params)
        seat["seq"] = seq
        staleness = None                              # None: dropped (ksync) or after the end
        if not self.server.done:
            now = self._clock()
            self.server.record(Compute(k, max(0.0, now - compute), now, computed_on))
            event = self.server.push(k, grad, computed_on, now, checked=True)
            staleness = event.staleness if event is not None and event.kind == "push" else None
        seat["told_done"] |= self.server.done
        return {"ok": True, "may_start": self.server.may_start(k), "done": self.server.done,
                "staleness": staleness, "slowdown": self._controls.slowdown[k]}, None

    def _gate(self, k, header, payload):
        self.seats[k]["told_done"] |= self.server.done
        return {"ok": True, "may_start": self.server.may_start(k), "done": self.server.done,
                "slowdown": self._controls.slowdown[k]}, None

    def _leave(self, k, header, payload):
        self._remove(k, f"{self.seats[k]['name']} left the room")
        return {"ok": True}, None

    def _remove(self, k, reason):
        """Seat k is gone for good: its Lost event (sync and ssp cannot go on: the run fails)."""
        self.seats[k]["left"] = True
        if not self.server.done and k not in self.server.lost:
            try:
                self.server.lose(k, self._clock(), reason)
            except RuntimeError as err:
                self.failed = self.failed or err

    def _lose_the_silent(self):
        now = self._clock()
        if self.failed is not None or now - self._silence_checked < SILENCE_CHECK:
            return                                    # the run is over, or looked a moment ago
        self._silence_checked = now
        for k, seat in self.seats.items():
            if (not self.server.done and not seat["left"] and k not in self.server.lost
                    and now - seat["heard"] > self.silent_after):
                try:
                    self.server.lose(k, now, f"{seat['name']} was silent for {self.silent_after:g} s")
                except RuntimeError as err:
                    self.failed = err
                    return


class RoomControls(Controls):
    """A live run's controls, for a room: a student learns of a change in the room's next answer
    (the slowdown, "paused"); a removed student is a Lost event at once."""

    def __init__(self, room):
        super().__init__(room.server, room.config, room._clock, lock=room._lock)
        self.room = room
        self._slowdown = np.zeros(room.config.workers)

    def _kill(self, worker):
        seat = self.room.seats.get(worker)
        name = seat["name"] if seat else f"seat {worker}"
        if seat is None:
            self.room.seats[worker] = {"name": name, "session": secrets.token_hex(16), "who": None,
                                       "seq": -1, "heard": self.clock(), "allowance": 0.0,
                                       "told_done": True, "left": True}
        self.room._remove(worker, f"{name} was removed by the lecturer")


def serve_arguments():
    """The keyword arguments serve() takes: the room's own, then the run's that a room allows."""
    own = [p for p in inspect.signature(Room).parameters if p not in ("problem", "run_arguments")]
    return own + [a for a in argument_names("train") if a not in NOT_IN_A_ROOM]


def serve(problem, **arguments):
    """Open a room: `problem` (an asyncps problem, the same the students build), `host`
    (default 127.0.0.1), `port` (0: any free one), `silent_after`, `max_rate`, `encrypt`
    (CurveZMQ, default True), and the run's own arguments (workers: the seats; policy, lr,
    steps, ...)."""
    return Room(problem, **arguments)


def _escape(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
