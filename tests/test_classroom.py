"""The classroom (asyncps/classroom): students join a room on the loopback and train together;
hostile clients — no token, a wrong token, another student's session, replays, oversized
messages, a wrong shape or dtype, NaN, garbage bytes, a client that joins and never speaks — are
refused and counted, nothing they send is applied, and the room keeps serving the others.

Students here are threads of this process (each with its own ZeroMQ socket, as a kernel has);
hostile clients are raw ZeroMQ DEALER sockets that send what a student's code never would."""
import json
import re
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import zmq

import asyncps as aps
from asyncps import classroom
from asyncps.classroom import wire
from asyncps.classroom.student import WRONG_KEY_AFTER
from engines import no_thread_survives  # noqa: F401 (a fixture)

LSQ = aps.problems.LeastSquares(n=512, dim=10, seed=0)
pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("no_thread_survives")]


@pytest.fixture
def rooms():
    opened = []

    def open_room(**arguments):
        opened.append(classroom.serve(LSQ, **arguments))
        return opened[-1]

    yield open_room
    for room in opened:
        room.stop()


def students(room, names, slowdowns, problem=LSQ, start=True):
    """Each name joins `room` from its own thread; returns {name: Contribution}, once all stop.
    `start`: once they are all seated, the lecturer starts the run (if it has not started)."""
    out = {}

    def student(name, slowdown):
        out[name] = classroom.join(room.address, room.token, name, problem, slowdown=slowdown,
                                   progress=False)

    before = len(room.seats)
    threads = [threading.Thread(target=student, args=(n, s)) for n, s in zip(names, slowdowns)]
    for t in threads:
        t.start()
    if start and not room.started:
        wait_until(lambda: len(room.seats) >= before + len(names))
        room.start()
    return threads, out


def finish(threads, timeout=60):
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads)


@pytest.mark.parametrize("policy", ["async", "sync", "ksync"])
def test_three_students_train_one_model_with_the_one_semantics(rooms, policy):
    room = rooms(workers=3, policy=policy, wait_for=2 if policy == "ksync" else None, lr=0.05,
                 steps=120)
    threads, out = students(room, ["ada", "bo", "cy"], [0.001, 0.002, 0.004])
    finish(threads)
    run = room.result(10)
    trace = run.trace
    assert aps.violations(trace) == [] and len(run.losses) == 121
    assert trace.meta["engine"] == "classroom"
    assert sorted(trace.meta["students"].values()) == ["ada", "bo", "cy"]
    assert run.losses[-1] < 0.01 * run.losses[0]
    by_seat = {int(k): name for k, name in trace.meta["students"].items()}
    for name, c in out.items():
        assert by_seat[c.worker] == name and c.stopped == "the room made its versions"
        assert c.pushes == sum(p.worker == c.worker for p in trace.pushes)
        mine = [p.staleness for p in trace.pushes if p.worker == c.worker]
        assert c.pushes == 0 or c.mean_staleness == pytest.approx(np.mean(mine))
    if policy == "sync":
        assert all(p.staleness == 0 for p in trace.pushes) and len(trace.pushes) == 3 * 120
    assert room.refused == {}


def client(room, keys=None):
    """A raw DEALER socket on the room: what a hostile (or careless) program can send. `keys`:
    its CurveZMQ key pair (a new one: a stranger, whose handshake the room refuses)."""
    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    _, _, key = room.token.partition("~")               # the room's public key is no secret
    if key:
        socket.curve_serverkey = key.encode()
        socket.curve_publickey, socket.curve_secretkey = keys or zmq.curve_keypair()
    socket.connect(room.address)
    return socket


def send_refused(socket, frames):
    """Send as a client the room refused: its handshake may have failed already, and then the
    socket has no connection to queue on until it reconnects (a plain send would wait for
    ever). Either way nothing reaches the room; what a test checks is that nothing comes back."""
    try:
        socket.send_multipart(frames, zmq.NOBLOCK)
    except zmq.Again:
        pass


