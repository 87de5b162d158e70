#!/usr/bin/env python
"""GPU workers: run every engine with device="cuda" and check the invariants.

    python scripts/gpu_check.py                 exit 0: all passed, or skipped (no GPU); 1: a check failed
    python scripts/gpu_check.py --device cpu    the same checks on the CPU (where there is no GPU)

What it checks, on every engine (threads, processes, rpc): the float64 MLP under each policy
(invariants, the devices used, the loss falls); a user's own model made with
`aps.problems.from_torch(nn.Sequential(...), X, y, metric="accuracy")` under async and sync
(invariants, float32 parameters, the devices used, the held-out accuracy rises); the Digits CNN
(a TorchProblem, float32) under async; a live run (a worker slowed and one killed mid-run: async
finishes without it); sync on 4 workers equals 1-worker gradient descent on the CPU;
device="auto" picks the GPUs. Each line it prints says what was checked, ok or FAILED, and the
numbers seen. Every check runs, whatever the others did: one that raises is reported FAILED
with its error (a crashed rpc rank included) and the next one runs. The first lines name the
Python, torch, numpy and GPUs, so that a saved output says what it was run on.

Worker k computes on cuda:(k % device_count); its gradient reaches the server
(numpy, on the CPU) as a host array, and the server applies it under the
engine's lock — the GPU path is correct, not lock-free.
"""
import argparse
import platform
import sys
import time
import traceback

import numpy as np
import torch

import asyncps as aps

ENGINES = ("threads", "processes", "rpc")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="where the workers compute (default: cuda; cpu runs the same checks "
                             "without a GPU)")
    device = parser.parse_args(argv).device
    if device == "cuda" and not torch.cuda.is_available():
        print(f"gpu_check: SKIPPED: no CUDA GPU is visible to torch {torch.__version__} "
              f"(torch.cuda.is_available() is False); nothing to check on this machine "
              f"(--device cpu runs the same checks on the CPU)")
        return 0
    count = torch.cuda.device_count() if device == "cuda" else 0
    gpus = ", ".join(torch.cuda.get_device_name(i) for i in range(count)) or "none used (--device cpu)"
    print(f"gpu_check: {time.strftime('%Y-%m-%d')}, asyncps {aps.__version__}, Python "
          f"{platform.python_version()}, torch {torch.__version__}, numpy {np.__version__}, "
          f"{platform.machine()}")
    print(f"gpu_check: device={device}, {count} GPU(s): {gpus}")
    checks = checks_on(device, count)
    failed = [what for what, check in checks if not run_check(what, check)]
    print(f"gpu_check: {'PASSED' if not failed else f'{len(failed)} of {len(checks)} FAILED'} "
          f"({len(checks) - len(failed)} of {len(checks)} checks passed)")
    for what in failed:
        print(f"  FAILED: {what}")
    return 1 if failed else 0


def run_check(what, check):
    """Run one check; print its line (what, ok or FAILED, the numbers seen). True if it passed."""
    start = time.perf_counter()
    try:
        problems, seen = check()
    except Exception as err:                   # noqa: BLE001 - reported, and the next check runs
        problems, seen = [f"{type(err).__name__}: {err}"], "raised"
        problems += ["  " + line for line in traceback.format_exc().rstrip().splitlines()[-6:]]
    print(f"  {what} {'ok' if not problems else 'FAILED'}  {seen}  {time.perf_counter() - start:.1f} s",
          flush=True)
    for line in problems:
        print(f"      {line}", flush=True)
    return not problems


def checks_on(device, count):
    """Every check, as (what, a function returning (problems, seen)), in the order they run."""
    def devices(n):
        return [f"cuda:{k % count}" for k in range(n)] if device == "cuda" else ["cpu"] * n
    mlp = aps.problems.MLP(n=2048, dim=32, hidden=64, classes=8, seed=0)
    checks = []
    for engine in ENGINES:
        for policy in ("async", "sync", "ssp"):
            checks.append((f"{engine:9s} MLP {policy:5s}",
                           lambda e=engine, p=policy: mlp_run(mlp, e, p, device, devices(4))))
    users = users_problem()
    for engine in ENGINES:
        for policy in ("async", "sync"):
            checks.append((f"{engine:9s} from_torch(nn.Sequential) {policy:5s}",
                           lambda e=engine, p=policy: users_model(users, e, p, device, devices(4))))
    for engine in ENGINES:
        checks.append((f"{engine:9s} live (slow worker 3, kill worker 1)",
                       lambda e=engine: live_run(mlp, e, device)))
    digits = aps.problems.Digits(model="cnn", seed=0)         # a TorchProblem, float32
    for engine in ENGINES:
        checks.append((f"{engine:9s} Digits CNN (TorchProblem, float32) async",
                       lambda e=engine: digits_run(digits, e, device)))
    checks.append((f"sync on 4 workers ({device}) vs 1-worker CPU gradient descent",
                   lambda: sync_equals_gradient_descent(mlp, device)))
    if device == "cuda":
        checks.append(("device='auto' picks the GPUs", lambda: auto_device(mlp, devices(2))))
    return checks


