"""A user's own torch model (`aps.problems.from_torch`) and real data (`aps.problems.Digits`):
trained on every engine, float32 from the server to the trace and the checkpoint, the engine
invariants intact, a model that cannot travel refused at once, no network needed."""
import socket
import threading

import numpy as np
import pytest
import torch
from engines import ALL, nothing_left_behind, run_on  # noqa: F401 (a fixture)

import asyncps as aps

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


def test_digits_leave_torch_s_global_random_state_alone():
    before = torch.random.get_rng_state()
    aps.problems.Digits(model="cnn", seed=3)
    assert torch.equal(before, torch.random.get_rng_state())
