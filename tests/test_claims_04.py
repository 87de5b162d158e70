"""What notebook 04 (Stale Synchronous Parallel) teaches, checked on the simulator it teaches with.

- any push is at most (N - 1)(2s + 1) versions stale, and that bound is reached;
- a push by the worker that was the slowest when it pulled is at most (N - 1)(s + 1) stale: 3(s + 1)
  for the always-slow straggler of four workers, and that smaller bound does *not* hold for every push;
- with random compute times the fastest threshold changes from seed to seed;
- some upward jumps of the loss come from fresh pushes (whole-shard gradients are not the full one).
"""
import numpy as np
import pytest

import asyncps as aps

PROBLEM = aps.problems.LeastSquares(n=512, dim=10, seed=0)


def ssp(workers, s, jitter=0.0, seed=0, steps=150, compute_times=None, lr=0.05):
    times = compute_times or [1.0] * (workers - 1) + [3.0]
    return aps.simulate(PROBLEM, workers=workers, policy="ssp", max_clocks_ahead=s, lr=lr, steps=steps,
                        compute_times=times, jitter=jitter, seed=seed)


def pushes_with_pull_clocks(trace):
    """(push, the pushing worker's clock at its pull, the slowest clock then) for every push."""
    clocks, at_pull, out = [0] * trace.workers, {}, []
    for event in trace.events:
        if event.kind == "pull":
            at_pull[event.worker] = (clocks[event.worker], min(clocks))
        elif event.kind == "push":
            out.append((event, *at_pull[event.worker]))
            clocks[event.worker] += 1
    return out


@pytest.mark.parametrize("workers", [2, 3, 4, 6])
def test_no_push_is_staler_than_n_minus_1_times_2s_plus_1(workers):
    reached = False
    for s in (0, 1, 2):
        bound = (workers - 1) * (2 * s + 1)
        for jitter in (0.0, 0.5, 1.0, 2.0):
            for seed in ((0, 1, 2) if jitter else (0,)):
                worst = max(p.staleness for p in ssp(workers, s, jitter, seed).trace.pushes)
                assert worst <= bound, f"N={workers} s={s} jitter={jitter} seed={seed}: {worst} > {bound}"
                reached |= worst == bound
    assert reached, f"N={workers}: the bound was never reached, so the notebook's 'tight' is wrong"


@pytest.mark.parametrize("s", [0, 1, 2, 4, 8])
def test_the_straggler_of_four_stays_within_3_s_plus_1(s):
    run = ssp(4, s, compute_times=[1.0, 1.0, 1.0, 3.0], steps=200)
    slow = [p.staleness for p in run.trace.pushes if p.worker == 3]
    assert slow and max(slow) <= 3 * (s + 1)
    # and the same in the notebook's setting, worker 3 four times slower
    run = ssp(4, s, compute_times=[1.0, 1.0, 1.0, 4.0], steps=200, lr=0.2)
    slow = [p.staleness for p in run.trace.pushes if p.worker == 3]
    assert max(slow) <= 3 * (s + 1)
    assert slow[-1] == 3                   # steady state: one push by each fast worker per slow one


def test_3_s_plus_1_is_not_a_bound_on_every_push():
    worst = max(max(p.staleness for p in ssp(4, 1, jitter=1.0, seed=seed).trace.pushes) for seed in range(3))
    assert worst > 3 * (1 + 1)


@pytest.mark.parametrize("workers", [3, 4, 6])
def test_a_push_by_the_slowest_at_its_pull_is_within_n_minus_1_times_s_plus_1(workers):
    for s in (0, 1, 2):
        for seed in range(3):
            seen = 0
            for push, clock, slowest in pushes_with_pull_clocks(ssp(workers, s, jitter=1.0, seed=seed).trace):
                assert clock - slowest <= s                          # the gate held at the pull
                if clock == slowest:
                    seen += 1
                    assert push.staleness <= (workers - 1) * (s + 1), (workers, s, seed, push)
            assert seen


def test_the_fastest_threshold_changes_from_seed_to_seed():
    labels = {f"ssp s={s}": dict(policy="ssp", max_clocks_ahead=s) for s in (0, 1, 2, 4, 8)}
    labels["async"] = dict(policy="async")
    winners = set()
    for seed in range(10):
        times = {label: aps.simulate(PROBLEM, workers=4, lr=0.2, steps=200, jitter=1.0, seed=seed,
                                     **kw).time_to_reach(0.006) for label, kw in labels.items()}
        assert None not in times.values()
        winners.add(min(times, key=times.get))
    assert len(winners) >= 3, winners


def upward_jumps(run):
    made_by = {p.applied_to + 1: p for p in run.trace.pushes}
    losses = np.array(run.losses)
    return [made_by[v].staleness for v in range(1, len(losses)) if losses[v] > losses[v - 1]]


@pytest.mark.parametrize("kw", [dict(policy="ssp", max_clocks_ahead=1, steps=62),
                                dict(policy="async", steps=104)])
def test_some_upward_jumps_come_from_fresh_pushes(kw):
    stalenesses = upward_jumps(aps.simulate(PROBLEM, workers=4, lr=0.3, jitter=1.0, **kw))
    fresh = sum(s == 0 for s in stalenesses)
    assert 0 < fresh < len(stalenesses) - fresh       # fresh pushes raise it too, stale ones more often


def test_the_largest_jump_is_a_stale_push():
    run = aps.simulate(PROBLEM, workers=4, policy="async", lr=0.3, jitter=1.0, steps=104)
    losses = np.array(run.losses)
    v = int(np.argmax(losses[1:] / losses[:-1])) + 1
    assert next(p for p in run.trace.pushes if p.applied_to == v - 1).staleness > 0
