"""The student's side: this kernel becomes one worker of the lecturer's room.

    aps.classroom.join("tcp://10.0.0.5:5555", token="...", name="ada", problem=problem)

The token's form is checked first (a token cut short is refused at once). At the room's door the
student asks for a seat with a key pair of their own; the seat is bound to that key, so a
connection that drops and comes back (ZeroMQ reconnects by itself) keeps it. The student then
waits for the lecturer's `room.start()`, showing one progress line (version, own pushes, their
staleness), and runs the worker loop every engine runs (asyncps/engines/worker.py) — pull,
compute on this seat's shard, push — against the room instead of a local server. It returns what
this student contributed, with the honest reason it stopped: the room made its versions, the
lecturer stopped it, the run diverged, the student was removed or lost, or the room is gone.
"""
import sys
import time
from dataclasses import dataclass

import numpy as np

from ..core.config import RunConfig
from ..core.semantics import Snapshot
from ..engines.worker import COMPUTE, GATE, worker_loop, worker_rng
from . import wire
from .room import fingerprint

GATE_POLL = (0.002, 0.05)     # seconds between two questions at the barrier or the gate (doubling)
WAIT_POLL = 0.25              # ... while the room waits for the lecturer, or is paused
RATE_BACKOFF = 0.05           # seconds to wait when the room says "more messages than allowed"
RESEND = 1.0                  # seconds without an answer before a request is sent again (at
                              # once when the connection comes back: it may have been lost)
KEEP_ALIVE = 1.0              # a long slowdown is slept in pieces this long, the room told between
PROGRESS = 0.5                # seconds between two redraws of the progress line
WRONG_KEY_AFTER = 10.0        # seconds of handshakes dropped at once before the room's key counts
QUICK_DROP = 1.0              # as wrong (a drop this soon after connecting; a busy room is slower)


class RoomLost(RuntimeError):
    """The room did not answer within the timeout: it was closed, or the network is down."""


class Refused(RuntimeError):
    """The room refused to seat this student (a wrong token, a full room, another problem, ...)."""


@dataclass
class Contribution:
    """What one student gave the room, and why they stopped."""
    name: str
    worker: int
    pushes: int
    mean_staleness: float
    stopped: str

    def __str__(self):
        stale = f", mean staleness {self.mean_staleness:.2f}" if self.pushes else ""
        return f"{self.name} (seat {self.worker}): {self.pushes} gradients pushed{stale}; {self.stopped}"

    def _repr_pretty_(self, printer, cycle):             # IPython shows the sentence
        printer.text(str(self))


