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


def students(room, names, slowdowns, problem=LSQ):
    """Each name joins `room` from its own thread; returns {name: Contribution}, once all stop."""
    out = {}

    def student(name, slowdown):
        out[name] = classroom.join(room.address, room.token, name, problem, slowdown=slowdown)

    threads = [threading.Thread(target=student, args=(n, s)) for n, s in zip(names, slowdowns)]
    for t in threads:
        t.start()
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


def client(room):
    """A raw DEALER socket on the room: what a hostile (or careless) program can send."""
    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    _, _, key = room.token.partition("~")               # the room's public key is no secret
    if key:
        socket.curve_serverkey = key.encode()
        socket.curve_publickey, socket.curve_secretkey = zmq.curve_keypair()
    socket.connect(room.address)
    return socket


def secret(room):
    return room.token.partition("~")[0]


def ask(socket, frames, timeout=5.0):
    socket.send_multipart(frames)
    assert socket.poll(int(timeout * 1000)), "the room did not answer"
    reply = socket.recv_multipart()
    return json.loads(reply[0]), reply[1:]


def joined(room, name="mallory"):
    socket = client(room)
    reply, _ = ask(socket, wire.pack({"op": "join", "token": secret(room), "name": name,
                                      "fingerprint": classroom.fingerprint(LSQ)}))
    assert reply["ok"], reply
    return socket, reply


def push(session, seq=1, computed_on=0, grad=None, **header):
    grad = np.zeros(10) if grad is None else grad
    return wire.pack({"op": "push", "session": session, "seq": seq, "computed_on": computed_on,
                      **header}, grad)


def test_hostile_clients_are_refused_counted_and_never_applied(rooms):
    room = rooms(workers=4, policy="async", lr=0.05, steps=400, silent_after=60)
    x0 = room.server.params.copy()
    stranger = client(room)
    refusals = {
        "garbage": [[b"\x80\x81 not json"], [b"[1, 2, 3]"], [b'{"no": "op"}'], [b""]],
        "token": [wire.pack({"op": "join", "name": "eve", "fingerprint": classroom.fingerprint(LSQ)}),
                  wire.pack({"op": "join", "token": "guess", "name": "eve",
                             "fingerprint": classroom.fingerprint(LSQ)})],
        "session": [push("0" * 32), wire.pack({"op": "pull"}), wire.pack({"op": "rm -rf", "session": "x"})],
        "fingerprint": [wire.pack({"op": "join", "token": secret(room), "name": "eve",
                                   "fingerprint": {"problem": "least-squares", "size": 11}})],
    }
    for reason, messages in refusals.items():
        for frames in messages:
            reply, _ = ask(stranger, frames)
            assert reply == {"ok": False, "refused": reason, "why": reply["why"]}, (frames, reply)
    # a joined client, misbehaving with its own session
    mallory, seat = joined(room)
    session = seat["session"]
    bad = [("shape", push(session, grad=np.zeros(11))),
           ("dtype", push(session, grad=np.zeros(10, dtype=np.float32))),
           ("not_finite", push(session, grad=np.full(10, np.nan))),
           ("not_finite", push(session, grad=np.array([np.inf] + [0.0] * 9))),
           ("shape", [push(session)[0], b"\x00" * 79]),                       # bytes short of 80
           ("garbage", push(session, computed_on=10 ** 9)),
           ("garbage", push(session, seq=-1)),
           ("garbage", push(session, compute_seconds="soon")),
           ("garbage", wire.pack({"op": "_serve", "session": session})),   # no private method
           ("garbage", wire.pack({"op": "join ", "session": session}))]
    for reason, frames in bad:
        reply, _ = ask(mallory, frames)
        assert reply["refused"] == reason, (reason, reply)
    # another connection with mallory's session key; then a replay of mallory's own push
    reply, _ = ask(stranger, push(session, seq=1, grad=np.ones(10)))
    assert reply["refused"] == "session"
    assert ask(mallory, push(session, seq=5, grad=np.full(10, 1e-3)))[0]["ok"]
    reply, _ = ask(mallory, push(session, seq=5, grad=np.full(10, 1e-3)))
    assert reply["refused"] == "replay"
    assert ask(mallory, wire.pack({"op": "leave", "session": session}))[0]["ok"]
    reply, _ = ask(mallory, push(session, seq=6))
    assert reply["refused"] == "lost"                    # a seat that left pushes no more
    # oversized: ZeroMQ drops a message over the room's cap (and the connection) unread
    mallory.send_multipart(push(session, seq=7, grad=np.zeros(10 ** 6)))
    assert not mallory.poll(500)
    assert room.server.version == 1                      # mallory's one honest push, nothing else
    np.testing.assert_allclose(room.server.params, x0 - 0.05 * 1e-3)
    counted = sum(len(m) for m in refusals.values()) + len(bad) + 3
    assert sum(room.refused.values()) == counted, room.refused
    # the room still serves the others
    threads, out = students(room, ["ada", "bo"], [0.001, 0.002])
    finish(threads)
    run = room.result(10)
    assert len(run.losses) == 401 and aps.violations(run.trace) == []
    assert [e.reason for e in run.trace.lost] == ["mallory left the room"]
    for socket in (stranger, mallory):
        socket.close(0)


