"""What is optimised. Every problem is a flat parameter vector with a loss and a gradient."""
from .base import PARTITIONS, Problem
from .mlp import MLP
from .synthetic import LeastSquares, Logistic, Quadratic

from_functions = Problem.from_functions
