"""Real data, no download: scikit-learn's handwritten digits, with a small CNN or MLP.

    prob = aps.problems.Digits(model="cnn", seed=0)
    run = aps.train(prob, workers=4, policy="async", lr=0.1, steps=1500, batch_size=32,
                    engine="processes")
    run.metrics["accuracy"][-1]          # test accuracy of the last version

The data are the 1,797 8×8 grey-scale images of digits 0-9 that scikit-learn ships inside its
package (`sklearn.datasets.load_digits`: UCI's optical recognition set, nothing is fetched), scaled
to [0, 1]. A quarter is held out (split by `seed`) for the loss and the accuracy of each version.
`partition="by_label"` gives each worker a few digits only (non-IID). The weights start from
`seed` too (numpy's generator; torch's global random state is never touched).
"""
import numpy as np

from ..core import checks
from .torch_model import TorchProblem

MODELS = ("cnn", "mlp")


def _network(model):
    import torch.nn as nn
    from torch.nn.utils import skip_init     # no default initialisation: torch's RNG stays untouched

    if model == "cnn":                       # 8x8 -> 16 x 4x4 -> 32 x 2x2 -> 10: 6,090 weights
        return nn.Sequential(skip_init(nn.Conv2d, 1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             skip_init(nn.Conv2d, 16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), skip_init(nn.Linear, 128, 10))
    return nn.Sequential(nn.Flatten(), skip_init(nn.Linear, 64, 64), nn.ReLU(),
                         skip_init(nn.Linear, 64, 10))                                   # 4,810


def _initialise(net, seed):
    """Uniform(±1/sqrt(fan_in)), torch's default scale, drawn from numpy's seeded generator."""
    import torch

    rng = np.random.default_rng([seed, 13])
    with torch.no_grad():
        for layer in net.modules():
            if hasattr(layer, "weight") and layer.weight is not None:
                bound = 1.0 / np.sqrt(layer.weight[0].numel())
                for p in (layer.weight, layer.bias):
                    if p is not None:
                        p.copy_(torch.from_numpy(rng.uniform(-bound, bound, p.shape).astype(np.float32)))
    return net


class Digits(TorchProblem):
    def __init__(self, model="cnn", seed=0, test_fraction=0.25):
        checks.choice("model", model, MODELS)
        seed = checks.integer("seed", seed, minimum=0)
        try:
            from sklearn.datasets import load_digits
        except ImportError:
            raise ImportError("aps.problems.Digits needs scikit-learn (its digits ship inside it): "
                              "pip install scikit-learn") from None
        data = load_digits()
        X = (data.images / 16.0).astype(np.float32)
        X = X[:, None] if model == "cnn" else X.reshape(len(X), -1)
        super().__init__(_initialise(_network(model), seed), X, data.target.astype(np.int64),
                         metric="accuracy", test_fraction=test_fraction, seed=seed,
                         name=f"Digits-{model}")
        self.model_kind = model

    def __repr__(self):
        return (f"Digits(model={self.model_kind!r}, parameters={self.dim}, train={self.n}, "
                f"test={len(self.y_test)})")
