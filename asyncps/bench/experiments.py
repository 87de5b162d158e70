"""The experiments of the benchmark, each returning plain dicts (no printing, no files).

throughput     pushes per second of every engine and baseline (Hogwild: updates per second), side
               by side, per size and workers, on the float32 torch MLP of workloads.py
server_cost    the threads server's per-push cost against one in-place `w -= lr * g`
simulator      simulated pushes per second (10-dim least squares, 8 workers)
straggler      wall-clock to a target loss, sync vs async vs ssp, one worker 4x slower; the same
               experiment in the simulator
scaling        simulated time to a target loss for 1..1024 workers, sync vs async
digits         wall-clock to 90 % test accuracy on real data (Digits CNN), sync vs async vs ssp,
               4 workers on the processes engine, one straggler
"""
import time

import numpy as np

from ..core.server import ParameterServer
from ..engines.simulate import simulate
from ..engines.train import train
from ..engines.worker import one_torch_thread
from ..problems.digits import Digits
from ..problems.synthetic import LeastSquares
from . import baselines
from .hogwild import hogwild
from .workloads import BATCH, floor, problem, rate


def throughput(sizes, worker_counts, seconds=2.0, log=print):
    rows = []
    for size in sizes:
        prob = problem(size)
        base = floor(prob, steps=20)                       # warm-up and a first estimate
        base = floor(prob, steps=max(20, int(base * seconds)))
        row = {"size": size, "params": prob.dim, "floor": base, "engines": {}}
        log(f"  {size}: floor {base:.0f} pushes/s")
        for workers in worker_counts:
            steps = max(20, int(base * seconds))
            cell = {}
            for engine in ("threads", "processes", "rpc"):
                run = train(prob, workers=workers, policy="async", lr=0.01, steps=steps,
                            batch_size=BATCH, engine=engine, loss_every=10 ** 9)
                cell[engine] = rate(run)
            cell["torch_rpc_loop"] = baselines.torch_rpc_loop(prob, workers, max(10, steps // workers))
            cell["ray_actor"] = (baselines.ray_actor(prob, workers, max(10, steps // workers))
                                 if baselines.ray_available() else None)
            cell["hogwild"] = hogwild(prob, workers, steps, lr=0.01, batch_size=BATCH)
            row["engines"][workers] = cell
            log(f"    {workers} worker(s): " + ", ".join(f"{k} {v:.0f}" for k, v in cell.items() if v))
        rows.append(row)
    return rows


def server_cost(size=1_000_000, repeat=50):
    """Median seconds of one threads-engine push (lock included) and of one in-place update."""
    import threading

    rng = np.random.default_rng(0)
    grad, w = rng.standard_normal(size), rng.standard_normal(size)
    server = ParameterServer(np.zeros(size), workers=1, policy="async", lr=0.01)
    lock = threading.Lock()
    push, update = [], []
    for v in range(repeat):
        start = time.perf_counter()
        with lock:
            server.push(0, grad, v, 0.0)
        push.append(time.perf_counter() - start)
        start = time.perf_counter()
        w -= 0.01 * grad
        update.append(time.perf_counter() - start)
    return {"push": float(np.median(push)), "update": float(np.median(update)), "params": size}


def simulator(steps=20_000, repeat=3):
    """Simulated pushes per second, best of `repeat`: 10-dim least squares (n=512), 8 async
    workers, jitter 0.3, the loss scored at every version and at every 100th."""
    prob = LeastSquares(n=512, dim=10, seed=0)

    def best(**extra):
        rates = []
        for _ in range(repeat):
            start = time.perf_counter()
            simulate(prob, workers=8, policy="async", lr=0.01, steps=steps, jitter=0.3, progress=False,
                     **extra)
            rates.append(steps / (time.perf_counter() - start))
        return max(rates)

    return {"pushes_per_s": best(), "pushes_per_s_loss_every_100": best(loss_every=100)}


def straggler(engines=("threads", "processes"), delay=0.004, target_fraction=0.02, log=print):
    """4 workers, worker 3 needs 4x as long per gradient: wall-clock to 2% of the starting loss."""
    prob = problem("1e3")
    slowdown = [delay, delay, delay, 4 * delay]
    target = target_fraction * prob.loss(prob.x0)
    settings = {"sync": dict(policy="sync", lr=0.1, steps=80, loss_every=2),
                "async": dict(policy="async", lr=0.1, steps=300, loss_every=2),
                "ssp": dict(policy="ssp", max_clocks_ahead=2, lr=0.1, steps=300, loss_every=2)}
    out = {"target": target, "delay": delay, "measured": {}, "simulated": {}}
    for engine in engines:
        times = {}
        for name, kw in settings.items():
            run = train(prob, workers=4, batch_size=BATCH, slowdown=slowdown, engine=engine, seed=0, **kw)
            start = min(p.time for p in run.trace.pulls)
            reached = run.time_to_reach(target)
            times[name] = None if reached is None else reached - start
        out["measured"][engine] = times
        log(f"    {engine}: " + ", ".join(f"{k} {v:.3f} s" if v else f"{k} never" for k, v in times.items()))
    for name, kw in settings.items():
        run = simulate(prob, workers=4, batch_size=BATCH, compute_times=[1, 1, 1, 4], seed=0, **kw)
        reached = run.time_to_reach(target)
        out["simulated"][name] = None if reached is None else reached * delay
    return out


def scaling(worker_counts, delay=0.05, jitter=0.5, log=print):
    """Simulated time to a target loss for N workers: sync pays the slowest of N per round,
    async pays staleness N - 1 (with the staleness-aware lr)."""
    prob = LeastSquares(n=16384, dim=10, noise=0.1, seed=0)
    target = 2.0 * prob.loss(np.linalg.lstsq(prob.A, prob.b, rcond=None)[0])
    rows = []
    for n in worker_counts:
        common = dict(workers=n, batch_size=16, jitter=jitter, comm_delay=delay, seed=0)
        sync = simulate(prob, policy="sync", lr=0.05, steps=200, **common)
        asy = simulate(prob, policy="async", lr=0.05, lr_schedule="divide_by_staleness", steps=150 * n,
                       loss_every=n, **common)
        rows.append({"workers": n, "sync": sync.time_to_reach(target), "async": asy.time_to_reach(target)})
        log(f"    {n:5d} workers: sync {rows[-1]['sync']}, async {rows[-1]['async']}")
    return {"target": target, "delay": delay, "jitter": jitter, "rows": rows}


def gradient_seconds(prob, batch_size, repeat=30, seed=0):
    """Median seconds of one of `prob`'s minibatch gradients, with one torch thread (as a worker)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rng = np.random.default_rng(seed)
        times = []
        for _ in range(repeat + 5):
            batch = np.sort(rng.choice(prob.n, size=batch_size, replace=False))
            start = time.perf_counter()
            prob.gradient(prob.x0, batch, rng)
            times.append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(threads)
    return float(np.median(times[5:]))


def accuracy_timeline(run):
    """(seconds since the first pull, accuracy) of each scored version of a real run."""
    acc = np.asarray(run.metrics["accuracy"], dtype=float)
    made = run.trace.version_times() - min(p.time for p in run.trace.pulls)
    made[0] = 0.0
    scored = ~np.isnan(acc)
    return made[scored], acc[scored]


# lr per policy: sync averages the round's 4 gradients (an effective minibatch of 128) and takes
# the largest steps; async and ssp apply each stale gradient alone and diverge at lr=0.4.
DIGITS_LRS = {"sync": (0.2, 0.4, 0.8), "async": (0.05, 0.1, 0.2), "ssp": (0.05, 0.1, 0.2)}
DIGITS_QUICK_LRS = {"sync": (0.4,), "async": (0.2,), "ssp": (0.1,)}


def digits(lrs=None, gradients=1200, level=0.9, engine="processes", batch_size=32, loss_every=10,
           log=print):
    """Digits CNN, 4 workers, worker 3 sleeps 4x a gradient's time per gradient: wall-clock to
    `level` test accuracy and the final accuracy, per policy and lr, for the same number of
    gradients (sync: gradients / 4 versions, one per round; async, ssp: one version per push).
    Per policy, the lr that got there first is kept (the highest final accuracy if none did)."""
    lrs = DIGITS_LRS if lrs is None else lrs
    prob = Digits(model="cnn", seed=0)
    grad = gradient_seconds(prob, batch_size)
    slowdown = [0.0, 0.0, 0.0, 4 * grad]
    out = {"level": level, "gradient_s": grad, "slowdown": slowdown, "workers": 4, "engine": engine,
           "batch_size": batch_size, "gradients": gradients, "params": prob.dim, "loss_every": loss_every,
           "sweep": [], "best": {}}
    for policy, rates in lrs.items():
        extra = {"max_clocks_ahead": 2} if policy == "ssp" else {}
        steps = gradients // 4 if policy == "sync" else gradients
        for lr in rates:
            with one_torch_thread():     # the server scores versions in this process: one torch
                run = train(prob, workers=4, policy=policy, lr=lr, steps=steps,   # thread, as workers
                            batch_size=batch_size, slowdown=slowdown, engine=engine,
                            loss_every=loss_every, seed=0, **extra)
            when, acc = accuracy_timeline(run)
            reached = np.nonzero(acc >= level)[0]
            row = {"policy": policy, "lr": lr, "steps": steps, "seconds": None if not reached.size
                   else float(when[reached[0]]), "final": float(acc[-1]) if acc.size else None,
                   "peak": float(acc.max()) if acc.size else None,
                   "duration": float(when[-1]) if acc.size else None, "diverged": bool(run.diverged)}
            out["sweep"].append(row)
            log(f"    {policy} lr={lr:g}: " + (f"{row['seconds']:.2f} s to {level:.0%}" if row["seconds"]
                                              is not None else f"never {level:.0%}") +
                (f", final {row['final']:.3f} after {row['duration']:.2f} s" if row["final"] is not None
                   else ", never scored"))
        mine = [r for r in out["sweep"] if r["policy"] == policy]
        out["best"][policy] = min(mine, key=lambda r: (r["seconds"] is None, r["seconds"] or 0.0,
                                                       -(r["final"] or 0.0)))
    return out
