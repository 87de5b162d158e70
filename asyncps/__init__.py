"""asyncps: synchronous and asynchronous parameter servers, for teaching.

    import asyncps as aps
    prob = aps.problems.LeastSquares(n=512, dim=10, seed=0)
    run = aps.simulate(prob, workers=4, policy="async", lr=0.05, steps=300,
                       compute_times=[1, 1, 1, 4], seed=0)
    run.trace.pushes[-1].staleness
"""
try:
    import numpy as _numpy  # noqa: F401
except ModuleNotFoundError as _missing:     # not the project's Python: say what to run (check.py)
    from .check import wrong_python
    raise wrong_python(_missing) from None
from . import classroom, problems
from .core import (ALL_POLICIES, LR_SCHEDULES, POLICIES, Compute, Drop, Lost, ParameterServer, Pull, Push, Run,
                   RunConfig, Snapshot, Trace, Wait, load_run, violations)
from .core.events import Control
from .engines import ENGINES, compare, simulate, train
from .engines import live as _live
from .engines.live import LiveRun
from .problems import Problem
from .race import race
from .core import display as _display
from .core import hooks as _hooks


def _summary_html(run_or_trace):
    """How Jupyter draws a Run or Trace (core/display.py): the widgets layer's summary, imported
    on the first display, so `import asyncps` still needs no Jupyter."""
    from .widgets.summary import html
    return html(run_or_trace)


_display.register_html(_summary_html)


def _live_view(live, **options):
    """How Jupyter shows a LiveRun (engines/live.py): the widgets layer's LiveView, imported on the
    first display, since an engine never imports a widget."""
    from .widgets.live import LiveView
    return LiveView(live, **options)


_live.register_view(_live_view)


def _learner_traceback(err):
    """How IPython draws an error in or from a learner's hook (core/hooks.py): without the frames
    inside asyncps (asyncps/check.py)."""
    from .check import learner_traceback
    return learner_traceback(err)


_hooks.register_traceback(_learner_traceback)

__version__ = "0.1.0"


def __getattr__(name):
    """`aps.widgets`, `aps.plot` and `aps.check` (the self-check, asyncps/check.py) are imported on
    first use, so `import asyncps` needs no Jupyter and no matplotlib."""
    if name in ("widgets", "plot", "check"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'asyncps' has no attribute {name!r}")
__all__ = ["simulate", "train", "compare", "race", "load_run", "violations", "ENGINES", "Lost", "ParameterServer", "Snapshot", "Trace", "Run", "Pull", "Compute", "Push",
           "Wait", "Drop", "Control", "LiveRun", "Problem", "problems", "widgets", "plot", "classroom", "POLICIES", "ALL_POLICIES", "LR_SCHEDULES", "RunConfig"]