def mlp_run(prob, engine, policy, device, expected):
    run = aps.train(prob, workers=4, policy=policy, max_clocks_ahead=1 if policy == "ssp" else None,
                    lr=0.5, steps=60, batch_size=64, device=device, engine=engine, seed=0)
    problems = aps.violations(run.trace)
    if list(run.trace.meta["devices"]) != expected:
        problems.append(f"devices {run.trace.meta['devices']} != {expected}")
    if not run.losses[-1] < run.losses[0]:
        problems.append(f"loss did not fall: {run.losses[0]:.4f} -> {run.losses[-1]:.4f}")
    return problems, (f"loss {run.losses[0]:.4f} -> {run.losses[-1]:.4f}  "
                      f"mean staleness {run.trace.summary()['mean_staleness']:.2f}")


def users_problem():
    """A model as a user writes it, through from_torch (4 classes of 20 features)."""
    from torch import nn

    gen = torch.Generator().manual_seed(0)
    X = torch.randn(2048, 20, generator=gen)
    y = (X[:, :5].sum(dim=1) > 0).long() + 2 * (X[:, 5:10].sum(dim=1) > 0).long()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4))
    return aps.problems.from_torch(model, X, y, metric="accuracy", seed=0)


def users_model(problem, engine, policy, device, expected):
    run = aps.train(problem, workers=4, policy=policy, lr=0.2, steps=200, batch_size=64,
                    device=device, engine=engine, loss_every=50, seed=0)
    problems = aps.violations(run.trace)
    if run.params.dtype != np.float32:
        problems.append(f"parameters are {run.params.dtype}, not float32")
    if list(run.trace.meta["devices"]) != expected:
        problems.append(f"devices {run.trace.meta['devices']} != {expected}")
    accuracy = run.metrics["accuracy"]
    if not accuracy[-1] > accuracy[0] + 0.1:
        problems.append(f"accuracy did not rise: {accuracy[0]:.3f} -> {accuracy[-1]:.3f}")
    return problems, f"accuracy {accuracy[0]:.3f} -> {accuracy[-1]:.3f}"


def live_run(prob, engine, device):
    """A live run: worker 3 slowed, worker 1 killed; async finishes without it."""
    live = aps.train(prob, workers=4, lr=0.5, steps=400, batch_size=64, device=device,
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
    return problems, f"controls {[(c.what, c.worker) for c in run.trace.controls]}"


def digits_run(digits, engine, device):
    run = aps.train(digits, workers=4, policy="async", lr=0.1, steps=300, batch_size=32,
                    device=device, engine=engine, loss_every=50, seed=0)
    problems = aps.violations(run.trace)
    if run.params.dtype != np.float32:
        problems.append(f"parameters are {run.params.dtype}, not float32")
    accuracy = run.metrics["accuracy"]
    if not accuracy[-1] > accuracy[0]:
        problems.append(f"accuracy did not rise: {accuracy[0]:.3f} -> {accuracy[-1]:.3f}")
    return problems, f"accuracy {accuracy[0]:.3f} -> {accuracy[-1]:.3f}"


def sync_equals_gradient_descent(prob, device):
    """Sync on full shards is full-batch gradient descent, on the GPU as on the CPU."""
    run = aps.train(prob, workers=4, policy="sync", lr=0.5, steps=20, device=device)
    cpu = aps.simulate(prob, workers=1, policy="sync", lr=0.5, steps=20)
    gap = float(np.max(np.abs(run.params - cpu.params)))
    return ([] if gap < 1e-9 else [f"max difference {gap:.2e} >= 1e-9"]), f"max difference {gap:.2e}"


def auto_device(prob, expected):
    picked = list(aps.train(prob, workers=2, steps=5, device="auto").trace.meta["devices"])
    return ([] if picked == expected else [f"picked {picked}, not {expected}"]), f"picked {picked}"


if __name__ == "__main__":
    sys.exit(main())
