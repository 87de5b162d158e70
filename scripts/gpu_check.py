#!/usr/bin/env python
"""GPU workers: run every engine with device="cuda" and check the invariants.

    python scripts/gpu_check.py            exit 0: all passed, or skipped (no GPU); 1: a check failed

What it checks, on every engine (threads, processes, rpc): the float64 MLP under each policy
(invariants, the devices used, the loss falls); a user's own model made with
`aps.problems.from_torch(nn.Sequential(...), X, y, metric="accuracy")` under async and sync
(invariants, float32 parameters, the devices used, the held-out accuracy rises); the Digits CNN
(a TorchProblem, float32) under async; a live run on the GPUs (a worker slowed and one killed
mid-run: async finishes without it); sync on 4 GPUs equals 1-worker gradient descent on the CPU;
device="auto" picks the GPUs. Each line it prints says what was checked and the numbers seen.

Worker k computes on cuda:(k % device_count); its gradient reaches the server
(numpy, on the CPU) as a host array, and the server applies it under the
engine's lock — the GPU path is correct, not lock-free.
"""
import sys
import time

import numpy as np
import torch

import asyncps as aps


def main():
    if not torch.cuda.is_available():
        print(f"gpu_check: SKIPPED: no CUDA GPU is visible to torch {torch.__version__} "
              f"(torch.cuda.is_available() is False); nothing to check on this machine")
        return 0
    count = torch.cuda.device_count()
    print(f"gpu_check: torch {torch.__version__}, {count} GPU(s): "
          + ", ".join(torch.cuda.get_device_name(i) for i in range(count)))
    prob = aps.problems.MLP(n=2048, dim=32, hidden=64, classes=8, seed=0)
    failures = 0
    for engine in ("threads", "processes", "rpc"):
        for policy in ("async", "sync", "ssp"):
            start = time.perf_counter()
            run = aps.train(prob, workers=4, policy=policy, max_clocks_ahead=1 if policy == "ssp" else None,
                            lr=0.5, steps=60, batch_size=64, device="cuda", engine=engine, seed=0)
            problems = aps.violations(run.trace)
            expected = [f"cuda:{k % count}" for k in range(4)]
            if run.trace.meta["devices"] != expected:
                problems.append(f"devices {run.trace.meta['devices']} != {expected}")
            if not run.losses[-1] < run.losses[0]:
                problems.append(f"loss did not fall: {run.losses[0]:.4f} -> {run.losses[-1]:.4f}")
            failures += report(f"{engine:9s} {policy:5s}", problems,
                               f"loss {run.losses[0]:.4f} -> {run.losses[-1]:.4f}  "
                               f"mean staleness {run.trace.summary()['mean_staleness']:.2f}  "
                               f"{time.perf_counter() - start:.1f} s")
    failures += users_model(count)
    failures += live_on_gpus(count)
    digits = aps.problems.Digits(model="cnn", seed=0)         # a TorchProblem, float32
    for engine in ("threads", "processes", "rpc"):
        start = time.perf_counter()
        run = aps.train(digits, workers=4, policy="async", lr=0.1, steps=300, batch_size=32,
                        device="cuda", engine=engine, loss_every=50, seed=0)
        problems = aps.violations(run.trace)
        if run.params.dtype != np.float32:
            problems.append(f"parameters are {run.params.dtype}, not float32")
        accuracy = run.metrics["accuracy"]
        if not accuracy[-1] > accuracy[0]:
            problems.append(f"accuracy did not rise: {accuracy[0]:.3f} -> {accuracy[-1]:.3f}")
        failures += report(f"{engine:9s} Digits CNN (TorchProblem, float32) async", problems,
                           f"accuracy {accuracy[0]:.3f} -> {accuracy[-1]:.3f}  "
                           f"{time.perf_counter() - start:.1f} s")
    # sync on full shards is full-batch gradient descent, on the GPU as on the CPU
    gpu = aps.train(prob, workers=4, policy="sync", lr=0.5, steps=20, device="cuda")
    cpu = aps.simulate(prob, workers=1, policy="sync", lr=0.5, steps=20)
    gap = float(np.max(np.abs(gpu.params - cpu.params)))
    ok = gap < 1e-9
    failures += not ok
    print(f"  sync on 4 GPUs vs 1-worker CPU gradient descent: max difference {gap:.2e} "
          f"{'ok' if ok else 'FAILED'}")
    auto = aps.train(prob, workers=2, steps=5, device="auto").trace.meta["devices"]
    ok = auto == [f"cuda:{k % count}" for k in range(2)]
    failures += not ok
    print(f"  device='auto' picked {auto} {'ok' if ok else 'FAILED'}")
    print(f"gpu_check: {'PASSED' if not failures else f'{failures} FAILED'}")
    return 1 if failures else 0


