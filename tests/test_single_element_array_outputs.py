"""``grad`` of a function whose output is an array of one element with axes (shape (1,),
(1, 1)): its seed is an array of that shape. The code specialised to shapes took every
float64 seed for the number 1.0, and a method the probe had seen called on an array made
from it (``np.reshape(g, ())`` as ``g.reshape(())``) was then called on a Python float
(AttributeError from generated code, on the second call). Only a seed without axes is 1.0."""

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg


def summed_then_reshaped(x):
    return np.sum(x).reshape(1, 1) * 2.0


def reduced_with_keepdims(x):
    return np.sum(np.sin(x), keepdims=True) * 3.0


def projected(x):
    return np.tanh(x) @ np.ones((x.shape[0], 1)) / 2.0


def transposed_sum(x):
    return (np.sum(x**2) * np.ones((1, 1))).T + np.max(x)


FUNCTIONS = [summed_then_reshaped, reduced_with_keepdims, projected, transposed_sum]


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("size", [2, 5])
@pytest.mark.parametrize("f", FUNCTIONS)
def test_the_gradient_of_a_single_element_array_output(f, size, mode):
    x = np.random.default_rng(size).normal(size=size)
    want = numeric_grad(f, [x], 0)
    df = sg.grad(f, mode=mode)
    for _ in range(3):  # the generic code, then the code specialised to shapes
        np.testing.assert_allclose(df(x), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("f", FUNCTIONS[1:3])
def test_second_order_and_forward_mode(f, mode):
    x = np.random.default_rng(3).normal(size=3)
    direction = np.array([0.5, -1.0, 2.0])
    for _ in range(2):
        _, tangent = sg.jvp(f, (x,), (direction,), mode=mode)
        np.testing.assert_allclose(
            np.ravel(tangent), [numeric_grad(f, [x], 0) @ direction], rtol=1e-6
        )
        rows = [lambda z, i=i: sg.grad(f)(z)[i] for i in range(x.size)]
        want = np.stack([numeric_grad(row, [x], 0) for row in rows])
        np.testing.assert_allclose(sg.hessian(f, mode=mode)(x), want, rtol=1e-5, atol=1e-6)
