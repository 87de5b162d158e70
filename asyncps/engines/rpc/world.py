"""`aps.train(engine="rpc")`: a whole rpc world on 127.0.0.1, started from the caller (a notebook too).

One process hosts the server (rank 0, host.py), one per worker runs proxy.work (ranks 1..N); all
are children of the caller (procs.py), which watches them: a worker that dies is reported to the
server as lost (async goes on, sync and ssp stop), a dead server or any error stops the run.
At the end the server's state comes home to the caller's ParameterServer.
"""
import logging
import warnings

from .. import procs
from . import host, proxy
from .rendezvous import LOOPBACK, listen


def _worker_main(k, payload, shard, world, offset, conn):
    try:
        procs.child_setup()
        problem, config = procs.loads(payload)
        address = config.address
        problem = problem.on_device(config.devices[k])
        port = conn.recv()                                     # rank 0 has bound its socket
        proxy.work(k, problem, shard, config, world, f"asyncps://{address}:{port}", offset)
        conn.send(("done",))
    except BaseException as err:                                 # noqa: BLE001
        procs.send_error(conn, err)


def _server_main(server_blob, world, offset, conn):
    try:
        procs.child_setup()
        server = procs.loads(server_blob)
        address = server.config.address
        port = listen(address)
        conn.send(("port", port))
        copies = host.serve(server, world, f"asyncps://{address}:{port}", server.config.timeout, offset,
                            lost=conn)
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


def run_rpc(server, problem, shards, config, copies, offset, progress=None):
    """Start a world of 1 server + N worker processes, run it, and bring the result home.
    `progress(version)` (optional) is told the version rank 0 reports every 0.2 s."""
    _check_address(config)
    world = config.workers + 1
    payload = procs.dumps((problem, config.worker_side()))
    checkpoint = server.on_version                 # travels with the server: it saves on rank 0
    blob = procs.dumps(server, name="the server (its hooks travel to the rpc server process)")
    with procs.Children() as children:
        children.start(_server_main, "asyncps-ps", blob, world, offset)
        for k in range(config.workers):
            children.start(_worker_main, f"asyncps-worker-{k}", k, payload, shards[k], world, offset)
        remote, remote_copies = procs.loads(_watch(children, progress))
        _adopt(server, remote, checkpoint)
        for k, local in remote_copies.items():
            copies[k] = local
        children.ok = True


def _watch(children, progress):
    """Wait for the server's result; report dead workers to it; raise any error."""
    conns = children.conns
    live, finish_sent = set(range(1, len(conns))), False
    while True:
        if not live and not finish_sent:                 # every worker is done or lost
            conns[0].send(("finish",))
            finish_sent = True
        for i, message in children.receive(live | {0}, timeout=0.5):
            if i not in live | {0}:
                continue
            if message is None:                          # the process died without a word
                if i == 0:
                    raise RuntimeError(f"the rpc server (rank 0) {children.exit_reason(0)}")
                live.discard(i)
                conns[0].send(("lost", i - 1, children.exit_reason(i)))
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
    """Take over the state the server process ended with."""
    server.params[:] = remote.params
    for name in ("version", "clocks", "trace", "diverged", "stopped", "message", "apply"):
        setattr(server, name, getattr(remote, name))
    server.on_version = checkpoint