def secret(room):
    return room.token.partition("~")[0]


def at_the_door(room):
    """A client with the door key: whoever holds the token may ask for a seat, nothing more."""
    return client(room, wire.door_keys(secret(room)) if "~" in room.token else None)


def ask(socket, frames, timeout=5.0):
    socket.send_multipart(frames)
    assert socket.poll(int(timeout * 1000)), "the room did not answer"
    reply = socket.recv_multipart()
    return json.loads(reply[0]), reply[1:]


def join_message(room, name, key=None, **header):
    return wire.pack({"op": "join", "token": secret(room), "name": name,
                      "fingerprint": classroom.fingerprint(LSQ), "key": key, **header})


def joined(room, name="mallory"):
    """A raw client seated as `name`: joined at the door with a key of its own, then on a
    connection with that key (an encrypted room), or on the same connection (a plain one)."""
    keys = zmq.curve_keypair()
    door = at_the_door(room)
    reply, _ = ask(door, join_message(room, name, keys[0].decode()))
    assert reply["ok"], reply
    if "~" not in room.token:
        return door, reply
    door.close(0)
    return client(room, keys), reply


def push(session, seq=1, computed_on=0, grad=None, **header):
    grad = np.zeros(10) if grad is None else grad
    return wire.pack({"op": "push", "session": session, "seq": seq, "computed_on": computed_on,
                      **header}, grad)


def pull(session):
    return wire.pack({"op": "pull", "session": session})


@pytest.mark.slow
def test_hostile_clients_are_refused_counted_and_never_applied(rooms):
    room = rooms(workers=4, policy="async", lr=0.05, steps=400, silent_after=60)
    x0 = room.server.params.copy()
    stranger = client(room)                              # no token: the handshake is refused
    send_refused(stranger, join_message(room, "eve"))
    assert not stranger.poll(1000) and room.seats == {}
    assert room.refused["handshake"] >= 1
    door = at_the_door(room)
    refusals = {
        "garbage": [[b"\x80\x81 not json"], [b"[1, 2, 3]"], [b'{"no": "op"}'], [b""],
                    [b'{"op": "join", "token": "\\ud800"}'], [b"[" * 40 + b"]" * 40],
                    [b'{"op": "join", "name": NaN}']],
        "token": [wire.pack({"op": "join", "name": "eve", "fingerprint": classroom.fingerprint(LSQ)}),
                  wire.pack({"op": "join", "token": "guess", "name": "eve",
                             "fingerprint": classroom.fingerprint(LSQ)})],
        "session": [push("0" * 32), wire.pack({"op": "pull"}), wire.pack({"op": "rm -rf", "session": "x"})],
        "fingerprint": [wire.pack({"op": "join", "token": secret(room), "name": "eve",
                                   "fingerprint": {"problem": "least-squares", "size": 11}})],
    }
    for reason, messages in refusals.items():
        for frames in messages:
            time.sleep(0.26)                             # the door's rate: JOIN_RATE a second
            reply, _ = ask(door, frames)
            assert reply == {"ok": False, "refused": reason, "why": reply["why"]}, (frames, reply)
    # a joined client, misbehaving with its own session
    mallory, seat = joined(room)
    session = seat["session"]
    room.start()
    assert ask(mallory, push(session))[0]["refused"] == "no_pull"      # a push must follow a pull
    assert ask(mallory, pull(session))[0]["ok"]
    bad = [("shape", push(session, grad=np.zeros(11))),
           ("dtype", push(session, grad=np.zeros(10, dtype=np.float32))),
           ("not_finite", push(session, grad=np.full(10, np.nan))),
           ("not_finite", push(session, grad=np.array([np.inf] + [0.0] * 9))),
           ("norm", push(session, grad=np.full(10, 1e200))),
           ("shape", [push(session)[0], b"\x00" * 79]),                       # bytes short of 80
           ("garbage", push(session, seq=-1)),
           ("garbage", push(session, compute_seconds="soon")),
           ("garbage", wire.pack({"op": "_serve", "session": session})),   # no private method
           ("garbage", wire.pack({"op": "join ", "session": session}))]
    for reason, frames in bad:
        reply, _ = ask(mallory, frames)
        assert reply["refused"] == reason, (reason, reply)
    # another student with mallory's session key; then a replay of mallory's own push
    eve, eve_seat = joined(room, "eve")
    reply, _ = ask(eve, push(session, seq=1, grad=np.ones(10)))
    assert reply["refused"] == "session"
    applied, _ = ask(mallory, push(session, seq=5, grad=np.full(10, 1e-3), computed_on=0))
    assert applied["ok"] and applied["staleness"] == 0
    assert ask(mallory, push(session, seq=5, grad=np.full(10, 1e-3)))[0] == applied   # asked again
    assert ask(mallory, pull(session))[0]["ok"]
    reply, _ = ask(mallory, push(session, seq=4, grad=np.full(10, 1e-3)))
    assert reply["refused"] == "replay"
    assert ask(mallory, wire.pack({"op": "leave", "session": session}))[0]["ok"]
    reply, _ = ask(mallory, push(session, seq=6))
    assert reply["refused"] == "lost" and reply["why"] == "mallory left the room"
    # oversized: ZeroMQ drops a message over the room's cap (and the connection) unread
    eve.send_multipart(push(eve_seat["session"], seq=7, grad=np.zeros(10 ** 6)))
    assert not eve.poll(500)
    assert room.server.version == 1                      # mallory's one honest push, nothing else
    np.testing.assert_allclose(room.server.params, x0 - 0.05 * 1e-3)
    counted = sum(len(m) for m in refusals.values()) + len(bad) + 4
    assert sum(v for k, v in room.refused.items() if k != "handshake") == counted, room.refused
    # the room still serves the others
    threads, out = students(room, ["ada", "bo"], [0.001, 0.002])
    finish(threads)
    run = room.result(10)
    assert len(run.losses) == 401 and aps.violations(run.trace) == []
    assert [e.reason for e in run.trace.lost][0] == "mallory left the room"
    for socket in (stranger, door, mallory, eve):
        socket.close(0)


