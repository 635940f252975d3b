"""Derivatives of any order by nesting an elementwise gradient, ``egrad(f) = grad(lambda x:
sum(f(x)))``, as autograd's tanh example does. From the fourth level on, the function the
tape calls back holds values being differentiated in its closure; looking it up among the
rules hashed them, which the tape refuses."""

import warnings

import numpy as np
import pytest

import s2sgrad as sg


def tanh_by_exp(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def egrad(f, mode):
    return sg.grad(lambda x: np.sum(f(x)), mode=mode)


def tanh_derivative(order, x):
    """d^n tanh / dx^n as a polynomial in t = tanh(x): d/dx p(t) = p'(t) (1 - t^2)."""
    p = np.polynomial.Polynomial([0.0, 1.0])
    one_minus_t2 = np.polynomial.Polynomial([1.0, 0.0, -1.0])
    for _ in range(order):
        p = p.deriv() * one_minus_t2
    return p(np.tanh(x))


@pytest.mark.parametrize("mode", ["auto", "tape"])
@pytest.mark.parametrize("order", [4, 5])
@pytest.mark.parametrize("shape", [(5,), (2, 3)])
def test_nested_elementwise_gradients_match_the_derivatives_of_tanh(mode, order, shape):
    x = np.random.default_rng(order).uniform(-2.0, 2.0, shape)
    f = tanh_by_exp
    for _ in range(order):
        f = egrad(f, mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        got = f(x)
    np.testing.assert_allclose(got, tanh_derivative(order, x), rtol=1e-8, atol=1e-10)


def test_third_nested_gradient_matches_central_differences_of_the_second():
    x = np.random.default_rng(0).uniform(-1.5, 1.5, 4)
    second = egrad(egrad(tanh_by_exp, "tape"), "tape")
    third = egrad(second, "tape")
    h = 1e-5
    numeric = (second(x + h) - second(x - h)) / (2 * h)
    np.testing.assert_allclose(third(x), numeric, rtol=1e-6, atol=1e-8)