def report(what, problems, seen):
    """Print one check's line (what, ok or FAILED, the numbers seen) and its problems; 1 if failed."""
    print(f"  {what} {'ok' if not problems else 'FAILED'}  {seen}")
    for line in problems:
        print(f"      {line}")
    return int(bool(problems))


def users_model(count):
    """A model as a user writes it, through from_torch, on every engine: the number of failures."""
    from torch import nn

    gen = torch.Generator().manual_seed(0)
    X = torch.randn(2048, 20, generator=gen)
    y = (X[:, :5].sum(dim=1) > 0).long() + 2 * (X[:, 5:10].sum(dim=1) > 0).long()   # 4 classes
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4))
    problem = aps.problems.from_torch(model, X, y, metric="accuracy", seed=0)
    failures = 0
    for engine in ("threads", "processes", "rpc"):
        for policy in ("async", "sync"):
            start = time.perf_counter()
            run = aps.train(problem, workers=4, policy=policy, lr=0.2, steps=200, batch_size=64,
                            device="cuda", engine=engine, loss_every=50, seed=0)
            problems = aps.violations(run.trace)
            if run.params.dtype != np.float32:
                problems.append(f"parameters are {run.params.dtype}, not float32")
            if run.trace.meta["devices"] != [f"cuda:{k % count}" for k in range(4)]:
                problems.append(f"devices {run.trace.meta['devices']}")
            accuracy = run.metrics["accuracy"]
            if not accuracy[-1] > accuracy[0] + 0.1:
                problems.append(f"accuracy did not rise: {accuracy[0]:.3f} -> {accuracy[-1]:.3f}")
            failures += report(f"{engine:9s} from_torch(nn.Sequential) {policy:5s}", problems,
                               f"accuracy {accuracy[0]:.3f} -> {accuracy[-1]:.3f}  "
                               f"{time.perf_counter() - start:.1f} s")
    return failures


def live_on_gpus(count):
    """A live run on the GPUs, per engine: worker 3 slowed, worker 1 killed; async finishes."""
    prob = aps.problems.MLP(n=2048, dim=32, hidden=64, classes=8, seed=0)
    failures = 0
    for engine in ("threads", "processes", "rpc"):
        live = aps.train(prob, workers=4, lr=0.5, steps=400, batch_size=64, device="cuda",
                         engine=engine, slowdown=[0.002] * 4, live=True)
        deadline = time.monotonic() + 120
        while live.state["version"] < 50 and time.monotonic() < deadline:
            time.sleep(0.05)
        live.slow(3, 0.05)
        live.kill(1)
        run = live.result(timeout=300)
        problems = aps.violations(run.trace)
        if [e.worker for e in run.trace.lost] != [1]:
            problems.append(f"lost {[e.worker for e in run.trace.lost]}, not [1]")
        if len(run.losses) != 401:
            problems.append(f"{len(run.losses) - 1} versions, not 400")
        failures += report(f"{engine:9s} live on the GPUs (slow 3, kill 1)", problems,
                           f"controls {[(c.what, c.worker) for c in run.trace.controls]}")
    return failures


if __name__ == "__main__":
    sys.exit(main())
