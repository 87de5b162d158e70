"""The student's side: this kernel becomes one worker of the lecturer's room.

    aps.classroom.join("tcp://10.0.0.5:5555", token="...", name="ada", problem=problem)

The worker is the worker loop every engine runs (asyncps/engines/worker.py) — pull, compute on
this seat's shard, push — against the room instead of a local server. It stops when the room has
made its versions, when the student interrupts the cell (the room is told: a Lost event, "left
the room"), or when the room stops answering. It returns what this student contributed.
"""
import time
from dataclasses import dataclass

import numpy as np

from ..core.config import RunConfig
from ..core.semantics import Snapshot
from ..engines.worker import COMPUTE, GATE, worker_loop, worker_rng
from . import wire
from .room import KEY_SEPARATOR, fingerprint

GATE_POLL = 0.005             # seconds between two questions at the barrier or the gate
PAUSE_POLL = 0.1              # ... and while the lecturer has paused the room
RATE_BACKOFF = 0.05           # seconds to wait when the room says "more messages than allowed"


class RoomLost(RuntimeError):
    """The room did not answer within the timeout: it was closed, or the network is down."""


@dataclass
class Contribution:
    """What one student gave the room."""
    name: str
    worker: int
    pushes: int
    mean_staleness: float
    stopped: str

    def __str__(self):
        stale = f", mean staleness {self.mean_staleness:.2f}" if self.pushes else ""
        return f"{self.name} (seat {self.worker}): {self.pushes} gradients pushed{stale}; {self.stopped}"


class RoomServer:
    """The room as the worker loop sees it: pull, push, may_start, record, done."""

    def __init__(self, socket, session, params, timeout):
        self.socket, self.session, self.params, self.timeout = socket, session, params, timeout
        self.done, self.stale, self._may_start, self._seq, self._compute = False, [], True, 0, 0.0
        self.policy, self.ended, self.slowdown = None, None, 0.0

    def call(self, header, array=None):
        import zmq

        self.socket.send_multipart(wire.pack({**header, "session": self.session}, array))
        if not self.socket.poll(int(self.timeout * 1000), zmq.POLLIN):
            raise RoomLost(f"the room did not answer for {self.timeout:g} s: it was closed, the "
                           f"network is down, or the token is incomplete (an encrypted room's "
                           f"token ends with ~ and its key: copy it whole)")
        frames = self.socket.recv_multipart()
        reply = wire.header_of(frames[0], request=False)
        if "slowdown" in reply:
            self.slowdown = float(reply["slowdown"])        # the lecturer's room.slow(name, s)
        if not reply.get("ok"):
            if reply.get("paused"):
                return reply, frames[1:]
            if reply.get("refused") == "rate":         # too fast for the room: wait, ask again
                time.sleep(RATE_BACKOFF)
                return self.call(header, array)
            if reply.get("refused") in ("lost", "failed"):
                self.done, self.ended = True, reply.get("why")    # this seat or the run is over
                return reply, frames[1:]
            raise RuntimeError(f"the room refused {header['op']}: {reply.get('why')}")
        self.done = self.done or bool(reply.get("done"))
        return reply, frames[1:]

    def pull(self, worker, time=0.0):
        reply, payload = self.call({"op": "pull"})
        if self.done:
            return Snapshot(self.params.copy(), reply.get("version", 0))
        return Snapshot(wire.array_of(reply, payload, self.params), reply["version"])

    def push(self, worker, grad, computed_on, time_=0.0):
        self._seq += 1
        while True:                                     # a paused room holds the gradient here
            reply, _ = self.call({"op": "push", "seq": self._seq, "computed_on": int(computed_on),
                                  "compute_seconds": self._compute}, grad)
            if not reply.get("paused"):
                break
            time.sleep(PAUSE_POLL)
        self._may_start = bool(reply.get("may_start", True))
        if reply.get("ok") and isinstance(reply.get("staleness"), int):
            self.stale.append(reply["staleness"])       # applied, this many versions late

    def may_start(self, worker):
        return self.done or self._may_start

    def wait_gate(self):
        while not (self.done or self._may_start):
            time.sleep(GATE_POLL)
            reply, _ = self.call({"op": "gate"})
            self._may_start = bool(reply.get("may_start"))

    def record(self, event):
        if event.kind == "compute":
            self._compute = event.end - event.start     # travels with the push

    def stop(self, message):
        self.done = True


