"""``x ** n`` at ``x == 0`` where the exponent ``n`` is 0: ``x ** 0`` is the constant 1,
whose derivative is 0. The rule used to compute ``n * x ** (n - 1)``, which is
``0 * inf = nan`` there (a ``ZeroDivisionError`` for a Python float): a polynomial
``sum(c * x ** i for i in range(k))`` had a nan gradient at 0, and ``x ** 1`` a nan second
derivative (its first derivative holds ``x ** 0``). The rule lowers the exponent by
``(n != 0)``, which the transformer folds away for a literal exponent.
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def polynomial(coefs, x):
    return np.sum(sum(c * x**i for i, c in enumerate(coefs)) ** 2)


def power_of_argument(x, n):
    return np.sum(np.power(x, n) + x**n)


def scalar_polynomial(x):
    total = 0.0
    for i in range(3):
        total = total + (i + 1.0) * x**i
    return total


def _quiet(function, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        return call_twice(function, *args)


@pytest.mark.parametrize("mode", MODES)
def test_gradient_of_a_polynomial_at_zero_is_finite(mode):
    coefs, x = np.array([0.5, 1.0, 2.0, 3.0]), np.linspace(-1.0, 1.0, 5)
    got = _quiet(sg.grad(polynomial, wrt=(0, 1), mode=mode), coefs, x)
    assert_close(got[0], numeric_grad(polynomial, [coefs, x], 0))
    assert_close(got[1], numeric_grad(polynomial, [coefs, x], 1))


@pytest.mark.parametrize("mode", MODES)
def test_hessian_of_a_polynomial_at_zero_is_finite(mode):
    coefs, x = np.array([0.5, 1.0, 2.0, 3.0]), np.linspace(-1.0, 1.0, 5)
    hessian = _quiet(sg.hessian(polynomial, wrt=1, mode=mode), coefs, x)
    first = sg.grad(polynomial, wrt=1, mode="tape")
    expected = np.stack(
        [numeric_grad(lambda x, k=k: first(coefs, x)[k], [x], 0) for k in range(x.size)]
    )
    assert_close(hessian, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [0, 1, 2])
def test_power_with_an_exponent_argument_at_zero(mode, n):
    x = np.array([0.0, 0.5, -1.5])
    assert_close(
        _quiet(sg.grad(power_of_argument, mode=mode), x, n),
        numeric_grad(power_of_argument, [x, n], 0),
    )
    expected = 4.0 * np.eye(3) if n == 2 else np.zeros((3, 3))
    assert_close(_quiet(sg.hessian(power_of_argument, mode=mode), x, n), expected)


@pytest.mark.parametrize("mode", MODES)
def test_python_float_at_zero(mode):
    assert _quiet(sg.grad(scalar_polynomial, mode=mode), 0.0) == 2.0
    assert _quiet(sg.grad(sg.grad(scalar_polynomial, mode=mode), mode=mode), 0.0) == 6.0


def test_literal_exponents_fold_as_before():
    def cube_and_square(x):
        return np.sum(x**3 + x**2)

    gradient = sg.grad(cube_and_square, mode="s2s")
    gradient(np.ones(2))
    assert "3.0 * x ** 2" in sg.source(gradient) and "!=" not in sg.source(gradient)
