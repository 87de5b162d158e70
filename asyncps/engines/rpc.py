"""The rpc engine: the parameter server on rank 0 of a torch.distributed.rpc world (TensorPipe).

Rank 0 ("ps") holds the one ParameterServer; ranks 1..N are workers that call
it remotely: `pull` returns the parameters as a tensor and the version,
`push` sends a gradient tensor, `gate` blocks in the server until the barrier
or SSP gate opens. The server applies each push to its current version, so two
or more workers run truly asynchronously and their pushes are recorded as
stale — unlike the usual example, where a stale step trips autograd's version
check (pytorch/examples #780, #842): here a gradient is a plain tensor.

`aps.train(engine="rpc")` starts the whole world on 127.0.0.1 from the caller
(a notebook too). TensorPipe listens on the loopback interface unless an
address is named: several machines are joined with torchrun and
`python -m asyncps.launch` (see README).

Security: torch.distributed.rpc deserialises messages with pickle. Run it only
on a network you trust; asyncps binds to 127.0.0.1 unless told otherwise.
"""
import logging
import os
import socket
import threading
import time
from multiprocessing.connection import wait

from ..core.server import Snapshot
from .worker import COMPUTE, GATE, worker_loop, worker_rng

LOOPBACK = "127.0.0.1"
_STATE = {}     # in the server process: the ParameterServer, its condition variable, the bookkeeping


# -- what runs on the server (rank 0), called by the workers -------------------------
def _record(server, events):
    for event in events:
        server.record(event)


def rpc_pull(k, time, events):
    import torch

    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _record(server, events)
        params, version = server.pull(k, time)
    return torch.from_numpy(params), version


def rpc_push(k, grad, computed_on, time, then_pull, events):
    """Apply a push; with then_pull (the plain async loop), also return the next pull's answer."""
    import torch

    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _record(server, events)
        server.push(k, grad.numpy(), computed_on, time, checked=True)   # the worker loop checked it
        cond.notify_all()                              # a push may open the barrier / SSP gate
        pulled = None
        if then_pull and not server.done:
            params, version = server.pull(k, time)
            pulled = (torch.from_numpy(params), version)
        return server.may_start(k), server.done, pulled


def rpc_gate(k, events):
    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _record(server, events)
        opened = cond.wait_for(lambda: server.may_start(k) or _STATE["failed"], _STATE["timeout"])
        if not opened:
            _STATE["failed"] = TimeoutError(
                f"worker {k} waited {_STATE['timeout']:g} s at the {server.policy.wait_reason} gate at "
                f"v{server.version} without progress (clocks {server.clocks})")
            cond.notify_all()
        return server.done


def rpc_stop(k, message, events):
    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _record(server, events)
        server.stop(message)
        cond.notify_all()


def rpc_done(k, local, events):
    """A worker is finished. Returns whether everyone can shut down gracefully (nobody was lost)."""
    server, cond = _STATE["server"], _STATE["cond"]
    with cond:
        _record(server, events)
        _STATE["copies"][k] = local.numpy().copy()
        _STATE["finished"].add(k)
        cond.notify_all()
        return not _STATE["lost"]


# -- a worker (rank k + 1) --------------------------------------------------------
class RemoteServer:
    """The server as an RPC worker sees it."""

    def __init__(self, worker, policy, shape, settings):
        import numpy as np

        self.worker, self.policy, self.params = worker, policy, np.zeros(shape)
        self._events, self._may_start, self._done = [], True, False
        # the plain async loop pulls right after each push: one round trip does both
        self._prefetch = (policy.bound == float("inf") and settings.push_every == 1
                          and (settings.fetch_every or 1) == 1)
        self._pulled = None

    def _call(self, fn, *args):
        import torch.distributed.rpc as rpc

        events, self._events = self._events, []
        return rpc.rpc_sync("ps", fn, args=(*args, events))

    @property
    def done(self):
        return self._done

    def pull(self, worker, time):
        if self._pulled is not None:
            (params, version), self._pulled = self._pulled, None
        else:
            params, version = self._call(rpc_pull, worker, time)
        return Snapshot(params.numpy(), version)

    def push(self, worker, grad, computed_on, time):
        import torch

        self._may_start, self._done, self._pulled = self._call(
            rpc_push, worker, torch.from_numpy(grad), computed_on, time, self._prefetch)

    def may_start(self, worker):
        return self._done or self._may_start

    def wait_gate(self, worker):
        self._done = self._call(rpc_gate, worker)
        self._may_start = True

    def record(self, event):
        self._events.append(event)

    def stop(self, message):
        self._call(rpc_stop, self.worker, message)
        self._done = True

    def finish(self, worker, local):
        import torch

        return self._call(rpc_done, worker, torch.from_numpy(local))


_LISTENING = {}   # rank 0: the socket the rendezvous store listens on, bound by us


