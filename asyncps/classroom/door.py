"""The room's door: the one ZeroMQ socket a room listens on, and everything done to a message
before the room reads it. A room faces strangers on a classroom network; this module is where
they are stopped.

    door = Door(host, port, encrypt, max_bytes)
    for who, key, frames in door.messages(timeout_ms): ...      # only what passed the door
    door.reply(who, frames)

In order, for an encrypted room (the default):
1. **The handshake.** CurveZMQ, with a ZAP handler (ZeroMQ's authentication protocol, answered
   here): a peer completes the handshake only with the door key (derived from the room's secret:
   only who holds the token has it, and it may ask for a seat, nothing else) or with a student's
   own key, registered when that student was seated. A stranger's connection is closed before a
   byte of it is read, so it can neither send nor choose a routing id. (libzmq 4.3.5 aborts the
   whole process when a peer's chosen id equals the next id it makes for a peer without one: an
   assertion in socket_base.cpp. Those ids count up from rand(): `_unpredictable_ids` seeds it
   from a secret, and a handshake budget per address (HANDSHAKE_RATE) leaves even a student a
   few guesses a second among 2^32.)
2. **Connections.** A connection that has not finished its handshake within HANDSHAKE seconds is
   closed by ZeroMQ; at most MAX_CONNECTIONS are open (the newest beyond it are shut); heartbeats
   find a peer that vanished within HEARTBEAT_TIMEOUT; a socket monitor tells which connection
   closed (`closed`), so the room knows whose seat is empty.
3. **Size and form.** A message of more than three frames, a frame over the cap (ZeroMQ closes
   that connection unread: MAXMSGSIZE), and a message whose connection is over its rate are
   dropped before parsing; queues are bounded both ways (high-water marks), so replies a peer
   never reads cannot pile up.
4. **Rate.** A token bucket per connection, charged for every message, refused ones included:
   JOIN_RATE a second at the door, the room's max_rate once seated.

Every refusal is counted by reason (`refused`). A plain room (encrypt=False) has no handshake to
refuse at: steps 2 to 4 only (a network you trust).
"""
import collections
import ctypes
import os
import secrets
import socket as sockets
import time

from . import wire

HANDSHAKE = 3.0               # seconds a connection has to finish its handshake
HEARTBEAT = 1.0               # seconds between ZeroMQ's pings to each peer ...
HEARTBEAT_TIMEOUT = 2.0       # ... and without an answer, the peer is gone
MAX_CONNECTIONS = 512         # open connections at once, door and students together
JOIN_RATE = 4.0               # messages a second a connection at the door may send
HANDSHAKE_RATE = 10.0         # handshakes a second from one address (a burst of HANDSHAKE_BURST)
HANDSHAKE_BURST = 40.0
STUDENT_HANDSHAKE_RATE = 1.0  # handshakes a second with one seated student's key (reconnects) ...
STUDENT_HANDSHAKE_BURST = 5.0 # ... after a burst of this many
QUEUE = 16                    # messages queued per peer, each way
RATE_REPLY_EVERY = 0.1        # a connection over its rate is told so at most this often
BUCKETS = 4096                # connections whose rate is remembered at once
ZAP_ENDPOINT = "inproc://zeromq.zap.01"


def _unpredictable_ids():
    """libzmq numbers the connections it names from rand(); seed it from a secret so that nobody
    can guess the next one (where libc cannot be reached, ZAP still keeps strangers out)."""
    try:
        ctypes.CDLL(None).srand(ctypes.c_uint(secrets.randbits(32)))
    except (OSError, AttributeError):
        pass


def _give_back_memory():
    """glibc keeps freed memory for later; after a huge refused message, give it back."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _more_files():
    """As many open files as the system allows this process (connections are files)."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (ImportError, ValueError, OSError):
        pass


