"""The lecturer's side: a room is one parameter server that students' kernels join over the network.

    room = aps.classroom.serve(problem, workers=30, policy="async", lr=0.1, steps=3000)
    room.address, room.token       # what students type into aps.classroom.join(...)
    room                           # who is seated; the run waits for the lecturer:
    room.start()                   # (or serve(..., start_with=20): once 20 are seated)
    run = room.result()            # a Run like any other once `steps` versions are made

The room runs the same server as every engine (asyncps/core): a student's push is applied by
`ParameterServer.push`, so versions, staleness, the barrier, the SSP gate and the invariants are
the ones of every other run, and the trace names each seat's student (trace.meta["students"]).

The room, not the student, owns the semantics. A student may only pull while the gate lets them
start, and a push is applied to what the room served that student: staleness is computed from the
version the room sent, never from what a student claims. A second push in a round, a push with
no pull before it, a gradient far larger than the class's recent ones (`max_norm_ratio`) are
refused and counted, never applied and never fatal: no single student can end the class's run.

Seats: `workers` of them. Students take the lowest free seat at join, under a unique name (a
taken name is suffixed, and the student told). A seat is freed when its student leaves, is removed
by the lecturer, or is lost: silent for `silent_after` seconds (or, with the gate open, doing
nothing), or its connection closed and not back within AWAY_AFTER seconds (a killed kernel is
lost within ~2 s, a vanished laptop within ~5 s; a connection that drops and returns keeps its
seat: the seat belongs to the student's key, not to the connection). Under async, ksync and
kasync a late student takes a free seat of the running run at the current version; sync and ssp
keep the students seated at start.

Transport and the threat model: door.py (CurveZMQ with a ZAP handler, rate, size and connection
limits) and wire.py (the message form); docs/classroom.md says what each protects.

The room is a live run (engines/live.py): `room.live` is its LiveRun, so `room.state`,
`room.pause()`, `room.slow(name, s)`, `room.remove(name)`, `room.set_lr(lr)` and `room.stop()` are
the controls of every live run, recorded as Control events, and the room displays as the live
view, one lane per seated student.
"""
import collections
import hmac
import inspect
import math
import secrets
import threading
import time
import unicodedata
import warnings
import weakref

import numpy as np

from ..core.config import LOOPBACK, argument_names, configure
from ..core.events import Compute
from ..engines.controls import Controls
from ..engines.live import LiveRun
from ..engines.worker import prepare
from . import wire
from .door import Door

SILENT_AFTER = 30.0            # seconds without a word before a student is lost
AWAY_AFTER = 2.0               # seconds a seat's connection may be closed before it is lost
MAX_RATE = 2000.0              # messages a second a student may send (a burst of as many); an
                               # honest student refused for it waits and asks again
MAX_NORM_RATIO = 100.0         # a push this many times the class's norm is refused (_check_norm)
SILENCE_CHECK = 0.1            # seconds between two looks for silent students
FINISH_GRACE = 2.0             # seconds the room keeps answering "done" after the last version
GONE = 1024                    # sessions of departed students remembered (to tell them why)
KEY_SEPARATOR = wire.KEY_SEPARATOR
NOT_IN_A_ROOM = ("engine", "device", "slowdown", "lock", "timeout", "checkpoint",
                 "checkpoint_every", "address", "allow_remote")
LATE_JOIN = ("async", "ksync", "kasync")     # policies whose running run a late student may join
_OPEN = weakref.WeakValueDictionary()        # (host, port) -> the room of this process there


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


def _same_name(name):
    """How two names are compared: look-alikes ("Ada", "ada ", "ａｄａ") are the same name."""
    return unicodedata.normalize("NFKC", name).casefold().strip()


