"""The benchmark workloads: an MLP of about 1e3, 1e5 or 1e6 parameters, minibatches of 64.

Every engine and every baseline trains the same problem with the same gradient function, so
the ratios between them measure the transport and the server, not the model.
"""
import time

import numpy as np

from ..problems.mlp import MLP

# (dim, hidden, classes) giving about 1e3, 1e5 and 1e6 parameters
SIZES = {"1e3": (20, 40, 4), "1e5": (300, 300, 10), "1e6": (1000, 1000, 10)}
BATCH = 64


def problem(size, seed=0):
    dim, hidden, classes = SIZES[size]
    return MLP(n=4096, dim=dim, hidden=hidden, classes=classes, seed=seed)


def floor(prob, steps, lr=0.01, seed=0):
    """Compute only: one process, no server — gradient and in-place update, as fast as it gets."""
    import torch

    torch.set_num_threads(1)
    rng = np.random.default_rng(seed)
    params = prob.x0.copy()
    start = time.perf_counter()
    for _ in range(steps):
        batch = np.sort(rng.choice(prob.n, size=BATCH, replace=False))
        params -= lr * prob.gradient(params, batch, rng)
    return steps / (time.perf_counter() - start)


def rate(run):
    """Pushes per second of a real run, from its first pull to its last push (startup excluded)."""
    pushes = run.trace.pushes
    first = min(p.time for p in run.trace.pulls)
    return len(pushes) / max(pushes[-1].time - first, 1e-9)
