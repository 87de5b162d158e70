"""What runs on a worker rank (k + 1): the server as an RPC worker sees it, and its loop."""
import time

import numpy as np

from ...core.semantics import Snapshot
from ..worker import COMPUTE, GATE, pulls_with_each_push, worker_loop, worker_rng
from . import host
from .rendezvous import join


class ServerLost(RuntimeError):
    """A worker rank could not reach the server (rank 0): it died, or its machine did."""


class RemoteServer:
    """The server on rank 0, called over rpc; a worker's events travel with its next call."""

    def __init__(self, worker, config, like):
        self.worker, self.policy, self.params = worker, config.policy, np.zeros_like(like)
        self._events, self._may_start, self._done = [], True, False
        self._prefetch = pulls_with_each_push(config)   # one round trip does push + pull
        self._pulled = None

    def _call(self, fn, *args):
        import torch.distributed.rpc as rpc

        events, self._events = self._events, []
        try:
            return rpc.rpc_sync("ps", fn, args=(*args, events))
        except RuntimeError as err:                    # TensorPipe: the peer is gone, or timed out
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ServerLost(f"worker {self.worker} (rank {self.worker + 1}) lost the server (rank 0) "
                             f"in {fn.__name__}: {first}") from None

    @property
    def done(self):
        return self._done

    def pull(self, worker, time):
        if self._pulled is not None:
            (params, version), self._pulled = self._pulled, None
        else:
            params, version = self._call(host.rpc_pull, worker, time)
        return Snapshot(params.numpy(), version)

    def push(self, worker, grad, computed_on, time):
        import torch

        self._may_start, self._done, self._pulled = self._call(
            host.rpc_push, worker, torch.from_numpy(grad), computed_on, time, self._prefetch)

    def may_start(self, worker):
        return self._done or self._may_start

    def wait_gate(self, worker):
        opened = False
        while not (opened or self._done):             # rank 0 answers at least every GATE_SLICE s
            opened, self._done = self._call(host.rpc_gate, worker)
        self._may_start = True

    def record(self, event):
        self._events.append(event)

    def stop(self, message):
        self._call(host.rpc_stop, self.worker, message)
        self._done = True

    def finish(self, worker, local):
        import torch

        return self._call(host.rpc_done, worker, torch.from_numpy(local))


def work(k, problem, shard, config, world, method, offset, obey=None):
    """Rank k + 1: join the world, run the worker loop against the remote server, leave.
    `obey()` is called after each gradient (a live run's slowdown and pause: world.py); without
    it the worker sleeps its `config.slowdown[k]`."""
    import torch.distributed.rpc as rpc

    join(f"worker{k}", k + 1, world, method, config.timeout)
    remote, copies = RemoteServer(k, config, problem.x0), {}
    if obey is None:
        obey = lambda: time.sleep(config.slowdown[k])            # noqa: E731
    try:
        start = remote._call(host.start_time)                    # one clock for the whole world
        clock = lambda: offset + time.time() - start            # noqa: E731
        for need in worker_loop(k, remote, problem, shard, config, worker_rng(config.seed, k, 0),
                                clock, copies):
            if need == COMPUTE:
                obey()
            elif need == GATE:
                remote.wait_gate(k)
        graceful = remote.finish(k, copies.get(k, remote.params))
    except ServerLost:
        rpc.shutdown(graceful=False)                            # no barrier with a dead server
        raise
    rpc.shutdown(graceful=graceful)              # graceful: a barrier with everyone still alive
