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
    """Samples the resident memory of this process (and of its children, with `children=True`)
    while a run goes on, and how far the run is (`progress`: a callable giving the share of its
    steps done, 0 to 1). A run of the threads engine has no process of its own: children=False,
    or each sample would scan every process on the machine, and in a process whose worker threads
    hold the GIL each /proc read waits its turn (a loaded machine: 2 samples in 70 % of a run)."""

    def __init__(self, every=0.05, progress=None, children=True):
        self.every, self.samples, self._stop = every, [], threading.Event()
        self.progress, self.children = progress, children
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self):
        """This process's resident memory plus its children's *unique* memory (USS): summing their
        RSS would count the torch libraries they share with the fork server once per child.
        (USS is read from smaps, slowly: with four worker processes, a sample every ~0.4 s.)"""
        me = psutil.Process()
        total = me.memory_info().rss
        for child in me.children(recursive=True) if self.children else ():
            try:
                total += child.memory_full_info().uss
            except psutil.Error:
                pass
        return total

    def _run(self):
        while not self._stop.is_set():
            done = self.progress() if self.progress is not None else None
            self.samples.append((time.perf_counter(), self.rss(), done))
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
        return max((r for _, r, _ in self.samples), default=self.before) - self.before

    def growth_after_warmup(self, warmup=0.3):
        """Relative growth of memory while the run goes on, from the first sample after it made
        `warmup` of its steps to its last samples before it ended (median of 3). With `progress`
        unknown, the first `warmup` share of the samples counts as the warm-up instead — which
        on a loaded machine may still hold worker processes starting (their imports)."""
        if self.progress is None:
            rss = [r for _, r, _ in self.samples]
            rss = rss[int(len(rss) * warmup):]
        else:
            rss = [r for _, r, done in self.samples if warmup <= done < 1.0]
        if len(rss) < 5:
            raise ValueError(f"{len(rss)} memory samples while the run went on: too few to say how "
                             f"it grew; sample more often than every={self.every:g} s, or run longer")
        return (np.median(rss[-3:]) - rss[0]) / rss[0]


def load(engine, workers, policy, steps=300, dim=2000):
    prob = LeastSquares(n=max(2 * workers, 512), dim=dim, seed=0)
    start = time.perf_counter()
    with Memory(children=engine != "threads") as memory:
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
    live = train(prob, workers=workers, policy="async", lr=lr, steps=pushes, engine=engine,
                 loss_every=max(1, pushes // 100), trace_limit=2000, timeout=60, live=True,
                 progress=False)
    with Memory(every=0.01, progress=lambda: live.state["version"] / pushes,
                children=engine != "threads") as memory:
        run = live.result()
    made = int(run.trace.pushes_per_worker().sum())
    expected = -lr * made
    return {"engine": engine, "pushes": made, "lost": int(round((run.params - expected).max() / lr)),
            "exact": bool(np.all(run.params == expected)), "events_kept": len(run.trace.events),
            "events_beyond": run.trace.beyond.get("events", 0),
            "growth_after_warmup": memory.growth_after_warmup(), "seconds": time.perf_counter() - start}
