"""Forward mode over a power whose exponent reaches the derivative as a value (a helper's
parameter, saved for the backward sweep that a Hessian differentiates again): its tangent is
zero, and must stay zero at a negative base, where log(base) is nan. The Hessian had a row
of nans for every negative entry."""

import warnings

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg

X = np.array([0.3, -0.7, 1.2, -0.5])


def scaled_power(v, factor=1.0, power=2):
    return factor * v**power


def power_by_keyword(x):
    return np.sum(scaled_power(x, power=3, factor=x[0]))


def power_by_unpacking(x):
    settings = {"factor": x[1], "power": 2}
    return np.sum(scaled_power(x, **settings))


def builtin_pow(x):
    return sum(pow(v, k) for v, k in zip(x, (2, 3, 2, 3)))


def float_power(x):
    return np.sum(np.float_power(x, 3) * scaled_power(x, power=2))


def _numeric_hessian(f, x):
    return np.stack(
        [numeric_grad(lambda v, k=k: sg.grad(f, mode="tape")(v)[k], (x,), 0) for k in range(x.size)]
    )


@pytest.mark.parametrize(
    "f", [power_by_keyword, power_by_unpacking, builtin_pow, float_power], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_hessian_at_negative_bases_is_finite_and_right(f, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no log of a negative number either
        hessian = sg.hessian(f, mode=mode)(X)
    np.testing.assert_allclose(hessian, _numeric_hessian(f, X), rtol=1e-5, atol=1e-6)


def test_a_differentiated_exponent_at_a_positive_base():
    # the exponent's own tangent is still followed where it is not zero
    def f(p):
        return np.sum(np.array([1.5, 2.0]) ** p)

    p = np.array([0.7, -1.2])
    _, tangent = sg.jvp(f, (p,), (np.array([1.0, -2.0]),), mode="s2s")
    expected = np.sum(numeric_grad(f, (p,), 0) * np.array([1.0, -2.0]))
    np.testing.assert_allclose(tangent, expected, rtol=1e-6)
