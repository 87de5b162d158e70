"""What is optimised: the loss and gradient of a parameter vector on one worker's shard.

A problem has a starting point `x0`, a full loss `loss(params)` (what the
server's versions are scored by) and `gradient(params, indices, rng)`: the
gradient on the examples `indices` (a worker's shard or a minibatch of it).
Problems without data (`n is None`, e.g. Quadratic) ignore `indices`.

`shards(workers, partition, seed)` splits the examples across workers:
"iid" shuffles them into equal shards; "by_label" and "sorted" give each worker
a contiguous run of one kind of example (non-IID). A shard is read-only: a
gradient gets the same shard every step and may keep what it gathers from it.
"""
import inspect

import numpy as np

from ..core import checks

from ..core.config import PARTITIONS


KEPT_SHARDS = 64                    # rows(): the shards whose rows a problem keeps
DERIVED = ("_rows", "_statistics")  # what a problem computes from its data (not pickled)


class Problem:
    name = "problem"
    n = None          # number of examples; None when the problem has no data
    labels = None     # class of each example, for partition="by_label"

    def __init__(self, x0):
        self.x0 = checks.vector("x0", x0)

    @property
    def dim(self):
        return self.x0.size

    def loss(self, params):
        raise NotImplementedError

    def gradient(self, params, indices=None, rng=None):
        raise NotImplementedError

    @property
    def metrics(self):
        """{name: metric(params)} the server scores with each version's loss (none by default)."""
        return {}

    def on_device(self, device):
        """This problem with its gradient computed on `device` ("cpu", "cuda:0", ...)."""
        if device == "cpu":
            return self
        raise ValueError(f"device={device!r} is not allowed for {self.name}: it computes with numpy "
                         f"on the CPU; only torch problems (aps.problems.MLP) run on a GPU")

    def sort_key(self):
        """What partition="sorted" sorts the examples by (labels, or the regression target)."""
        return self.labels

    def shards(self, workers, partition="iid", seed=0):
        """One array of example indices per worker (None for every worker when there is no data)."""
        checks.choice("partition", partition, PARTITIONS)
        if self.n is None:
            if partition != "iid":
                raise ValueError(f"partition={partition!r} is not allowed for {self.name}: it has no "
                                 f"data to split, so only partition='iid' (every worker sees the same "
                                 f"function) is meaningful")
            return [None] * workers
        if workers > self.n:
            raise ValueError(f"workers={workers} is not allowed: {self.name} has {self.n} examples, "
                             f"so at most {self.n} workers get a non-empty shard")
        if partition == "iid":
            order = np.random.default_rng([seed, 7001]).permutation(self.n)
        elif partition == "by_label":
            if self.labels is None:
                raise ValueError(f"partition='by_label' is not allowed for {self.name}: it has no "
                                 f"labels; use partition='sorted' (sorts by the target)")
            order = np.argsort(self.labels, kind="stable")
        else:
            order = np.argsort(self.sort_key(), kind="stable")
        order.flags.writeable = False           # a shard stays what it is: rows() may keep its rows
        return np.array_split(order, workers)

    def rows(self, indices, *arrays):
        """`array[indices]` of each array (all of them when `indices` is None). A worker's shard,
        read-only (shards() makes it so), is gathered once and kept: a whole-shard gradient asks
        for the same rows every step. A minibatch, a new array each step, is gathered each time."""
        if indices is None:
            return arrays
        if not isinstance(indices, np.ndarray) or indices.flags.writeable:
            return tuple(a[indices] for a in arrays)
        kept = self.__dict__.setdefault("_rows", {})
        hit = kept.get(id(indices))
        if hit is not None and hit[0] is indices and all(a is b for a, b in zip(hit[1], arrays)):
            return hit[2]                                   # the same objects, so the same rows
        found = tuple(a[indices] for a in arrays)
        if len(kept) >= KEPT_SHARDS:
            kept.clear()
        kept[id(indices)] = (indices, arrays, found)
        return found

    def __getstate__(self):                     # what rows() and the statistics keep is rebuilt
        return {k: v for k, v in self.__dict__.items() if k not in DERIVED}

    # -- user-defined problems ----------------------------------------------
    @staticmethod
    def from_functions(loss, grad, x0, n=None, labels=None, name="from_functions"):
        """A problem from two plain functions.

        loss(params) -> float.  grad(params) -> array, or grad(params, shard, rng)
        for a stochastic gradient: it then gets the worker's example indices
        (None when n is not given) and a seeded numpy Generator.
        """
        return FunctionProblem(loss, grad, x0, n=n, labels=labels, name=name)

    def __repr__(self):
        return f"{type(self).__name__}(dim={self.dim}" + (f", n={self.n})" if self.n else ")")


def _positional_arity(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 3
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
               for p in params)


class FunctionProblem(Problem):
    def __init__(self, loss, grad, x0, n=None, labels=None, name="from_functions"):
        if not callable(loss):
            raise checks.bad("loss", loss, "a function loss(params) -> float", TypeError)
        if not callable(grad):
            raise checks.bad("grad", grad, "a function grad(params) or grad(params, shard, rng)", TypeError)
        super().__init__(x0)
        self.name = name
        self._loss, self._grad = loss, grad
        self._arity = _positional_arity(grad)
        if self._arity not in (1, 2, 3):
            raise checks.bad("grad", grad, "a function of (params) or (params, shard, rng)", TypeError)
        if n is not None:
            self.n = checks.integer("n", n, minimum=1)
        if labels is not None:
            self.labels = np.asarray(labels)
            if self.n is None or self.labels.shape != (self.n,):
                raise ValueError(f"labels of shape {self.labels.shape} is not allowed: labels must "
                                 f"give one label per example, shape ({self.n},), and need n")

    def loss(self, params):
        value = self._loss(params)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise TypeError(f"loss returned {value!r}: it must return one number") from None

    def gradient(self, params, indices=None, rng=None):
        args = (params, indices, rng)[: self._arity]
        return self._grad(*args)
