"""``r.sum(x)`` where ``r`` is not an array: ``numpy`` held in a variable or a parameter
(``m = np``), or an object of the user's with a method named as an array's. It was read as
``np.ndarray.sum(r, axis=x)``, and the gradient with respect to ``x`` came out zero."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg


class Accumulator:
    def __init__(self, scale: float) -> None:
        self.scale = scale

    def sum(self, v):
        return np.sum(v * self.scale)

    def mean(self, v, w):
        return np.mean(v * w)


ACCUMULATOR = Accumulator(3.0)
HOLDER = {"np": np}
CONSTANT = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 2.0]])


def numpy_in_a_local(x):
    m = np
    return m.sum(np.sin(x) * x) + m.dot(x, x)


def numpy_as_a_default(x, m=np):
    return m.sum(x**3) + m.prod(x, axis=0)


def numpy_from_a_dict(x):
    m = HOLDER["np"]
    return m.mean(np.cos(x)) * m.max(x)


def method_of_an_object(x):
    acc = ACCUMULATOR
    return acc.sum(x * x) + acc.mean(x, np.sin(x))


def method_of_an_object_argument(x, acc):
    return acc.sum(np.exp(x))


def array_methods_kept(x):
    c = CONSTANT
    y = x * 2.0
    return np.sum(c.dot(x) ** 2) + y.sum() + np.sum(c.clip(-0.5, x[0]))


def array_methods_twin(x):  # what the tape differentiates (it refuses c.dot(x))
    return np.sum((CONSTANT @ x) ** 2) + np.sum(x * 2.0) + np.sum(np.clip(CONSTANT, -0.5, x[0]))


CASES = [
    (numpy_in_a_local, (), None),
    (numpy_as_a_default, (), None),
    (numpy_from_a_dict, (), None),
    (method_of_an_object, (), None),
    (method_of_an_object_argument, (Accumulator(-2.0),), None),
    (array_methods_kept, (), array_methods_twin),
]


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("f, rest, twin", CASES, ids=[f.__name__ for f, _, _ in CASES])
def test_gradient_jvp_and_hvp(f, rest, twin, mode):
    if twin is not None and mode == "tape":
        pytest.skip("the tape refuses c.dot(x) of a plain array c")
    rng = np.random.default_rng(11)
    x, v = rng.normal(size=3), rng.normal(size=3)
    kept = x.copy()
    expected = numeric_grad(f, [x, *rest], 0)
    expected_tangent = numeric_jvp(f, [x, *rest], 0, v)
    tape_gradient = sg.grad(twin or f, mode="tape")
    expected_product = numeric_jvp(lambda z: tape_gradient(z, *rest), [x], 0, v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = sg.grad(f, mode=mode)
        for _ in range(2):
            assert_close(gradient(x, *rest), expected, rtol=1e-5, atol=1e-6)
            _, tangent = sg.jvp(lambda z: f(z, *rest), (x,), (v,), mode=mode)
            assert_close(tangent, expected_tangent, rtol=1e-5, atol=1e-6)
            (product,) = sg.hvp(lambda z: f(z, *rest), (x,), (v,), mode=mode)
            assert_close(product, expected_product, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(x, kept)
