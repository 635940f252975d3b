"""Optimisers over pytrees: each against the update written out by hand, and in use."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad.optimizers import adam, momentum, rmsprop, sgd
from s2sgrad.pytrees import tree_leaves


def quadratic_gradient(params, i):
    """The gradient of sum((p - target)**2) / 2 for each leaf: p - target."""
    return {"a": params["a"] - 1.0, "b": [params["b"][0] + 2.0]}


START = {"a": np.array([0.0, 3.0]), "b": [np.array(5.0)]}


def by_hand(update, steps):
    """Leaf-wise updates written out independently of the module."""
    leaves = [np.array([0.0, 3.0]), np.array(5.0)]
    targets = [1.0, -2.0]
    state = [dict() for _ in leaves]
    for i in range(steps):
        leaves = [update(x, x - t, i, s) for x, t, s in zip(leaves, targets, state)]
    return leaves


def hand_sgd(x, g, i, s):
    return x - 0.1 * g


def hand_momentum(x, g, i, s):
    s["v"] = 0.8 * s.get("v", 0.0) - 0.1 * g
    return x + s["v"]


def hand_rmsprop(x, g, i, s):
    s["sq"] = 0.9 * s.get("sq", 0.0) + 0.1 * g**2
    return x - 0.1 * g / (np.sqrt(s["sq"]) + 1e-8)


def hand_adam(x, g, i, s):
    s["m"] = 0.9 * s.get("m", 0.0) + 0.1 * g
    s["v"] = 0.999 * s.get("v", 0.0) + 0.001 * g**2
    m_hat, v_hat = s["m"] / (1 - 0.9 ** (i + 1)), s["v"] / (1 - 0.999 ** (i + 1))
    return x - 0.1 * m_hat / (np.sqrt(v_hat) + 1e-8)


@pytest.mark.parametrize(
    "optimiser, hand, hyper",
    [
        (sgd, hand_sgd, {}),
        (momentum, hand_momentum, {"mass": 0.8}),
        (rmsprop, hand_rmsprop, {}),
        (adam, hand_adam, {}),
    ],
)
def test_each_step_is_the_documented_update(optimiser, hand, hyper):
    result = optimiser(quadratic_gradient, START, 7, 0.1, **hyper)
    assert isinstance(result, dict) and isinstance(result["b"], list)
    for got, expected in zip(tree_leaves(result), by_hand(hand, 7)):
        assert np.allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert np.array_equal(START["a"], [0.0, 3.0])  # the starting parameters are not changed


def test_callback_sees_every_step_and_schedules_are_called_with_the_step():
    seen, sizes = [], []

    def schedule(i):
        sizes.append(i)
        return 0.1 / (1 + i)

    sgd(quadratic_gradient, START, 4, schedule, callback=lambda p, i, g: seen.append(i))
    assert seen == [0, 1, 2, 3] and sizes == [0, 1, 2, 3]


def test_a_gradient_of_another_structure_is_refused():
    with pytest.raises(ValueError, match="structure .* at step 0"):
        sgd(lambda p, i: [p["a"]], START, 3)
    with pytest.raises(ValueError, match="whole number"):
        adam(quadratic_gradient, START, -1)


@dataclasses.dataclass
class Model:
    w: np.ndarray
    b: float


def test_training_a_regression_with_s2sgrad_gradients_finds_the_true_weights():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3))
    truth = np.array([1.0, -2.0, 0.5])
    y = x @ truth + 0.3

    def loss(params, x, y):
        (w, b), extra = params
        return np.mean((x @ w + b - y) ** 2) + np.sum(extra["decay"] ** 2)

    dloss = sg.grad(loss)
    start = ((np.zeros(3), 0.0), {"decay": np.ones(2)})
    for optimiser, size in [(adam, 0.05), (rmsprop, 0.01), (momentum, 0.05), (sgd, 0.1)]:
        (w, b), extra = optimiser(lambda p, i: dloss(p, x, y), start, 1500, size)
        assert np.allclose(w, truth, atol=2e-2), optimiser.__name__
        assert abs(b - 0.3) < 2e-2 and np.all(np.abs(extra["decay"]) < 2e-2)


def test_dataclass_parameters_keep_their_class():
    result = sgd(lambda p, i: Model(p.w - 1.0, p.b + 1.0), Model(np.zeros(2), 0.0), 200, 0.1)
    assert isinstance(result, Model)
    assert np.allclose(result.w, 1.0) and abs(result.b + 1.0) < 1e-9
