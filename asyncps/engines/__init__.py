"""Engines drive the one ParameterServer with the one worker loop."""
from .compare import compare
from .simulate import simulate
from .train import ENGINES, train
from .worker import worker_loop
