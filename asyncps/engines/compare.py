"""`aps.compare`: the same settings run under sync, async and ssp, side by side in the simulator.

The plain function behind the Playground widget (call it with fixed values first): it returns
{policy: Run} and a message for settings worth a remark (a run that diverged, one worker).
"""
from ..core.config import renamed_keywords
from ..core.policies import POLICIES
from ..problems.synthetic import LeastSquares
from .simulate import simulate


@renamed_keywords
def compare(problem=None, workers=4, policy="async", max_clocks_ahead=2, lr=0.05,
            lr_schedule="constant", straggler=1.0, partition="iid", push_every=1, steps=200, seed=0,
            jitter=0.0, comm_delay=0.0, momentum=0.0, batch_size=None):
    """Run sync, async and ssp with the same settings; the last worker is `straggler` times slower.

    `policy` is the one a view shows first; every policy is run."""
    problem = LeastSquares(n=512, dim=10, seed=0) if problem is None else problem
    times = [1.0] * (workers - 1) + [straggler] if isinstance(workers, int) and workers >= 1 else None
    runs, notes = {}, []
    threshold = {"ssp": max_clocks_ahead}                 # the SSP threshold is ssp's alone
    for name in POLICIES:
        runs[name] = simulate(problem, workers=workers, policy=name,
                              max_clocks_ahead=threshold.get(name), lr=lr,
                              lr_schedule=lr_schedule, steps=steps, compute_times=times,
                              partition=partition, push_every=push_every, seed=seed,
                              jitter=jitter, comm_delay=comm_delay, momentum=momentum,
                              batch_size=batch_size, progress=False)   # a view redraws: no bar
        if runs[name].diverged:
            notes.append(f"{name}: {runs[name].message}")
    if workers == 1:
        notes.append("with 1 worker there is nobody to be stale against: sync, async and ssp coincide")
    return runs, " · ".join(notes)
