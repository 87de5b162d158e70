"""Any torch model as a problem: `aps.problems.from_torch(model, X, y, loss=..., metric="accuracy")`.

The server sees one flat parameter vector, like every other problem, in the model's dtype
(float32 for an ordinary model). Each call that computes with the problem borrows a replica
of the model, whose parameters and gradients are views into two flat buffers, from the
problem's pool, and gives it back after the call: a version's parameters are copied in with one
memcpy, autograd accumulates the minibatch's gradient straight into the flat gradient buffer,
and two calls at once never share a module (a module is not safe to call from two threads while
its parameters change). The pool holds as many replicas as calls ever ran at once. It is not a
`threading.local`: what that holds dies with the thread's Python state, and the threads of
torch's rpc drop theirs after every call, so the server's evaluations made and destroyed a copy
of the model each time, and torch 2.11 crashed destroying a module there (issue 26). The loss
and the metric of a version are measured on held-out data (`test_fraction` of the examples,
split by `seed`, or `X_test`, `y_test`). The model the user passed is never changed — unless it
cannot be copied (it holds a lock, say): then the threads take turns on it. The data must be finite numbers, and the
model is tried on a few rows when the problem is made (torch_fit.py), so that a model that does not
fit its data or its loss is refused there, saying what to change.

It travels to worker processes and rpc ranks as the model itself plus its data (torch pickles a
module's state with its class; cloudpickle sends a class defined in a notebook cell by value).
torch is imported when such a problem is made, not when asyncps is imported.
"""
import contextlib
import copy
import threading

import numpy as np

from ..core import checks
from . import torch_fit as fit
from .base import Problem

METRICS = ("accuracy",)


def _accuracy(logits, y):
    return float((logits.argmax(dim=1) == y).float().mean())


