"""Does a torch model fit its data and its loss? Checked once, when `from_torch` makes the problem.

A copy of the model computes its outputs on the first few training rows, and the loss scores them
against their targets. A model with too few outputs for the labels, targets the loss cannot take,
or data the model cannot read is so refused at once, in the learner's terms ("the model outputs 3
values per sample but y holds labels 0..3 (4 classes): give the last layer 4 outputs"), instead of
deep inside a training run. The check is cheap: a few rows, one forward pass, no backward pass;
the user's model and torch's global random state are left as they were.
"""
import copy
import re
import warnings

import numpy as np

from ..core import checks

ROWS = 4                                       # rows the check computes on


def model_argument(model):
    """`model` itself when it is a torch.nn.Module; else a TypeError saying what to pass."""
    import torch

    if isinstance(model, torch.nn.Module):
        return model
    if isinstance(model, type) and issubclass(model, torch.nn.Module):
        raise checks.bad("model", model, f"an instance of torch.nn.Module, not the class "
                         f"{model.__name__} itself: pass model={_constructor(model)}()", TypeError)
    raise checks.bad("model", model, "a torch.nn.Module, e.g. nn.Sequential(nn.Linear(8, 3))", TypeError)


def loss_argument(loss):
    """The loss function (cross-entropy for None); a class or a name is refused saying what to pass."""
    import torch

    if loss is None:
        return torch.nn.functional.cross_entropy
    if isinstance(loss, type) and issubclass(loss, torch.nn.Module):
        raise checks.bad("loss", loss, f"a loss function or an instance of a loss, not the class "
                         f"{loss.__name__} itself: pass loss={_constructor(loss)}()", TypeError)
    if not callable(loss):
        raise checks.bad("loss", loss, "a function loss(outputs, targets) -> tensor, e.g. "
                         "torch.nn.functional.cross_entropy or torch.nn.functional.mse_loss", TypeError)
    return loss


def same_rows(name, array, like_name, like):
    """Held-out data must have rows like the training data's."""
    if array.shape[1:] == like.shape[1:]:
        return
    if array.ndim == like.ndim == 2:
        raise ValueError(f"{name} has {array.shape[1]} values per row but {like_name} has "
                         f"{like.shape[1]}: {name} must hold rows like {like_name}'s")
    raise ValueError(f"{name}'s rows have shape {array.shape[1:]} but {like_name}'s have shape "
                     f"{like.shape[1:]}: {name} must hold rows like {like_name}'s")


def check(problem, test_given):
    """Compute the model on a few training rows and score them with the loss (and the metric)."""
    import torch

    X, y, k = problem.X, problem.y, min(ROWS, problem.n)
    xb, yb = torch.from_numpy(X[:k]), torch.from_numpy(y[:k])
    try:
        net = copy.deepcopy(problem.model).to("cpu")
    except Exception:                              # noqa: BLE001 - it cannot be copied (a lock...)
        net = problem.model
        if any(p.device.type != "cpu" for p in net.parameters()):
            return                                 # it lives on a GPU and cannot be copied: unchecked
    with torch.random.fork_rng(devices=[]):        # dropout draws from torch's global generator
        try:
            out = net(xb)
        except Exception as e:                     # noqa: BLE001 - any error of the user's model
            understood = _what_went_wrong(net, X, y, problem.x0.dtype, _one_line(e))
            if understood is not None:
                raise understood from None
            raise ValueError(f"model cannot compute on X: model(X[:{k}]) with X[:{k}] of shape "
                             f"{tuple(xb.shape)} ({X.dtype}) raised {type(e).__name__}: "
                             f"{_one_line(e)}: the model must take a batch of X's rows") from e
        if isinstance(out, torch.Tensor):
            _outputs_fit_targets(problem, out, yb, test_given)
        value = _score(problem, out, yb)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"loss returned a {type(value).__name__} ({value!r:.40}): it must return a "
                        f"tensor, from which torch computes the gradient: use torch operations on "
                        f"the outputs (no .item() or numpy)")
    if value.numel() != 1:
        raise ValueError(f"loss returned a tensor of shape {tuple(value.shape)} for a batch of {k} "
                         f"rows: it must return one number per batch (the mean over the batch): use "
                         f"reduction='mean' (the default), or take .mean() of it")
    if not value.requires_grad and any(p.requires_grad for p in net.parameters()):
        raise ValueError("loss returned a tensor that does not depend on the model's parameters, so "
                         "no gradient flows: compute it with torch operations on the outputs (no "
                         ".detach(), .item() or numpy)")
    if problem._metric_fn is not None and isinstance(out, torch.Tensor):
        _metric_fits(problem, out.detach(), yb)


# -- what the outputs and the targets must be, per kind of loss ----------------------------------
def _kind(loss):
    import torch.nn as nn
    import torch.nn.functional as F

    if any(loss is f for f in (F.cross_entropy, F.nll_loss)) or isinstance(loss, (nn.CrossEntropyLoss,
                                                                                  nn.NLLLoss)):
        return "classes"
    elementwise = (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss, F.binary_cross_entropy,
                   F.binary_cross_entropy_with_logits)
    if any(loss is f for f in elementwise) or isinstance(loss, (nn.MSELoss, nn.L1Loss, nn.SmoothL1Loss,
                                                                nn.HuberLoss, nn.BCELoss,
                                                                nn.BCEWithLogitsLoss)):
        return "elementwise"
    return None


