"""The processes engine: one OS process per worker, parameters and gradients in shared memory.

The parent process holds the one ParameterServer and serves every worker from
a single loop, like the simulator serves its virtual clock: a worker's request
is a tiny message on its pipe ("pull", "push", "gate"), and the arrays never
travel through it. Each worker has two shared-memory slots (torch
`share_memory_()`): the parent writes a pulled version into the first, the
worker writes its gradient into the second. No array is pickled per push.

Workers are forked from multiprocessing's fork server, a clean helper process
that imports torch once (safe from a notebook, and each run then starts its
workers in milliseconds, not a second each); one torch thread per worker. The
problem is sent once, with cloudpickle, so a problem defined in a notebook
cell works too. A worker that raises stops the run and its error is raised
here with the worker's traceback; a worker killed by a signal is recorded as
a Lost event: async goes on without it, sync and ssp stop with an error.
"""
import pickle
import signal
import time
import traceback
from multiprocessing.connection import wait

from ..core.server import Snapshot
from .worker import COMPUTE, GATE, worker_loop, worker_rng


class RemoteTraceback(Exception):
    """The traceback of an error raised inside a worker process."""

    def __str__(self):
        return self.args[0]


# -- the worker process -------------------------------------------------------
class Remote:
    """The server as a worker process sees it: messages on a pipe, arrays in shared memory."""

    def __init__(self, conn, policy, slot, flags, settings):
        self.policy, self._conn, self._flags = policy, conn, flags
        self._pulled, self._grad = slot[0], slot[1]
        self.params = self._grad                 # shape and dtype, for the loop's buffers
        self._events, self._may_start = [], True
        # The plain async loop pulls right after every push: one message does both, and the
        # server writes the new version straight into the pulled slot (the loop is done with it).
        self._prefetch = (policy.bound == float("inf") and settings.push_every == 1
                          and (settings.fetch_every or 1) == 1)
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
        return self.done or self.policy.bound == float("inf") or self._may_start

    def wait_gate(self, time):
        self._may_start = self._ask("gate", time)

    def record(self, event):
        self._events.append(event)

    def stop(self, message):
        self._ask("stop", message)

    def finish(self):
        self._conn.send(("done", self._events))


def _child(k, payload, shard, settings, seed, slowdown, slot, flags, conn, offset, device, policy):
    signal.signal(signal.SIGINT, signal.SIG_IGN)       # the parent handles Ctrl-C and stops us
    try:
        import cloudpickle
        import torch

        torch.set_num_threads(1)
        problem = cloudpickle.loads(payload).on_device(device)
        remote = Remote(conn, policy, slot.numpy(), flags.numpy(), settings)
        conn.send(("ready", []))
        start = conn.recv()                              # every worker starts together
        clock = lambda: offset + time.perf_counter() - start      # noqa: E731  (one clock: CLOCK_MONOTONIC)
        copies = {}
        for need in worker_loop(k, remote, problem, shard, settings, worker_rng(seed, k, 0), clock, copies):
            if need == COMPUTE and slowdown:
                time.sleep(slowdown)
            elif need == GATE:
                remote.wait_gate(clock())
        remote.finish()
    except BaseException as err:                        # noqa: BLE001 - sent to the parent
        send_error(conn, err)


def send_error(conn, err):
    """Tell the parent what went wrong here, with the traceback."""
    try:
        blob = pickle.dumps(err)
    except Exception:                                   # noqa: BLE001
        blob = None
    try:
        conn.send(("error", blob, traceback.format_exc(), []))
    except (BrokenPipeError, EOFError, OSError):
        pass


# -- the parent: one loop serves every worker -------------------------------------
def dumps_problem(problem):
    import cloudpickle

    try:
        return cloudpickle.dumps(problem)
    except Exception as err:                            # noqa: BLE001
        raise TypeError(f"problem={problem!r} cannot be sent to worker processes ({err}). Define its "
                        f"functions at module level, or use engine='threads'") from None


def remote_error(where, blob, text):
    err = None
    if blob is not None:
        try:
            err = pickle.loads(blob)
        except Exception:                               # noqa: BLE001
            err = None
    if not isinstance(err, BaseException):
        err = RuntimeError(f"{where} failed:\n{text}")
    err.__cause__ = RemoteTraceback(f'\n"""\n{text}"""')
    err.add_note(f"(raised in {where}; its traceback is above)")
    return err