class TorchProblem(Problem):
    name = "torch model"
    device = "cpu"

    def __init__(self, model, X, y, loss=None, metric=None, test_fraction=0.2, X_test=None,
                 y_test=None, seed=0, name=None):
        import torch

        self.model = fit.model_argument(model)
        self._loss_fn = fit.loss_argument(loss)
        if metric is not None and metric not in METRICS and not callable(metric):
            raise checks.bad("metric", metric, f"None, one of {METRICS}, or a function "
                             f"metric(outputs, targets) -> float", TypeError if not isinstance(metric, str)
                             else ValueError)
        self.metric_name = None if metric is None else (metric if isinstance(metric, str)
                                                        else getattr(metric, "__name__", "metric"))
        self._metric_fn = _accuracy if metric == "accuracy" else metric
        self.names = [n for n, _ in model.named_parameters()]
        self.shapes = [tuple(p.shape) for _, p in model.named_parameters()]
        if not self.names:
            raise ValueError(f"model={type(model).__name__} has no parameters to train: give it a "
                             f"layer with weights, e.g. nn.Linear")
        X, y = _examples("X", X, "y", y)
        if (X_test is None) != (y_test is None):
            given, missing = ("X_test", "y_test") if y_test is None else ("y_test", "X_test")
            raise ValueError(f"{given} is given without {missing}: give both (the held-out examples "
                             f"and their targets) or neither (then test_fraction of X is held out)")
        test_given = X_test is not None
        if not test_given:
            test_fraction = checks.real("test_fraction", test_fraction, minimum=0.0, below=1.0)
            order = np.random.default_rng([checks.integer("seed", seed, minimum=0), 11]).permutation(len(X))
            held = int(round(test_fraction * len(X)))
            test, train = order[:held], order[held:]
            X_test, y_test, X, y = X[test], y[test], X[train], y[train]
        else:
            X_test, y_test = _examples("X_test", X_test, "y_test", y_test)
            fit.same_rows("X_test", X_test, "X", X)
            fit.same_rows("y_test", y_test, "y", y)
        if len(X) == 0:
            raise ValueError(f"test_fraction={test_fraction} is not allowed here: it holds out all "
                             f"{len(X_test)} examples, leaving none to train on: use a smaller "
                             f"test_fraction, or give X_test and y_test")
        dtype = model_dtype(model)
        X, X_test = (a.astype(dtype, copy=False) if a.dtype.kind in "fb" else a for a in (X, X_test))
        # float targets (regression) in the model's dtype too: torch 2.11 cannot backpropagate
        # a float32 model's MSE against float64 targets ("Found dtype Double but expected Float")
        y, y_test = (a.astype(np.int64, copy=False) if a.dtype.kind in "iub" else
                     a.astype(dtype, copy=False) if a.dtype.kind == "f" else a for a in (y, y_test))
        self.X, self.y = X, y
        self.X_test, self.y_test = (X, y) if len(X_test) == 0 else (X_test, y_test)
        self.n = len(X)
        self.labels = y if y.ndim == 1 and np.issubdtype(y.dtype, np.integer) else None
        with torch.no_grad():
            flat = torch.cat([p.detach().reshape(-1).cpu() for p in model.parameters()])
        super().__init__(flat.numpy().copy())
        self.name = name or type(model).__name__
        self._tensors, self._pool, self._shared = None, [], None
        fit.check(self, test_given)          # the model computes on a few rows, the loss scores them

    # -- the problem interface ------------------------------------------------------------
    def loss(self, params):
        return self._evaluate(params)[0]

    def metric(self, params):
        """The metric (e.g. accuracy) of `params` on the held-out data, or None without one."""
        return self._evaluate(params)[1]

    @property
    def metrics(self):
        return {} if self.metric_name is None else {self.metric_name: self.metric}

    def gradient(self, params, indices=None, rng=None):
        X, y = self._data()[:2]
        if indices is not None:
            import torch

            idx = torch.tensor(np.asarray(indices), device=self.device)   # a copy: shards are read-only
            X, y = X[idx], y[idx]
        with self._borrowed() as replica:
            replica.load(params)
            replica.forget_grads()
            self._loss_fn(replica.model(X), y).backward()
            return replica.flat_grad()                   # a new array (CPU, numpy), for the server

    def on_device(self, device):
        if device == self.device:
            return self
        moved = copy.copy(self)
        moved.device, moved._tensors, moved._last = str(device), None, None
        moved._pool, moved._shared = [], None
        return moved                         # its replicas are made on the device

    def __getstate__(self):                     # tensors and replicas are rebuilt where it is unpickled
        return {**self.__dict__, "_tensors": None, "_last": None, "_pool": [], "_shared": None}

    def __repr__(self):
        return f"from_torch({self.name}, parameters={self.dim}, dtype={self.x0.dtype}, n={self.n})"

    # -- helpers ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _borrowed(self):
        """A replica of the model for one call: a free one from the pool, or a new one when all
        are in use; given back to the pool when the call ends (list.pop and append are atomic)."""
        if self._shared is None:
            try:
                replica = self._pool.pop()
            except IndexError:
                replica = _Replica.of_a_copy(self.model, self.device)
            if replica is not None:
                try:
                    yield replica
                finally:
                    self._pool.append(replica)
                return
        with _Replica.shared_lock:           # it holds a lock, a file...: one replica, in turn
            if self._shared is None:
                self._shared = _Replica(self.model, self.device)
            yield self._shared

    def _evaluate(self, params):
        """Loss and metric of `params` on the held-out data (one forward pass for both)."""
        import torch

        cached = getattr(self, "_last", None)
        if cached is not None and np.array_equal(cached[0], params):
            return cached[1]
        _, _, X, y = self._data()
        with torch.no_grad(), self._borrowed() as replica:
            replica.load(params)
            out = replica.model(X)
            loss = float(self._loss_fn(out, y))
            metric = None if self._metric_fn is None else float(self._metric_fn(out, y))
        self._last = (np.array(params, copy=True), (loss, metric))
        return loss, metric

    def _data(self):
        import torch

        if self._tensors is None:
            self._tensors = tuple(torch.from_numpy(a).to(self.device)
                                  for a in (self.X, self.y, self.X_test, self.y_test))
        return self._tensors


