"""How the ranks of an rpc world meet, bound to the address we choose (127.0.0.1 by default).

torch's TCPStore (the rendezvous store) would listen on every interface even for an init_method
of tcp://127.0.0.1: rank 0 binds the socket itself (`listen`) and hands it to the store through
our own `asyncps://HOST:PORT` rendezvous handler. TensorPipe gets TP_SOCKET_IFNAME=lo on loopback.
Under torchrun, its agent's store is used instead (`env://`): torchrun's, with its binding.
"""
import os
import socket

from ...core.config import LOOPBACK

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
        ours = dict(wait_for_workers=False, master_listen_fd=_LISTENING["socket"].fileno())
        try:
            store = dist.TCPStore(where.hostname, where.port, world_size, True, timeout=timeout, **ours)
        except NotImplementedError:
            # torch 2.6 (not 2.11 and later): its libuv store cannot take our socket. The legacy
            # store polls the descriptor itself: it gets a copy of its own, which Python's
            # closing of our socket at exit does not pull from under it (it aborted so).
            ours["master_listen_fd"] = os.dup(ours["master_listen_fd"])
            store = dist.TCPStore(where.hostname, where.port, world_size, True, timeout=timeout,
                                  use_libuv=False, **ours)
    else:
        store = dist.TCPStore(where.hostname, where.port, world_size, False, timeout=timeout)
    yield store, rank, world_size


def init_method(address, port):
    """How the world meets: our own loopback-safe rendezvous, or torchrun's agent store."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        return "env://"                                       # under torchrun: its store, its binding
    return f"asyncps://{address}:{port}"


def join(name, rank, world, method, timeout):
    """init_rpc for this process as `name` (rank `rank` of `world`)."""
    import warnings

    import torch.distributed as dist
    import torch.distributed.rpc as rpc

    warnings.filterwarnings("ignore", message="You are using a Backend", category=UserWarning)
    if LOOPBACK in method or "localhost" in method:
        os.environ.setdefault("TP_SOCKET_IFNAME", "lo")      # TensorPipe listens on loopback only
    try:
        dist.register_rendezvous_handler("asyncps", _rendezvous)
    except RuntimeError:
        pass                                                  # already registered in this process
    _LISTENING["timeout"] = timeout + 30.0
    options = rpc.TensorPipeRpcBackendOptions(init_method=method, rpc_timeout=timeout + 30.0,
                                              num_worker_threads=max(16, world + 4))
    rpc.init_rpc(name, rank=rank, world_size=world, rpc_backend_options=options)
