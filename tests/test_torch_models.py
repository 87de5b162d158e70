"""A user's own torch model (`aps.problems.from_torch`) and real data (`aps.problems.Digits`):
trained on every engine, float32 from the server to the trace and the checkpoint, the engine
invariants intact, a model that cannot travel refused at once, no network needed."""
import socket
import threading
import weakref

import numpy as np
import pytest
import torch
from engines import ALL, nothing_left_behind, run_on  # noqa: F401 (a fixture)

import asyncps as aps
from asyncps.problems import torch_model

pytestmark = pytest.mark.usefixtures("nothing_left_behind")


def blobs(n=512, dim=8, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    centres = 3.0 * rng.standard_normal((classes, dim))
    y = rng.integers(0, classes, n)
    return (centres[y] + rng.standard_normal((n, dim))).astype(np.float32), y


def sequential(dim=8, classes=3, seed=0):
    net = torch.nn.Sequential(torch.nn.Linear(dim, 16), torch.nn.Tanh(), torch.nn.Linear(16, classes))
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.from_numpy((0.3 * rng.standard_normal(p.shape)).astype(np.float32)))
    return net


X, Y = blobs()
MODEL = aps.problems.from_torch(sequential(), X, Y, metric="accuracy")


def test_a_torch_model_is_a_float32_problem_with_an_accuracy():
    assert MODEL.x0.dtype == np.float32 and MODEL.dim == 8 * 16 + 16 + 16 * 3 + 3
    g = MODEL.gradient(MODEL.x0, np.arange(32), None)
    assert g.dtype == np.float32 and g.shape == MODEL.x0.shape and np.all(np.isfinite(g))
    assert 0.0 <= MODEL.metric(MODEL.x0) <= 1.0 and set(MODEL.metrics) == {"accuracy"}
    assert MODEL.n == len(X) - round(0.2 * len(X))            # a fifth is held out for scoring


@pytest.mark.parametrize("engine", ALL)
@pytest.mark.parametrize("policy", ["async", "ssp"])
def test_a_torch_model_trains_on_every_engine_in_float32_with_every_invariant(engine, policy):
    run = run_on(engine, MODEL, workers=2, policy=policy, max_clocks_ahead=1 if policy == "ssp" else None,
                 lr=0.2, steps=60, batch_size=16, seed=1)
    assert not aps.violations(run.trace)
    assert run.params.dtype == np.float32 and run.trace.meta["dtype"] == "float32"
    assert all(p.dtype == np.float32 for p in run.worker_params)
    assert len(run.metrics["accuracy"]) == len(run.losses) == 61
    assert run.losses[-1] < run.losses[0] and run.metrics["accuracy"][-1] > 0.5


def test_float32_survives_a_checkpoint_and_a_trace_file(tmp_path):
    run = aps.train(MODEL, workers=2, lr=0.2, steps=20, batch_size=16, engine="processes",
                    momentum=0.5, loss_every=5)
    run.save(tmp_path / "run.npz")
    back = aps.load_run(tmp_path / "run.npz")
    assert back.params.dtype == np.float32 and np.array_equal(back.params, run.params)
    assert back.server_state["velocity"].dtype == np.float32
    assert np.array_equal(back.metrics["accuracy"], run.metrics["accuracy"], equal_nan=True)
    assert aps.Trace.from_json(run.trace.to_json()) == run.trace
    more = aps.train(MODEL, workers=2, lr=0.2, steps=30, batch_size=16, resume=tmp_path / "run.npz",
                     momentum=0.5, loss_every=5)
    assert len(more.losses) == 31 and more.params.dtype == np.float32


def test_float64_problems_stay_float64():
    run = aps.simulate(aps.problems.LeastSquares(n=64, dim=3, seed=0), workers=2, steps=10)
    assert run.params.dtype == np.float64 and run.trace.meta["dtype"] == "float64"


