"""Engines drive the one ParameterServer with the one worker loop."""
from .simulate import simulate
from .train import ENGINES, train
from .worker import Settings, worker_loop
