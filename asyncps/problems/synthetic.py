"""Built-in problems with analytic gradients. Data is generated from a seed, never downloaded."""
import numpy as np

from ..core import checks
from .base import Problem


class Quadratic(Problem):
    """f(x) = ½ Σ cᵢ xᵢ², gradient cᵢ xᵢ (exact; `noise` adds seeded Gaussian noise)."""
    name = "Quadratic"

    def __init__(self, curvature=(1.0,), x0=None, noise=0.0):
        self.curvature = checks.vector("curvature", curvature, minimum=0.0)
        super().__init__(np.ones_like(self.curvature) if x0 is None else x0)
        if self.x0.size != self.curvature.size:
            raise ValueError(f"x0 has {self.x0.size} entries and curvature {self.curvature.size}: "
                             f"x0 must have one entry per curvature")
        self.noise = checks.real("noise", noise, minimum=0.0)

    def loss(self, params):
        return 0.5 * float(np.dot(self.curvature, params * params))

    def gradient(self, params, indices=None, rng=None):
        g = self.curvature * params
        if self.noise:
            g = g + self.noise * rng.standard_normal(g.shape)
        return g


class LeastSquares(Problem):
    """f(w) = ½ mean((A w − b)²) on n synthetic examples of dimension `dim`."""
    name = "LeastSquares"

    def __init__(self, n=512, dim=10, noise=0.1, seed=0):
        self.n = checks.integer("n", n, minimum=1)
        dim = checks.integer("dim", dim, minimum=1)
        noise = checks.real("noise", noise, minimum=0.0)
        rng = np.random.default_rng([checks.integer("seed", seed, minimum=0), 1])
        self.A = rng.standard_normal((self.n, dim))
        self.w_true = rng.standard_normal(dim)
        self.b = self.A @ self.w_true + noise * rng.standard_normal(self.n)
        self.A.flags.writeable = self.b.flags.writeable = False   # the loss keeps statistics of them
        super().__init__(np.zeros(dim))

    def loss(self, params):
        """½ mean((A w − b)²). With fewer dimensions than examples, from AᵀA, Aᵀb and bᵀb (a cost
        independent of n): ½ (wᵀAᵀA w − 2 wᵀAᵀb + bᵀb) / n, within ~1e-13 (relative) of the
        direct sum where the loss is not near 0; never below 0."""
        if not isinstance(params, np.ndarray) or params.ndim != 1 or params.size >= self.n:
            r = self.A @ params - self.b
            return 0.5 * float(np.add.reduce(r * r) / r.size)  # np.mean's sum and division
        gram, twice_atb, btb = self.statistics()
        return max(0.0, 0.5 * (float(params.dot(gram.dot(params) - twice_atb)) + btb) / self.n)

    def statistics(self):
        """(AᵀA, 2Aᵀb, bᵀb), computed once for these A and b (again if either is replaced)."""
        kept = self.__dict__.get("_statistics")
        if kept is None or kept[0] is not self.A or kept[1] is not self.b:
            kept = self._statistics = (self.A, self.b, (self.A.T @ self.A, 2.0 * (self.A.T @ self.b),
                                                       float(self.b @ self.b)))
        return kept[2]

    def gradient(self, params, indices=None, rng=None):
        A, b = self.rows(indices, self.A, self.b)
        return A.T @ (A @ params - b) / len(b)

    def sort_key(self):
        return self.b


class Logistic(Problem):
    """Logistic regression: mean log-loss of labels y ∈ {0, 1} on n synthetic examples."""
    name = "Logistic"

    def __init__(self, n=512, dim=10, seed=0):
        self.n = checks.integer("n", n, minimum=1)
        dim = checks.integer("dim", dim, minimum=1)
        rng = np.random.default_rng([checks.integer("seed", seed, minimum=0), 2])
        self.X = rng.standard_normal((self.n, dim))
        self.w_true = 2.0 * rng.standard_normal(dim)
        p = 1.0 / (1.0 + np.exp(-self.X @ self.w_true))
        self.labels = (rng.random(self.n) < p).astype(int)
        self.X.flags.writeable = self.labels.flags.writeable = False   # rows() keeps a shard's rows
        super().__init__(np.zeros(dim))

    def loss(self, params):
        z = self.X @ params
        terms = np.logaddexp(0.0, z) - self.labels * z
        return float(np.add.reduce(terms) / terms.size)         # np.mean's sum and division, bit for bit

    def gradient(self, params, indices=None, rng=None):
        X, y = self.rows(indices, self.X, self.labels)
        p = 0.5 * (1.0 + np.tanh(0.5 * (X @ params)))      # sigmoid, without overflow
        return X.T @ (p - y) / len(y)