def test_a_client_that_floods_is_rate_limited(rooms):
    room = rooms(workers=2, policy="async", lr=0.05, steps=10, max_rate=20)
    socket, seat = joined(room)
    replies = [ask(socket, wire.pack({"op": "gate", "session": seat["session"]}))[0] for _ in range(60)]
    assert sum(r.get("refused") == "rate" for r in replies) >= 30
    assert room.refused["rate"] >= 30
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


def test_under_sync_a_silent_student_is_named(rooms):
    room = rooms(workers=3, policy="sync", lr=0.05, steps=10_000, silent_after=0.5)
    silent, _ = joined(room, "zed")
    threads, out = students(room, ["ada", "bo"], [0.001, 0.001])
    with pytest.raises(RuntimeError, match=r"worker 0 was lost \(zed was silent for 0.5 s\).*"
                                           r"waits for every worker"):
        room.result(30)
    finish(threads)
    for c in out.values():                               # told why, not left waiting
        assert c.stopped.startswith("the room ended this seat's run: worker 0 was lost (zed"), c
    silent.close(0)


def test_a_full_room_and_a_wrong_problem_are_refused_with_a_reason(rooms):
    room = rooms(workers=1, policy="async", lr=0.05, steps=10)
    first, _ = joined(room, "ada")
    with pytest.raises(RuntimeError, match="all 1 seats are taken"):
        classroom.join(room.address, room.token, "bo", LSQ, timeout=5)
    other = aps.problems.LeastSquares(n=512, dim=11, seed=0)
    with pytest.raises(RuntimeError, match="this room trains"):
        classroom.join(room.address, room.token, "cy", other, timeout=5)
    other_data = aps.problems.LeastSquares(n=512, dim=10, seed=1)     # the same shapes, other data
    with pytest.raises(RuntimeError, match="this room trains"):
        classroom.join(room.address, room.token, "dan", other_data, timeout=5)
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
    assert out["bo"].stopped.startswith("the room ended this seat's run: seat")
    room.stop()
    finish(threads)
    run = room.result(10)
    trace = run.trace
    assert [c.what for c in trace.controls] == ["pause", "resume", "slow", "kill", "stop"]
    assert [(e.worker, e.reason) for e in trace.lost] == [(room.seat("bo"), "bo was removed by the lecturer")]
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
    with pytest.raises(classroom.RoomLost, match="copy it whole"):
        classroom.join(room.address, secret(room), "eve", LSQ, timeout=1)
    open_room = rooms(workers=1, policy="async", lr=0.05, steps=20, encrypt=False)
    assert "~" not in open_room.token
    threads, out = students(open_room, ["ada"], [0.0])
    finish(threads)
    assert out["ada"].pushes == 20


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
    assert room.refused == {}                            # none of them got as far as a message
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
