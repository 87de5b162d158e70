"""The soak's attackers (asyncps/bench/soak.py): raw pyzmq and raw TCP, nothing of asyncps.

Run as a script by its path, in isolated mode, so that no asyncps code is imported on the
attacker's side (what an attacker on the classroom network has: pyzmq, sockets, the room's
address and public key, and for the token holder the token and the problem):

    python -I attackers.py KIND '{"host": ..., "port": ..., "seconds": ..., ...}'

Each attacker loops until its `seconds` are up or its count bound is reached, whichever comes
first, only against 127.0.0.1 (any other host is refused here), then prints one JSON line: what
it did (counts). With "source" (an address of 127.0.0.0/8, the loopback), every connection it
opens comes from that address, as an attacker's laptop has an address of its own on a network.

    handshakes   a stranger flooding CurveZMQ handshakes, each with a fresh random key pair
    idle         a stranger holding IDLE raw TCP connections that never say a word, opening a
                 new one for each the room closes
    garbage      a stranger sending random bytes and broken ZMTP greetings on raw TCP
    forged_ids   a stranger setting forged routing ids: b"\\x00" + uint32 from 0x6b8b4567 upward
                 (libzmq's first automatic id in a process whose rand() was never seeded), over
                 CurveZMQ with random keys and over the NULL mechanism
    rule_breaker a token holder who joins properly (the door key derived from the token's secret
                 as the room does, a seat asked for with its own key, then a connection of that
                 key) and breaks every rule: floods gates over its rate on several connections,
                 pushes without pulls, pushes gradients of norm ~1e300 and 1e6, replays old seq
                 numbers, and never reads a single reply after the join
"""
import errno
import hashlib
import json
import os
import random
import selectors
import socket
import struct
import sys
import time

import zmq
from zmq.utils import z85

FIRST_ID = 0x6B8B4567          # glibc's rand() unseeded: libzmq's first automatic routing id
BOUNDS = {"handshakes": 300_000, "idle": 1_000_000, "garbage": 1_000_000, "forged_ids": 300_000,
          "rule_breaker": 50_000_000}     # the most sockets, connections or messages each makes
IDLE = 600                     # connections the idle attacker holds at once (the room caps 512)
BATCH = 40                     # sockets a handshake attacker opens before closing them
FILES = 4096                   # files a handshake attacker lets itself hold before it waits
MAX_SOCKETS = 16384            # ZeroMQ's sockets a context may hold (1,023 by default): closed
                               # ones wait for its reaper thread, which lags on a busy machine


def _files_open():
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def _more_files():
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (ImportError, ValueError, OSError):
        pass


def _tcp(a, timeout=None):
    """A raw TCP connection to the room, from a["source"] when there is one."""
    c = socket.socket()
    try:
        if timeout is not None:
            c.settimeout(timeout)
        if a.get("source"):
            c.bind((a["source"], 0))
    except OSError:
        c.close()
        raise
    return c


def handshakes(a, deadline, bound, out):
    """Connect with a random key (never a student's): the room's ZAP handler refuses each."""
    _more_files()
    context = zmq.Context()
    context.max_sockets = MAX_SOCKETS
    out.update(sockets=0, out_of_files=0)
    while time.monotonic() < deadline and out["sockets"] < bound:
        if _files_open() > FILES:                    # closed sockets not yet reaped: let them be
            out["waited"] = out.get("waited", 0) + 1
            time.sleep(0.1)
            continue
        batch = []
        try:
            for _ in range(BATCH):
                s = context.socket(zmq.DEALER)
                batch.append(s)
                s.setsockopt(zmq.LINGER, 0)
                s.curve_publickey, s.curve_secretkey = zmq.curve_keypair()
                s.curve_serverkey = a["room_key"].encode()
                s.connect(a["address"])
                s.send(b'{"op": "join"}', zmq.NOBLOCK)
        except zmq.ZMQError as err:                  # closed sockets not yet reaped: wait
            if err.errno != errno.EMFILE:
                raise
            out["out_of_files"] += 1
        out["sockets"] += len(batch)
        time.sleep(0.05)
        for s in batch:
            s.close(0)
    return out                                       # no context.term(): see main()


def idle(a, deadline, bound, out):
    """Hold IDLE raw TCP connections; each one the room closes is opened again at once."""
    _more_files()
    sel = selectors.DefaultSelector()
    out.update(opened=0, closed_by_room=0, failed=0, bytes_read=0, most_open=0)

    def open_one():
        try:
            c = _tcp(a)
            c.setblocking(False)
        except OSError as err:
            _failed(out, err)
            return False
        code = c.connect_ex((a["host"], a["port"]))
        if code not in (0, errno.EINPROGRESS):
            _failed(out, OSError(code, os.strerror(code)))
            c.close()
            return False
        sel.register(c, selectors.EVENT_READ)
        out["opened"] += 1
        return True

    try:
        while time.monotonic() < deadline and out["opened"] < bound:
            while len(sel.get_map()) < IDLE and out["opened"] < bound:
                if not open_one():
                    break                            # no more now (no port, say): wait a little
            out["most_open"] = max(out["most_open"], len(sel.get_map()))
            for key, _ in sel.select(timeout=0.2):
                c = key.fileobj
                try:
                    data = c.recv(4096)              # the room's greeting, then its close
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                out["bytes_read"] += len(data)
                if not data:
                    out["closed_by_room"] += 1
                    sel.unregister(c)
                    c.close()
    finally:
        for key in list(sel.get_map().values()):
            key.fileobj.close()
        sel.close()
    return out


