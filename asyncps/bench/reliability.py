"""Reliability under load and long runs, measured (`make reliability` runs scripts/reliability.py).

load   many workers on a 2-core machine (threads 64, processes 16), every policy: finishes, keeps
       every invariant, and its peak memory grows by about one parameter copy per worker
soak   a long async run with a constant gradient: no update lost (exact final value), memory flat
       after warm-up, the trace bounded (`trace_limit`)
scripts/reliability.py prints the table and writes docs/reliability.md (it also runs the fault
tests, which live in the repository, not in the installed package); the tests run the same
functions, smaller.
"""
import threading
import time

import numpy as np
import psutil

from ..core.invariants import violations
from ..engines.train import train
from ..problems.base import Problem
from ..problems.synthetic import LeastSquares


def constant_problem(dim=64):
    """loss = sum(x), gradient = 1 everywhere: after P pushes at lr 2^-10 the answer is exact."""
    return Problem.from_functions(lambda x: float(np.sum(x)), lambda x: np.ones_like(x), np.zeros(dim),
                                  name="constant")


class Memory:
    """Samples the resident memory of this process and its children while a run goes on."""

    def __init__(self, every=0.05):
        self.every, self.samples, self._stop = every, [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def rss():
        """This process's resident memory plus its children's *unique* memory (USS): summing their
        RSS would count the torch libraries they share with the fork server once per child."""
        me = psutil.Process()
        total = me.memory_info().rss
        for child in me.children(recursive=True):
            try:
                total += child.memory_full_info().uss
            except psutil.Error:
                pass
        return total

    def _run(self):
        while not self._stop.is_set():
            self.samples.append((time.perf_counter(), self.rss()))
            self._stop.wait(self.every)

    def __enter__(self):
        self.before = self.rss()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @property
    def peak_growth(self):
        return max((r for _, r in self.samples), default=self.before) - self.before

    def growth_after_warmup(self, warmup=0.3):
        """Relative growth from the end of the first `warmup` share of samples to the end."""
        rss = [r for _, r in self.samples]
        if len(rss) < 5:
            return 0.0
        start = rss[int(len(rss) * warmup)]
        return (np.median(rss[-3:]) - start) / start


def load(engine, workers, policy, steps=300, dim=2000):
    prob = LeastSquares(n=max(2 * workers, 512), dim=dim, seed=0)
    start = time.perf_counter()
    with Memory() as memory:
        run = train(prob, workers=workers, policy=policy, max_clocks_ahead=1 if policy == "ssp" else None,
                    lr=1e-4, steps=steps, engine=engine, timeout=60, loss_every=10)
    copy = prob.dim * 8
    return {"engine": engine, "workers": workers, "policy": policy, "versions": len(run.losses) - 1,
            "per_worker_mb": memory.peak_growth / 2 ** 20 / workers,
            "violations": violations(run.trace), "seconds": time.perf_counter() - start,
            "peak_growth_mb": memory.peak_growth / 2 ** 20,
            "one_copy_per_worker_mb": workers * copy / 2 ** 20}


def soak(engine, pushes, workers=4):
    prob = constant_problem()
    lr = 2.0 ** -10
    start = time.perf_counter()
    with Memory(every=0.1) as memory:
        run = train(prob, workers=workers, policy="async", lr=lr, steps=pushes, engine=engine,
                    loss_every=max(1, pushes // 100), trace_limit=2000, timeout=60)
    made = int(run.trace.pushes_per_worker().sum())
    expected = -lr * made
    return {"engine": engine, "pushes": made, "lost": int(round((run.params - expected).max() / lr)),
            "exact": bool(np.all(run.params == expected)), "events_kept": len(run.trace.events),
            "events_beyond": run.trace.beyond.get("events", 0),
            "growth_after_warmup": memory.growth_after_warmup(), "seconds": time.perf_counter() - start}