class _Replica:
    """A model whose parameters are views into one flat vector: its own buffer, or on the CPU
    the caller's array itself (no copy), and whose gradient comes out as one new flat array."""

    shared_lock = threading.Lock()           # for a model that cannot be copied (TorchProblem._borrowed)

    @classmethod
    def of_a_copy(cls, model, device):
        """A replica of a deep copy of `model`, or None where the model cannot be copied."""
        try:
            copied = copy.deepcopy(model)
        except Exception:                    # noqa: BLE001 - it holds a lock, a file...
            return None
        return cls(copied, device)

    def __init__(self, model, device):
        import torch

        self.model = model.to(device)
        self.params = list(self.model.parameters())
        dtype = self.params[0].dtype
        self.flat = torch.zeros(sum(p.numel() for p in self.params), dtype=dtype, device=device)
        with torch.no_grad():
            at = 0
            for p in self.params:
                self.flat[at:at + p.numel()] = p.reshape(-1)
                at += p.numel()
        self._viewing = None                 # the flat vector the parameters are views into
        self._view(self.flat)

    def _view(self, flat):
        """Point every parameter at its slice of `flat` (no copy)."""
        if self._viewing is flat:
            return
        at = 0
        for p in self.params:
            p.data = flat[at:at + p.numel()].view_as(p)
            at += p.numel()
        self._viewing = flat

    def load(self, params):
        """Compute on `params` next: on the CPU the array itself when it has the model's dtype
        and is contiguous and writable (a worker's own copy: no copy at all), else one copy."""
        import torch

        if (self.flat.device.type == "cpu" and isinstance(params, np.ndarray) and params.flags.c_contiguous
                and params.flags.writeable and params.size == self.flat.numel()
                and torch.from_numpy(params[:0]).dtype == self.flat.dtype):
            if self._viewing is None or self._viewing.data_ptr() != params.ctypes.data:
                self._view(torch.from_numpy(params))
            return
        self._view(self.flat)
        self.flat.copy_(torch.from_numpy(np.ascontiguousarray(params)))   # one copy (and cast)

    def forget_grads(self):
        for p in self.params:
            p.grad = None                    # backward writes new gradients, instead of adding

    def flat_grad(self):
        """The gradients of the last backward as one new flat numpy array (zeros where none)."""
        import torch

        grads = [p.grad.reshape(-1) if p.grad is not None else torch.zeros(p.numel(), dtype=p.dtype,
                 device=p.device) for p in self.params]
        return torch.cat(grads).cpu().numpy()


def model_dtype(model):
    """The numpy dtype of a model's parameters (float32 for an ordinary model)."""
    import torch

    return torch.empty(0, dtype=next(model.parameters()).dtype).numpy().dtype


def _as_array(name, value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        fix = f"np.asarray({name}, dtype=np.float32)" if name.startswith("X") else f"np.asarray({name})"
        raise checks.bad(name, value, f"a numpy array or a torch tensor, not a {type(value).__name__}: "
                         f"pass {fix}", TypeError)
    if hasattr(value, "to_numpy"):                   # a pandas DataFrame or Series
        raise checks.bad(name, value, f"a numpy array or a torch tensor, not a "
                         f"{type(value).__name__}: pass {name}.to_numpy()", TypeError)
    raise checks.bad(name, value, "a numpy array or a torch tensor", TypeError)


def _examples(x_name, X, y_name, y):
    """Inputs and targets as numpy arrays of finite numbers, one row per example each."""
    X, y = checks.data(x_name, _as_array(x_name, X)), checks.data(y_name, _as_array(y_name, y))
    if len(X) != len(y):
        raise ValueError(f"{x_name} has {len(X)} examples and {y_name} has {len(y)}: they must "
                         f"match, one target in {y_name} per row of {x_name}")
    return X, y


def from_torch(model, X, y, loss=None, metric=None, test_fraction=0.2, X_test=None, y_test=None,
               seed=0, name=None):
    """A problem from a `torch.nn.Module` and its data (tensors or numpy arrays).

    loss    loss(outputs, targets) -> tensor; default torch.nn.functional.cross_entropy
    metric  "accuracy", or metric(outputs, targets) -> float, or None; measured per version on
            the held-out data like the loss (`run.metrics[name][v]`)
    """
    return TorchProblem(model, X, y, loss=loss, metric=metric, test_fraction=test_fraction,
                        X_test=X_test, y_test=y_test, seed=seed, name=name)
