"""Hogwild (Recht et al. 2011) as PyTorch users write it: the pytorch/examples mnist_hogwild pattern.

The model's parameters go to shared memory (`model.share_memory()`); N `torch.multiprocessing`
processes, one torch thread each, run `optimizer.zero_grad(); loss.backward(); optimizer.step()`
with a plain `torch.optim.SGD(model.parameters(), lr)` on their own minibatches, all writing to
the same parameters without any lock. No server, no versions, no trace: the fastest thing a
parameter server can be compared with on one machine.

It trains exactly what the asyncps engines train: the problem's own `nn.Module` (a copy,
started from `problem.x0`), its training data and dtype, the same iid shards
(`problem.shards(workers, "iid", seed)`) and minibatch size. Children come from asyncps's fork
server (`procs.Children`), so nothing is left behind on any ending. Updates per second count all
processes together, from the first process's first step to the last one's last (startup and
imports excluded, like `workloads.rate` for an asyncps run).
"""
import copy
import time

import numpy as np

from ..engines import procs
from .workloads import BATCH


def _worker(k, model, X, y, shard, total, counts, lr, batch_size, seed, loss, conn):
    try:
        procs.child_setup()                              # Ctrl-C to the parent, one torch thread
        import torch

        loss = torch.nn.functional.cross_entropy if loss is None else loss
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        rng = np.random.default_rng([seed, k, 0])       # worker k's minibatch stream, as in asyncps
        done = counts.numpy()                            # shared: every process's update count
        conn.send(("ready",))
        conn.recv()                                      # every process starts together
        start = time.perf_counter()
        while done.sum() < total:
            idx = torch.from_numpy(np.sort(rng.choice(shard, size=batch_size, replace=False)))
            optimizer.zero_grad()
            loss(model(X[idx]), y[idx]).backward()
            optimizer.step()                             # in place, in shared memory, no lock
            done[k] += 1
        conn.send(("done", start, time.perf_counter()))
    except BaseException as err:                        # noqa: BLE001 - sent to the parent
        procs.send_error(conn, err)


def train_hogwild(problem, workers, steps, lr=0.01, batch_size=BATCH, seed=0, loss=None, timeout=120.0):
    """Hogwild on `problem` (a `from_torch` problem: it has `.model`, `.X`, `.y`) until `steps`
    updates are made by all `workers` processes together.

    Returns {"rate": updates per second, "updates", "workers", "params": the final flat vector}.
    `loss(outputs, targets)` defaults to cross-entropy, the loss of the benchmark's problems.
    """
    import torch
    from torch.nn.utils import parameters_to_vector, vector_to_parameters

    if not hasattr(problem, "model"):
        raise TypeError(f"Hogwild needs a torch problem (aps.problems.from_torch or Digits), "
                        f"not {problem!r:.60}")
    if not all(p.is_leaf for p in problem.model.parameters()):
        raise ValueError(f"{problem!r:.60}'s model does not hold its own parameters (they are views "
                         f"into another tensor): build the problem again for Hogwild")
    model = copy.deepcopy(problem.model)
    with torch.no_grad():
        vector_to_parameters(torch.from_numpy(problem.x0.copy()), model.parameters())
    model.share_memory()                                 # gradients stay private (made lazily)
    X = torch.from_numpy(problem.X).share_memory_()
    y = torch.from_numpy(problem.y).share_memory_()
    shards = problem.shards(workers, "iid", seed)
    counts = torch.zeros(workers, dtype=torch.int64).share_memory_()
    with procs.Children() as children:                   # nothing left behind, on any ending
        for k in range(workers):
            children.start(_worker, f"hogwild-{k}", k, model, X, y, shards[k], steps, counts, lr,
                           batch_size, seed, loss)
        _expect(children, "ready", timeout)
        for conn in children.conns:
            conn.send("go")
        spans = _expect(children, "done", timeout)
        children.ok = True
    updates = int(counts.sum())
    first, last = min(s for s, _ in spans), max(e for _, e in spans)
    with torch.no_grad():
        params = parameters_to_vector(model.parameters()).numpy().copy()
    return {"rate": updates / max(last - first, 1e-9), "updates": updates, "workers": workers,
            "params": params}


def hogwild(problem, workers, steps, lr=0.01, batch_size=BATCH, seed=0):
    """Updates per second of Hogwild with `workers` processes (`steps` updates in all)."""
    return train_hogwild(problem, workers, steps, lr=lr, batch_size=batch_size, seed=seed)["rate"]


def _expect(children, kind, timeout):
    """Wait for `kind` from every child; returns their messages' arguments, in worker order."""
    got, deadline = {}, time.monotonic() + timeout
    while len(got) < len(children.procs):
        for k, message in children.receive([k for k in range(len(children.procs)) if k not in got]):
            if message is None:
                raise RuntimeError(f"Hogwild process {k} {children.exit_reason(k)}")
            if message[0] == "error":
                raise procs.remote_error(f"Hogwild process {k}", message[1], message[2])
            got[k] = tuple(message[1:])
        if time.monotonic() > deadline:
            raise TimeoutError(f"Hogwild processes {sorted(set(range(len(children.procs))) - set(got))} "
                               f"did not say {kind!r} within {timeout:g} s")
    return [got[k] for k in range(len(children.procs))]
