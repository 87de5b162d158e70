"""The deterministic simulator: every worker loop driven by one virtual clock.

Worker k needs `compute_times[k]` time units per gradient (times a seeded
lognormal factor when `jitter` > 0, plus a seeded exponential time of mean
`random_delay` when it is > 0: the shifted-exponential model of Dutta et al.
2018); parameters and gradients each take `comm_delay` to travel. Events at the same instant run in a fixed order.

Determinism contract: `simulate` is a pure function of its arguments. The
same arguments give the same trace and losses, bit for bit; randomness comes
only from `seed` (one numpy Generator per worker and purpose), never from
global state.
"""
import heapq

import numpy as np

from ..core.config import configure
from .entry import Progress, signature
from .worker import COMPUTE, GATE, SEND, one_torch_thread, prepare, worker_loop, worker_rng


def simulate(problem, *, progress=None, **arguments):
    """Run a parameter server in virtual time and return its Run (trace, losses, params).

    `steps` counts server versions after v0 (with push_every=None: local steps per worker).
    `max_clocks_ahead`: the SSP threshold (policy="ssp"). `apply`, `average`, `gate`: a
    learner's own push, sync round or SSP gate (asyncps.core.hooks). Every argument is a field of
    `asyncps.core.RunConfig`, except `progress` (None: a bar when the run takes over 2 s; True,
    False), which only changes what you see.
    """
    config = configure("simulate", arguments)
    server, shards = prepare(problem, config)
    with Progress(progress, server, "simulate") as bar:
        return run_simulation(server, problem, shards, config, bar)


simulate.__signature__ = signature("simulate", before=("problem",), after=(("progress", None),))


def run_simulation(server, problem, shards, config, progress=None):
    """Drive every worker loop with one virtual clock until the server is done; `progress(version)`
    (optional) is told the server's version as it goes."""
    workers, times, jitter, comm_delay, seed = (config.workers, config.compute_times, config.jitter,
                                                config.comm_delay, config.seed)
    random_delay = config.random_delay
    rounds = config.policy.wait_for is not None       # ksync, kasync: a gate opens with a version
    now = 0.0
    clock = lambda: now                                     # noqa: E731
    copies = [server.params.copy() for _ in range(workers)]   # each worker's local copy
    timing = [worker_rng(seed, k, 1) for k in range(workers)]
    loops = [worker_loop(k, server, problem, shards[k], config, worker_rng(seed, k, 0), clock,
                         copies)
             for k in range(workers)]
    queue, order, parked = [], 0, set()

    def wake(k, at):
        nonlocal order
        heapq.heappush(queue, (at, order, k))
        order += 1

    def advance(k):
        """Run worker k until it next needs time to pass or must wait."""
        for need in loops[k]:
            if need == COMPUTE:
                factor = float(timing[k].lognormal(0.0, jitter)) if jitter else 1.0
                extra = float(timing[k].exponential(random_delay)) if random_delay else 0.0
                return wake(k, now + float(times[k]) * factor + extra)
            if need == SEND and comm_delay:
                return wake(k, now + comm_delay)
            if need == GATE:
                return parked.add(k)

    for k in range(workers):
        wake(k, 0.0)
    with np.errstate(all="ignore"), one_torch_thread():
        server.errors_ignored = True                        # one thread: this errstate holds for all
        key = lambda: server.version if rounds else server.slowest    # noqa: E731
        opens = key()
        while queue and not server.done:
            now, _, k = heapq.heappop(queue)
            advance(k)
            if progress is not None:
                progress(server.version)
            if not parked or (config.gate is None and key() == opens and not server.done):
                continue                                    # a gate opens only when the slowest moves
            opens = key()                                   # (ksync, kasync: when a round closes)
            for j in sorted(parked):                        # a push may open the barrier / gate
                if server.may_start(j):
                    parked.discard(j)
                    if server.done:
                        advance(j)                          # record its wait; it then stops
                    else:
                        wake(j, now)
    server.errors_ignored = False
    if parked and not server.done:
        if config.gate is not None:
            raise ValueError(f"gate returned False for every waiting worker (clocks {server.clocks}, "
                             f"max_ahead {server.policy.max_ahead:g}): nobody may start, so nobody can push "
                             f"and the run can never go on. The slowest worker must always be "
                             f"allowed to start")
        raise RuntimeError(f"simulation stalled at v{server.version}: workers {sorted(parked)} wait "
                           f"and nobody can push (please report this as a bug)")
    return server.result(copies)