class Locked(torch.nn.Module):
    """A model that holds something no process can receive."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 3)
        self.lock = threading.Lock()

    def forward(self, x):
        return self.layer(x)


@pytest.mark.parametrize("engine", ["processes", "rpc"])
def test_a_model_that_cannot_travel_is_refused_at_once_saying_what_to_do(engine):
    problem = aps.problems.from_torch(Locked(), X, Y)
    with pytest.raises(TypeError, match="cannot be sent to worker processes.*engine='threads'"):
        aps.train(problem, workers=2, steps=5, engine=engine)
    assert not aps.violations(aps.train(problem, workers=2, steps=5, engine="threads").trace)


def test_bad_models_and_data_are_explained():
    with pytest.raises(TypeError, match="model=.*torch.nn.Module"):
        aps.problems.from_torch(lambda x: x, X, Y)
    with pytest.raises(ValueError, match="X has 512 examples and y has 10"):
        aps.problems.from_torch(sequential(), X, Y[:10])
    with pytest.raises(TypeError, match="X=.*numpy array or a torch tensor"):
        aps.problems.from_torch(sequential(), X.tolist(), Y)
    with pytest.raises(ValueError, match="metric='f1'"):
        aps.problems.from_torch(sequential(), X, Y, metric="f1")


def test_digits_load_without_the_network(monkeypatch):
    def refuse(*_, **__):
        raise OSError("no network in this test")
    monkeypatch.setattr(socket, "socket", refuse)
    digits = aps.problems.Digits(model="mlp", seed=0)
    assert digits.x0.dtype == np.float32 and digits.n + len(digits.y_test) == 1797
    assert sorted(set(digits.labels.tolist())) == list(range(10))


def test_digits_cnn_reaches_95_percent_with_4_async_workers_on_processes():
    run = aps.train(aps.problems.Digits(model="cnn", seed=0), workers=4, policy="async", lr=0.1,
                    steps=1500, batch_size=32, engine="processes", loss_every=100, seed=0)
    accuracy = [a for a in run.metrics["accuracy"] if a == a]      # evaluated every 100 versions
    # "reaches": one evaluation at >= 95 % (typically 0.96-0.97 here); the last may dip a little on a
    # loaded machine (a CI run ended at 0.940 after 0.95+ evaluations), so it only has to stay >= 90 %
    assert not aps.violations(run.trace)
    assert max(accuracy) >= 0.95 and accuracy[-1] >= 0.90, accuracy


def test_by_label_shards_give_each_worker_a_few_digits():
    digits = aps.problems.Digits(model="mlp", seed=0)
    shards = digits.shards(5, "by_label")
    assert all(len(set(digits.labels[s].tolist())) <= 3 for s in shards)


def test_the_charts_plot_accuracy_as_they_plot_the_loss():
    from asyncps.widgets import loss_curves

    run = aps.simulate(MODEL, workers=2, lr=0.2, steps=30, batch_size=16, loss_every=5)
    assert "accuracy per time" in loss_curves({"async": run}, by="time", of="accuracy")
    with pytest.raises(ValueError, match="of='f1' is not allowed: this run has the loss, 'accuracy'"):
        loss_curves({"async": run}, of="f1")


def test_threads_sharing_one_torch_problem_compute_exact_gradients_and_leave_the_model_alone():
    rng = np.random.default_rng(0)
    batches = [np.sort(rng.choice(MODEL.n, 32, replace=False)) for _ in range(40)]
    reference = [MODEL.gradient(MODEL.x0, b) for b in batches]
    wrong = []

    def work():
        wrong.extend(i for i, b in enumerate(batches)
                     if not np.array_equal(MODEL.gradient(MODEL.x0, b), reference[i]))
    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    user_weights = torch.nn.utils.parameters_to_vector(MODEL.model.parameters()).detach().numpy()
    assert np.array_equal(user_weights, MODEL.x0)


def test_replicas_belong_to_the_problem_not_to_the_thread_that_made_them(monkeypatch):
    """Issue 26: torch's rpc runs the server's handlers on threads whose Python state is dropped
    after every call. The replicas lived in a threading.local, which that state owns, so the
    server's evaluations destroyed a copy of the model at the end of each call, and torch 2.11
    crashed doing it (double free). A replica made on a thread outlives it and serves the next
    thread; two calls at once get two replicas."""
    problem = aps.problems.from_torch(sequential(), X, Y)
    made, real = [], torch_model._Replica.__init__

    def counted(replica, model, device):
        real(replica, model, device)
        made.append(weakref.ref(replica))
    monkeypatch.setattr(torch_model._Replica, "__init__", counted)
    for i in range(4):                               # one after another, each on a thread of its own
        thread = threading.Thread(target=lambda i=i: (problem.loss(problem.x0 + i),
                                                      problem.gradient(problem.x0, np.arange(8))))
        thread.start()
        thread.join()
    assert len(made) == 1 and made[0]() is not None, "the thread's end destroyed its replica"
    inside = threading.Barrier(2)

    def at_once():
        with problem._borrowed():
            inside.wait(timeout=10)
    threads = [threading.Thread(target=at_once) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 2 and all(ref() is not None for ref in made)


def test_digits_leave_torch_s_global_random_state_alone():
    before = torch.random.get_rng_state()
    aps.problems.Digits(model="cnn", seed=3)
    assert torch.equal(before, torch.random.get_rng_state())


# -- a model that does not fit its data or its loss is refused at from_torch, in the learner's terms --
F = torch.nn.functional
X8, Y4 = X[:64], np.arange(64) % 4                           # 8 values per row, labels 0..3


def net(*layers):
    return torch.nn.Sequential(*layers)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.layer(x)


def nan_at(array, where, value=np.nan):
    array = array.astype(np.float32 if array.dtype.kind == "f" else float, copy=True)
    array[where] = value
    return array


MISFITS = [  # (model, X, y, other arguments, error type, words the message must hold)
    (net(torch.nn.Linear(8, 3)), X8, Y4, {}, ValueError,
     ["the model outputs 3 values per sample but y holds labels 0..3 (4 classes): give the last "
      "layer 4 outputs (nn.Linear(8, 4))"]),
    (torch.nn.Linear(8, 4), X8, Y4 + 1, {}, ValueError, ["labels 1..4 (5 classes)", "pass y - 1"]),
    (torch.nn.Linear(8, 4), X8, Y4, dict(X_test=X8[:8], y_test=Y4[:8] + 4), ValueError,
     ["y_test holds labels 4..7"]),
    (torch.nn.Linear(8, 2), X8, np.where(Y4 % 2, 1, -1), {}, ValueError,
     ["y holds labels -1..1", "class labels 0..1", "(y + 1) // 2"]),
    (torch.nn.Linear(8, 1), X8, Y4, dict(loss=F.mse_loss), ValueError,
     ["loss=mse_loss", "shape (4, 1)", "y gives shape (4,)", "y.reshape(-1, 1)", "cross_entropy"]),
    (torch.nn.Linear(8, 3), X8, Y4, dict(loss=torch.nn.MSELoss()), ValueError,
     ["loss=MSELoss", "shape (4, 3)", "for class labels use loss=torch.nn.functional.cross_entropy"]),
    (torch.nn.Linear(8, 1), X8, X8[:, :1], {}, ValueError,
     ["the model outputs 1 value per sample", "always 0", "loss=torch.nn.functional.mse_loss"]),
    (torch.nn.Linear(8, 4), X8, Y4.astype(np.float32), {}, TypeError,
     ["y holds floats (float32)", "integer class labels 0..3", "y.astype(np.int64)"]),
    (torch.nn.Linear(8, 4), X8, Y4.reshape(-1, 1), {}, ValueError,
     ["y has shape (64, 1) (a column)", "shape (64,)", "y.ravel()"]),
    (net(torch.nn.Linear(8, 1), torch.nn.Flatten(0)), X8, Y4 % 2,
     dict(loss=F.binary_cross_entropy_with_logits), TypeError,
     ["y holds integers (int64)", "y.astype(np.float32)"]),
    (torch.nn.Linear(8, 4), (10 * X8).astype(np.int64), Y4, {}, TypeError,
     ["X holds integers (int64) but the model computes in float32", "X.astype(np.float32)"]),
    (net(torch.nn.Linear(5, 4)), X8, Y4, {}, ValueError,
     ["X has 8 values per row but the model's first layer takes 5", "nn.Linear(8, 4)"]),
    (net(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(12, 4)), X8, Y4, {}, ValueError,
     ["nn.Linear(12, 4) gets 16 values per sample", "nn.Linear(16, 4)"]),
    (net(torch.nn.Linear(8, 4)), X8.reshape(64, 2, 4), Y4, {}, ValueError,
     ["X's rows have shape (2, 4)", "nn.Flatten()"]),
    (net(torch.nn.Conv2d(1, 4, 2), torch.nn.Flatten(), torch.nn.Linear(12, 4)), X8.reshape(64, 2, 4), Y4,
     {}, ValueError, ["X's rows have shape (2, 4)", "channel axis", "X[:, None]"]),
    (torch.nn.Linear(8, 4), X8, Y4, dict(loss=torch.nn.CrossEntropyLoss(reduction="none")), ValueError,
     ["loss returned a tensor of shape (4,)", "one number per batch", "reduction='mean'"]),
    (torch.nn.Linear(8, 4), X8, Y4, dict(loss=lambda out, t: F.cross_entropy(out, t).item()), TypeError,
     ["loss returned a float", "(no .item() or numpy)"]),
    (torch.nn.Linear(8, 4), X8, Y4, dict(loss=lambda out, t: F.cross_entropy(out.detach(), t)),
     ValueError, ["does not depend on the model's parameters"]),
    (torch.nn.Linear(8, 1), X8, X8[:, :1], dict(loss=F.mse_loss, metric="accuracy"), ValueError,
     ["metric='accuracy' is not allowed", "y holds floats", "metric=None"]),
    (torch.nn.Linear(8, 4), X8, Y4, dict(metric=lambda out: 1.0), TypeError,
     ["metric=<lambda> cannot score", "metric(outputs, targets) -> float"]),
    (Net, X8, Y4, {}, TypeError, ["model=<class", "not the class Net itself: pass model=Net()"]),
    (torch.nn.Linear(8, 4), X8, Y4, dict(loss=torch.nn.CrossEntropyLoss), TypeError,
     ["loss=<class", "not the class CrossEntropyLoss itself: pass loss=nn.CrossEntropyLoss()"]),
    (torch.nn.Linear(8, 4), X8, Y4, dict(loss="mse"), TypeError, ["loss='mse'", "mse_loss"]),
    # the data: finite numbers, one row per example, as arrays
    (torch.nn.Linear(8, 4), nan_at(X8, (3, 1)), Y4, {}, ValueError,
     ["X holds NaN at row 3, column 1 (X[3, 1]): the data must be finite (drop or fill the missing values)"]),
    (torch.nn.Linear(8, 1), X8, nan_at(X8[:, 0], 5, -np.inf), dict(loss=F.mse_loss), ValueError,
     ["y holds -inf at row 5 (y[5])", "drop or clip"]),
    (torch.nn.Linear(8, 4), X8, Y4, dict(X_test=nan_at(X8[:8], (2, 7), np.inf), y_test=Y4[:8]), ValueError,
     ["X_test holds inf at row 2, column 7"]),
    (torch.nn.Linear(4, 4), nan_at(X8.reshape(64, 2, 4), (5, 1, 2)), Y4, {}, ValueError,
     ["X holds NaN at row 5, position (1, 2) within the row (X[5, 1, 2])"]),
    (torch.nn.Linear(8, 4), X8.astype(str), Y4, {}, TypeError, ["X holds text", "X.astype(np.float32)"]),
    (torch.nn.Linear(8, 4), np.array([[1.0, 2.0], [3.0]] * 32, dtype=object), Y4, {}, TypeError,
     ["X holds Python objects", "rows all have the same length"]),
    (torch.nn.Linear(8, 4), X8.astype(np.complex64), Y4, {}, TypeError, ["X holds complex64", "real numbers"]),
    (torch.nn.Linear(8, 4), X8[:0], Y4[:0], {}, ValueError, ["X holds no examples (shape (0, 8))"]),
    (torch.nn.Linear(8, 4), X8, Y4[:10], {}, ValueError, ["X has 64 examples and y has 10", "one target"]),
    (torch.nn.Linear(8, 4), X8.tolist(), Y4, {}, TypeError, ["not a list: pass np.asarray(X, dtype=np.float32)"]),
    (torch.nn.Linear(8, 4), X8, tuple(Y4), {}, TypeError, ["not a tuple: pass np.asarray(y)"]),
    (torch.nn.Linear(8, 4), Y4, X8, {}, ValueError, ["X is 1-D and y has rows of shape (8,): they look swapped"]),
    (torch.nn.Linear(1, 4), X8[:, 0], Y4, {}, ValueError, ["X is 1-D", "X.reshape(-1, 1)"]),
    (torch.nn.Linear(8, 4), X8, np.eye(4, dtype=int)[Y4], {}, ValueError,
     ["y has shape (64, 4)", "one-hot: pass y.argmax(axis=1)"]),
    (torch.nn.Linear(8, 4), X8[:1], Y4[:1], dict(test_fraction=0.6), ValueError,
     ["test_fraction=0.6 is not allowed here", "all 1 examples, leaving none to train on"]),
    (torch.nn.Flatten(), X8, Y4, {}, ValueError, ["model=Flatten has no parameters to train"]),
    (torch.nn.Linear(8, 4), X8, Y4, dict(y_test=Y4[:8]), ValueError,
     ["y_test is given without X_test: give both"]),
    (torch.nn.Linear(8, 4), X8, Y4, dict(X_test=X8[:8]), ValueError, ["X_test is given without y_test"]),
    (torch.nn.Linear(8, 4), X8, Y4, dict(X_test=X8[:8, :6], y_test=Y4[:8]), ValueError,
     ["X_test has 6 values per row but X has 8"]),
]


@pytest.mark.parametrize("model, X, y, kwargs, kind, words", MISFITS,
                         ids=[f"{i}-{m[5][0][:40]}" for i, m in enumerate(MISFITS)])
def test_a_model_that_does_not_fit_its_data_or_loss_is_refused_saying_what_to_change(model, X, y, kwargs,
                                                                                       kind, words):
    with pytest.raises(kind) as refused:
        aps.problems.from_torch(model, X, y, **kwargs)
    message = str(refused.value)
    assert "\n" not in message and all(w in message for w in words), message


def fitting():
    yield torch.nn.Linear(8, 4), X8, np.eye(4, dtype=np.float32)[Y4], {}          # class probabilities
    yield torch.nn.Linear(8, 4), X8, np.where(Y4 == 0, -100, Y4), {}                 # ignore_index
    yield torch.nn.Linear(8, 2), X8, Y4 % 2 == 0, {}                                 # bool labels
    yield torch.nn.Linear(8, 4), X8 > 0, Y4, {}                                      # bool inputs
    yield torch.nn.Linear(8, 4).double(), X8, Y4, {}
    yield torch.nn.Linear(8, 1), X8, X8[:, :1].astype(np.float64), dict(loss=torch.nn.MSELoss())
    yield (net(torch.nn.Linear(8, 1), torch.nn.Flatten(0)), X8, (Y4 % 2).astype(np.float32),
           dict(loss=F.binary_cross_entropy_with_logits))
    yield (net(torch.nn.Embedding(10, 4), torch.nn.Flatten(), torch.nn.Linear(32, 4)),
           (np.abs(X8) * 3).astype(np.int64) % 10, Y4, {})                         # token ids
    yield torch.nn.Linear(8, 4), torch.from_numpy(X8), torch.from_numpy(Y4), dict(metric="accuracy")
    yield torch.nn.Embedding(10, 4), Y4, Y4, {}                                      # one token id each


@pytest.mark.parametrize("model, X, y, kwargs", list(fitting()))
def test_models_that_fit_their_data_and_loss_are_accepted(model, X, y, kwargs):
    problem = aps.problems.from_torch(model, X, y, **kwargs)
    assert np.all(np.isfinite(problem.gradient(problem.x0, np.arange(8))))


def test_the_check_leaves_the_model_and_torch_s_random_state_alone():
    model = net(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 4))
    state = {k: v.clone() for k, v in model.state_dict().items()}
    before = torch.random.get_rng_state()
    aps.problems.from_torch(model, X8, Y4)
    assert torch.equal(before, torch.random.get_rng_state())
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in state.items())
