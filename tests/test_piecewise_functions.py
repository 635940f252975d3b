"""``np.piecewise(x, condlist, funclist)`` with lambdas, functions of the user's and of
NumPy, and numbers: each piece's derivative is its function's, in s2s (the call written as
the item writes NumPy does, passes/piecewise_calls.py) and on the tape (NumPy's algorithm
run on tape values, runtime/piecewise.py); both refused it ("np.piecewise has no
derivative rule"). Oracle: central differences, at points off the pieces' edges."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")


def cube(t):
    return t**3 - t


def two_lambdas(x):
    return np.sum(np.piecewise(x, [x < 0, x >= 0], [lambda t: t**2, lambda t: np.sin(t)]))


def otherwise_and_a_constant(x):
    y = np.piecewise(x, [x < -0.5, x > 0.5], [cube, lambda t: np.cos(t) * t, 0.25])
    return np.sum(y * x)


def defined_on_its_piece_only(x):
    # log and sqrt would be nan off their piece: each function sees its piece's values only
    y = np.piecewise(x, [x > 0.0], [np.log, lambda t: np.sqrt(-t) * 3.0])
    return np.sum(y**2)


def closing_over_a_value_being_differentiated(x):
    scale = np.sum(x**2)
    y = np.piecewise(x, [x < 0.1], [lambda t: scale * t, np.exp])
    return np.sum(y) + scale


def a_piece_with_no_entry(x):
    return np.sum(np.piecewise(x, [x > 100.0, x <= 100.0], [np.exp, lambda t: t * x[0, 0]]))


PROGRAMS = [
    two_lambdas,
    otherwise_and_a_constant,
    defined_on_its_piece_only,
    closing_over_a_value_being_differentiated,
    a_piece_with_no_entry,
]


def assert_grad_jvp_hvp_without_fallback(f, x, v, mode):
    taped = sg.grad(f, mode="tape")
    assert_close(taped(x), numeric_grad(f, [x], 0))
    expected_hvp = numeric_jvp(taped, [x], 0, v, step=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.errors.FallbackWarning)
        assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        assert_close(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-5)
        for _ in range(2):
            (product,) = sg.hvp(f, (x,), (v,), mode=mode)
            assert_close(product, expected_hvp, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_each_piece_has_its_functions_derivative(f, mode):
    rng = np.random.default_rng(5)
    x = rng.choice([-1.0, 1.0], size=(2, 3)) * rng.uniform(0.7, 1.5, size=(2, 3))
    v = rng.normal(size=(2, 3))
    np.testing.assert_allclose(sg.grad(f, mode=mode)(x).shape, x.shape)
    assert_grad_jvp_hvp_without_fallback(f, x, v, mode)


def test_the_value_is_numpys():
    x = np.array([[-1.2, -0.2], [0.3, 0.9]])
    for f in PROGRAMS:
        value, _ = sg.value_and_grad(f, mode="s2s")(x)
        np.testing.assert_allclose(value, f(x), rtol=1e-14)
        value, _ = sg.value_and_grad(f, mode="tape")(x)
        np.testing.assert_allclose(value, f(x), rtol=1e-14)
