"""The worker loop every engine runs: pull → compute → push.

A worker is a Python generator. It calls the server itself, and *yields* at
the three places where time passes or it may have to wait:

    GATE     it may not start yet (sync barrier or SSP gate): wait until server.may_start
    COMPUTE  it has computed a gradient: charge its compute time
    SEND     parameters or a gradient are on the wire: charge the communication delay

The engine decides what each means: the simulator advances a virtual clock,
the threads engine sleeps or waits on a condition variable. The loop itself is
the same everywhere, so every engine has one semantics.

Downpour options (Dean et al. 2012): the worker pushes the sum of its
gradients every `push_every` local steps and pulls every `fetch_every` steps
(default: right after each push), applying each gradient to its local copy in
between. `push_every=None` never pushes: each worker pulls v0 once and its
local copy drifts away from the others; the server never moves.

Every setting the loop reads (steps, lr, push_every, fetch_every, batch_size) comes from the run's
one RunConfig (asyncps/core/config.py), the same object the server was made from.
"""
import contextlib
import sys

import numpy as np

from ..core import checks
from ..core.server import DIVERGENCE_FACTOR, ParameterServer
from ..core.events import Compute, Wait
from ..problems.base import Problem

GATE, COMPUTE, SEND = "gate", "compute", "send"


def fetch_now(config, step):
    """Does the worker pull before local step `step`?"""
    every = config.fetch_every or config.push_every
    return step == 0 if every is None else step % every == 0


def pulls_with_each_push(config):
    """The plain async loop: push every step and pull right after, so one message can do both."""
    return not config.policy.waits and config.push_every == 1 and (config.fetch_every or 1) == 1


@contextlib.contextmanager
def one_torch_thread():
    """While several workers compute in this process, torch uses one thread (2 cores: torch's own
    thread pool fighting the workers made a run 10-20x slower). Restored afterwards; torch is
    not imported for a numpy problem."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def worker_rng(seed, worker, stream):
    """Each worker's own random streams (0: minibatches and noise, 1: timing), from the run's seed."""
    return np.random.default_rng([seed, worker, stream])


def prepare(problem, config, storage=None):
    """What every engine does first: check the problem against the run, split the data, make the server."""
    if not isinstance(problem, Problem):
        raise checks.bad("problem", problem, "an asyncps problem, e.g. aps.problems.Quadratic(...) "
                         "or aps.problems.from_functions(loss, grad, x0)", TypeError)
    shards = problem.shards(config.workers, config.partition, config.seed)
    check_shards(shards, config.batch_size, problem)
    server = ParameterServer(problem.x0, loss=problem.loss, storage=storage, problem=problem.name,
                             config=config, metrics=problem.metrics)
    return server, shards


def check_shards(shards, batch_size, problem):
    if batch_size is None:
        return
    if problem.n is None:
        raise ValueError(f"batch_size={batch_size} is not allowed for {problem.name}: it has no data "
                         f"to sample minibatches from; use batch_size=None")
    smallest = min(len(s) for s in shards)
    if batch_size > smallest:
        raise ValueError(f"batch_size={batch_size} is not allowed: the smallest shard has {smallest} "
                         f"examples, so batch_size must be <= {smallest} (or None for the whole shard)")


def _blew_up(local, grad, x0):
    """A non-finite gradient at huge (or non-finite) parameters is divergence, not a bug."""
    if checks.all_finite(grad):
        return False
    with np.errstate(all="ignore"):
        return not np.all(np.isfinite(local)) or np.abs(local).max() > DIVERGENCE_FACTOR * (
            1.0 + np.abs(x0).max())


def _finished(server, config, step):
    return server.done or (config.push_every is None and step >= config.steps)


def worker_loop(k, server, problem, shard, config, rng, clock, copies):
    """Worker k: pull → compute → push until the server has made `config.steps` versions.

    copies[k] always holds the worker's local copy of the parameters.
    """
    local, base = None, None
    total = np.zeros_like(server.params)        # gradients summed since the last push
    # a gradient checked below need not be checked again by a server in this process
    here = type(server) is ParameterServer
    step = 0
    while not _finished(server, config, step):
        if not server.may_start(k):              # the barrier (sync) or the SSP gate
            start = clock()
            yield GATE
            if clock() > start:                  # a gate that opened at the same instant cost nothing
                server.record(Wait(k, start, clock(), server.policy.wait_reason))
            if _finished(server, config, step):
                return
        if fetch_now(config, step):
            local, base = server.pull(k, clock())
            copies[k] = local
            if server.done:                      # the run ended while we asked
                return
            yield SEND                           # the parameters travel to the worker
        start = clock()
        batch = shard if config.batch_size is None else np.sort(
            rng.choice(shard, size=config.batch_size, replace=False))
        grad = problem.gradient(local, batch, rng)
        if not (isinstance(grad, np.ndarray) and grad.dtype == local.dtype and grad.shape == local.shape
                and checks.all_finite(grad)):             # the fast path checks in one pass
            if _blew_up(local, grad, problem.x0):
                server.stop(f"diverged: worker {k}'s local copy grew until its gradient overflowed; "
                            f"try a smaller lr than {config.lr:g}")
                return
            grad = checks.gradient(grad, local, source=f"{problem.name}'s gradient (worker {k})")
        yield COMPUTE
        server.record(Compute(k, start, clock(), base))
        step += 1
        pushing = config.push_every is not None and step % config.push_every == 0
        if pushing and config.push_every == 1 and fetch_now(config, step):
            # the plain loop: the gradient goes straight out and the copy is replaced next step
            yield SEND
            if server.done:
                return
            if here:
                server.push(k, grad, base, clock(), checked=True)
            else:
                server.push(k, grad, base, clock())
            continue
        local -= config.lr * grad              # the worker's own copy moves too
        total += grad
        if pushing:
            yield SEND                           # the gradient travels to the server
            if server.done:
                return
            server.push(k, total, base, clock())
            total[:] = 0.0
