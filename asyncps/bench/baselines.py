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
    import torch.distributed.rpc as rpc

    from ..engines.rpc import rendezvous

    _PS.update(params=x0.copy(), lr=lr, lock=threading.Lock())
    port = rendezvous.listen(rendezvous.LOOPBACK)      # loopback only, like asyncps itself
    conn.send(port)
    rendezvous.join("ps", 0, world, f"asyncps://{rendezvous.LOOPBACK}:{port}", 60.0)
    rpc.shutdown()                                      # waits for every trainer (graceful)


def _trainer_main(k, payload, steps, world, conn):
    import cloudpickle
    import torch
    import torch.distributed.rpc as rpc

    from ..engines.rpc import rendezvous

    torch.set_num_threads(1)
    problem = cloudpickle.loads(payload)
    rng = np.random.default_rng([k, 99])
    port = conn.recv()
    rendezvous.join(f"trainer{k}", k + 1, world, f"asyncps://{rendezvous.LOOPBACK}:{port}", 60.0)
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
    from ..engines import procs

    world, payload = workers + 1, procs.dumps(problem)
    with procs.Children() as children:                 # nothing left behind, on any ending
        children.start(_ps_main, "baseline-ps", problem.x0, lr, world)
        for k in range(workers):
            children.start(_trainer_main, f"baseline-trainer-{k}", k, payload, steps_per_worker, world)
        port = children.conns[0].recv()
        for conn in children.conns[1:]:
            conn.send(port)
        spans = [conn.recv() for conn in children.conns[1:]]
        children.ok = True
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
