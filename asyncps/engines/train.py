"""`aps.train`: the simulator's arguments, run for real on threads, processes or RPC.

It returns the same Run as `simulate`, with wall-clock seconds since the start
in the trace (`meta["clock"] == "wall"`), so a real run plays in the same
widgets. What differs from simulate: no virtual `compute_times`; instead
`slowdown[k]` extra seconds per gradient make stragglers visible on a laptop.
"""
import time

import numpy as np

from ..core import checks
from ..core.checkpoint import load_run, save_run
from ..core.trace import Run
from .worker import prepare

ENGINES = ("threads", "processes", "rpc")
DEVICES = ("cpu", "cuda", "auto")


def resolve_devices(device, workers, problem):
    """Worker k computes on cuda:(k % device_count) with device="cuda"; "auto" picks cuda when present."""
    checks.choice("device", device, DEVICES)
    if device == "cpu":
        return ["cpu"] * workers
    try:
        import torch
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except ImportError:
        count = 0
    if device == "auto":
        usable = count > 0 and type(problem).on_device is not type(problem).__mro__[-2].on_device
        return resolve_devices("cuda" if usable else "cpu", workers, problem)
    if count == 0:
        raise ValueError("device='cuda' is not allowed here: no CUDA GPU is visible to torch; "
                         "use device='cpu' or device='auto'")
    devices = [f"cuda:{k % count}" for k in range(workers)]
    problem.on_device(devices[0])                 # fails now, with a message, for numpy problems
    return devices


class Checkpointer:
    """Saves the run atomically every `every` versions, and at the last one."""

    def __init__(self, path, every):
        self.path, self.every = path, checks.integer("checkpoint_every", every, minimum=1)

    def __call__(self, server):
        if server.version % self.every == 0 or server.done:
            save_run(Run(trace=server.trace, params=server.params, diverged=server.diverged,
                         message=server.message, server_state=server.state()), self.path)


def train(problem, workers=2, policy="async", staleness=None, lr=0.1, lr_schedule="constant",
          momentum=0.0, steps=100, partition="iid", batch_size=None, fetch_every=None, push_every=1,
          seed=0, engine="threads", device="cpu", slowdown=None, lock=True, timeout=60.0,
          resume=None, checkpoint=None, checkpoint_every=100, loss_every=1, trace_limit=None,
          **rpc_options):
    """Train for real and return a Run. `steps` counts server versions after v0.

    engine     "threads" | "processes" | "rpc" (torch.distributed on 127.0.0.1 unless told otherwise)
    device     "cpu" | "cuda" (worker k on cuda:(k % device_count)) | "auto"
    slowdown   extra seconds each worker sleeps per gradient, e.g. [0, 0, 0, 0.02]
    lock       False: Hogwild, lock-free updates that may lose some (threads, async, cpu only)
    timeout    seconds without any progress before the run fails instead of hanging
    resume     a path (or Run) saved by run.save or a checkpoint: continue from its version
    checkpoint a path: save the run there atomically every `checkpoint_every` versions
    loss_every score every n-th version only (the others are NaN in run.losses): for big problems
    trace_limit keep the first n events only, and summaries of the rest: for long runs
    """
    engine = checks.choice("engine", engine, ENGINES)
    server, settings, shards = prepare(problem, workers, policy, staleness, lr, lr_schedule, momentum,
                                       steps, partition, batch_size, fetch_every, push_every, seed,
                                       loss_every=loss_every, trace_limit=trace_limit)
    workers = server.workers
    slowdown = (np.zeros(workers) if slowdown is None else
                checks.vector("slowdown", slowdown, length=workers, minimum=0.0))
    timeout = checks.real("timeout", timeout, positive=True, below=1e6)   # ~11 days; larger overflows waits
    if not isinstance(lock, bool):
        raise checks.bad("lock", lock, "True or False", TypeError)
    devices = resolve_devices(device, workers, problem)
    if not lock and (engine != "threads" or server.policy.name != "async" or devices[0] != "cpu"):
        raise ValueError(f"lock=False is not allowed with engine={engine!r}, policy="
                         f"{server.policy.name!r}, device={device!r}: lock-free (Hogwild) updates are "
                         f"offered for engine='threads', policy='async' on the CPU only")
    if rpc_options and engine != "rpc":
        raise TypeError(f"train() got {sorted(rpc_options)}: these options are for engine='rpc' only")

    offset = 0.0
    if resume is not None:
        previous = resume if isinstance(resume, Run) else load_run(resume)
        server.restore(previous)
        offset = previous.trace.duration
    if checkpoint is not None:
        server.on_version = Checkpointer(checkpoint, checkpoint_every)
    server.trace.meta.update(engine=engine, clock="wall", device=device, devices=devices,
                             slowdown=slowdown.tolist(), lock=lock)
    copies = [server.params.copy() for _ in range(workers)]
    start = time.perf_counter()
    clock = lambda: offset + time.perf_counter() - start          # noqa: E731

    with np.errstate(all="ignore"):
        if server.done:
            pass
        elif engine == "threads":
            from .threads import run_threads
            run_threads(server, [problem.on_device(d) for d in devices], settings, shards, seed,
                        slowdown, clock, copies, lock, timeout)
        elif engine == "processes":
            from .processes import run_processes
            run_processes(server, problem, settings, shards, seed, slowdown, copies, timeout,
                          devices, offset)
        else:
            from .rpc import run_rpc
            run_rpc(server, problem, settings, shards, seed, slowdown, copies, timeout, devices,
                    offset, **rpc_options)
    return Run(trace=server.trace, params=server.params.copy(), diverged=server.diverged,
               message=server.message, worker_params=copies, server_state=server.state())