def _outputs_fit_targets(problem, out, yb, test_given):
    kind, name = _kind(problem._loss_fn), _name(problem._loss_fn)
    y, k, shape = problem.y, len(yb), tuple(out.shape)
    if kind == "classes" and out.ndim >= 2:
        width = shape[1]
        if width == 1:
            raise ValueError(f"the model outputs 1 value per sample, but loss={name} needs one output "
                             f"per class (its loss of one output is always 0): for a regression target "
                             f"pass loss=torch.nn.functional.mse_loss; for k classes give the last "
                             f"layer k outputs")
        if y.dtype.kind == "f":
            if tuple(yb.shape) == shape:
                return                             # class probabilities, one per output
            raise TypeError(f"y holds floats ({y.dtype}) but loss={name} needs integer class labels "
                            f"0..{width - 1}, one per example: pass y.astype(np.int64) (for a "
                            f"regression target use loss=torch.nn.functional.mse_loss)")
        wanted = (k,) + shape[2:]
        if tuple(yb.shape) != wanted:
            rows = len(y) if test_given or problem.y_test is y else len(y) + len(problem.y_test)
            fix = ("pass y.ravel()" if tuple(yb.shape) == wanted + (1,) else
                   "it looks one-hot: pass y.argmax(axis=1)" if tuple(yb.shape) == shape else
                   f"give y shape {(rows,) + shape[2:]}")
            raise ValueError(f"y has shape {(rows,) + y.shape[1:]}"
                             f"{' (a column)' if y.shape[1:] == (1,) else ''}: loss={name} needs one "
                             f"class label per example, shape {(rows,) + shape[2:]}: {fix}")
        if test_given:
            labels = [("y", y), ("y_test", problem.y_test)]
        else:                                      # the held-out rows are the user's y too
            labels = [("y", y if problem.y_test is y else np.concatenate([y, problem.y_test]))]
        ignore = getattr(problem._loss_fn, "ignore_index", -100)
        for arg, values in labels:
            _labels_fit(arg, values[values != ignore], width, name, problem.model)
    elif kind == "elementwise" and tuple(yb.shape) != shape:
        if shape == tuple(yb.shape) + (1,):
            fix = "pass y.reshape(-1, 1)" + (", or, if y holds class labels, use loss=torch.nn.functional."
                                        "cross_entropy with one output per class"
                                        if y.dtype.kind in "iu" else "")
        elif tuple(yb.shape) == shape + (1,):
            fix = "pass y.ravel()"
        elif y.dtype.kind in "iu" and yb.ndim == 1:
            fix = "for class labels use loss=torch.nn.functional.cross_entropy (one output per class)"
        else:
            fix = f"make the model output shape {tuple(yb.shape[1:])} per sample, like y's rows"
        raise ValueError(f"loss={name} compares outputs and targets element by element, but the "
                         f"model outputs shape {shape} for a batch of {k} rows and y gives shape "
                         f"{tuple(yb.shape)}: {fix}")


def _labels_fit(arg, labels, width, name, model):
    if labels.size == 0:
        return
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0:
        fix = ("(y + 1) // 2" if set(np.unique(labels).tolist()) == {-1, 1}
               else "np.unique(y, return_inverse=True)[1]")
        raise ValueError(f"{arg} holds labels {lo}..{hi}: loss={name} needs class labels 0..{width - 1} "
                         f"(the model outputs {width} values per sample, one per class): number the "
                         f"classes from 0, e.g. {fix}")
    if hi >= width:
        last = _last_linear(model, width)
        layer = f" (nn.Linear({last.in_features}, {hi + 1}))" if last is not None else ""
        also = f", or, as the labels count from 1, pass {arg} - 1" if lo >= 1 and hi == width else ""
        raise ValueError(f"the model outputs {width} values per sample but {arg} holds labels "
                         f"{lo}..{hi} ({hi + 1} classes): give the last layer {hi + 1} outputs"
                         f"{layer}{also}")


def _score(problem, out, yb):
    name, y = _name(problem._loss_fn), problem.y
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = problem._loss_fn(out, yb)
        except Exception as e:                     # noqa: BLE001 - any error of the loss
            text = _one_line(e)
            if y.dtype.kind in "iu" and re.search(r"Float|Double|Half|dtype|can't be cast", text):
                raise TypeError(f"y holds integers ({y.dtype}) but loss={name} needs float "
                                f"targets: pass y.astype(np.float32)") from None
            if y.dtype.kind == "f" and re.search(r"Long|Int|Byte", text):
                raise TypeError(f"y holds floats ({y.dtype}) but loss={name} needs integer "
                                f"targets: pass y.astype(np.int64)") from None
            shown = tuple(out.shape) if hasattr(out, "shape") else type(out).__name__
            raise ValueError(f"loss={name} cannot score the model's outputs against y: "
                             f"loss(model(X[:{len(yb)}]), y[:{len(yb)}]) with outputs {shown} and "
                             f"targets of shape {tuple(yb.shape)} ({y.dtype}) raised "
                             f"{type(e).__name__}: {text}") from e
    for w in caught:
        if "target size" in str(w.message):
            raise ValueError(f"loss={name} got outputs and targets of different shapes, "
                             f"{tuple(out.shape)} and {tuple(yb.shape)} (torch would broadcast "
                             f"them and train on the wrong loss): make them match")
    return value