class Room:
    """A running room: a thread that serves the door (see the module's docstring)."""

    def __init__(self, problem, host=LOOPBACK, port=0, silent_after=SILENT_AFTER, max_rate=MAX_RATE,
                 encrypt=True, start_with=None, max_norm_ratio=MAX_NORM_RATIO, **run_arguments):
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
        c = self.config
        if start_with is not None and (isinstance(start_with, bool) or not isinstance(start_with, int)
                                       or not 1 <= start_with <= c.workers):
            raise ValueError(f"start_with={start_with!r} is not allowed: it must be a number of "
                             f"students from 1 to workers={c.workers} (None: room.start() starts)")
        if max_norm_ratio is not None and not (isinstance(max_norm_ratio, (int, float))
                                               and max_norm_ratio > 1):
            raise ValueError(f"max_norm_ratio={max_norm_ratio!r} is not allowed: it must be a number "
                             f"above 1 (None: no limit on a push's norm)")
        self.start_with, self.max_norm_ratio = start_with, max_norm_ratio
        self.server, self.shards = prepare(problem, c)
        self.server.trace.meta.update(engine="classroom", students={})
        self.fingerprint = fingerprint(problem)
        self._secret = secrets.token_urlsafe(16)       # what a student must know to join
        self.silent_after = float(silent_after)
        self.seats = {}                                # worker -> {"name", "session", "key", ...}
        self._by_session, self._by_key, self._gone = {}, {}, collections.OrderedDict()
        self._by_fd = {}                               # connection fd -> the seat it carries
        self._seated_from = set()                      # door connections that took a seat
        self._departed = collections.deque(maxlen=GONE)   # (seat, name, pushes, staleness sum,
                                                          #  "lost"/"left", why)
        self.started, self._silence_checked = False, 0.0
        self._norms, self._refused_seats = {}, set()    # seat -> its latest accepted norm
        self._scale, self._scale_age = 0.0, 8          # their median, recomputed every 8 pushes
        with np.errstate(all="ignore"):                # the scale of an honest gradient at x0
            g0 = float(np.linalg.norm(problem.gradient(np.array(problem.x0, copy=True))))
        self._norm_floor = g0 if math.isfinite(g0) else 0.0
        self.errors = collections.Counter()            # exceptions contained, by type
        self.failed, self._lock = None, threading.RLock()   # held while a message is handled
        self._start = time.monotonic()
        earlier = _OPEN.get((host, port)) if port else None
        if earlier is not None and earlier.live.running:     # the serve cell, run again
            warnings.warn(f"port={port}: the room this kernel opened there before is closed, and "
                          f"this one opens in its place", stacklevel=3)
            earlier.stop()
        self.door = Door(host, port, encrypt, self.server.params.nbytes + 2 * wire.HEADER_BYTES,
                         max_rate, self._secret)
        self.max_rate = self.door.max_rate
        self.refused = self.door.refused               # reason -> how many messages were refused
        self.token = self._secret if not encrypt else (
            f"{self._secret}{KEY_SEPARATOR}{self.door.public_key.decode()}")
        self.address = f"tcp://{host}:{self.door.port}"
        _OPEN[(host, self.door.port)] = self
        self._controls = RoomControls(self)
        self.live = LiveRun(self.server, self._controls, self._serve)      # serves in its thread

    # -- what the lecturer calls: a live run's controls, students by name ---------------------
    def start(self):
        """Start the run with the students seated now; empty seats stay empty (under async, ksync
        and kasync a late student may still take one). Until then the room waits for the class."""
        with self._lock:
            if self.started:
                return
            c, seated = self.config, sorted(self.seats)
            if not seated:
                raise RuntimeError("room.start(): nobody is seated yet; wait for a student to join "
                                   "(room shows who is), or fill the seats with aps.classroom.fill")
            if c.policy.wait_for is not None and len(seated) < c.policy.wait_for:
                raise RuntimeError(f"room.start(): policy={c.policy.name!r} with wait_for="
                                   f"{c.policy.wait_for} needs {c.policy.wait_for} students; "
                                   f"{len(seated)} are seated")
            for k in range(c.workers):
                if k not in self.seats:
                    self.server.vacate(k)
            self.server.trace.meta["seated"] = seated
            self._start = time.monotonic()             # the run's clock starts now
            now = self._clock()
            for seat in self.seats.values():
                seat["heard"] = seat["worked"] = now
                if seat["away"] is not None:
                    seat["away"] = now
            self.started = True

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
        """The student `name` (or seat number) leaves the run for good: a Lost event once the
        run has started (async goes on, sync stops); before, the seat is just freed."""
        k = self.seat(name)
        with self._lock:
            if not self.started:
                self._free(k, f"{self.seats[k]['name']} was removed by the lecturer")
                return
        self.live.kill(k)

    def seat(self, name):
        """The seat of the student `name` (names are unique), or a seat number, given as an int."""
        with self._lock:
            if isinstance(name, int) and not isinstance(name, bool):
                if name not in self.seats:
                    raise ValueError(f"seat {name} is empty; the seats taken are {sorted(self.seats)}")
                return name
            for k, seat in self.seats.items():
                if seat["name"] == name:
                    return k
            raise ValueError(f"name={name!r} is not in this room; its students are "
                             f"{sorted(seat['name'] for seat in self.seats.values())}")

    def view(self, fps=10, window=40):
        """The live view under a line with the address and the token the students type: one lane
        per seated student, the loss falling, the controls."""
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
        names = ", ".join(s["name"] for _, s in sorted(self.seats.items())) or "nobody yet"
        status = (f"v{self.server.version} of {self.config.steps}" if self.started else
                  "waiting for room.start()" if self.start_with is None else
                  f"starts when {self.start_with} are seated")
        return (f"Room({self.address}, token {self.token}, {len(self.seats)} of "
                f"{self.config.workers} seats taken ({names}), {status})")

    @property
    def state(self):
        """The live run's state, with one row per seated (or lost) student: name, pushes, mean
        staleness, seconds since last heard, status; and the refusals by reason."""
        with self._lock:
            now = self._clock()
            rows = [{"worker": k, "name": seat["name"], "pushes": seat["pushes"],
                     "mean_staleness": seat["staleness"] / seat["pushes"] if seat["pushes"] else math.nan,
                     "silent_for": now - seat["heard"],
                     "status": "away" if seat["away"] is not None and not self.server.done
                     else "in the room"}
                    for k, seat in sorted(self.seats.items())]
            rows += [{"worker": k, "name": name, "pushes": pushes, "mean_staleness":
                      staleness / pushes if pushes else math.nan, "silent_for": math.nan,
                      "status": status, "why": why}
                     for k, name, pushes, staleness, status, why in self._departed]
            return {**self.live.state, "started": self.started, "address": self.address,
                    "students": rows, "refused": dict(self.refused), "errors": dict(self.errors),
                    "connections": self.door.connections}

    # -- the serving thread ---------------------------------------------------------------------
    def _clock(self):
        return time.monotonic() - self._start

    def _serve(self):
        """The live run's body: answer every message until the versions are made (or the run was
        stopped or failed) and every student was told, or FINISH_GRACE seconds have passed."""
        finished_at = None
        try:
            while True:
                for who, key, fd, frames in self.door.messages(50):
                    with self._lock:
                        self._boundary(who, key, fd, frames)
                with self._lock:
                    for fd in self.door.closed:
                        k = self._by_fd.pop(fd, None)
                        if k in self.seats and self.seats[k]["fd"] == fd:
                            self.seats[k]["away"] = self._clock()
                    for key in self.door.shook:        # a seat's connection is back
                        k = self._by_key.get(key)
                        if k in self.seats:
                            self.seats[k]["away"] = None
                    self._lose_the_silent()
                    over = self.server.done or self.failed is not None
                if over and finished_at is None:
                    finished_at = time.monotonic()
                if finished_at is not None and (time.monotonic() - finished_at > FINISH_GRACE
                                                or self._everyone_told()):
                    break
        finally:
            with self._lock:
                if not self.server.done:
                    self.server.stop("the room was closed", diverged=False)
                self.door.close()
        if self.failed is not None:
            raise self.failed
        return self.server.result()

    def _everyone_told(self):
        return self.failed is None and all(seat["told_done"] for seat in self.seats.values())

    def _boundary(self, who, key, fd, frames):
        """Every message is handled here, inside one boundary: a refusal is counted and answered,
        any other exception contained and counted (room.errors), and the room goes on."""
        k = self._by_key.get(key) if key is not None else None
        seated = k is not None or (key is None and who in self._by_who())
        limited = self.door.rate_limited(key if k is not None else who, seated)   # a student's
        if limited:                                    # connections share one budget
            if k in self.seats:
                self.seats[k]["over_rate"] = self._clock()
            if limited == "tell":
                self.door.reply(who, wire.pack({"ok": False, "refused": "rate",
                                                "why": "more messages a second than allowed"}))
            return
        rid = None
        try:
            header = wire.header_of(frames[0])
            rid = header.get("rid") if isinstance(header.get("rid"), int) else None
            reply, array = self._handle(who, key, fd, header, frames[1:])
        except wire.Refused as refusal:
            self.refused[refusal.reason] += 1
            reply, array = {"ok": False, "refused": refusal.reason, "why": str(refusal)}, None
        except Exception as err:                        # noqa: BLE001 - contained, counted, served on
            self.errors[type(err).__name__] += 1
            self.refused["error"] += 1
            reply, array = {"ok": False, "refused": "error", "why": "the room could not handle "
                                                                    "that message"}, None
        if rid is not None:
            reply["rid"] = rid                          # which request this answers
        if reply.get("done"):
            reply["why"] = self._end_reason()
        self.door.reply(who, wire.pack(reply, array))

    def _end_reason(self):
        """Why the run ended, as a student is told."""
        if self.server.diverged:
            return f"the run ended, {self.server.message}"         # "diverged at v12: ..."
        if self.server.stopped:
            return ("the lecturer stopped the run" if "live.stop" in self.server.message
                    else self.server.message)
        return "the room made its versions"

    def _by_who(self):
        return {seat["who"] for seat in self.seats.values()}

    def _handle(self, who, key, fd, header, payload):
        op = header["op"]
        if self.door.door_key is not None and key == self.door.door_key:
            if op != "join":                           # the door key may ask for a seat, no more
                raise wire.Refused("session", "join first: this connection may only ask for a seat")
            again = isinstance(header.get("key"), str) and header["key"].encode() in self._by_key
            if who in self._seated_from and not again:   # one seat per door connection
                raise wire.Refused("full", "this connection has taken its seat: one per student")
            reply, array = self._join(header)
            if reply.get("ok"):
                self._seated_from.add(who)
            return reply, array
        if op == "join":
            if self.door.door_key is not None:
                raise wire.Refused("session", "already seated: join from the door, once")
            return self._join(header)
        k = self._seat_of(who, key, fd, header)
        if self.failed is not None:                    # the students still asking are told why
            return {"ok": False, "refused": "failed", "why": str(self.failed)}, None
        handlers = {"pull": self._pull, "push": self._push, "gate": self._gate,
                    "leave": self._leave}              # nothing else is reachable by name
        if op not in handlers:
            raise wire.Refused("garbage", f"op {op!r} is not one of join, pull, push, gate, leave")
        return handlers[op](k, header, payload)

    # -- joining and seats ------------------------------------------------------------------------
    def _join(self, header):
        token = header.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token.encode(), self._secret.encode()):
            raise wire.Refused("token", "a wrong or missing token")
        name = header.get("name")
        if not isinstance(name, str) or not 0 < len(name.strip()) <= 40 or not name.isprintable():
            raise wire.Refused("garbage", "name must be printable text of 1 to 40 characters")
        if header.get("fingerprint") != self.fingerprint:
            raise wire.Refused("fingerprint", f"this room trains {self.fingerprint}; the student "
                                              f"built {header.get('fingerprint')}")
        key = header.get("key")
        if self.door.door_key is not None:
            if not isinstance(key, str) or not wire.Z85.fullmatch(key) or key.encode() in (
                    self.door.door_key, self.door.public_key):
                raise wire.Refused("garbage", "key must be a CurveZMQ public key (40 Z85 characters)")
            if key.encode() in self._by_key:           # asked again (its answer was lost)
                k = self._by_key[key.encode()]
                return self._seated(k), None
        else:
            key = None
        if self.server.done or self.failed is not None:
            raise wire.Refused("over", "the room's run is over")
        if self.started and self.config.policy.name not in LATE_JOIN:
            raise wire.Refused("started", f"the run has started under policy="
                                          f"{self.config.policy.name!r}, whose students are fixed "
                                          f"at start; ask the lecturer for the next run")
        free = [k for k in range(self.config.workers) if k not in self.seats]
        if not free:
            raise wire.Refused("full", f"all {self.config.workers} seats are taken")
        taken = {_same_name(s["name"]) for s in self.seats.values()}
        given, n = name.strip(), 2
        while _same_name(name) in taken:
            name = f"{given} ({n})"
            n += 1
        k, session, now = free[0], secrets.token_hex(16), self._clock()
        self.seats[k] = {"name": name, "session": session, "key": key, "who": None, "fd": None,
                         "seq": 0, "last": None, "served": None, "heard": now, "worked": now,
                         "away": None, "told_done": False, "pushes": 0, "staleness": 0}
        self._by_session[session] = k
        if key is not None:
            self._by_key[key.encode()] = k
            self.door.students.add(key.encode())
        self.server.trace.meta["students"][str(k)] = name
        if self.started:                               # a late student: the run goes on with them
            self.server.occupy(k)
            self._controls.killed.discard(k)
            self.server.trace.meta["seated"] = sorted(set(self.server.trace.meta["seated"]) | {k})
        elif self.start_with is not None and len(self.seats) >= self.start_with:
            self.start()
        return self._seated(k), None

    def _seated(self, k):
        """The answer to a join: the seat, its session key, the name it has, and the run."""
        c, seat = self.config, self.seats[k]
        return {"ok": True, "worker": k, "session": seat["session"], "name": seat["name"],
                "workers": c.workers, "policy": c.policy.name, "max_clocks_ahead": c.max_clocks_ahead,
                "wait_for": c.wait_for, "partition": c.partition, "batch_size": c.batch_size,
                "seed": c.seed, "steps": c.steps, "lr": c.lr, "started": self.started}

    def _seat_of(self, who, key, fd, header):
        """The seat of this message: its session key, which must be the seat of the peer's own key
        in an encrypted room (nobody pushes as another, whatever connection it comes on)."""
        session = header.get("session")
        k = self._by_session.get(session) if isinstance(session, str) else None
        seat = self.seats.get(k)
        if seat is None or not hmac.compare_digest(session.encode(), seat["session"].encode()):
            if isinstance(session, str) and session in self._gone:
                raise wire.Refused("lost", self._gone[session])
            raise wire.Refused("session", "an unknown session key")
        if key is not None and self._by_key.get(key) != k:
            raise wire.Refused("session", "a session key used with another student's key")
        seat["heard"], seat["who"], seat["away"] = self._clock(), who, None
        if fd is not None and seat["fd"] != fd:
            seat["fd"] = fd
            self._by_fd[fd] = k
        return k

    def _free(self, k, reason):
        """Seat k is empty again: its student left, was removed or lost. Once the run has started,
        a Lost event (async goes on; sync and ssp cannot: the run fails, naming the student)."""
        seat = self.seats.pop(k)
        self._by_session.pop(seat["session"], None)
        if seat["key"] is not None:
            self._by_key.pop(seat["key"].encode(), None)
            self.door.students.discard(seat["key"].encode())
        self._gone[seat["session"]] = reason
        self._departed.append((k, seat["name"], seat["pushes"], seat["staleness"],
                               "lost" if self.started else "left", reason))
        if len(self._gone) > GONE:
            self._gone.popitem(last=False)
        if not self.started:
            del self.server.trace.meta["students"][str(k)]
            return
        if not self.server.done and k not in self.server.lost:
            try:
                self.server.lose(k, self._clock(), reason)
            except RuntimeError as err:
                self.failed = self.failed or err

    def _lose_the_silent(self):
        now = time.monotonic()
        if now - self._silence_checked < SILENCE_CHECK:
            return                                    # looked a moment ago
        self._silence_checked, now = now, self._clock()
        if self.failed is not None or self.server.done:
            return
        for k, seat in list(self.seats.items()):
            name = seat["name"]
            if seat["away"] is not None and now - seat["away"] > AWAY_AFTER:
                self._free(k, f"{name} closed the connection")
            elif now - seat["heard"] > self.silent_after:
                flooding = seat.get("over_rate", -math.inf) > seat["heard"]
                self._free(k, f"{name} sent only messages over the rate limit for "
                              f"{self.silent_after:g} s" if flooding else
                              f"{name} was silent for {self.silent_after:g} s")
            elif (self.started and now - seat["worked"] > self.silent_after
                  and self.server.may_start(k) and not self._controls.paused):
                self._free(k, f"{name} did no work for {self.silent_after:g} s")

    # -- what a seated student may do ---------------------------------------------------------
    def _pull(self, k, header, payload):
        seat = self.seats[k]
        if not self.started:
            return {"ok": False, "waiting": True, "seated": len(self.seats)}, None
        if self.server.done:
            seat["told_done"] = True
            return {"ok": True, "version": self.server.version, "done": True}, None
        if not self.server.may_start(k):
            raise wire.Refused("gate", "the gate is closed for this seat: ask (gate) until it opens")
        seat["worked"] = self._clock()
        if seat["served"] != self.server.version:     # a pull asked again is served, not recorded
            params, version = self.server.pull(k, seat["worked"])
        else:
            params, version = self.server.params.copy(), self.server.version
        seat["served"] = version
        return {"ok": True, "version": version, "done": False}, params

    def _push(self, k, header, payload):
        seat = self.seats[k]
        seq = wire.integer(header, "seq", 1)
        if seq == seat["seq"] and seat["last"] is not None:
            return dict(seat["last"]), None           # asked again (a reply lost): the same answer
        if seq < seat["seq"]:
            raise wire.Refused("replay", f"push {seq} after push {seat['seq']}")
        if self.server.done:
            seat["told_done"] = True
            return {"ok": True, "done": True, "staleness": None, "may_start": True,
                    "slowdown": self._controls.slowdown[k]}, None
        if not self.started or seat["served"] is None:
            raise wire.Refused("no_pull", "a push must follow a pull (one push per pull)")
        compute = wire.seconds(header, "compute_seconds")
        grad = wire.array_of(header, payload, self.server.params)
        if self._controls.paused:
            seat["worked"] = self._clock()                     # held, not idle
            return {"ok": False, "paused": True}, None          # held: the student asks again
        if self.config.policy.averages and k in self.server.round:
            raise wire.Refused("round", "this seat's push already waits in the open round")
        self._check_norm(k, grad)
        computed_on, now = seat["served"], self._clock()
        seat.update(seq=seq, served=None, worked=now)
        self.server.record(Compute(k, max(0.0, now - compute), now, computed_on))
        event = self.server.push(k, grad, computed_on, now, checked=True)
        staleness = event.staleness if event is not None and event.kind == "push" else None
        if staleness is not None:
            seat["pushes"] += 1
            seat["staleness"] += staleness
        seat["told_done"] |= self.server.done
        seat["last"] = {"ok": True, "may_start": self.server.may_start(k), "done": self.server.done,
                        "staleness": staleness, "version": self.server.version,
                        "slowdown": self._controls.slowdown[k]}
        return dict(seat["last"]), None

    def _check_norm(self, k, grad):
        """Refuse a gradient that cannot be applied sanely: non-finite once scaled by the lr, or a
        norm over max_norm_ratio x the class's scale — the median of each seat's latest accepted
        norm, and never below the gradient's norm at x0 (so a student pushing zeros cannot make
        the room refuse everyone). When most seats are refused in a row, the class's gradients
        themselves have grown: the run has diverged, and stops saying so."""
        with np.errstate(all="ignore"):
            biggest = float(np.abs(grad).max()) if grad.size else 0.0
            norm = biggest * float(np.linalg.norm(grad / biggest)) if biggest > 0 else 0.0
        # the parameters are finite (else the run diverged): a step this small keeps them so
        step_finite = math.isfinite(norm) and self.server.lr * biggest < 1e300
        if self._scale_age >= 8:                       # the class's scale, looked at anew
            self._scale = float(np.median(list(self._norms.values()))) if self._norms else 0.0
            self._scale_age = 0
        scale = max(self._norm_floor, self._scale)
        limit = math.inf
        if self.max_norm_ratio is not None and scale > 0:
            limit = self.max_norm_ratio * scale
        if step_finite and norm <= limit:
            self._norms[k] = norm
            self._scale_age += 1
            self._refused_seats.clear()
            return
        self._refused_seats.add(k)
        if len(self._refused_seats) >= max(2, (len(self.seats) + 1) // 2):
            self.server.stop(f"diverged at v{self.server.version}: the gradients of "
                             f"{len(self._refused_seats)} students grew past what the room applies "
                             f"(norm {norm:.3g}); try a smaller lr than {self.server.lr:g}")
        if not step_finite:
            raise wire.Refused("not_finite", "the parameters would not be finite after this push")
        raise wire.Refused("norm", f"a gradient of norm {norm:.3g}, over {self.max_norm_ratio:g} x "
                                   f"the class's ({limit / self.max_norm_ratio:.3g})")

    def _gate(self, k, header, payload):
        seat = self.seats[k]
        seat["told_done"] |= self.server.done
        reply = {"ok": True, "started": self.started, "done": self.server.done,
                 "version": self.server.version, "seated": len(self.seats),
                 "may_start": self.started and self.server.may_start(k),
                 "paused": self._controls.paused, "slowdown": self._controls.slowdown[k]}
        if self.failed is not None:
            reply.update(ok=False, refused="failed", why=str(self.failed))
        return reply, None

    def _leave(self, k, header, payload):
        self._free(k, f"{self.seats[k]['name']} left the room")
        return {"ok": True}, None


class RoomControls(Controls):
    """A live run's controls, for a room: a student learns of a change in the room's next answer
    (the slowdown, "paused"); a removed student is a Lost event at once."""

    def __init__(self, room):
        super().__init__(room.server, room.config, room._clock, lock=room._lock)
        self.room = room
        self._slowdown = np.zeros(room.config.workers)

    @property
    def waiting(self):
        """Before the run starts: who is seated, and what starts it (the live view's status)."""
        room = self.room
        if room.started or room.server.done:
            return None
        names = [s["name"] for _, s in sorted(room.seats.items())]
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        starts = ("room.start() starts the run" if room.start_with is None else
                  f"starts when {room.start_with} are seated")
        return f"waiting for the class: {len(names)} seated{': ' + shown if names else ''} · {starts}"

    def _kill(self, worker):
        seat = self.room.seats.get(worker)
        if seat is not None:
            self.room._free(worker, f"{seat['name']} was removed by the lecturer")


def serve_arguments():
    """The keyword arguments serve() takes: the room's own, then the run's that a room allows."""
    own = [p for p in inspect.signature(Room).parameters if p not in ("problem", "run_arguments")]
    return own + [a for a in argument_names("train") if a not in NOT_IN_A_ROOM]


def serve(problem, **arguments):
    """Open a room: `problem` (an asyncps problem, the same the students build), `host`
    (default 127.0.0.1), `port` (0: any free one), `silent_after`, `max_rate`, `encrypt`
    (CurveZMQ, default True), `start_with` (start once that many are seated; None, the default:
    room.start() starts), `max_norm_ratio`, and the run's own arguments (workers: the seats;
    policy, lr, steps, ...)."""
    return Room(problem, **arguments)


def _escape(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
