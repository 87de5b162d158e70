"""The processes engine: one OS process per worker, parameters and gradients in shared memory.

The parent process holds the one ParameterServer and serves every worker from
a single loop, like the simulator serves its virtual clock: a worker's request
is a tiny message on its pipe ("pull", "push", "gate"), and the arrays never
travel through it. Each worker has two shared-memory slots (torch
`share_memory_()`): the parent writes a pulled version into the first, the
worker writes its gradient into the second. No array is pickled per push.

Workers are started, watched and torn down by procs.py (multiprocessing's fork
server; one torch thread per worker). The problem is sent once, with
cloudpickle, so a problem defined in a notebook cell works too. A worker that
raises stops the run and its error is raised here with the worker's traceback;
a worker killed by a signal is recorded as a Lost event: async goes on without
it, sync and ssp stop with an error. Learner hooks run here, in the server.
"""

import time

from ..core.semantics import Snapshot
from . import procs
from .worker import COMPUTE, GATE, pulls_with_each_push, worker_loop, worker_rng


# -- the worker process -------------------------------------------------------
class Remote:
    """The server as a worker process sees it: messages on a pipe, arrays in shared memory."""

    def __init__(self, conn, config, slot, flags):
        self.policy, self._conn, self._flags = config.policy, conn, flags
        self._pulled, self._grad = slot[0], slot[1]
        self.params = self._grad                 # shape and dtype, for the loop's buffers
        self._events, self._may_start = [], True
        # The plain async loop pulls right after every push: one message does both, and the
        # server writes the new version straight into the pulled slot (the loop is done with it).
        self._prefetch = pulls_with_each_push(config)
        self._prefetched = None

    def _ask(self, *message):
        self._conn.send((*message, self._events))
        self._events = []
        return self._conn.recv()

    @property
    def done(self):
        return bool(self._flags[0])

    def pull(self, worker, time):
        if self._prefetched is not None:
            version, self._prefetched = self._prefetched, None
            return Snapshot(self._pulled, version)
        return Snapshot(self._pulled, self._ask("pull", time))

    def push(self, worker, grad, computed_on, time):
        self._grad[:] = grad
        self._may_start, self._prefetched = self._ask("push", computed_on, time, self._prefetch)

    def may_start(self, worker):
        return self.done or not self.policy.waits or self._may_start

    def wait_gate(self, time):
        self._may_start = self._ask("gate", time)

    def record(self, event):
        self._events.append(event)

    def stop(self, message):
        self._ask("stop", message)

    def finish(self):
        self._conn.send(("done", self._events))


def _child(k, payload, shard, slot, flags, offset, conn):
    try:
        procs.child_setup()
        problem, config = procs.loads(payload)
        problem = problem.on_device(config.devices[k])
        remote = Remote(conn, config, slot.numpy(), flags.numpy())
        conn.send(("ready", []))
        start = conn.recv()                              # every worker starts together
        clock = lambda: offset + time.perf_counter() - start      # noqa: E731  (one clock: CLOCK_MONOTONIC)
        slowdown, copies = config.slowdown[k], {}
        for need in worker_loop(k, remote, problem, shard, config, worker_rng(config.seed, k, 0),
                                clock, copies):
            if need == COMPUTE and slowdown:
                time.sleep(slowdown)
            elif need == GATE:
                remote.wait_gate(clock())
        remote.finish()
    except BaseException as err:                        # noqa: BLE001 - sent to the parent
        procs.send_error(conn, err)


# -- the parent: one loop serves every worker -------------------------------------
def run_processes(server, problem, shards, config, copies, offset):
    import torch

    slots = torch.zeros((config.workers, 2, server.params.size), dtype=torch.float64).share_memory_()
    flags = torch.zeros(1, dtype=torch.int8).share_memory_()
    payload = procs.dumps((problem, config.worker_side()))
    with procs.Children() as children:
        for k in range(config.workers):
            children.start(_child, f"asyncps-worker-{k}", k, payload, shards[k], slots[k], flags,
                           offset)
        _wait_ready(children, config.timeout)
        start = time.perf_counter()
        for conn in children.conns:
            conn.send(start)
        clock = lambda: offset + time.perf_counter() - start      # noqa: E731
        _serve(server, children, slots.numpy(), flags, clock, copies, config.timeout)
        children.ok = True


def _wait_ready(children, timeout):
    """Every worker has imported what it needs and got its problem: only then does time start."""
    waiting, deadline = set(range(len(children.procs))), time.monotonic() + max(timeout, 120.0)
    while waiting:
        for k, message in children.receive(waiting):
            if message is None:
                raise RuntimeError(f"worker {k} did not start: it {children.exit_reason(k)}")
            kind, *args, _ = message
            if kind == "error":
                raise procs.remote_error(f"worker {k}", args[0], args[1])
            waiting.discard(k)
        if time.monotonic() > deadline:
            raise TimeoutError(f"workers {sorted(waiting)} did not start in time")


def _serve(server, children, views, flags, clock, copies, timeout):
    conns = children.conns
    live, parked = set(range(len(conns))), set()
    last = time.monotonic()
    while live:
        for k, message in children.receive(live):
            if k not in live:
                continue
            if message is None:                         # the process died without a word
                live.discard(k)
                parked.discard(k)
                server.lose(k, clock(), children.exit_reason(k))    # raises for sync / ssp
                if not live and not server.done:
                    raise RuntimeError(f"every worker was lost before v{server.steps}")
                continue
            last = time.monotonic()
            kind, *args, events = message
            for event in events:
                server.record(event)
            if kind == "pull":
                conns[k].send(server.pull(k, args[0], out=views[k, 0]).version)
            elif kind == "push":
                computed_on, when, then_pull = args
                server.push(k, views[k, 1], computed_on, when, checked=True)   # the worker checked it
                flags[0] = server.done                 # before the reply: nobody starts after the end
                version = None
                if then_pull and not server.done:      # push + pull in one message
                    version = server.pull(k, when, out=views[k, 0]).version
                conns[k].send((server.may_start(k), version))
            elif kind == "gate":
                if server.may_start(k):
                    conns[k].send(True)
                else:
                    parked.add(k)
            elif kind == "stop":
                server.stop(args[0])
                flags[0] = 1
                conns[k].send(None)
            elif kind == "done":
                live.discard(k)
                copies[k] = views[k, 0].copy()
            elif kind == "error":
                raise procs.remote_error(f"worker {k}", args[0], args[1])
        if server.done:
            flags[0] = 1
        for k in sorted(parked):
            if server.may_start(k):
                parked.discard(k)
                conns[k].send(True)
        if time.monotonic() - last > timeout:
            raise TimeoutError(f"no worker made progress for {timeout:g} s at v{server.version} "
                               f"(clocks {server.clocks}, waiting: {sorted(parked)})")
