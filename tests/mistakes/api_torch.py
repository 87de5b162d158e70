"""Mistakes with a learner's own torch model and data (`aps.problems.from_torch`): each is
refused when the problem is made, naming the argument, what it holds and what to change."""

SETUP = '''
import numpy as np, torch, asyncps as aps
from torch import nn
torch.set_num_threads(1)
rng = np.random.default_rng(0)
X = rng.standard_normal((64, 8)).astype(np.float32)
y = np.arange(64) % 4                                   # class labels 0..3
'''
TRAIN = '''
aps.train(problem, workers=2, steps=20, lr=0.1, batch_size=8)
'''


def script(body, train=True):
    return SETUP + body.strip() + "\n" + (TRAIN if train else "")


MISTAKES = [
    dict(name="torch-too-few-outputs",
         before="aps.train fails 8 frames deep: 'IndexError: Target 3 is out of bounds.'",
         script=script("problem = aps.problems.from_torch(nn.Sequential(nn.Linear(8, 3)), X, y)"),
         says=["3 values per sample", "0..3 (4 classes)", "4 outputs"]),
    dict(name="torch-mse-one-output-vs-class-labels",
         before="no error: it trains on a broadcast (8, 8) loss (2.41 -> 1.17), with only torch's UserWarning 'Using a target size (torch.Size([8])) that is different to the input size (torch.Size([8, 1]))'",
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 1), X, y, loss=nn.functional.mse_loss)"),
         says=["shape (4, 1)", "shape (4,)", "y.reshape(-1, 1)"]),
    dict(name="torch-nan-in-X",
         before="aps.train fails: 'ValueError: Linear's gradient (worker 0) returned NaN or inf at finite parameters: a gradient must be finite (check the function for a division by zero or a log of 0)'",
         script=script("X[3, 1] = np.nan\nproblem = aps.problems.from_torch(nn.Linear(8, 4), X, y)"),
         says=["X holds NaN at row 3, column 1", "finite"]),
    dict(name="torch-inf-in-y",
         before="aps.train fails: 'ValueError: Linear's gradient (worker 1) returned NaN or inf at finite parameters: a gradient must be finite (check the function for a division by zero or a log of 0)'",
         script=script("t = X.sum(axis=1, keepdims=True)\nt[5] = np.inf\n"
                       "problem = aps.problems.from_torch(nn.Linear(8, 1), X, t, loss=nn.functional.mse_loss)"),
         says=["y holds inf at row 5", "finite"]),
    dict(name="torch-float-labels-with-cross-entropy",
         before="aps.train fails: 'RuntimeError: expected target dtype to be Long or Byte, but got Float'",
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 4), X, y.astype(np.float32))"),
         says=["y holds floats", "class labels", "y.astype(np.int64)"]),
    dict(name="torch-integer-X-with-a-float-model",
         before="aps.train fails: 'RuntimeError: mat1 and mat2 must have the same dtype, but got Long and Float'",
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 4), (10 * X).astype(np.int64), y)"),
         says=["X holds integers (int64)", "float32", "X.astype(np.float32)"]),
    dict(name="torch-labels-as-a-column",
         before="aps.train fails: 'RuntimeError: 0D or 1D target tensor expected, multi-target not supported'",
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 4), X, y.reshape(-1, 1))"),
         says=["y has shape (64, 1)", "one class label per example", "y.ravel()"]),
    dict(name="torch-model-class-not-instance",
         before='"TypeError: model=<class \'__main__.Net\'> is not allowed: model must be a torch.nn.Module"',
         script=script("class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                       "        self.layer = nn.Linear(8, 4)\n    def forward(self, x):\n"
                       "        return self.layer(x)\n"
                       "problem = aps.problems.from_torch(Net, X, y)"),
         says=["model=", "the class Net", "Net()"]),
    dict(name="torch-X-as-a-list",
         before="'TypeError: X=[[0.1257302165031433, -0.13210485875606537, 0.64042264223... is not allowed: X must be a numpy array or a torch tensor'",
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 4), X.tolist(), y)"),
         says=["X=", "a list", "np.asarray(X"]),
    dict(name="torch-empty-data",
         before="'ValueError: no training examples are left after the test split'",
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 4), X[:0], y[:0])"),
         says=["X", "no examples"]),
    dict(name="torch-text-X",
         before='aps.train fails: "TypeError: can\'t convert np.ndarray of type numpy.str_. The only supported types are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, uint16, uint8, and bool."',
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 4), X.astype(str), y)"),
         says=["X holds text", "numbers"]),
    dict(name="torch-ragged-X",
         before='aps.train fails: "TypeError: can\'t convert np.ndarray of type numpy.object_. The only supported types are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, uint16, uint8, and bool."',
         script=script("rows = np.empty(64, dtype=object)\nrows[:] = [list(r[: 8 - i % 2]) for i, r in enumerate(X)]\n"
                       "problem = aps.problems.from_torch(nn.Linear(8, 4), rows, y)"),
         says=["X holds Python objects", "same length"]),
    dict(name="torch-model-takes-other-width",
         before="aps.train fails: 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (13x8 and 5x4)'",
         script=script("problem = aps.problems.from_torch(nn.Sequential(nn.Linear(5, 4)), X, y)"),
         says=["X", "8 values per row", "first layer takes 5", "nn.Linear(8"]),
    dict(name="torch-images-without-a-channel-axis",
         before="aps.train fails: 'RuntimeError: Given groups=1, weight of size [4, 1, 2, 2], expected input[1, 13, 2, 4] to have 1 channels, but got 13 channels instead'",
         script=script("images = X.reshape(64, 2, 4)\n"
                       "net = nn.Sequential(nn.Conv2d(1, 4, 2), nn.Flatten(), nn.Linear(4 * 1 * 3, 4))\n"
                       "problem = aps.problems.from_torch(net, images, y)"),
         says=["X", "(2, 4)", "channel", "X[:, None]"]),
    dict(name="torch-loss-class-not-instance",
         before="aps.train fails: 'RuntimeError: Boolean value of Tensor with more than one value is ambiguous'",
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 4), X, y, loss=nn.CrossEntropyLoss)"),
         says=["loss=", "the class CrossEntropyLoss", "nn.CrossEntropyLoss()"]),
    dict(name="torch-loss-without-reduction",
         before="aps.train fails: 'ValueError: only one element tensors can be converted to Python scalars'",
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 4), X, y, "
                       "loss=nn.CrossEntropyLoss(reduction='none'))"),
         says=["loss", "shape (4,)", "one number", "reduction='mean'"]),
    dict(name="torch-labels-minus-one-and-one",
         before="aps.train fails: 'IndexError: Target -1 is out of bounds.'",
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 2), X, np.where(y % 2 == 0, -1, 1))"),
         says=["y holds labels -1..1", "0..", "(y + 1) // 2"]),
    dict(name="torch-y-test-without-X-test",
         before='no error: y_test is ignored and a fifth of X is held out instead',
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 4), X, y, y_test=y[:16])"),
         says=["y_test", "X_test", "both"]),
    dict(name="torch-X-test-of-another-width",
         before="aps.train fails: 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x6 and 8x4)'",
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 4), X, y, X_test=X[:16, :6], y_test=y[:16])"),
         says=["X_test", "6 values per row", "X has 8"]),
    dict(name="torch-images-into-a-linear-layer",
         before="aps.train fails: 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (26x4 and 8x4)'",
         script=script("problem = aps.problems.from_torch(nn.Sequential(nn.Linear(8, 4)), X.reshape(64, 2, 4), y)"),
         says=["X's rows have shape (2, 4)", "nn.Flatten()"]),
    dict(name="torch-integer-targets-with-bce",
         before='aps.train fails: "RuntimeError: result type Float can\'t be cast to the desired output type Long"',
         script=script("net = nn.Sequential(nn.Linear(8, 1), nn.Flatten(0))\n"
                       "problem = aps.problems.from_torch(net, X, y % 2, "
                       "loss=nn.functional.binary_cross_entropy_with_logits)"),
         says=["y holds integers (int64)", "float targets", "y.astype(np.float32)"]),
    dict(name="torch-loss-returns-a-python-float",
         before='aps.train fails: "AttributeError: \'float\' object has no attribute \'backward\'"',
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 4), X, y, "
                       "loss=lambda out, t: nn.functional.cross_entropy(out, t).item())"),
         says=["loss returned a float", "tensor", ".item()"]),
    dict(name="torch-accuracy-of-a-regression",
         before="no error: run.metrics['accuracy'] is 0.0 at every version (the argmax of one output against float targets)",
         script=script("problem = aps.problems.from_torch(nn.Linear(8, 1), X, X[:, :1], "
                       "loss=nn.functional.mse_loss, metric='accuracy')"),
         says=["metric='accuracy' is not allowed", "y holds floats", "metric=None"]),
    dict(name="torch-regression-with-the-default-loss",
         before="no error: the loss is -0.0 at every version and nothing is learnt "
                "(cross-entropy of a single output)",
         script=script("t = X.sum(axis=1, keepdims=True)\n"
                       "problem = aps.problems.from_torch(nn.Linear(8, 1), X, t)"),
         says=["1 value per sample", "loss=cross_entropy", "mse_loss"]),
]