def test_a_client_that_floods_is_rate_limited_and_refusals_are_charged(rooms):
    room = rooms(workers=2, policy="async", lr=0.05, steps=10, max_rate=20)
    socket, seat = joined(room)
    gate = wire.pack({"op": "gate", "session": seat["session"]})
    start = time.monotonic()
    for _ in range(400):                                 # a flood, never waiting for an answer
        socket.send_multipart(gate)
    answered = []
    while socket.poll(300):
        answered.append(json.loads(socket.recv_multipart()[0]))
    seconds = time.monotonic() - start
    served = sum(r.get("ok", False) for r in answered)
    most = 20 + 20 * seconds + 2                         # the burst, then the rate
    assert served <= most, (served, seconds)
    wait_until(lambda: room.refused["rate"] >= 400 - most)      # every other one charged
    assert sum(r.get("refused") == "rate" for r in answered) < 50   # told now and then, not each time
    socket.close(0)


def test_a_student_who_goes_silent_is_lost_and_async_finishes(rooms):
    room = rooms(workers=3, policy="async", lr=0.05, steps=300, silent_after=0.5)
    silent, seat = joined(room, "zed")                   # joins, then never speaks again
    threads, out = students(room, ["ada", "bo"], [0.004, 0.004])
    finish(threads)
    run = room.result(10)
    assert [(e.worker, e.reason) for e in run.trace.lost] == [(seat["worker"], "zed was silent for 0.5 s")]
    assert len(run.losses) == 301 and aps.violations(run.trace) == []
    silent.close(0)


