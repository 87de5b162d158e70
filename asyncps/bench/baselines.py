"""What a user would write by hand instead, run on the same workload for side-by-side ratios.

- `torch_rpc_loop`: the PyTorch tutorial's pattern — a parameter-server object on rank 0 behind a
  lock, trainers that `rpc_sync` a pull and a push per step (no versions, no trace).
- `ray_actor`: the Ray docs' parameter-server actor, when `ray` is installed (`asyncps[bench]`).
"""
import threading
import time

import numpy as np

from .workloads import BATCH

_PS = {}


def _ps_get():
    import torch
    with _PS["lock"]:
        return torch.from_numpy(_PS["params"].copy())


def _ps_push(grad):
    with _PS["lock"]:
        _PS["params"] -= _PS["lr"] * grad.numpy()


def _ps_main(x0, lr, world, conn):
    from ..engines import rpc as ours
    import torch.distributed.rpc as rpc

    _PS.update(params=x0.copy(), lr=lr, lock=threading.Lock())
    port = ours.listen(ours.LOOPBACK)                  # loopback only, like asyncps itself
    conn.send(port)
    ours._init("ps", 0, world, f"asyncps://{ours.LOOPBACK}:{port}", 60.0)
    rpc.shutdown()                                      # waits for every trainer (graceful)


def _trainer_main(k, payload, steps, world, conn):
    import cloudpickle
    import torch
    import torch.distributed.rpc as rpc

    from ..engines import rpc as ours

    torch.set_num_threads(1)
    problem = cloudpickle.loads(payload)
    rng = np.random.default_rng([k, 99])
    port = conn.recv()
    ours._init(f"trainer{k}", k + 1, world, f"asyncps://{ours.LOOPBACK}:{port}", 60.0)
    start = time.perf_counter()
    for _ in range(steps):
        params = rpc.rpc_sync("ps", _ps_get).numpy()
        batch = np.sort(rng.choice(problem.n, size=BATCH, replace=False))
        rpc.rpc_sync("ps", _ps_push, args=(torch.from_numpy(problem.gradient(params, batch, rng)),))
    end = time.perf_counter()
    rpc.shutdown()
    conn.send((start, end))


def torch_rpc_loop(problem, workers, steps_per_worker, lr=0.01):
    """Pushes per second of the hand-written rpc loop with `workers` trainers."""
    import cloudpickle

    from ..engines.processes import shutdown, worker_context

    ctx = worker_context()
    world = workers + 1
    ps_ours, ps_theirs = ctx.Pipe()
    pipes = [ctx.Pipe() for _ in range(workers)]
    procs = [ctx.Process(target=_ps_main, args=(problem.x0, lr, world, ps_theirs), daemon=True)]
    payload = cloudpickle.dumps(problem)
    procs += [ctx.Process(target=_trainer_main, args=(k, payload, steps_per_worker, world, theirs),
                          daemon=True) for k, (_, theirs) in enumerate(pipes)]
    try:
        for p in procs:
            p.start()
        port = ps_ours.recv()
        for ours, _ in pipes:
            ours.send(port)
        spans = [ours.recv() for ours, _ in pipes]
    finally:
        shutdown(procs, [ps_ours] + [o for o, _ in pipes], grace=5.0)
    first, last = min(s for s, _ in spans), max(e for _, e in spans)
    return workers * steps_per_worker / (last - first)


def ray_available():
    try:
        import ray  # noqa: F401
        return True
    except ImportError:
        return False


def ray_actor(problem, workers, steps_per_worker, lr=0.01):
    """The Ray docs' pattern: a parameter-server actor, one task per worker pulling and pushing."""
    import ray

    ray.init(num_cpus=max(2, workers + 1), include_dashboard=False, log_to_driver=False,
             ignore_reinit_error=True)
    try:
        @ray.remote
        class PS:
            def __init__(self, x0):
                self.params = x0.copy()

            def get(self):
                return self.params

            def push(self, grad):
                self.params -= lr * grad

        @ray.remote
        def train(ps, problem, k):
            rng = np.random.default_rng([k, 99])
            start = time.perf_counter()
            for _ in range(steps_per_worker):
                params = ray.get(ps.get.remote())
                batch = np.sort(rng.choice(problem.n, size=BATCH, replace=False))
                ray.get(ps.push.remote(problem.gradient(params, batch, rng)))
            return start, time.perf_counter()

        ps = PS.remote(problem.x0)
        spans = ray.get([train.remote(ps, problem, k) for k in range(workers)])
    finally:
        ray.shutdown()
    first, last = min(s for s, _ in spans), max(e for _, e in spans)
    return workers * steps_per_worker / (last - first)