def join(address, token, name, problem, timeout=30.0, slowdown=0.0):
    """Join the room at `address` with its `token` as `name`, computing on `problem` (the one the
    lecturer serves: the room checks its fingerprint). `slowdown`: extra seconds per gradient.
    Runs until the room is done or the cell is interrupted; returns a Contribution."""
    import zmq

    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.MAXMSGSIZE, np.asarray(problem.x0).nbytes + 2 * wire.HEADER_BYTES)
    secret, _, room_key = str(token).partition(KEY_SEPARATOR)
    if room_key:                                       # an encrypted room: CurveZMQ
        socket.curve_serverkey = room_key.encode()
        socket.curve_publickey, socket.curve_secretkey = zmq.curve_keypair()
    socket.connect(address)
    room = RoomServer(socket, None, np.asarray(problem.x0).copy(), timeout)
    stopped, seat = "the room made its versions", None
    try:
        seat, _ = room.call({"op": "join", "token": secret, "name": name,
                             "fingerprint": fingerprint(problem)})
        room.session = seat["session"]
        config = RunConfig(engine="threads", workers=seat["workers"], policy=seat["policy"],
                           max_clocks_ahead=seat["max_clocks_ahead"], wait_for=seat["wait_for"],
                           partition=seat["partition"], batch_size=seat["batch_size"],
                           seed=seat["seed"], steps=seat["steps"], lr=seat["lr"])
        room.policy = config.policy
        k = seat["worker"]
        shard = problem.shards(config.workers, config.partition, config.seed)[k]
        start = time.monotonic()
        clock = lambda: time.monotonic() - start                 # noqa: E731
        for need in worker_loop(k, room, problem, shard, config, worker_rng(config.seed, k, 0),
                                clock, {}):
            if need == COMPUTE and slowdown + room.slowdown:
                time.sleep(slowdown + room.slowdown)
            elif need == GATE:
                room.wait_gate()
    except KeyboardInterrupt:
        stopped = "left the room (interrupted)"
        if seat is not None:
            try:
                room.call({"op": "leave"})
            except (RoomLost, RuntimeError):
                pass
    finally:
        socket.close(0)
        context.term()
    if seat is None:
        raise RoomLost("never joined")
    if room.ended and not stopped.startswith("left"):
        stopped = f"the room ended this seat's run: {room.ended}"
    pushes = len(room.stale)
    return Contribution(name, seat["worker"], pushes,
                        float(np.mean(room.stale)) if pushes else float("nan"), stopped)


class StandIns:
    """Stand-in students: threads of this kernel that join a room's empty seats, each through the
    network like a real student (`join`), so that a room runs when nobody has joined yet."""

    def __init__(self, room, problem, slowdowns=None):
        import threading

        free = [k for k in range(room.config.workers) if k not in room.seats]
        slowdowns = [0.0] * len(free) if slowdowns is None else list(slowdowns)[:len(free)]
        slowdowns += [0.0] * (len(free) - len(slowdowns))
        self.contributions, self.errors, self._threads = {}, {}, []
        for i, (k, slowdown) in enumerate(zip(free, slowdowns)):
            name = f"stand-in {i + 1}"
            thread = threading.Thread(target=self._join, name=f"asyncps-stand-in-{i + 1}",
                                      args=(room, problem, name, slowdown), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _join(self, room, problem, name, slowdown):
        try:
            self.contributions[name] = join(room.address, room.token, name, problem,
                                            slowdown=slowdown)
        except RuntimeError as err:        # a real student took the seat first: nothing to do
            if "seats are taken" not in str(err):
                self.errors[name] = err

    def wait(self, timeout=None):
        """Wait until every stand-in has stopped; their Contributions, by name."""
        for thread in self._threads:
            thread.join(timeout)
        return dict(sorted(self.contributions.items()))


def fill(room, problem, slowdowns=None):
    """Fill the room's empty seats with stand-in students (StandIns): `slowdowns`, extra seconds
    per gradient for each, in seat order (e.g. one slow Wi-Fi)."""
    return StandIns(room, problem, slowdowns)