def test_under_sync_a_student_who_only_keeps_alive_is_named(rooms):
    room = rooms(workers=3, policy="sync", lr=0.05, steps=10_000, silent_after=0.5)
    idle, seat = joined(room, "zed")
    stop = threading.Event()

    def keep_alive():                                    # asks at the gate, never pulls
        while not stop.is_set():
            idle.send_multipart(wire.pack({"op": "gate", "session": seat["session"]}))
            while idle.poll(50):
                idle.recv_multipart()

    alive = threading.Thread(target=keep_alive)
    alive.start()
    try:
        threads, out = students(room, ["ada", "bo"], [0.001, 0.001])
        with pytest.raises(RuntimeError, match=r"worker 0 was lost \(zed did no work for 0.5 s\).*"
                                               r"waits for every worker"):
            room.result(30)
        finish(threads)
    finally:
        stop.set()
        alive.join()
    for c in out.values():                               # told why, not left waiting
        assert c.stopped.startswith("worker 0 was lost (zed"), c
    idle.close(0)


def test_a_full_room_and_a_wrong_problem_are_refused_with_a_reason(rooms):
    room = rooms(workers=1, policy="async", lr=0.05, steps=10)
    first, _ = joined(room, "ada")
    with pytest.raises(classroom.Refused, match="all 1 seats are taken"):
        classroom.join(room.address, room.token, "bo", LSQ, timeout=5, progress=False)
    other = aps.problems.LeastSquares(n=512, dim=11, seed=0)
    time.sleep(0.3)
    with pytest.raises(classroom.Refused, match="this room trains"):
        classroom.join(room.address, room.token, "cy", other, timeout=5, progress=False)
    other_data = aps.problems.LeastSquares(n=512, dim=10, seed=1)     # the same shapes, other data
    with pytest.raises(classroom.Refused, match="this room trains"):
        classroom.join(room.address, room.token, "dan", other_data, timeout=5, progress=False)
    assert room.refused == {"full": 1, "fingerprint": 2}
    first.close(0)


def test_a_room_on_another_address_warns_and_loopback_does_not(rooms):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rooms(workers=1, steps=5)
    with pytest.warns(UserWarning, match="listens beyond this machine"):
        rooms(host="127.0.0.2", workers=1, steps=5)


def test_nothing_from_the_network_reaches_pickle_eval_or_import():
    source = "\n".join(p.read_text() for p in Path(classroom.__file__).parent.glob("*.py"))
    for word in ("import pickle", "pickle.load", "cloudpickle", "eval(", "exec(", "import_module",
                 "__import__", "getattr(self, f"):
        assert word not in source, word
    assert re.search(r"hmac\.compare_digest\(token", source), "the token is compared in constant time"


