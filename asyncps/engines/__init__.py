"""Engines drive the one ParameterServer with the one worker loop."""
from .simulate import simulate
from .worker import Settings, worker_loop