def listen(address, port=0):
    """Bind rank 0's rendezvous socket ourselves: torch's TCPStore would listen on every interface."""
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((address, port))
    sock.listen(128)
    _LISTENING["socket"] = sock
    return sock.getsockname()[1]


def _rendezvous(url, **_):
    """torch calls this for init_method="asyncps://HOST:PORT?rank=R&world_size=W"."""
    from datetime import timedelta
    from urllib.parse import parse_qs, urlparse

    import torch.distributed as dist

    where = urlparse(url)
    query = parse_qs(where.query)
    rank, world_size = int(query["rank"][0]), int(query["world_size"][0])
    timeout = timedelta(seconds=_LISTENING.get("timeout", 300.0))
    if rank == 0:
        store = dist.TCPStore(where.hostname, where.port, world_size, True, timeout=timeout,
                              wait_for_workers=False, master_listen_fd=_LISTENING["socket"].fileno())
    else:
        store = dist.TCPStore(where.hostname, where.port, world_size, False, timeout=timeout)
    yield store, rank, world_size


def init_method(address, port):
    """How the world meets: our own loopback-safe rendezvous, or torchrun's agent store."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        return "env://"                                       # under torchrun: its store, its binding
    return f"asyncps://{address}:{port}"


def _init(name, rank, world, method, timeout):
    import warnings

    import torch.distributed as dist
    import torch.distributed.rpc as rpc

    warnings.filterwarnings("ignore", message="You are using a Backend", category=UserWarning)
    if "127.0.0.1" in method or "localhost" in method:
        os.environ.setdefault("TP_SOCKET_IFNAME", "lo")      # TensorPipe listens on loopback only
    try:
        dist.register_rendezvous_handler("asyncps", _rendezvous)
    except RuntimeError:
        pass                                                  # already registered in this process
    _LISTENING["timeout"] = timeout + 30.0
    options = rpc.TensorPipeRpcBackendOptions(init_method=method, rpc_timeout=timeout + 30.0,
                                              num_worker_threads=max(16, world + 4))
    rpc.init_rpc(name, rank=rank, world_size=world, rpc_backend_options=options)


def work(k, problem, shard, settings, seed, slowdown, policy, shape, world, method, timeout, offset):
    """Rank k + 1: join the world, run the worker loop against the remote server, leave."""
    import torch.distributed.rpc as rpc

    _init(f"worker{k}", k + 1, world, method, timeout)
    remote, copies = RemoteServer(k, policy, shape, settings), {}
    start = rpc.rpc_sync("ps", _start_time, args=())          # one clock for the whole world
    clock = lambda: offset + time.time() - start                # noqa: E731
    for need in worker_loop(k, remote, problem, shard, settings, worker_rng(seed, k, 0), clock, copies):
        if need == COMPUTE and slowdown:
            time.sleep(slowdown)
        elif need == GATE:
            remote.wait_gate(k)
    graceful = remote.finish(k, copies.get(k, remote.params))
    rpc.shutdown(graceful=graceful)              # graceful: a barrier with everyone still alive


def _start_time():
    return _STATE["start"]


def serve(server, world, method, timeout, offset, lost=None):
    """Rank 0: host `server` until every worker has finished (or was lost). Returns their copies.

    `lost` (optional) is a pipe on which the caller reports dead workers as ("lost", k, reason).
    """
    import torch.distributed.rpc as rpc

    cond = threading.Condition()
    _STATE.update(server=server, cond=cond, timeout=timeout, failed=None, copies={},
                  finished=set(), lost=set(), start=time.time())
    _init("ps", 0, world, method, timeout)
    with cond:
        while len(_STATE["finished"] | _STATE["lost"]) < world - 1 and not _STATE["failed"]:
            cond.wait(0.05)
            while lost is not None and lost.poll():
                _, k, reason = lost.recv()
                _STATE["lost"].add(k)
                try:
                    server.lose(k, offset + time.time() - _STATE["start"], reason)
                except RuntimeError as err:
                    _STATE["failed"] = err
                cond.notify_all()
        if _STATE["failed"]:
            raise _STATE["failed"]
    if _STATE["lost"] and lost is not None:
        # No graceful barrier with a dead rank: wait until the caller saw every live worker
        # receive its last reply, or a shutdown now would cut that reply off.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (lost.poll(0.05) and lost.recv()[0] == "finish"):
            pass
    rpc.shutdown(graceful=not _STATE["lost"])
    return _STATE["copies"]


# -- a local world on 127.0.0.1, started by aps.train(engine="rpc") --------------------------
def _worker_main(k, payload, shard, settings, seed, slowdown, policy, shape, world, address,
                 timeout, offset, device, conn):
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .processes import send_error
    try:
        import cloudpickle
        import torch

        torch.set_num_threads(1)
        problem = cloudpickle.loads(payload).on_device(device)
        port = conn.recv()                                     # rank 0 has bound its socket
        work(k, problem, shard, settings, seed, slowdown, policy, shape, world,
             f"asyncps://{address}:{port}", timeout, offset)
        conn.send(("done",))
    except BaseException as err:                                 # noqa: BLE001
        send_error(conn, err)


def _server_main(server_blob, world, address, timeout, offset, conn):
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .processes import send_error
    try:
        import cloudpickle

        server = cloudpickle.loads(server_blob)
        port = listen(address)
        conn.send(("port", port))
        copies = serve(server, world, f"asyncps://{address}:{port}", timeout, offset, lost=conn)
        server.on_version = None
        conn.send(("result", cloudpickle.dumps((server, copies))))
    except BaseException as err:                                 # noqa: BLE001
        send_error(conn, err)


def run_rpc(server, problem, settings, shards, seed, slowdown, copies, timeout, devices, offset,
            address=LOOPBACK, allow_remote=False):
    """Start a world of 1 server + N worker processes, run it, and bring the result home."""
    import cloudpickle

    from .processes import dumps_problem, exit_reason, remote_error, shutdown, worker_context

    if address not in (LOOPBACK, "localhost"):
        if not allow_remote:
            raise ValueError(f"address={address!r} is not allowed without allow_remote=True: the rpc "
                             f"engine binds to 127.0.0.1 unless you ask; torch rpc unpickles what it "
                             f"receives, so only open it on a network you trust")
        import warnings
        warnings.warn(f"asyncps rpc: listening on {address}, beyond loopback. torch rpc deserialises "
                      f"messages with pickle: anyone who can reach this address can run code here; "
                      f"use a trusted network only", RuntimeWarning, stacklevel=3)
    logging.getLogger("asyncps.rpc").info(
        "rpc world of %d processes listening on %s%s", server.workers + 1, address,
        "" if address in (LOOPBACK, "localhost") else " (beyond loopback: trusted networks only)")
    world, ctx = server.workers + 1, worker_context()
    payload = dumps_problem(problem)
    checkpoint = server.on_version                 # travels with the server: it saves on rank 0
    blob = cloudpickle.dumps(server)
    procs, conns, finished = [], [], False
    try:
        ours, theirs = ctx.Pipe()
        procs.append(ctx.Process(target=_server_main, name="asyncps-ps", daemon=True,
                                 args=(blob, world, address, timeout, offset, theirs)))
        conns.append(ours)
        for k in range(server.workers):
            ours, theirs = ctx.Pipe()
            procs.append(ctx.Process(
                target=_worker_main, name=f"asyncps-worker-{k}", daemon=True,
                args=(k, payload, shards[k], settings, seed, float(slowdown[k]), server.policy,
                      server.params.shape, world, address, timeout, offset, devices[k], theirs)))
            conns.append(ours)
        for proc in procs:
            proc.start()
        result = _watch(procs, conns, timeout, remote_error, exit_reason)
        remote, remote_copies = cloudpickle.loads(result)
        _adopt(server, remote, checkpoint)
        for k, local in remote_copies.items():
            copies[k] = local
        finished = True
    finally:
        shutdown(procs, conns, grace=2.0 if finished else 0.0)


def _watch(procs, conns, timeout, remote_error, exit_reason):
    """Wait for the server's result; report dead workers to it; raise any error."""
    live, finish_sent = set(range(1, len(procs))), False
    while True:
        if not live and not finish_sent:                 # every worker is done or lost
            conns[0].send(("finish",))
            finish_sent = True
        watched = live | {0}
        handles = {conns[i]: i for i in watched}
        handles.update({procs[i].sentinel: i for i in watched})
        for handle in wait(list(handles), timeout=0.5):
            i = handles[handle]
            if i not in live | {0}:
                continue
            message = None
            if conns[i].poll():
                try:
                    message = conns[i].recv()
                except (EOFError, OSError):
                    message = None
            if message is None:                          # the process died without a word
                if i == 0:
                    raise RuntimeError(f"the rpc server (rank 0) {exit_reason(procs[0])}")
                live.discard(i)
                conns[0].send(("lost", i - 1, exit_reason(procs[i])))
            elif message[0] == "port":                  # rank 0 listens: the workers may join
                for k in range(1, len(procs)):
                    conns[k].send(message[1])
            elif message[0] == "result":
                return message[1]
            elif message[0] == "error":
                where = "the rpc server (rank 0)" if i == 0 else f"worker {i - 1}"
                raise remote_error(where, message[1], message[2])
            elif message[0] == "done":
                live.discard(i)


def _adopt(server, remote, checkpoint):
    """Take over the state the server process ended with."""
    server.params[:] = remote.params
    for name in ("version", "clocks", "trace", "diverged", "message", "rule"):
        setattr(server, name, getattr(remote, name))
    server.on_version = checkpoint
