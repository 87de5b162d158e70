"""`aps.train(engine="rpc")`: a whole rpc world on 127.0.0.1, started from the caller (a notebook too).

One process hosts the server (rank 0, host.py), one per worker runs proxy.work (ranks 1..N); all
are children of the caller (procs.py), which watches them: a worker that dies is reported to the
server as lost (async goes on, sync and ssp stop), a dead server or any error stops the run.
At the end the server's state comes home to the caller's ParameterServer.

A live run (`live=True`, engines/live.py): the caller keeps the Controls (below). Each worker's
slowdown and the pause are shared memory its process reads after every gradient (as on the
processes engine), a kill is a SIGKILL of its process, and every change goes to rank 0 on its
pipe, where the server records and applies it. A pause is set here at once; rank 0 lifts it,
after recording the resume, so that no push the workers make then comes before it in the trace.
Rank 0 sends the trace's new events ten times a second; they are added to the caller's server,
so `live.state` and the live view read them here.
"""
import logging
import time
import warnings

from .. import procs
from ..interrupt import raised_between_turns
from ..processes import Controls as ProcessControls
from ..processes import obey
from . import host, proxy
from .rendezvous import LOOPBACK, listen


class Controls(ProcessControls):
    """The caller's side of a live rpc run: the flags and slowdowns its workers read, a kill as a
    SIGKILL (worker k is child k + 1: rank 0 is child 0), and each change sent to rank 0, which
    records it (`host.Controls`). Until rank 0 has started, the changes wait in `outbox`."""

    def __init__(self, server, config, clock):
        super().__init__(server, config, clock)
        self.outbox, self.start, self._paused = [], None, False

    @property
    def paused(self):
        return self._paused                          # as asked here; rank 0 lifts the shared flag

    def pause(self, paused=True):
        changed = super().pause(paused)
        if changed:
            self._paused = paused
        return changed

    def _lift_pause(self):
        """Rank 0 lifts the pause once it has recorded the resume (host._hear): a worker let go
        here could push before it, and its push would stand inside the pause in the trace."""

    def child(self, worker):
        return worker + 1

    def _send(self, *message):
        """To rank 0 (the lock held), or into the outbox until it has started."""
        if self._children is None:
            self.outbox.append(message)
        else:
            self._children.conns[0].send(message)

    def _record(self, what, worker=None, value=None):
        self._send("control", what, worker, value)
        return True

    def _set_lr(self, lr):
        self.server.lr = lr                            # live.state shows it at once; rank 0 records it
        self._send("control", "lr", None, lr)

    def _stop(self, message):
        self._send("control", "stop", None, message)

    def started(self, children, clock=None):
        """Every child has started: send what waited. An early kill waits for the world to form
        (rank 0's first news): a rank missing from init_rpc would hold every other one there."""
        with self.lock:
            self._children = children
            for message in self.outbox:
                children.conns[0].send(message)
            self.outbox = []

    def _kill(self, worker):
        if self.start is not None:                    # the world has formed
            super()._kill(worker)

    def heard(self, news):
        """Rank 0's news (the lock held): its version, lr and the new events, into our server."""
        server, trace = self.server, self.server.trace
        if self.start is None:                        # the first news: the world has formed
            self.start = news["start"]
            offset = self.clock()
            self.clock = lambda: offset + time.time() - news["start"]      # rank 0's clock
            for worker in sorted(self.killed):
                self._kill(worker)
        server.version, server.lr, server.stopped = news["version"], news["lr"], news["stopped"]
        fresh = news["fresh"]
        trace.events.extend(fresh["events"])
        trace.losses.extend(fresh["losses"])
        for name, values in trace.metrics.items():
            values.extend(fresh.get(f"metric {name}", []))
        trace.beyond = news["beyond"]
        if server.done:
            self.flags[0] = 1


def _worker_main(k, payload, shard, world, offset, flags, slowdown, conn):
    try:
        procs.child_setup()
        problem, config = procs.loads(payload)
        address = config.address
        problem = problem.on_device(config.devices[k])
        flags, slowdown = flags.numpy(), slowdown.numpy()
        port = conn.recv()                                     # rank 0 has bound its socket
        proxy.work(k, problem, shard, config, world, f"asyncps://{address}:{port}", offset,
                   obey=lambda: obey(k, flags, slowdown))
        conn.send(("done",))
    except BaseException as err:                                 # noqa: BLE001
        procs.send_error(conn, err)


