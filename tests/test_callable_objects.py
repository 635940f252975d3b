"""``sg.grad(model)`` of an instance of the user's class with a ``__call__`` of Python
code: source transformation refused it ("can only read the source of Python functions",
naming no line) and ``mode="auto"`` fell back to the tape. It is now differentiated as the
bound method ``model.__call__`` in every transform; an object with a derivative rule of its
own keeps its rule.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jacobian, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


class Quadratic:
    def __init__(self, weights):
        self.weights = weights

    def __call__(self, x):
        return np.sum(self.weights * np.sin(x) * x)


class Layer:
    def __call__(self, x, scale=1.0):
        return np.tanh(self.forward(x)) * scale

    def forward(self, x):
        return x * 2.0 - 0.5


class Loss(Layer):  # the __call__ inherited
    def forward(self, x):
        return x**2


def point(shape):
    return np.random.default_rng(sum(shape)).uniform(-1.0, 1.0, size=shape)


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
@pytest.mark.parametrize("mode", MODES)
def test_grad_and_value_and_grad(mode, shape):
    model = Quadratic(np.linspace(0.5, 2.0, num=int(np.prod(shape))).reshape(shape))
    x = point(shape)
    expected = numeric_grad(model, [x], 0)
    assert_close(call_twice(sg.grad(model, mode=mode), x), expected)
    value, gradient = sg.value_and_grad(model, mode=mode)(x)
    assert_close(value, model(x))
    assert_close(gradient, expected)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("model", [Layer(), Loss()])
def test_jacobian_and_jvp_of_a_vector_output(model, mode):
    x = point((3,))
    assert_close(sg.jacobian(model, mode=mode)(x), numeric_jacobian(model, [x], 0))
    v = np.array([1.0, -0.5, 0.25])
    _, tangent = sg.jvp(model, (x,), (v,), mode=mode)
    assert_close(tangent, numeric_jvp(model, [x], 0, v), rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_hessian_and_a_keyword(mode):
    model = Quadratic(np.array([1.0, 2.0, 3.0]))
    x = point((3,))
    expected = numeric_jacobian(sg.grad(model, mode="tape"), [x], 0)
    assert_close(sg.hessian(model, mode=mode)(x), expected, rtol=1e-5, atol=1e-7)
    loss = Loss()

    def total(z):
        return np.sum(loss(z, scale=3.0))

    assert_close(sg.grad(total, mode=mode)(x), numeric_grad(total, [x], 0))


def test_source_transformed_as_the_call_method():
    g = sg.grad(Quadratic(np.ones(2)), mode="s2s")
    g(np.ones(2))
    assert "__call__" in repr(g) and "def d__call__" in sg.source(g)


class Clipped:
    def __call__(self, x):
        return np.clip(x, -1.0, 1.0)


clipped = Clipped()


@sg.derivative(of=clipped)
def _clipped_derivative(x):
    return clipped(x), lambda g: 0.5 * g


def test_an_object_with_its_own_rule_keeps_it():
    # the tape cannot see into a callable object (controls.derivative): transformed code only
    for mode in ("s2s", "auto"):
        assert_close(sg.grad(clipped, mode=mode)(np.array([0.3])), np.array([0.5]))
