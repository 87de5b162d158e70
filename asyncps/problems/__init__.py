"""What is optimised. Every problem is a flat parameter vector with a loss and a gradient.

Synthetic (numpy, float64): Quadratic, LeastSquares, Logistic; MLP (torch, float64).
Real: `from_torch(model, X, y)` for any torch.nn.Module (float32), `Digits` (real images).
`weighted(problem, weights, workers, partition)`: each worker's gradient scaled by its weight.
"""
from .base import PARTITIONS, Problem
from .digits import Digits
from .mlp import MLP
from .synthetic import LeastSquares, Logistic, Quadratic
from .torch_model import TorchProblem, from_torch
from .weighted import WeightedProblem, weighted

from_functions = Problem.from_functions