def wait_until(condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_the_lecturer_pauses_slows_removes_and_stops_like_a_live_run(rooms):
    room = rooms(workers=3, policy="async", lr=0.01, steps=1_000_000)
    threads, out = students(room, ["ada", "bo", "cy"], [0.002, 0.002, 0.002])
    wait_until(lambda: room.server.version > 30)
    room.pause()
    time.sleep(0.3)                                      # gradients in flight land, then none
    held = room.server.version
    time.sleep(0.5)
    assert room.server.version == held and room.state["paused"]
    room.resume()
    wait_until(lambda: room.server.version > held + 30)
    room.slow("cy", 0.05)
    before = {name: c for name, c in ((s["name"], s["pushes"]) for s in room.state["students"])}
    time.sleep(1.0)
    after = {s["name"]: s["pushes"] for s in room.state["students"]}
    assert after["cy"] - before["cy"] < 0.5 * (after["ada"] - before["ada"])
    room.remove("bo")
    wait_until(lambda: "bo" not in [t.name for t in threads if t.is_alive()] and "bo" in out)
    assert out["bo"].stopped == "bo was removed by the lecturer"
    room.stop()
    finish(threads)
    run = room.result(10)
    trace = run.trace
    assert [c.what for c in trace.controls] == ["pause", "resume", "slow", "kill", "stop"]
    assert [(e.worker, e.reason) for e in trace.lost] == [(out["bo"].worker, "bo was removed by the lecturer")]
    assert aps.violations(trace) == [] and run.message == "stopped by live.stop()"
    rows = {r["name"]: r for r in room.state["students"]}
    assert rows["bo"]["status"] == "lost" and rows["ada"]["status"] == "in the room"
    with pytest.raises(ValueError, match="name='dan' is not in this room"):
        room.slow("dan", 1.0)


def test_the_live_view_names_each_lane_by_its_student(rooms):
    from asyncps.widgets.render_timeline import TimelineModel, timeline_svg

    room = rooms(workers=2, policy="async", lr=0.05, steps=40)
    threads, _ = students(room, ["ada", "bartholomew-the-third"], [0.001, 0.001])
    finish(threads)
    svg = timeline_svg(TimelineModel(room.result(10).trace), 10)
    assert ">ada<" in svg and ">bartholom…<" in svg and ">worker 0<" not in svg
    assert "Room(tcp://127.0.0.1:" in repr(room) and "2 of 2 seats taken" in repr(room)


def test_the_room_s_view_says_it_waits_for_the_class_until_it_starts(rooms):
    from asyncps.widgets.render_live import header

    room = rooms(workers=30, policy="async", lr=0.01, steps=10 ** 6)
    assert header(room.live.state).endswith("waiting for the class: 0 seated · room.start() starts the run")
    threads, _ = students(room, ["ada", "bo"], [0.001, 0.001], start=False)
    wait_until(lambda: len(room.seats) == 2)
    assert "waiting for the class: 2 seated: " in header(room.live.state)
    room.start()
    assert room.live.state["waiting"] is None and header(room.live.state).endswith("running")
    room.stop()
    finish(threads)


def test_the_live_view_s_controls_name_each_seat_by_its_student_once_taken(rooms):
    room = rooms(workers=2, policy="async", lr=0.05, steps=40)
    view = room.view().children[1]                          # opened before anyone has joined
    c = view.controls
    assert [s.description for s in c["slowdown"]] == ["worker 0", "worker 1"]
    threads, _ = students(room, ["ada", "bartholomew-the-third"], [0.001, 0.001])
    finish(threads)
    room.result(10)
    assert view.join(timeout=20)
    names = [s.description for s in c["slowdown"]]          # the seats: who came first
    assert sorted(names) == ["ada", "bartholom…"]                                # as the lanes cut it
    assert c["worker"].options == tuple(zip(names, (0, 1))) and c["worker"].value == 0


def test_an_encrypted_room_hears_no_plain_client_and_a_plain_room_works_too(rooms):
    room = rooms(workers=1, policy="async", lr=0.05, steps=20)
    assert "~" in room.token and len(room.token.partition("~")[2]) == 40      # a Z85 public key
    plain = zmq.Context.instance().socket(zmq.DEALER)
    plain.setsockopt(zmq.LINGER, 0)
    plain.connect(room.address)
    plain.send_multipart(wire.pack({"op": "join", "token": secret(room), "name": "eve",
                                    "fingerprint": classroom.fingerprint(LSQ)}))
    assert not plain.poll(1000) and room.seats == {}     # no handshake: nothing reaches the room
    plain.close(0)
    start = time.monotonic()
    with pytest.raises(classroom.Refused, match="is encrypted.*copy the token whole"):
        classroom.join(room.address, secret(room), "eve", LSQ, timeout=30, progress=False)
    # said before the timeout (30 s): at once when the room's refusal reaches the client as a
    # protocol error; where the room only drops the connection (a loaded machine: 10.003 s), after
    # the WRONG_KEY_AFTER seconds a busy room is given
    assert time.monotonic() - start < WRONG_KEY_AFTER + 10
    with pytest.raises(ValueError, match="token=.* is not allowed: .*copy"):
        classroom.join(room.address, room.token[:30], "eve", LSQ, timeout=30)   # cut short: at once
    wrong = "A" * 22 + room.token[22:]                   # the right form, the wrong secret
    start = time.monotonic()
    with pytest.raises(classroom.Refused, match="refused this token"):
        classroom.join(room.address, wrong, "eve", LSQ, timeout=30, progress=False)
    assert time.monotonic() - start < 3
    open_room = rooms(workers=1, policy="async", lr=0.05, steps=20, encrypt=False)
    assert "~" not in open_room.token
    threads, out = students(open_room, ["ada"], [0.0])
    finish(threads)
    assert out["ada"].pushes == 20


def test_a_refusal_that_comes_before_the_first_send_is_said_not_hung_on(rooms):
    """A wrong token's handshake may fail before the student's first request is sent; the
    socket then has no connection to queue it on until it reconnects, and a plain send waited
    for ever (measured: 26 of 60 sends blocked, delays 0-95 ms). Each delay must end in Refused."""
    from asyncps.classroom.student import Connection

    room = rooms(workers=1, policy="async", lr=0.05, steps=20)
    secret_key, _, room_key = room.token.partition("~")
    wrong = wire.door_keys("A" * len(secret_key))
    context = zmq.Context()
    try:
        for delay in (0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.3):
            connection = Connection(context, room.address, room_key, wrong, timeout=20)
            time.sleep(delay)
            start = time.monotonic()
            with pytest.raises(classroom.Refused, match="refused this token"):
                connection.call({"op": "join", "token": "x", "name": "eve"})
            assert time.monotonic() - start < 5, delay
            connection.close()
            time.sleep(0.15)                 # under the room's handshake rate for one address
    finally:
        context.term()
    assert room.seats == {} and room.refused["handshake"] >= 7


@pytest.mark.slow
def test_a_token_with_another_room_s_key_is_said_within_seconds(rooms):
    room, other = rooms(workers=1, steps=20), rooms(workers=1, steps=20)
    mixed = f"{secret(room)}~{other.token.partition('~')[2]}"     # this room's secret, not its key
    start = time.monotonic()
    with pytest.raises(classroom.Refused, match="does not accept this token's key"):
        classroom.join(room.address, mixed, "eve", LSQ, timeout=60, progress=False)
    assert time.monotonic() - start < 20 and room.seats == {}


def test_stand_ins_take_the_empty_seats_and_a_student_who_came_first_keeps_theirs(rooms):
    room = rooms(workers=3, policy="async", lr=0.05, steps=90)
    threads, out = students(room, ["ada"], [0.002])
    wait_until(lambda: len(room.seats) == 1)
    stand_ins = classroom.fill(room, LSQ, slowdowns=[0.001, 0.003])
    contributions = stand_ins.wait(60)
    finish(threads)
    run = room.result(10)
    assert sorted(run.trace.meta["students"].values()) == ["ada", "stand-in 1", "stand-in 2"]
    assert run.trace.meta["students"]["0"] == "ada" and stand_ins.errors == {}
    assert set(contributions) == {"stand-in 1", "stand-in 2"}
    assert sum(c.pushes for c in contributions.values()) + out["ada"].pushes == 90


def test_a_learner_s_push_rule_runs_in_the_room_and_a_student_s_own_gradient_joins_it(rooms):
    seen = []

    def careful_apply(params, version, grad, computed_on, lr):          # an assignment's push
        seen.append(version - computed_on)
        params -= lr / (1 + version - computed_on) * grad
        return params, version + 1, version - computed_on

    class HalfGradient(aps.problems.LeastSquares):                       # a student's own code
        def gradient(self, params, indices=None, rng=None):
            return 0.5 * super().gradient(params, indices, rng)

    room = rooms(workers=2, policy="async", lr=0.05, steps=60, apply=careful_apply)
    mine = HalfGradient(n=512, dim=10, seed=0)
    assert classroom.fingerprint(mine) == classroom.fingerprint(LSQ)     # the same loss, data, shapes
    threads, out = students(room, ["ada"], [0.001])
    out["bo"] = classroom.join(room.address, room.token, "bo", mine, slowdown=0.002)
    finish(threads)
    run = room.result(10)
    assert seen == [p.staleness for p in run.trace.pushes] and len(seen) == 60
    assert out["bo"].pushes > 0 and aps.violations(run.trace) == []


def test_an_honest_student_over_the_rate_limit_is_slowed_not_thrown_out(rooms):
    room = rooms(workers=1, policy="async", lr=0.05, steps=40, max_rate=40)
    threads, out = students(room, ["ada"], [0.0])
    finish(threads)
    assert out["ada"].pushes == 40 and out["ada"].stopped == "the room made its versions"
    assert room.refused["rate"] > 0                      # it was over the limit, and waited


def test_raw_connections_that_speak_no_zeromq_or_never_speak_leave_the_room_serving(rooms):
    import socket as sockets

    room = rooms(workers=2, policy="async", lr=0.05, steps=60)
    host, port = room.address.removeprefix("tcp://").rsplit(":", 1)
    idle = sockets.create_connection((host, int(port)), timeout=5)          # connects, says nothing
    noise = sockets.create_connection((host, int(port)), timeout=5)
    noise.sendall(bytes(range(256)) * 64)                                    # not ZeroMQ at all
    quiet = client(room)                                                     # a DEALER that never sends
    threads, out = students(room, ["ada", "bo"], [0.001, 0.001])
    finish(threads)
    run = room.result(10)
    assert len(run.losses) == 61 and sorted(run.trace.meta["students"].values()) == ["ada", "bo"]
    assert set(room.refused) == {"handshake"}            # none of them got as far as a message
    for s in (idle, noise):
        s.close()
    quiet.close(0)


def test_a_room_on_a_given_port_and_arguments_it_cannot_use_are_said(rooms):
    import socket as sockets

    with sockets.socket() as probe:                      # a free port, then the room takes it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    room = rooms(workers=1, steps=5, port=port)
    assert room.address == f"tcp://127.0.0.1:{port}"
    with pytest.warns(UserWarning, match=f"port={port}: the room this kernel opened there before is closed"):
        again = rooms(workers=1, steps=5, port=port)     # the serve cell run again
    assert again.address == room.address and not room.live.running
    with sockets.socket() as other:                      # another program on a port: said, not raw
        other.bind(("127.0.0.1", 0))
        other.listen()
        with pytest.raises(OSError, match=r"port=\d+ is taken on 127.0.0.1: .*port=0 for any free port"):
            classroom.serve(LSQ, workers=1, steps=5, port=other.getsockname()[1])
    with pytest.raises(TypeError, match=r"serve\(\) got \['slowdown'\]: a room's workers are"):
        classroom.serve(LSQ, workers=2, slowdown=[0, 1])
    with pytest.raises(TypeError, match="compute_times.*aps.simulate only"):
        classroom.serve(LSQ, workers=2, compute_times=[1, 1])
    with pytest.raises(ValueError, match="wait_for=3 is not allowed with workers=2"):
        classroom.serve(LSQ, workers=2, policy="ksync", wait_for=3)


def test_a_misspelt_argument_to_serve_names_serve_not_train():
    with pytest.raises(TypeError, match=r"^serve\(\) got an unexpected keyword argument 'lerning_rate': "
                                        r"did you mean lr=\?"):
        classroom.serve(LSQ, workers=2, lerning_rate=0.1)
    with pytest.raises(TypeError) as raised:                # the hint lists serve's arguments
        classroom.serve(LSQ, workers=2, prot=8888)
    message = str(raised.value)
    assert "did you mean port=? The arguments of serve() are host, port, silent_after" in message
    assert "engine" not in message and "slowdown" not in message and ", lr, " in message