class Door:
    """One ROUTER socket, its ZAP handler and its monitor (see the module's docstring)."""

    def __init__(self, host, port, encrypt, max_bytes, max_rate, secret):
        import zmq

        _more_files()
        _unpredictable_ids()
        self.max_bytes, self.max_rate = int(max_bytes), float(max_rate)
        self.refused = collections.Counter()          # reason -> messages (or handshakes) refused
        self.students = set()                         # the registered students' keys (Z85 bytes)
        self._buckets = collections.OrderedDict()     # routing id -> [tokens, last refill, told]
        self._handshakes = collections.OrderedDict()  # address or key -> [tokens, last refill]
        self._open = {}                               # fd -> connection open (from the monitor)
        self._active = set()                          # open fds a message has come on
        self._context = zmq.Context()
        self.socket = s = self._context.socket(zmq.ROUTER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.MAXMSGSIZE, self.max_bytes)
        s.setsockopt(zmq.SNDHWM, QUEUE)
        s.setsockopt(zmq.ROUTER_MANDATORY, 1)         # a full queue says so (counted), not silently
        s.setsockopt(zmq.RCVHWM, QUEUE)
        s.setsockopt(zmq.HANDSHAKE_IVL, int(HANDSHAKE * 1000))
        s.setsockopt(zmq.HEARTBEAT_IVL, int(HEARTBEAT * 1000))
        s.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(HEARTBEAT_TIMEOUT * 1000))
        s.setsockopt(zmq.HEARTBEAT_TTL, int(HEARTBEAT_TIMEOUT * 1000))
        self.public_key, self.door_key, self._zap = None, None, None
        if encrypt:
            self._zap = self._context.socket(zmq.REP)
            self._zap.setsockopt(zmq.LINGER, 0)
            self._zap.bind(ZAP_ENDPOINT)
            self.public_key, secret_key = zmq.curve_keypair()
            s.curve_secretkey, s.curve_publickey, s.curve_server = secret_key, self.public_key, True
            s.setsockopt(zmq.ZAP_DOMAIN, b"asyncps")
            self.door_key = wire.door_keys(secret)[0]
        try:
            if port == 0:
                port = s.bind_to_random_port(f"tcp://{host}")
            else:
                s.bind(f"tcp://{host}:{port}")
        except zmq.ZMQError as err:
            self.close()
            if err.errno == zmq.EADDRINUSE:
                raise OSError(f"port={port} is taken on {host}: another room (perhaps this notebook's, "
                              f"from a cell run before: room.stop() closes it) or another program "
                              f"listens there; use port=0 for any free port, or another port") from None
            raise OSError(f"host={host!r} port={port}: the room cannot listen there ({err}); "
                          f"host must be an address of this machine, e.g. 127.0.0.1 or 0.0.0.0") from None
        self.port = int(port)
        # the monitor: its queue unbounded (a burst of connections must not lose a close event)
        monitor = f"inproc://asyncps-monitor-{id(self)}"
        s.monitor(monitor, zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_CLOSED)
        self._monitor = self._context.socket(zmq.PAIR)
        self._monitor.setsockopt(zmq.RCVHWM, 0)
        self._monitor.connect(monitor)
        self._poller = zmq.Poller()
        for sock in (s, self._monitor) + ((self._zap,) if self._zap is not None else ()):
            self._poller.register(sock, zmq.POLLIN)

    # -- what the room calls ----------------------------------------------------------------
    def messages(self, timeout_ms):
        """Wait at most `timeout_ms`; then everything that passed the door, as (who: the
        connection's routing id, key: the peer's Z85 key (None in a plain room), fd, frames).
        Connections that closed meanwhile are in `closed` (fds); the keys of seated students
        whose connection was let in meanwhile, in `shook`."""
        import zmq

        self.closed, self.shook = [], []
        ready = dict(self._poller.poll(timeout_ms))
        if self._monitor in ready:
            self._watch()
        if self._zap is not None and self._zap in ready:
            for _ in range(64):
                try:
                    self._authenticate(self._zap.recv_multipart(zmq.NOBLOCK))
                except zmq.Again:
                    break
        out = []
        if self.socket in ready:
            for _ in range(256):                     # then let the loop look at the clock
                try:
                    frames = self.socket.recv_multipart(zmq.NOBLOCK, copy=False)
                except zmq.Again:
                    break
                passed = self._check(frames)
                if passed is not None:
                    out.append(passed)
                elif sum(len(f) for f in frames) > 8 * 2 ** 20:
                    del frames                       # the last reference to a huge refused message:
                    _give_back_memory()              # what it held goes back to the system
        return out

    def reply(self, who, frames):
        import zmq

        try:
            self.socket.send_multipart([who] + frames, zmq.NOBLOCK)
        except zmq.Again:                            # a peer that reads nothing: its queue is full
            self.refused["unread"] += 1
        except zmq.ZMQError as err:                  # gone since it asked (EHOSTUNREACH)
            if err.errno != zmq.EHOSTUNREACH:
                raise

    def close(self):
        self._open.clear()                           # nothing is open once the socket is closed
        if getattr(self, "_monitor", None) is not None:
            self.socket.disable_monitor()
        for sock in (getattr(self, "_monitor", None), self._zap, self.socket):
            if sock is not None:
                sock.close(0)
        self._context.term()

    # -- 1. the handshake: ZAP (rfc.zeromq.org/spec/27) -------------------------------------
    def _authenticate(self, request):
        """Answer one ZAP request: 200 for the door key and seated students' keys, 400 else."""
        if len(request) < 7 or request[0] != b"1.0":
            return self._zap.send_multipart([b"1.0", request[1] if len(request) > 1 else b"",
                                             b"500", b"bad request", b"", b""])
        mechanism, credentials = request[5], request[6:]
        key = None
        if mechanism == b"CURVE" and len(credentials) == 1 and len(credentials[0]) == 32:
            from zmq.utils import z85
            key = z85.encode(credentials[0])
        # a seated student's key has a budget of its own (a reconnect always gets in, whatever
        # strangers at the same address do); the door key and strangers, one per address
        spent = (self._spent(self._handshakes, key, STUDENT_HANDSHAKE_RATE, STUDENT_HANDSHAKE_BURST)
                 if key in self.students else
                 self._spent(self._handshakes, request[3], HANDSHAKE_RATE, HANDSHAKE_BURST))
        if spent:                                    # 300: try again later (not "wrong token")
            self.refused["handshake_rate"] += 1
            return self._zap.send_multipart([b"1.0", request[1], b"300", b"too many handshakes",
                                             b"", b""])
        allowed = key is not None and (key == self.door_key or key in self.students)
        if not allowed:
            self.refused["handshake"] += 1
        elif key != self.door_key:
            self.shook.append(key)                    # a seated student's connection (back)
        self._zap.send_multipart([b"1.0", request[1], b"200" if allowed else b"400",
                                  b"OK" if allowed else b"not a student of this room",
                                  key if allowed else b"", b""])

    @staticmethod
    def _spent(buckets, who, rate, burst):
        """Charge one handshake to `who` (an address, or a seated student's key): True when its
        budget is spent. A token holder cannot try routing ids (or keys) by the thousand; a class
        joining at once from one address fits in the burst."""
        now = time.monotonic()
        bucket = buckets.get(who)
        if bucket is None:
            bucket = buckets[who] = [burst, now]
            if len(buckets) > BUCKETS:
                buckets.popitem(last=False)
        bucket[0] = min(burst, bucket[0] + (now - bucket[1]) * rate)
        bucket[1] = now
        if bucket[0] < 1:
            return True
        bucket[0] -= 1
        return False

    # -- 2. connections: the monitor --------------------------------------------------------
    def _watch(self):
        import zmq
        from zmq.utils.monitor import recv_monitor_message

        latest = {}
        for _ in range(4096):
            try:
                event = recv_monitor_message(self._monitor, zmq.NOBLOCK)
            except zmq.Again:
                break
            fd = int(event["value"])
            if event["event"] == zmq.EVENT_ACCEPTED:
                latest[fd] = True
                self._open[fd] = True
            else:
                latest[fd] = False
                self._active.discard(fd)
                if self._open.pop(fd, None):
                    self.closed.append(fd)
        over = len(self._open) - MAX_CONNECTIONS
        if over > 0:                                  # the newest that have said nothing go first
            idle = [fd for fd, is_open in latest.items() if is_open and fd not in self._active]
            for fd in idle[::-1][:over]:
                self.refused["connections"] += 1
                self._shut(fd)

    @staticmethod
    def _shut(fd):
        """Close connection `fd` from outside ZeroMQ: shut it down (ZeroMQ sees it end and frees
        it); the fd itself stays ZeroMQ's."""
        try:
            copy = os.dup(fd)
        except OSError:
            return
        try:
            with sockets.socket(fileno=copy) as conn:
                conn.shutdown(sockets.SHUT_RDWR)
        except OSError:
            pass

    @property
    def connections(self):
        return len(self._open)

    # -- 3 and 4. size, form and rate -------------------------------------------------------
    def rate_limited(self, who, seated):
        """Charge one message to `who` (a seated student's key: all its connections share one
        budget; else a connection's routing id): False when it may go on; else True, and the
        refusal counted ("rate"); `who` is then told at most every RATE_REPLY_EVERY seconds."""
        now = time.monotonic()
        rate = self.max_rate if seated else JOIN_RATE
        bucket = self._buckets.get(who)
        if bucket is None:
            bucket = self._buckets[who] = [rate, now, 0.0]
            if len(self._buckets) > BUCKETS:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(who)
        bucket[0] = min(rate, bucket[0] + (now - bucket[1]) * rate)
        bucket[1] = now
        bucket[0] -= 1.0                              # refused messages are charged too
        if bucket[0] >= 0:
            return False
        bucket[0] = max(bucket[0], -rate)             # a flood waits a second at most once it stops
        self.refused["rate"] += 1
        if now - bucket[2] >= RATE_REPLY_EVERY:
            bucket[2] = now
            return "tell"
        return True

    def _check(self, frames):
        """(who, key, fd, frames) of a message whose form passed, or None (counted)."""
        import zmq

        who, frames = frames[0].bytes, frames[1:]
        if not 1 <= len(frames) <= 2:
            self.refused["frames"] += 1
            return None
        if len(frames[0]) > wire.HEADER_BYTES:
            self.refused["oversized"] += 1
            return None
        key = None
        if self._zap is not None:
            key = frames[0].get("User-Id").encode()
        try:
            fd = frames[0].get(zmq.SRCFD)
            self._active.add(fd)
        except zmq.ZMQError:                         # a libzmq without SRCFD
            fd = None
        return who, key, fd, [f.bytes for f in frames]
