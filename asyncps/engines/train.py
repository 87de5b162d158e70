"""`aps.train`: the simulator's arguments, run for real on threads, processes or RPC.

It returns the same Run as `simulate`, with wall-clock seconds since the start
in the trace (`meta["clock"] == "wall"`), so a real run plays in the same
widgets. What differs from simulate: no virtual `compute_times`; instead
`slowdown[k]` extra seconds per gradient make stragglers visible on a laptop.
Every argument is a field of `asyncps.core.RunConfig`, checked once here.
"""
import time

import numpy as np

from ..core.config import ENGINES, configure
from .entry import Progress, signature
from ..core.run import Run, load_run
from .worker import one_torch_thread, prepare

__all__ = ["train", "ENGINES"]


def resolve_devices(config, problem):
    """Worker k computes on cuda:(k % device_count) with device="cuda"; "auto" picks cuda when present."""
    device, workers = config.device, config.workers
    if device == "cpu":
        return ("cpu",) * workers
    try:
        import torch
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except ImportError:
        count = 0
    if device == "auto":
        usable = count > 0 and type(problem).on_device is not type(problem).__mro__[-2].on_device
        return resolve_devices(config.replace(device="cuda" if usable else "cpu"), problem)
    if count == 0:
        raise ValueError("device='cuda' is not allowed here: no CUDA GPU is visible to torch; "
                         "use device='cpu' or device='auto'")
    devices = tuple(f"cuda:{k % count}" for k in range(workers))
    problem.on_device(devices[0])                 # fails now, with a message, for numpy problems
    return devices


class Checkpointer:
    """Saves the run atomically every `every` versions, and at the last one."""

    def __init__(self, path, every):
        self.path, self.every = path, every

    def __call__(self, server):
        if server.version % self.every == 0 or server.done:
            server.result().save(self.path)


def train(problem, resume=None, *, progress=None, live=False, **arguments):
    """Train for real and return a Run. `steps` counts server versions after v0.

    engine     "threads" | "processes" | "rpc" (torch.distributed on 127.0.0.1 unless told otherwise)
    device     "cpu" | "cuda" (worker k on cuda:(k % device_count)) | "auto"
    slowdown   extra seconds each worker sleeps per gradient, e.g. [0, 0, 0, 0.02]
    lock       False: lock-free (dense, non-atomic) updates that may lose some (threads, async, cpu)
    timeout    seconds without any progress before the run fails instead of hanging
    resume     a path (or Run) saved by run.save or a checkpoint: continue from its version
    checkpoint a path: save the run there atomically every `checkpoint_every` versions
    loss_every score every n-th version only (the others are NaN in run.losses): for big problems
    trace_limit keep the first n events only, and summaries of the rest: for long runs
    apply, average, gate, lr_schedule   a learner's own push, round, gate or rate, as in simulate
    progress   None: a bar when the run takes over 2 s | True | False (only what you see: not in
               the RunConfig, not in trace.meta)
    live       True: start the run in the background and return at once a LiveRun (engines/live.py)
               to watch it (live.state) and change it (slow, set_lr, pause, resume, kill, stop);
               live.result() is the Run. Every engine. Not in the RunConfig.
    """
    config = configure("train", arguments)
    check_live(live, progress, config)
    if config.engine in ("processes", "rpc"):      # before anything runs: nothing is re-run
        from .procs import refuse_unguarded
        refuse_unguarded(config.engine)
    config = config.replace(devices=resolve_devices(config, problem))
    server, shards = prepare(problem, config)
    offset = 0.0
    if resume is not None:
        previous = resume if isinstance(resume, Run) else load_run(resume)
        server.restore(previous)
        offset = previous.trace.duration
    if config.checkpoint is not None:
        server.on_version = Checkpointer(config.checkpoint, config.checkpoint_every)
    copies = [server.params.copy() for _ in range(config.workers)]
    start = time.perf_counter()
    clock = lambda: offset + time.perf_counter() - start          # noqa: E731
    if not live:
        return run_engine(problem, server, shards, config, clock, copies, offset, progress)
    from .live import LiveRun
    if config.engine == "processes":
        from .processes import Controls
    elif config.engine == "rpc":
        from .rpc.world import Controls
    else:
        from .threads import Controls
    controls = Controls(server, config, clock)
    return LiveRun(server, controls, lambda: run_engine(problem, server, shards, config, clock, copies,
                                                        offset, False, controls))


def check_live(live, progress, config):
    """live=True: without a bar (the caller does not wait: nobody draws it)."""
    if not isinstance(live, bool):
        raise TypeError(f"live={live!r:.60} is not allowed: live must be True (return a LiveRun at "
                        f"once) or False (wait for the Run)")
    if live and progress is True:
        raise ValueError("progress=True is not allowed with live=True: nobody waits for a live run "
                         "to draw its bar; watch live.state instead (progress=None or False)")


def run_engine(problem, server, shards, config, clock, copies, offset, progress, controls=None):
    """The run on the configured engine, to its end: the Run."""
    bar = Progress(progress, server, config.engine)          # the caller waits: it draws the bar
    with np.errstate(all="ignore"), one_torch_thread(), bar:  # the workers share the cores
        if server.done:
            pass
        elif config.engine == "threads":
            from .threads import run_threads
            run_threads(server, [problem.on_device(d) for d in config.devices], shards, config,
                        clock, copies, bar, controls)
        elif config.engine == "processes":
            from .processes import run_processes
            run_processes(server, problem, shards, config, copies, offset, bar, controls)
        else:
            from .rpc import run_rpc
            run_rpc(server, problem, shards, config, copies, offset, bar, controls)
    return server.result(copies)


train.__signature__ = signature("train", before=("problem",),
                                after=(("resume", None), ("progress", None), ("live", False)))
