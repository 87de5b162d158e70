"""A small torch MLP on a synthetic classification set (Gaussian blobs, one per class).

The parameters are one flat numpy vector, like every other problem, so the
server stays numpy-only; torch computes the loss and the gradient, on the CPU
or on a GPU (`on_device("cuda:0")`). torch is imported when an MLP is made,
not when asyncps is imported.
"""
import copy

import numpy as np

from ..core import checks
from .base import Problem


class MLP(Problem):
    """One hidden layer (tanh) MLP with softmax cross-entropy: dim → hidden → classes."""
    name = "MLP"
    device = "cpu"

    def __init__(self, n=1024, dim=16, hidden=32, classes=4, seed=0):
        import torch  # noqa: F401  (fails here, with torch's message, if torch is missing)

        self.n = checks.integer("n", n, minimum=1)
        self.shapes = [(checks.integer("dim", dim, minimum=1), checks.integer("hidden", hidden, minimum=1)),
                       (hidden,), (hidden, checks.integer("classes", classes, minimum=2)), (classes,)]
        rng = np.random.default_rng([checks.integer("seed", seed, minimum=0), 3])
        centres = 2.0 * rng.standard_normal((classes, dim))
        self.labels = rng.integers(0, classes, self.n)
        self.X = centres[self.labels] + rng.standard_normal((self.n, dim))
        x0 = np.concatenate([rng.standard_normal(dim * hidden) / np.sqrt(dim), np.zeros(hidden),
                             rng.standard_normal(hidden * classes) / np.sqrt(hidden), np.zeros(classes)])
        super().__init__(x0)
        self._tensors = None

    def on_device(self, device):
        moved = copy.copy(self)
        moved.device, moved._tensors = str(device), None
        return moved

    def __getstate__(self):                     # the torch tensors are rebuilt where it is unpickled
        return {**self.__dict__, "_tensors": None}

    def _data(self):
        import torch

        if self._tensors is None:
            self._tensors = (torch.from_numpy(self.X).to(self.device),
                             torch.from_numpy(self.labels).to(self.device))
        return self._tensors

    def _forward(self, params, indices):
        import torch

        X, y = self._data()
        if indices is not None:
            idx = torch.tensor(np.asarray(indices), device=self.device)   # a copy: shards are read-only
            X, y = X[idx], y[idx]
        flat = np.ascontiguousarray(params, dtype=float)        # no copy when it already is
        flat = torch.from_numpy(flat).to(self.device).requires_grad_(True)
        parts = torch.split(flat, [int(np.prod(s)) for s in self.shapes])
        W1, b1, W2, b2 = (part.view(shape) for part, shape in zip(parts, self.shapes))
        logits = torch.tanh(X @ W1 + b1) @ W2 + b2
        return flat, torch.nn.functional.cross_entropy(logits, y)

    def loss(self, params):
        import torch

        with torch.no_grad():
            return float(self._forward(params, None)[1])

    def gradient(self, params, indices=None, rng=None):
        flat, loss = self._forward(params, indices)
        loss.backward()
        return flat.grad.cpu().numpy()          # the gradient travels to the server's device (CPU)

    def accuracy(self, params):
        """Fraction of examples classified right (numpy only)."""
        sizes = np.cumsum([np.prod(s) for s in self.shapes])[:-1]
        W1, b1, W2, b2 = (part.reshape(shape) for part, shape in
                          zip(np.split(np.asarray(params, dtype=float), sizes), self.shapes))
        logits = np.tanh(self.X @ W1 + b1) @ W2 + b2
        return float(np.mean(np.argmax(logits, axis=1) == self.labels))
