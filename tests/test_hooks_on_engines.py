"""`aps.train` accepts every learner hook `simulate` accepts, on every real engine: the hook runs
inside the real server (the caller's process for threads and processes, rank 0 for rpc), and
what it does shows in the result. Hooks are defined inside the tests so that cloudpickle sends
them by value, as it does for hooks defined in a notebook cell."""
import numpy as np
import pytest
from engines import nothing_left_behind  # noqa: F401 (a fixture)

import asyncps as aps

pytestmark = pytest.mark.usefixtures("nothing_left_behind")
LSQ = aps.problems.LeastSquares(n=128, dim=4, seed=0)
REAL = ["threads", "processes", "rpc"]


@pytest.mark.parametrize("engine", REAL)
def test_an_apply_hook_decides_what_a_push_does(engine):
    def frozen(params, version, grad, computed_on, lr):      # counts versions, moves nothing
        return params, version + 1, version - computed_on

    run = aps.train(LSQ, workers=2, policy="async", lr=0.05, steps=20, engine=engine, apply=frozen)
    moved = aps.train(LSQ, workers=2, policy="async", lr=0.05, steps=20, engine=engine)
    assert len(run.losses) == 21 and np.array_equal(run.params, LSQ.x0)
    assert not np.array_equal(moved.params, LSQ.x0) and not aps.violations(run.trace)


@pytest.mark.parametrize("engine", REAL)
def test_an_average_hook_decides_what_a_round_does(engine):
    def nothing(grads, workers):                              # every round moves by zero
        return None if len(grads) < workers else np.zeros_like(grads[0])

    run = aps.train(LSQ, workers=2, policy="sync", lr=0.05, steps=10, engine=engine, average=nothing)
    assert len(run.trace.pushes) == 20 and not aps.violations(run.trace) and len(run.losses) == 11
    assert np.array_equal(run.params, LSQ.x0)
    with pytest.raises(ValueError, match="average returned an array of shape"):
        aps.train(LSQ, workers=2, policy="sync", steps=5, engine=engine,
                  average=lambda grads, workers: np.zeros(3))


@pytest.mark.parametrize("engine", REAL)
def test_a_gate_hook_decides_who_may_start(engine):
    def gate(clock, clocks, max_ahead):
        return clock - min(clocks) <= max_ahead

    run = aps.train(LSQ, workers=2, policy="ssp", max_clocks_ahead=0, lr=0.05, steps=20,
                    engine=engine, gate=gate, slowdown=[0.0, 0.005])
    assert not aps.violations(run.trace) and run.trace.waits        # the fast worker was held back
    with pytest.raises(TypeError, match="gate returned 'yes'"):
        aps.train(LSQ, workers=2, policy="ssp", max_clocks_ahead=1, steps=5, engine=engine,
                  gate=lambda clock, clocks, max_ahead: "yes")


@pytest.mark.parametrize("engine", REAL)
def test_a_wrong_apply_is_explained_from_any_engine(engine):
    with pytest.raises(ValueError, match=r"must make v1"):
        aps.train(LSQ, workers=2, steps=5, engine=engine,
                  apply=lambda params, version, grad, computed_on, lr: (params, version, 0))