class Connection:
    """One DEALER socket to the room: requests with an id, each answered once; sent again when
    no answer comes within RESEND seconds (the room answers a repeated request the same way)."""

    def __init__(self, context, address, room_key, keys, timeout):
        import zmq

        self.timeout, self._rid = timeout, 0
        self.socket = context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
        if room_key is not None:                           # an encrypted room: CurveZMQ
            self.socket.curve_serverkey = room_key.encode()
            self.socket.curve_publickey, self.socket.curve_secretkey = keys
        self._encrypted = room_key is not None
        self._events = self.socket.get_monitor_socket(
            zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_CONNECTED
            | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_DISCONNECTED)
        self.socket.connect(address)
        self._shook, self._drops, self._since = False, 0, time.monotonic()
        self._connected = self._since

    def call(self, header, array=None):
        """The room's answer (header, payload frames) to one request."""
        self._rid += 1
        frames = wire.pack({**header, "rid": self._rid}, array)
        started = sent = time.monotonic()
        self._send(frames, started)
        while True:
            if self.socket.poll(100):
                reply = self.socket.recv_multipart()
                head = wire.header_of(reply[0], request=False)
                if head.get("rid") in (self._rid, None):
                    return head, reply[1:]
                continue                                   # an answer to a request sent before
            back = self._handshake_news()
            now = time.monotonic()
            self._check_timeout(started)
            if back or now - sent > RESEND:
                self._send(frames, started)
                sent = now

    def _send(self, frames, started):
        """Send `frames` without blocking for good: after a refused handshake the socket has no
        connection to queue them on until it reconnects, and a plain send would wait forever
        (a wrong token, once the room said no before the first send). Meanwhile the handshake's
        news is read (a refusal raises) and the timeout counts."""
        import zmq

        while True:
            try:
                return self.socket.send_multipart(frames, zmq.NOBLOCK)
            except zmq.Again:
                self._handshake_news()
                self._check_timeout(started)
                self.socket.poll(100, zmq.POLLOUT)

    def _check_timeout(self, started):
        if time.monotonic() - started > self.timeout:
            raise RoomLost(f"the room did not answer for {self.timeout:g} s: it was closed or "
                           f"the network is down")

    def _handshake_news(self):
        """True when the connection came back after a drop (a request in flight may be lost).
        A refused handshake says at once that the token is wrong; a room that drops every
        handshake says that its key (after ~) is not this room's."""
        import zmq
        from zmq.utils.monitor import recv_monitor_message

        back = False
        while self._events.poll(0):
            news = recv_monitor_message(self._events)
            event, event_value = news["event"], news["value"]
            if event == zmq.EVENT_CONNECTED:
                self._connected = time.monotonic()
            elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                back = back or self._shook
                self._shook = True
            elif event == zmq.EVENT_HANDSHAKE_FAILED_AUTH and event_value == 400:
                raise Refused("the room refused this token: its secret (before ~) is not this "
                              "room's; copy the whole token from the room's join line")
            elif event in (zmq.EVENT_DISCONNECTED, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL):
                quick = time.monotonic() - self._connected < QUICK_DROP
                self._drops += 3 if event == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL else int(quick)
                if self._shook or (event != zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                                   and time.monotonic() - self._since < WRONG_KEY_AFTER):
                    continue                          # a busy room may shut a connection: again
                if self._drops >= 3 and self._encrypted:
                    raise Refused("the room at this address does not accept this token's key (after "
                                  "~): is it the token of another room? copy the whole token again")
                if self._drops >= 3:
                    raise Refused("the room at this address is encrypted: its token goes on after "
                                  "the secret with ~ and the room's key; copy the token whole")
        return back

    def close(self):
        self.socket.disable_monitor()
        self._events.close(0)
        self.socket.close(0)


