"""A problem whose gradient on worker k's shard is scaled by `weights[k]`.

    fair = aps.problems.weighted(problem, weights=[1, 1, 1, 4], workers=4, partition="sorted")

With non-IID shards and a straggler, an asynchronous server hears the fast workers' shards more
often than the straggler's, so it settles where the fast workers' data pull it (a biased point).
Weighting each push by how rarely its worker pushes (weight ∝ its time per gradient) gives every
shard the same say per unit of time again. The shards are the ones the run will use: the same
`workers`, `partition` and `seed` as the run's.
"""
import numpy as np

from ..core import checks
from .base import Problem


class WeightedProblem(Problem):
    def __init__(self, base, weights, workers, partition="iid", seed=0):
        if not isinstance(base, Problem) or base.n is None:
            raise checks.bad("problem", base, "an asyncps problem with data (n examples) to shard",
                             TypeError)
        super().__init__(base.x0)
        self.base, self.n, self.labels = base, base.n, base.labels
        self.weights = checks.vector("weights", weights, length=workers, minimum=0.0, positive=True)
        self.owner = np.empty(base.n, dtype=int)
        for k, shard in enumerate(base.shards(workers, partition, seed)):
            self.owner[shard] = k
        self.built_for = f"workers={workers}, partition={partition!r}, seed={seed}"
        self.name = f"{base.name}, weighted"

    def loss(self, params):
        return self.base.loss(params)

    def sort_key(self):
        return self.base.sort_key()

    def gradient(self, params, indices=None, rng=None):
        """The base gradient on `indices` (one worker's shard or a minibatch of it), weighted."""
        if indices is None:
            raise ValueError(f"{self.name} needs each worker's example indices (its shard); "
                             f"it got indices=None")
        owners = self.owner[indices]
        if owners.min() != owners.max():
            raise ValueError(
                f"{self.name}: a gradient's examples belong to several of the shards it was built "
                f"for ({self.built_for}), so the run splits the data differently. Build it with "
                f"the run's workers, partition and seed: IID shards change with the seed.")
        return self.weights[owners[0]] * self.base.gradient(params, indices, rng)


def weighted(problem, weights, workers, partition="iid", seed=0):
    return WeightedProblem(problem, weights, workers, partition, seed)
