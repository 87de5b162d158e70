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


def remembering_apply(seen):
    """Delay compensation's shape: a push rule that keeps every version's parameters and uses the
    ones the gradient was computed on. It refuses a version out of order or one it never saw, so
    a hook that missed a push (or ran in two processes) fails the run; `seen` gets each call."""
    kept = {0: LSQ.x0.copy()}

    def apply(params, version, grad, computed_on, lr):
        if version not in kept or computed_on not in kept or version + 1 in kept:
            raise AssertionError(f"push on v{version} (computed on v{computed_on}) out of order: "
                                 f"kept {sorted(kept)[-3:]}")
        params -= lr * (grad + 0.1 * (params - kept[computed_on]))
        kept[version + 1] = params.copy()
        seen.append((version, computed_on))
        return params, version + 1, version - computed_on
    return apply


@pytest.mark.parametrize("engine", REAL)
@pytest.mark.parametrize("policy", ["async", "ssp"])
def test_a_hook_that_keeps_state_sees_every_push_in_order(engine, policy):
    """It runs in one process, the server's (the parent on threads and processes: the processes
    engine serves such a run from the parent instead of running it in shared memory)."""
    seen = []
    # every worker sleeps per gradient (threads: it lets go of the GIL), the last three times as
    # long as the first: its pushes land stale even on a loaded machine
    run = aps.train(LSQ, workers=3, policy=policy, lr=0.05, steps=60, engine=engine,
                    apply=remembering_apply(seen), slowdown=[0.002, 0.004, 0.006])
    assert not aps.violations(run.trace) and len(run.trace.pushes) == 60
    assert max(p.staleness for p in run.trace.pushes) > 0       # stale pushes were compensated
    if engine != "rpc":                          # rpc runs it on rank 0: the hook's own check
        assert seen == [(p.applied_to, p.computed_on) for p in run.trace.pushes]