class RoomServer:
    """The room as the worker loop sees it: pull, push, may_start, record, done."""

    def __init__(self, connection, session, params, progress):
        self.connection, self.session, self.params = connection, session, params
        self.done, self.stale, self._may_start, self._seq, self._compute = False, [], True, 0, 0.0
        self.policy, self.ended, self.slowdown, self.version = None, None, 0.0, 0
        self.progress, self._drawn, self._width = progress, 0.0, 0

    def call(self, header, array=None):
        while True:
            reply, payload = self.connection.call({**header, "session": self.session}, array)
            if "slowdown" in reply:
                self.slowdown = float(reply["slowdown"])        # the lecturer's room.slow(name, s)
            if isinstance(reply.get("version"), int):
                self.version = reply["version"]
            if reply.get("done"):
                self.done = True
                self.ended = self.ended or reply.get("why")
            if reply.get("ok") or reply.get("paused") or reply.get("waiting"):
                return reply, payload
            refused = reply.get("refused")
            if refused == "rate":                              # too fast for the room: wait, ask again
                time.sleep(RATE_BACKOFF)
                continue
            if refused in ("lost", "failed", "over"):
                self.done, self.ended = True, reply.get("why")  # this seat or the run is over
                return reply, payload
            return reply, payload                              # refused: the caller decides

    def pull(self, worker, time_=0.0):
        while True:
            reply, payload = self.call({"op": "pull"})
            if self.done:
                return Snapshot(self.params.copy(), self.version)
            if reply.get("ok"):
                return Snapshot(wire.array_of(reply, payload, self.params), reply["version"])
            if reply.get("refused") == "gate":                 # not yet: ask until it opens
                self._may_start = False
                self.wait_gate()
                continue
            if reply.get("waiting"):
                time.sleep(WAIT_POLL)
                continue
            raise RuntimeError(f"the room refused a pull: {reply.get('why')}")

    def push(self, worker, grad, computed_on, time_=0.0):
        self._seq += 1
        while True:                                     # a paused room holds the gradient here
            reply, _ = self.call({"op": "push", "seq": self._seq, "computed_on": int(computed_on),
                                  "compute_seconds": self._compute}, grad)
            if not reply.get("paused"):
                break
            time.sleep(WAIT_POLL)
        self._may_start = bool(reply.get("may_start", True))
        if reply.get("ok") and isinstance(reply.get("staleness"), int):
            self.stale.append(reply["staleness"])       # applied, this many versions late
        self.show()

    def may_start(self, worker):
        return self.done or self._may_start

    def wait_gate(self):
        pause = GATE_POLL[0]
        while not (self.done or self._may_start):
            time.sleep(pause)
            pause = min(2 * pause, GATE_POLL[1])
            reply, _ = self.call({"op": "gate"})
            self._may_start = bool(reply.get("may_start"))

    def record(self, event):
        if event.kind == "compute":
            self._compute = event.end - event.start     # travels with the push

    def stop(self, message):
        self.done = True

    def sleep(self, seconds):
        """The slowdown: in pieces, telling the room between them that this seat is alive."""
        end = time.monotonic() + seconds
        while not self.done and (left := end - time.monotonic()) > 0:
            time.sleep(min(left, KEEP_ALIVE))
            if end - time.monotonic() > 0:
                self.call({"op": "gate"})

    def show(self, line=None, force=False):
        """The progress line, redrawn in place at most every PROGRESS seconds."""
        if not self.progress or (not force and time.monotonic() - self._drawn < PROGRESS):
            return
        self._drawn = time.monotonic()
        if line is None:
            stale = f", staleness {np.mean(self.stale):.2f} on average" if self.stale else ""
            line = f"v{self.version}: {len(self.stale)} gradients pushed{stale}"
        end = "\n" if line.endswith("\n") else ""
        text = f"{self.progress}{line.rstrip()}"
        sys.stdout.write(f"\r{' ' * self._width}\r{text}{end}")     # the line before, wiped
        self._width = 0 if end else len(text)
        sys.stdout.flush()


def join(address, token, name, problem, timeout=30.0, slowdown=0.0, progress=True):
    """Join the room at `address` with its `token` as `name`, computing on `problem` (the one the
    lecturer serves: the room checks its fingerprint). `slowdown`: extra seconds per gradient;
    `progress`: show one line while joined. Runs until the room is done or the cell is
    interrupted; returns a Contribution. Raises Refused at once for a wrong token or a full room,
    RoomLost when the room does not answer for `timeout` seconds."""
    import zmq

    secret, room_key = wire.parse_token(token)
    x0 = np.asarray(problem.x0)
    context = zmq.Context()
    door = seat = room = None
    stopped = "the room made its versions"
    try:
        own_keys = zmq.curve_keypair() if room_key else None
        door = Connection(context, address, room_key, wire.door_keys(secret) if room_key else None,
                          timeout)
        seat, _ = door.call({"op": "join", "token": secret, "name": name,
                             "fingerprint": fingerprint(problem),
                             "key": own_keys[0].decode() if own_keys else None})
        if not seat.get("ok"):
            raise Refused(f"the room refused to seat {name!r}: {seat.get('why')}")
        if room_key:                                  # from now on, on a connection of our own key
            door.close()
            door = Connection(context, address, room_key, own_keys, timeout)
        label = f"{seat['name']} (seat {seat['worker']}) · " if progress else ""
        room = RoomServer(door, seat["session"], x0.copy(), label)
        if seat["name"] != name:
            room.show(f"the room calls you {seat['name']!r}: {name!r} was taken\n", force=True)
        config = RunConfig(engine="threads", workers=seat["workers"], policy=seat["policy"],
                           max_clocks_ahead=seat["max_clocks_ahead"], wait_for=seat["wait_for"],
                           partition=seat["partition"], batch_size=seat["batch_size"],
                           seed=seat["seed"], steps=seat["steps"], lr=seat["lr"])
        room.policy = config.policy
        k = seat["worker"]
        _wait_for_start(room, seat)
        shard = problem.shards(config.workers, config.partition, config.seed)[k]
        start = time.monotonic()
        clock = lambda: time.monotonic() - start                 # noqa: E731
        for need in worker_loop(k, room, problem, shard, config, worker_rng(config.seed, k, 0),
                                clock, {}):
            if need == COMPUTE and slowdown + room.slowdown:
                room.sleep(slowdown + room.slowdown)
            elif need == GATE:
                room.wait_gate()
    except KeyboardInterrupt:
        stopped = "left the room (interrupted)"
        if room is not None:
            try:
                room.connection.timeout = 2.0
                room.call({"op": "leave"})
            except (RoomLost, Refused, RuntimeError):
                pass
    finally:
        if door is not None:
            door.close()
        context.term()
    if room is None:
        raise RoomLost("never joined")
    if room.ended and not stopped.startswith("left"):
        stopped = room.ended
    pushes = len(room.stale)
    room.show(f"{pushes} gradients pushed; {stopped}\n", force=True)
    return Contribution(seat["name"], seat["worker"], pushes,
                        float(np.mean(room.stale)) if pushes else float("nan"), stopped)


