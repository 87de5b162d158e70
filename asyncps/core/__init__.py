"""The core: numpy only. No threads, no Jupyter, no torch."""
from .policies import LR_SCHEDULES, POLICIES, Policy, UpdateRule, make_policy
from .server import ParameterServer, Snapshot
from .checkpoint import load_run, save_run
from .invariants import violations
from .trace import Compute, Lost, Pull, Push, Run, Trace, Wait