def _server_main(server_blob, world, offset, live, flags, conn):
    try:
        procs.child_setup()
        server = procs.loads(server_blob)
        address = server.config.address
        port = listen(address)
        conn.send(("port", port))
        copies = host.serve(server, world, f"asyncps://{address}:{port}", server.config.timeout, offset,
                            caller=conn, live=live, flags=flags.numpy())
        server.on_version = None
        conn.send(("result", procs.dumps((server, copies), name="the result")))
    except BaseException as err:                                 # noqa: BLE001
        procs.send_error(conn, err)


def _check_address(config):
    address = config.address
    if address not in (LOOPBACK, "localhost"):
        if not config.allow_remote:
            raise ValueError(f"address={address!r} is not allowed without allow_remote=True: the rpc "
                             f"engine binds to 127.0.0.1 unless you ask; torch rpc unpickles what it "
                             f"receives, so only open it on a network you trust")
        warnings.warn(f"asyncps rpc: listening on {address}, beyond loopback. torch rpc deserialises "
                      f"messages with pickle: anyone who can reach this address can run code here; "
                      f"use a trusted network only", RuntimeWarning, stacklevel=4)
    logging.getLogger("asyncps.rpc").info(
        "rpc world of %d processes listening on %s%s", config.workers + 1, address,
        "" if address in (LOOPBACK, "localhost") else " (beyond loopback: trusted networks only)")


def run_rpc(server, problem, shards, config, copies, offset, progress=None, controls=None):
    """Start a world of 1 server + N worker processes, run it, and bring the result home.
    `progress(version)` (optional) is told the version rank 0 reports every 0.2 s.
    `controls`: a live run's Controls (above); made here when not given."""
    _check_address(config)
    live = controls is not None
    if not live:
        controls = Controls(server, config, lambda: offset)
    world = config.workers + 1
    payload = procs.dumps((problem, config.worker_side()))
    checkpoint = server.on_version                 # travels with the server: it saves on rank 0
    blob = procs.dumps(server, name="the server (its hooks travel to the rpc server process)")
    flags, slowdown = controls.share()
    with procs.Children() as children:
        children.start(_server_main, "asyncps-ps", blob, world, offset, live, flags)
        for k in range(config.workers):
            children.start(_worker_main, f"asyncps-worker-{k}", k, payload, shards[k], world, offset,
                           flags, slowdown)
        controls.started(children)
        with raised_between_turns() as ctrl_c:
            remote, remote_copies = procs.loads(_watch(children, progress, controls, ctrl_c))
        _adopt(server, remote, checkpoint)
        for k, local in remote_copies.items():
            copies[k] = local
        children.ok = True


def _watch(children, progress, controls, ctrl_c):
    """Wait for the server's result; report dead workers to it; raise any error."""
    conns = children.conns
    live, finish_sent = set(range(1, len(conns))), False
    while True:
        ctrl_c.check()
        if not live and not finish_sent:                 # every worker is done or lost
            with controls.lock:
                conns[0].send(("finish",))
            finish_sent = True
        for i, message in children.receive(live | {0}, timeout=0.5):
            if i not in live | {0}:
                continue
            if message is None:                          # the process died without a word
                if i == 0:
                    raise RuntimeError(f"the rpc server (rank 0) {children.exit_reason(0)}")
                live.discard(i)
                reason = controls.lost_reason(i - 1, children.exit_reason(i))
                with controls.lock:
                    conns[0].send(("lost", i - 1, reason))
            elif message[0] == "news":                  # a live run: rank 0's new events
                with controls.lock:
                    controls.heard(message[1])
            elif message[0] == "version":               # rank 0 says how far it got
                if progress is not None:
                    progress(message[1])
            elif message[0] == "port":                  # rank 0 listens: the workers may join
                for k in range(1, len(conns)):
                    conns[k].send(message[1])
            elif message[0] == "result":
                return message[1]
            elif message[0] == "error":
                where = "the rpc server (rank 0)" if i == 0 else f"worker {i - 1}"
                raise procs.remote_error(where, message[1], message[2])
            elif message[0] == "done":
                live.discard(i)


def _adopt(server, remote, checkpoint):
    """Take over the state the server process ended with (a live run's trace: the whole of it,
    in place of the events rank 0 sent as news)."""
    server.params[:] = remote.params
    for name in ("version", "clocks", "trace", "diverged", "stopped", "message", "apply", "lr"):
        setattr(server, name, getattr(remote, name))
    server.on_version = checkpoint