def _wait_for_start(room, seat):
    """Until the lecturer starts the run: ask every WAIT_POLL seconds (which keeps the seat)."""
    started = seat.get("started")
    while not started and not room.done:
        reply, _ = room.call({"op": "gate"})
        started = reply.get("started")
        room.show(f"seated, waiting for the lecturer to start the run ({reply.get('seated', '?')} "
                  f"seated)")
        if not started:
            time.sleep(WAIT_POLL)


class StandIns:
    """Stand-in students: threads of this kernel that join a room's empty seats, each through the
    network like a real student (`join`), so that a room runs when nobody has joined yet.

    "stand-in k" sits in seat k, the lane of worker k: they join one after another, each once the
    one before is seated (a room seats a student in the lowest free seat), so their names follow
    seat order, not the order in which threads happen to reach the room (a student who joins
    meanwhile can still take a seat first)."""

    def __init__(self, room, problem, slowdowns=None, timeout=30.0):
        import threading

        free = [k for k in range(room.config.workers) if k not in room.seats]
        slowdowns = [0.0] * len(free) if slowdowns is None else list(slowdowns)[:len(free)]
        slowdowns += [0.0] * (len(free) - len(slowdowns))
        self.contributions, self.errors, self._threads = {}, {}, []
        self._names, self._gone = [], set()               # the stand-ins; those whose join ended
        for k, slowdown in zip(free, slowdowns):
            name = f"stand-in {k}"
            thread = threading.Thread(target=self._join, name=f"asyncps-stand-in-{k}",
                                      args=(room, problem, name, slowdown), daemon=True)
            self._threads.append(thread)
            self._names.append(name)
            thread.start()
            self._until_seated(room, {name}, timeout)     # the next one takes the next seat

    def _join(self, room, problem, name, slowdown):
        try:
            self.contributions[name] = join(room.address, room.token, name, problem,
                                            slowdown=slowdown, progress=False)
        except RuntimeError as err:        # a real student took the seat first: nothing to do
            if "seats are taken" not in str(err):
                self.errors[name] = err
        finally:
            self._gone.add(name)

    def seated(self, room, timeout=30.0):
        """Wait until every stand-in is seated (or has given up)."""
        self._until_seated(room, set(self._names), timeout)

    def _until_seated(self, room, names, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seated = {s["name"] for s in list(room.seats.values())}
            if names <= seated | self._gone:                  # seated, or gave up
                return
            time.sleep(0.02)

    def wait(self, timeout=None):
        """Wait until every stand-in has stopped; their Contributions, by name."""
        for thread in self._threads:
            thread.join(timeout)
        return dict(sorted(self.contributions.items()))


def fill(room, problem, slowdowns=None, start=True):
    """Fill the room's empty seats with stand-in students (StandIns): `slowdowns`, extra seconds
    per gradient for each, in seat order (e.g. one slow Wi-Fi); `start`: then start the run."""
    stand_ins = StandIns(room, problem, slowdowns)
    if start:
        stand_ins.seated(room)
        room.start()
    return stand_ins
