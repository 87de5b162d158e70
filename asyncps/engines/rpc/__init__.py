"""The rpc engine: the parameter server on rank 0 of a torch.distributed.rpc world (TensorPipe).

Rank 0 ("ps") holds the one ParameterServer; ranks 1..N are workers that call
it remotely: `pull` returns the parameters as a tensor and the version,
`push` sends a gradient tensor, `gate` blocks in the server until the barrier
or SSP gate opens. The server applies each push to its current version, so two
or more workers run truly asynchronously and their pushes are recorded as
stale — unlike the usual example, where a stale step trips autograd's version
check (pytorch/examples #780, #842): here a gradient is a plain tensor.

    rendezvous.py  how the ranks meet (a store bound to loopback by us), and init_rpc
    host.py        what runs on rank 0: the handlers the workers call, and serve()
    proxy.py       what runs on a worker rank: the server as it sees it, and work()
    world.py       aps.train(engine="rpc"): a whole world on 127.0.0.1, from the caller

Several machines are joined with torchrun and `python -m asyncps.launch` (see README), which
uses host.serve and proxy.work directly.

Security: torch.distributed.rpc deserialises messages with pickle. Run it only
on a network you trust; asyncps binds to 127.0.0.1 unless told otherwise.
"""
from .rendezvous import LOOPBACK, init_method, listen
from .world import run_rpc

__all__ = ["LOOPBACK", "init_method", "listen", "run_rpc"]
