"""The ParameterServer on its own: versions, copies, stale pushes, rounds, update rules."""
import numpy as np
import pytest

import asyncps as aps


def test_pull_is_a_copy_with_its_version():
    server = aps.ParameterServer([1.0, 2.0], workers=1, lr=0.1)
    params, version = server.pull(0)
    params[:] = 99.0
    assert version == 0 and server.params.tolist() == [1.0, 2.0]


def test_a_gradient_computed_on_v0_is_applied_to_v1():
    server = aps.ParameterServer([1.0], workers=2, policy="async", lr=0.5)
    _, v_a = server.pull(0)
    _, v_b = server.pull(1)
    first = server.push(0, [1.0], v_a)                 # v0 -> v1
    second = server.push(1, [1.0], v_b)                # computed on v0, applied to v1 -> v2
    assert (first.computed_on, first.applied_to, first.staleness) == (0, 0, 0)
    assert (second.computed_on, second.applied_to, second.staleness) == (0, 1, 1)
    assert server.version == 2 and server.params.tolist() == [0.0]


def test_sync_round_averages_into_one_version():
    server = aps.ParameterServer([0.0], workers=2, policy="sync", lr=1.0)
    server.push(0, [2.0], 0)
    assert server.version == 0 and not server.may_start(0) and server.may_start(1)
    server.push(1, [4.0], 0)
    assert server.version == 1 and server.params.tolist() == [-3.0]
    assert all(p.staleness == 0 and p.applied_to == 0 for p in server.trace.pushes)


def test_sync_refuses_a_second_push_in_one_round():
    server = aps.ParameterServer([0.0], workers=2, policy="sync", lr=1.0)
    server.push(0, [1.0], 0)
    with pytest.raises(RuntimeError, match="pushed twice"):
        server.push(0, [1.0], 0)


def test_ssp_gate_holds_a_worker_s_clocks_ahead():
    server = aps.ParameterServer([0.0], workers=2, policy="ssp", max_clocks_ahead=1, lr=0.1)
    server.push(0, [0.0], 0)
    assert server.may_start(0)                         # 1 ahead: allowed with s=1
    server.push(0, [0.0], 1)
    assert not server.may_start(0) and server.may_start(1)


def test_staleness_aware_lr_divides_by_staleness_plus_one():
    server = aps.ParameterServer([0.0], workers=2, lr=1.0, lr_schedule="divide_by_staleness")
    server.push(0, [1.0], 0)                           # stale 0: step 1
    server.push(1, [1.0], 0)                           # stale 1: step 1/2
    assert server.params.tolist() == [-1.5]


def test_momentum_accumulates():
    server = aps.ParameterServer([0.0], workers=1, lr=1.0, momentum=0.5)
    for v in range(3):
        server.push(0, [1.0], v)
    assert server.params.tolist() == [-(1 + 1.5 + 1.75)]


def test_losses_are_recorded_per_version():
    server = aps.ParameterServer([2.0], lr=0.5, loss=lambda x: float(x[0] ** 2))
    server.push(0, [2.0], 0)
    assert server.trace.losses == [4.0, 1.0]


def test_push_of_wrong_shape_or_non_finite_gradient_is_refused():
    server = aps.ParameterServer([0.0, 0.0], lr=0.1)
    with pytest.raises(ValueError, match="shape"):
        server.push(0, [1.0], 0)
    with pytest.raises(ValueError, match="NaN or inf"):
        server.push(0, [np.nan, 0.0], 0)
    with pytest.raises(ValueError, match="computed_on"):
        server.push(0, [0.0, 0.0], 5)
