"""A model that changes its own state as it runs (counts its calls, keeps its last input),
differentiated as itself (``sg.hessian(model)``) or by a bound method
(``sg.hessian(model.loss)``): the tape's forward-mode Jacobian runs it once per column, and
each run must start from the state the first started from, as one call would see it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_jacobian

import s2sgrad as sg

MODES = ["s2s", "tape", "auto"]


class CountingModel:
    """Scales its output by how many times it has been called."""

    def __init__(self, weights) -> None:
        self.calls = 0
        self.weights = weights

    def __call__(self, x):
        self.calls += 1
        return np.sum(np.sin(x * self.weights)) * self.calls

    def loss(self, x):
        self.calls += 1
        return np.sum(np.sin(x * self.weights)) * self.calls

    def features(self, x):
        self.calls += 1
        return np.sin(x * self.weights) * self.calls


class RememberingModel:
    """Keeps its last input and adds a term computed from the one before it."""

    def __init__(self, shape) -> None:
        self.last = np.zeros(shape)

    def loss(self, x):
        earlier = self.last
        self.last = x * 1.0
        return np.sum(np.cos(x) * (1.0 + earlier**2))


def _still(scale, weights):
    """The counting model's function with its count fixed: the finite differences' oracle."""
    return lambda x: np.sum(np.sin(x * weights)) * scale


def _quietly(transformed, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # auto's notes of falling back to the tape
        return transformed(*args)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", [((4,), (4,)), ((2, 3), (3,)), ((3, 1), (1, 2))])
@pytest.mark.parametrize("which", ["callable", "bound method"])
def test_a_hessian_sees_the_count_one_call_would(which, shapes, mode):
    rng = np.random.default_rng(11)
    x_shape, w_shape = shapes
    model = CountingModel(rng.normal(size=w_shape))
    f = model if which == "callable" else model.loss
    for call in (1, 2):
        x = rng.normal(size=np.broadcast_shapes(x_shape, w_shape))
        kept = x.copy()
        hessian = _quietly(sg.hessian(f, mode=mode), x)
        assert model.calls == call or mode != "tape"  # generated code counts in a variable
        model.calls = call
        expected = numeric_jacobian(sg.grad(_still(call, model.weights), mode="tape"), [x], 0)
        assert_close(hessian, expected)
        np.testing.assert_array_equal(x, kept)


@pytest.mark.parametrize("mode", MODES)
def test_a_forward_jacobian_of_a_method_counting_its_calls(mode):
    rng = np.random.default_rng(12)
    model = CountingModel(rng.normal(size=(2, 3)))
    for call in (1, 2):
        x = rng.normal(size=(2, 3))
        jacobian = _quietly(sg.jacfwd(model.features, mode=mode), x)
        model.calls = call
        expected = numeric_jacobian(lambda x, c=call: np.sin(x * model.weights) * c, [x], 0)
        assert_close(jacobian, expected)


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_a_hessian_of_a_method_that_keeps_its_last_input(mode):
    """Every column's run reads the input the call before left, not the one the column
    before stored."""
    rng = np.random.default_rng(13)
    model = RememberingModel(3)
    earlier = model.last.copy()
    for _ in range(2):
        x = rng.normal(size=3)
        hessian = _quietly(sg.hessian(model.loss, mode=mode), x)

        def same_call(x, earlier=earlier):
            return np.sum(np.cos(x) * (1.0 + earlier**2))

        assert_close(hessian, numeric_jacobian(sg.grad(same_call, mode="tape"), [x], 0))
        np.testing.assert_array_equal(model.last, x)
        earlier = x
