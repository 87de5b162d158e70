"""Golden traces: a dozen varied simulator runs, recorded before a reorganisation, must stay
identical: every event exactly, and every loss, parameter history, final and local parameter to
1e-9 (relative). Not bit for bit: numpy's releases change the last bits of a sum or a dot
product (the order of their SIMD kernels: numpy 2.4.6 moved some by one unit in the last place),
which no change of ours made.

The recorded file is `tests/golden/traces.json`. It is written only by hand, on purpose:

    python tests/test_golden.py --write      # after a change that is *meant* to alter runs

Every case covers a different path of the server and the worker loop: each policy (ksync and
kasync added later, recorded when they were written), jitter, random_delay,
comm_delay, minibatches, non-IID shards, momentum, the lr schedules, Downpour's push_every and
fetch_every, local-only runs, learner hooks, loss_every, trace_limit, divergence.
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import asyncps as aps

GOLDEN = Path(__file__).parent / "golden" / "traces.json"


def _apply(params, version, grad, computed_on, lr):
    return params - lr * grad, version + 1, version - computed_on


def _average(grads, workers):
    return None if len(grads) < workers else sum(grads.values()) / workers


def _gate(clock, clocks, bound):
    return clock - min(clocks) <= bound


def _rate(lr, staleness):
    return lr / (1.0 + 0.5 * staleness)


def cases():
    quad = aps.problems.Quadratic(curvature=[1.0, 0.3], x0=[1.0, -2.0])
    lsq = aps.problems.LeastSquares(n=256, dim=6, seed=1)
    logistic = aps.problems.Logistic(n=256, dim=5, seed=2)
    mlp = aps.problems.MLP(n=256, dim=6, hidden=8, classes=4, seed=3)
    return {
        "async-straggler-quadratic": (quad, dict(workers=4, policy="async", lr=0.2, steps=40,
                                                 compute_times=[1, 1, 1, 4])),
        "sync-jitter": (lsq, dict(workers=4, policy="sync", lr=0.05, steps=25, jitter=0.5, seed=4)),
        "ssp1-jitter": (lsq, dict(workers=4, policy="ssp", max_clocks_ahead=1, lr=0.05, steps=60,
                                  jitter=1.0, seed=5)),
        "ssp0-comm-delay": (lsq, dict(workers=3, policy="ssp", max_clocks_ahead=0, lr=0.05, steps=30,
                                      compute_times=[1, 2, 3], comm_delay=0.25)),
        "async-minibatch": (logistic, dict(workers=3, policy="async", lr=0.3, steps=50,
                                           batch_size=16, seed=3, jitter=0.3)),
        "async-non-iid-mlp": (mlp, dict(workers=4, policy="async", lr=0.2, steps=40,
                                        partition="by_label", batch_size=8, seed=1)),
        "async-momentum-sorted": (lsq, dict(workers=3, policy="async", lr=0.02, momentum=0.9,
                                            steps=50, partition="sorted", compute_times=[1, 1.5, 3])),
        "sync-momentum": (lsq, dict(workers=2, policy="sync", lr=0.05, momentum=0.5, steps=20)),
        "async-staleness-lr": (quad, dict(workers=4, policy="async", lr=0.6, steps=40,
                                          lr_schedule="divide_by_staleness", compute_times=[1, 1, 1, 3])),
        "downpour": (lsq, dict(workers=3, policy="async", lr=0.03, steps=30, push_every=3,
                               fetch_every=2, batch_size=32, seed=7, jitter=0.2)),
        "local-only": (lsq, dict(workers=3, policy="async", lr=0.05, steps=20, push_every=None,
                                 partition="sorted")),
        "sync-push-every": (lsq, dict(workers=3, policy="sync", lr=0.05, steps=15, push_every=2)),
        "hooks-async": (lsq, dict(workers=3, policy="async", lr=0.05, steps=30,
                                  compute_times=[1, 2, 3], apply=_apply)),
        "hooks-sync": (lsq, dict(workers=3, policy="sync", lr=0.05, steps=10, average=_average,
                                 compute_times=[1, 2, 3])),
        "hooks-ssp-rate": (lsq, dict(workers=3, policy="ssp", max_clocks_ahead=1, lr=0.05, steps=30,
                                     compute_times=[1, 2, 5], gate=_gate, lr_schedule=_rate)),
        "loss-every-limit": (lsq, dict(workers=4, policy="async", lr=0.05, steps=80, loss_every=3,
                                       trace_limit=50, jitter=0.4)),
        "diverges": (quad, dict(workers=4, policy="async", lr=1.9, steps=400)),
        "ksync-drops-random-delay": (lsq, dict(workers=4, policy="ksync", wait_for=3, lr=0.05,
                                               steps=30, compute_times=[0.5, 0.5, 0.5, 1.5],
                                               random_delay=0.5, seed=6)),
        "kasync-minibatch": (logistic, dict(workers=4, policy="kasync", wait_for=2, lr=0.3, steps=30,
                                            batch_size=16, compute_times=[1, 1, 2, 3], seed=8)),
    }


FLOATS = ("losses", "params", "worker_params", "history")     # compared to 1e-9; the rest exactly


def _floats(values):
    return [repr(float(x)) for x in np.asarray(values, dtype=float).ravel()]


def record(problem, kwargs):
    run = aps.simulate(problem, **kwargs)
    trace = run.trace
    return {"events": [repr(e) for e in trace.events],
            "losses": _floats(trace.losses),
            "params": _floats(run.params),
            "worker_params": [_floats(p) for p in run.worker_params],
            "history": [_floats(p) for p in trace.params],
            "beyond": json.loads(json.dumps(trace.beyond)),
            "diverged": run.diverged, "message": run.message}


@pytest.fixture(scope="module")
def golden():
    return json.loads(GOLDEN.read_text())


def test_the_golden_file_covers_every_case(golden):
    assert sorted(golden) == sorted(cases())
    assert any(g["diverged"] for g in golden.values()), "the divergence case must still diverge"
    assert all(len(g["events"]) > 20 for g in golden.values())


@pytest.mark.parametrize("name", sorted(cases()))
def test_a_simulated_run_is_identical_to_its_golden_trace(name, golden):
    problem, kwargs = cases()[name]
    now, then = record(problem, kwargs), golden[name]
    for key in then:
        if key in FLOATS:
            assert len(now[key]) == len(then[key]), f"{name}: {key} differs in length"
            np.testing.assert_allclose(np.array(now[key], dtype=float), np.array(then[key], dtype=float),
                                       rtol=1e-9, atol=1e-12, err_msg=f"{name}: {key}")
        else:
            assert now[key] == then[key], f"{name}: {key} differs from the golden trace"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_golden.py --write   (re-records the golden traces)")
    data = {name: record(problem, kwargs) for name, (problem, kwargs) in cases().items()}
    GOLDEN.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    print(f"wrote {len(data)} golden traces to {GOLDEN} "
          f"({sum(len(d['events']) for d in data.values())} events)")
