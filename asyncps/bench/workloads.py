"""The benchmark workloads: a torch MLP of about 1e3, 1e5 or 1e6 parameters, float32, minibatches of 64.

One `nn.Sequential(Linear, Tanh, Linear)` on Gaussian blobs (one per class), made into a problem
with `from_torch`. Every engine and every baseline trains that one model on that one data with
the same minibatch size and dtype: asyncps's engines, the compute-only floor and the hand-written
rpc loop through `problem.gradient` (autograd on a flat vector), Hogwild (hogwild.py) through the
module itself and `torch.optim.SGD`. So the ratios between them measure the transport and the
server, not the model.
"""
import time

import numpy as np

from ..problems.torch_model import from_torch

# (dim, hidden, classes) giving about 1e3, 1e5 and 1e6 parameters
SIZES = {"1e3": (20, 40, 4), "1e5": (300, 300, 10), "1e6": (1000, 1000, 10)}
BATCH = 64
EXAMPLES = 4096
HELD_OUT = 1 / 16             # 256 examples score the loss (rarely: the benchmark's runs use loss_every)


def blobs(n, dim, classes, seed=0):
    """Gaussian blobs, one per class (the data of aps.problems.MLP): X float32, labels int64."""
    rng = np.random.default_rng([seed, 3])
    centres = 2.0 * rng.standard_normal((classes, dim))
    labels = rng.integers(0, classes, n)
    X = centres[labels] + rng.standard_normal((n, dim))
    return X.astype(np.float32), labels.astype(np.int64), rng


def network(dim, hidden, classes, rng):
    """Linear(dim, hidden) - Tanh - Linear(hidden, classes), weights N(0, 1/fan_in) and zero
    biases drawn from `rng` (numpy's generator: torch's global random state is never touched)."""
    import torch
    from torch import nn

    skip = torch.nn.utils.skip_init                  # no default init: it would draw from torch's RNG
    net = nn.Sequential(skip(nn.Linear, dim, hidden), nn.Tanh(), skip(nn.Linear, hidden, classes))
    with torch.no_grad():
        for layer in (net[0], net[2]):
            fan_out, fan_in = layer.weight.shape
            w = rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)
            layer.weight.copy_(torch.from_numpy(w.T.astype(np.float32)))
            layer.bias.zero_()
    return net


def problem(size, seed=0):
    """The workload of `size` ("1e3", "1e5", "1e6") as an asyncps problem (float32, no metric)."""
    dim, hidden, classes = SIZES[size]
    X, y, rng = blobs(EXAMPLES, dim, classes, seed)
    return from_torch(network(dim, hidden, classes, rng), X, y, metric=None, test_fraction=HELD_OUT,
                      seed=seed, name=f"MLP-{size}")


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