def _metric_fits(problem, out, yb):
    if problem.metric_name == "accuracy" and problem.y.dtype.kind not in "iu":
        raise ValueError(f"metric='accuracy' is not allowed here: y holds floats "
                         f"({problem.y.dtype}), and accuracy counts correct class labels: use "
                         f"metric=None, or your own metric(outputs, targets) -> float")
    try:
        float(problem._metric_fn(out, yb))
    except Exception as e:                         # noqa: BLE001 - any error of the user's metric
        raise TypeError(f"metric={problem.metric_name} cannot score the model's outputs: "
                        f"metric(model(X[:{len(yb)}]), y[:{len(yb)}]) raised {type(e).__name__}: "
                        f"{_one_line(e)}: it must be metric(outputs, targets) -> float") from e


# -- what went wrong when the model could not compute ----------------------------------------------
def _what_went_wrong(net, X, y, dtype, text):
    """The model's error in the learner's terms, when it is one we know (else None)."""
    import torch.nn as nn

    if X.ndim == 1 and y.ndim > 1:
        return ValueError(f"X is 1-D and y has rows of shape {y.shape[1:]}: they look swapped; "
                          f"from_torch(model, X, y) takes the inputs first, then the targets")
    first = next((m for m in net.modules() if any(True for _ in m.parameters(recurse=False))), None)
    if X.dtype.kind in "iu" and re.search(r"dtype|scalar type|Long|Int", text):
        return TypeError(f"X holds integers ({X.dtype}) but the model computes in {dtype}: pass "
                         f"X.astype(np.{dtype}) (integers suit only a model that starts with nn.Embedding)")
    if X.ndim == 1 and X.dtype.kind == "f":
        return ValueError("X is 1-D, one number per example, but the model takes a batch of rows: "
                          "pass X.reshape(-1, 1), one column")
    matmul = re.search(r"shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)", text)
    if matmul:
        got, takes = int(matmul[2]), int(matmul[3])
        layer = next((m for m in net.modules() if isinstance(m, nn.Linear) and m.in_features == takes), None)
        if layer is not None and layer is first:
            row = X.shape[1:]
            if len(row) > 1 and int(np.prod(row)) == takes:
                return ValueError(f"X's rows have shape {row} ({takes} values) but the model's first "
                                  f"layer nn.Linear({takes}, {layer.out_features}) gets the last axis "
                                  f"only ({got} values): start the model with nn.Flatten()")
            return ValueError(f"X has {got} values per row but the model's first layer takes {takes} "
                              f"(nn.Linear({takes}, {layer.out_features})): make it "
                              f"nn.Linear({got}, {layer.out_features}), or give X {takes} values per row")
        if layer is not None:
            return ValueError(f"model: its layer nn.Linear({takes}, {layer.out_features}) gets {got} "
                              f"values per sample from the layer before it: make it "
                              f"nn.Linear({got}, {layer.out_features})")
    if isinstance(first, nn.modules.conv._ConvNd) and "channels" in text:
        dims, row = len(first.kernel_size), X.shape[1:]
        axes = ("length", "height, width", "depth, height, width")[dims - 1]
        layer = f"nn.{type(first).__name__}({first.in_channels}, {first.out_channels}, ...)"
        if len(row) == dims and first.in_channels == 1:
            return ValueError(f"X's rows have shape {row}, but the model's first layer {layer} takes "
                              f"rows with a channel axis first, (channels, {axes}): add one, X[:, None]")
        if len(row) == dims + 1 and row[-1] == first.in_channels:
            return ValueError(f"X's rows have shape {row}, channels last, but the model's first layer "
                              f"{layer} takes channels first, (channels, {axes}): move the axis, "
                              f"np.moveaxis(X, -1, 1)")
        if len(row) == dims + 1:
            return ValueError(f"X's rows have {row[0]} channels, shape {row}, but the model's first "
                              f"layer {layer} takes {first.in_channels}")
    return None


def _last_linear(model, width):
    import torch.nn as nn

    layers = [m for m in model.modules() if isinstance(m, nn.Linear) and m.out_features == width]
    return layers[-1] if layers else None


def _name(fn):
    return getattr(fn, "__name__", None) or type(fn).__name__


def _constructor(cls):
    return f"nn.{cls.__name__}" if cls.__module__.startswith("torch.nn") else cls.__name__


def _one_line(error):
    return " ".join(str(error).split())
