"""``np.maximum(z, c)`` / ``np.minimum(z, c)`` against a constant: the derivative is a mask
of the result, so the backward keeps the result (as a hand-written relu does), not the
pre-activation; right against central differences in every mode, at ties too."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_gradient_in_every_mode, call_twice, numeric_grad

import s2sgrad as sg

RNG = np.random.default_rng(41)


def relu_layer(W, x, b):
    h = np.maximum(x @ W + b, 0.0)
    return np.sum(h * h)


def clipped(z):
    return np.sum(np.minimum(0.5, z) ** 3 + np.maximum(z, np.array([0.1, -0.2, 0.3])))


@pytest.mark.parametrize(
    "f, args",
    [
        (relu_layer, (RNG.standard_normal((4, 3)), RNG.standard_normal((5, 4)), np.zeros(3))),
        (clipped, (RNG.standard_normal((2, 3)),)),
    ],
)
def test_gradient_against_differences(f, args):
    assert_gradient_in_every_mode(f, args, rtol=1e-5)


def test_at_a_tie_the_constant_takes_the_derivative():
    z = np.array([-1.0, 0.0, 2.0])
    for mode in ("s2s", "tape"):
        gradient = sg.grad(lambda v: np.sum(np.maximum(v, 0.0)), mode=mode)
        np.testing.assert_array_equal(call_twice(gradient, z), [0.0, 0.0, 1.0])


def test_second_order():
    (z,) = (RNG.standard_normal((2, 3)),)
    v = RNG.standard_normal((2, 3))
    gradient = sg.grad(clipped, mode="s2s")
    expected = numeric_grad(lambda x: np.sum(gradient(x) * v), (z,), 0)
    for mode in ("s2s", "tape"):
        (actual,) = sg.hvp(clipped, (z,), (v,), mode=mode)
        assert_close(actual, expected, rtol=1e-4, atol=1e-6)


def test_the_specialised_backward_reads_the_result_not_the_pre_activation():
    W, x, b = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 4)), RNG.standard_normal(3)
    gradient = sg.grad(relu_layer, mode="s2s")
    gradient(W, x, b)
    code = sg.source(gradient)
    assert "h = np.maximum(x @ W + b, 0.0)" in code  # no temporary kept for the backward
    assert "(h > 0.0)" in code