def exit_reason(proc):
    proc.join(0.5)
    code = proc.exitcode
    if code is not None and code < 0:
        return f"killed by signal {-code} ({signal.Signals(-code).name})"
    return f"exited with status {code}"


def worker_context():
    """The multiprocessing context of every engine with worker processes (processes, rpc)."""
    import torch.multiprocessing as mp

    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["numpy", "torch", "cloudpickle", "asyncps.engines.processes",
                                "asyncps.engines.rpc"])
    return ctx


def run_processes(server, problem, settings, shards, seed, slowdown, copies, timeout, devices, offset):
    import torch

    ctx = worker_context()
    workers = server.workers
    slots = torch.zeros((workers, 2, server.params.size), dtype=torch.float64).share_memory_()
    flags = torch.zeros(1, dtype=torch.int8).share_memory_()
    views, payload = slots.numpy(), dumps_problem(problem)
    procs, conns, finished = [], [], False
    try:
        for k in range(workers):
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(target=_child, name=f"asyncps-worker-{k}", daemon=True,
                               args=(k, payload, shards[k], settings, seed, float(slowdown[k]), slots[k],
                                     flags, theirs, offset, devices[k], server.policy))
            proc.start()
            theirs.close()
            procs.append(proc)
            conns.append(ours)
        _wait_ready(procs, conns, timeout)
        start = time.perf_counter()
        for conn in conns:
            conn.send(start)
        clock = lambda: offset + time.perf_counter() - start      # noqa: E731
        _serve(server, procs, conns, views, flags, clock, copies, timeout)
        finished = True
    finally:
        shutdown(procs, conns, grace=1.0 if finished else 0.0)


def _wait_ready(procs, conns, timeout):
    """Every worker has imported what it needs and got its problem: only then does time start."""
    waiting, deadline = set(range(len(procs))), time.monotonic() + max(timeout, 120.0)
    while waiting:
        handles = {conns[k]: k for k in waiting}
        handles.update({procs[k].sentinel: k for k in waiting})
        for handle in wait(list(handles), timeout=0.2):
            k = handles[handle]
            if k not in waiting:
                continue
            try:
                kind, *args, _ = conns[k].recv()
            except (EOFError, OSError):
                raise RuntimeError(f"worker {k} did not start: it {exit_reason(procs[k])}") from None
            if kind == "error":
                raise remote_error(f"worker {k}", args[0], args[1])
            waiting.discard(k)
        if time.monotonic() > deadline:
            raise TimeoutError(f"workers {sorted(waiting)} did not start in time")


def _serve(server, procs, conns, views, flags, clock, copies, timeout):
    live, parked = set(range(len(procs))), set()
    last = time.monotonic()
    while live:
        handles = {conns[k]: k for k in live}
        handles.update({procs[k].sentinel: k for k in live})
        ready = wait(list(handles), timeout=0.2)
        for handle in ready:
            k = handles[handle]
            if k not in live:
                continue
            if handle is conns[k] or conns[k].poll():
                try:
                    message = conns[k].recv()
                except (EOFError, OSError):
                    message = None
            else:
                message = None
            if message is None:                         # the process died without a word
                live.discard(k)
                parked.discard(k)
                server.lose(k, clock(), exit_reason(procs[k]))    # raises for sync / ssp
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
                raise remote_error(f"worker {k}", args[0], args[1])
        if server.done:
            flags[0] = 1
        for k in sorted(parked):
            if server.may_start(k):
                parked.discard(k)
                conns[k].send(True)
        if time.monotonic() - last > timeout:
            raise TimeoutError(f"no worker made progress for {timeout:g} s at v{server.version} "
                               f"(clocks {server.clocks}, waiting: {sorted(parked)})")


def shutdown(procs, conns, grace):
    """Leave nothing behind: every child joined (terminated, then killed, if it must be)."""
    deadline = time.monotonic() + grace
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(1.0)
        if proc.is_alive():
            proc.kill()
            proc.join()
    for conn in conns:
        conn.close()