GREETING = b"\xff" + b"\x00" * 8 + b"\x7f"          # ZMTP 3: signature, then version 3.0


def _garbage(rng):
    """One connection's bytes: random ones, or a greeting that goes wrong after its first part."""
    kind = rng.randrange(5)
    if kind == 0:
        return os.urandom(rng.choice((16, 512, 8192, 65536)))
    if kind == 1:                                    # CURVE greeting, then a HELLO of noise
        return GREETING + b"\x03\x00" + b"CURVE".ljust(20, b"\x00") + b"\x00" * 31 + os.urandom(400)
    if kind == 2:                                    # NULL mechanism (the room speaks CURVE)
        return GREETING + b"\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" * 31 + os.urandom(64)
    if kind == 3:                                    # a long frame of 2^62 bytes announced
        return (GREETING + b"\x03\x00" + b"CURVE".ljust(20, b"\x00") + b"\x00" * 31
                + b"\x06" + struct.pack(">Q", 2 ** 62) + os.urandom(1024))
    return GREETING[:5] + os.urandom(2048)           # a signature cut short


def garbage(a, deadline, bound, out):
    """Batches of connections, each sent its bytes, then reset (no TIME_WAIT left to us)."""
    _more_files()
    rng = random.Random(1)
    out.update(connections=0, bytes=0, failed=0)
    while time.monotonic() < deadline and out["connections"] < bound:
        batch = []
        for _ in range(BATCH):
            try:
                c = _tcp(a, timeout=1.0)
            except OSError as err:
                _failed(out, err)
                continue
            try:
                c.connect((a["host"], a["port"]))
                data = _garbage(rng)
                c.sendall(data)
                out["bytes"] += len(data)
            except OSError as err:
                _failed(out, err)
            batch.append(c)
            out["connections"] += 1
        time.sleep(0.02)                             # the room reads them, then a reset each
        for c in batch:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()
    return out


def _failed(out, err):
    out["failed"] += 1
    name = f"failed_{errno.errorcode.get(err.errno, err.errno) if err.errno else type(err).__name__}"
    out[name] = out.get(name, 0) + 1


def forged_ids(a, deadline, bound, out):
    """Routing ids libzmq would give the next peers, set by a stranger, CURVE and NULL in turns."""
    _more_files()
    context, n = zmq.Context(), 0
    context.max_sockets = MAX_SOCKETS
    out.update(sockets=0, curve=0, null=0, out_of_files=0)
    while time.monotonic() < deadline and out["sockets"] < bound:
        if _files_open() > FILES:                    # closed sockets not yet reaped: let them be
            out["waited"] = out.get("waited", 0) + 1
            time.sleep(0.1)
            continue
        batch = []
        try:
            for _ in range(BATCH):
                s = context.socket(zmq.DEALER)
                batch.append(s)
                s.setsockopt(zmq.LINGER, 0)
                s.setsockopt(zmq.ROUTING_ID, b"\x00" + struct.pack(">I", (FIRST_ID + n) % 2 ** 32))
                if n % 2 == 0:
                    s.curve_publickey, s.curve_secretkey = zmq.curve_keypair()
                    s.curve_serverkey = a["room_key"].encode()
                    out["curve"] += 1
                else:
                    out["null"] += 1
                s.connect(a["address"])
                s.send(b'{"op": "gate", "session": "x"}', zmq.NOBLOCK)
                n += 1
        except zmq.ZMQError as err:                  # closed sockets not yet reaped: wait
            if err.errno != errno.EMFILE:
                raise
            out["out_of_files"] += 1
        out["sockets"] += len(batch)
        time.sleep(0.05)
        for s in batch:
            s.close(0)
    return out                                       # no context.term(): see main()


# -- the token holder who breaks the rules ---------------------------------------------------------
def _door_keys(secret):
    """The room's door key pair from its secret, as the room derives it (sha256, Z85)."""
    door_secret = z85.encode(hashlib.sha256(b"asyncps door " + secret.encode()).digest())
    return zmq.curve_public(door_secret), door_secret


def _dealer(context, a, public, secret):
    s = context.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.SNDHWM, 100_000)
    s.curve_publickey, s.curve_secretkey = public, secret
    s.curve_serverkey = a["room_key"].encode()
    s.connect(a["address"])
    return s


