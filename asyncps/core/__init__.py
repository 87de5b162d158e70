"""The core: numpy only. No threads, no Jupyter, no torch.

    semantics.py  pull, push, versions, the sync round, the SSP gate, clocks: the protocol
    policies.py   sync / async / ssp / ksync / kasync, the lr schedules, momentum
    server.py     ParameterServer: the protocol plus the trace, losses, divergence, checkpoints
    config.py     RunConfig: a run's arguments, checked once
    events.py, trace.py, tracefile.py, run.py   what a run records, and on disk
"""
from .config import RunConfig
from .events import Compute, Drop, Lost, Pull, Push, Wait
from .invariants import violations
from .policies import ALL_POLICIES, LR_SCHEDULES, POLICIES, Policy, make_policy
from .run import Run, load_run, save_run
from .semantics import Snapshot
from .server import ParameterServer
from .trace import Trace