def _message(header, values=None):
    frames = [json.dumps(header).encode()]
    if values is not None:
        frames.append(struct.pack(f"<{len(values)}d", *values))
    return frames


def rule_breaker(a, deadline, bound, out):
    """Join as a student would, then break every rule, reading nothing after the join."""
    context = zmq.Context()
    out.update(join_tries=0, seated=False, name=None, sent=0, would_block=0, gates=0, pulls=0,
               pushes_without_pull=0, pushes_1e300=0, pushes_1e6=0, replays=0, connections=0)
    secret, _, _ = a["token"].partition("~")
    public, own_secret = zmq.curve_keypair()
    size = a["fingerprint"]["size"]
    shape = [size]
    seat = None
    while seat is None and time.monotonic() < deadline:       # the door: join, asked again
        out["join_tries"] += 1
        door = _dealer(context, a, *_door_keys(secret))
        door.send_multipart(_message({"op": "join", "token": secret, "name": "mallory",
                                      "fingerprint": a["fingerprint"], "key": public.decode(),
                                      "rid": 1}))
        if door.poll(5000):
            reply = json.loads(door.recv_multipart()[0])
            if reply.get("ok"):
                seat = reply
            else:
                out["join_refused"] = reply.get("refused")
        door.close(0)
    if seat is None:
        return out
    out.update(seated=True, name=seat["name"], worker=seat["worker"])
    session = seat["session"]
    conns = [_dealer(context, a, public, own_secret) for _ in range(a.get("connections", 3))]
    out["connections"] = len(conns)
    rng, seq, n = random.Random(5), 0, 0
    huge = [1e300] * size
    while time.monotonic() < deadline and out["sent"] < bound:
        s = conns[n % len(conns)]
        n += 1
        what = n % 100
        if what < 80:                                           # gates, far over its rate
            frames, kind = _message({"op": "gate", "session": session, "rid": n}), "gates"
        elif what < 88:                                         # pushes with no pull
            seq += 1
            frames, kind = _message({"op": "push", "session": session, "seq": seq, "rid": n,
                                     "computed_on": 0, "compute_seconds": 0.0, "shape": shape,
                                     "dtype": "float64"},
                                    [rng.gauss(0, 1e6) for _ in range(size)]), "pushes_without_pull"
        elif what < 92:                                         # a pull ...
            frames, kind = _message({"op": "pull", "session": session, "rid": n}), "pulls"
        elif what < 96:                                         # ... then a push of 1e300
            seq += 1
            frames, kind = _message({"op": "push", "session": session, "seq": seq, "rid": n,
                                     "computed_on": 10 ** 9, "compute_seconds": 0.0,
                                     "shape": shape, "dtype": "float64"}, huge), "pushes_1e300"
        elif what < 98:                                         # or of norm ~1e6
            seq += 1
            frames, kind = _message({"op": "push", "session": session, "seq": seq, "rid": n,
                                     "computed_on": 0, "compute_seconds": 0.0, "shape": shape,
                                     "dtype": "float64"},
                                    [1e6 * (1 if i % 2 else -1) for i in range(size)]), "pushes_1e6"
        else:                                                   # an old seq, again
            frames, kind = _message({"op": "push", "session": session, "seq": max(1, seq - 5),
                                     "rid": n, "computed_on": 0, "compute_seconds": 0.0,
                                     "shape": shape, "dtype": "float64"}, huge), "replays"
        try:
            s.send_multipart(frames, zmq.NOBLOCK)
            out["sent"] += 1
            out[kind] += 1
        except zmq.Again:
            out["would_block"] += 1
            time.sleep(0.001)
        if n % 2000 == 0:
            time.sleep(0.001)                                   # let the clock be looked at
    for s in conns:
        s.close(0)
    return out                                       # no context.term(): see main()


KINDS = {"handshakes": handshakes, "idle": idle, "garbage": garbage, "forged_ids": forged_ids,
         "rule_breaker": rule_breaker}


def main(argv):
    kind, a = argv[1], json.loads(argv[2])
    if a["host"] != "127.0.0.1":
        raise SystemExit(f"host={a['host']!r}: these attackers only ever target 127.0.0.1")
    source = a.get("source")
    if source is not None and not source.startswith("127."):
        raise SystemExit(f"source={source!r}: these attackers only ever use the loopback, 127.0.0.0/8")
    a["address"] = f"tcp://{source + ':0;' if source else ''}{a['host']}:{a['port']}"
    started, out = time.monotonic(), {}
    try:
        KINDS[kind](a, started + float(a["seconds"]), BOUNDS[kind], out)
    except Exception as err:                         # noqa: BLE001 - reported with the counts
        out["error"] = f"{type(err).__name__}: {err}"
    out.update(kind=kind, seconds=time.monotonic() - started)
    print(json.dumps(out), flush=True)
    os._exit(0)         # no context.term(): libzmq's was seen to hang for good at the end of a run
                        # of thousands of connects from a source address; the OS frees it all


if __name__ == "__main__":
    main(sys.argv)
