"""A user's derivative whose pullback returns a cotangent of the wrong shape is reported at
its definition, in every mode, instead of as NumPy's reshape error from generated code;
cotangents that broadcast to their argument (a scalar) or sum back to it (extra leading
axes, as for a broadcast argument) are kept.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice

import s2sgrad as sg
from s2sgrad.errors import CotangentShapeError

HERE = __file__
MODES = ("s2s", "auto", "tape")


def cubed_sum(x):
    return np.sum(x**3)


@sg.derivative(of=cubed_sum)
def cubed_sum_with_a_square_cotangent(x):
    return np.sum(x**3), lambda g: g * np.ones((2, 2))


@sg.custom_gradient
def squares_with_a_short_cotangent(x):
    return np.sum(x**2), lambda g: (np.ones(2),)


def uses_cubed_sum(x):
    return cubed_sum(x) + 1.0


def uses_squares(x):
    return 2.0 * squares_with_a_short_cotangent(x)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [uses_cubed_sum, uses_squares], ids=lambda f: f.__name__)
def test_a_cotangent_of_the_wrong_shape_names_the_derivative(f, mode):
    x = np.array([0.3, -0.7, 1.2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CotangentShapeError, match=r"of shape \(3,\)") as refused:
            sg.grad(f, mode=mode)(x)
    assert f"{HERE}:" in str(refused.value)
    assert isinstance(refused.value, ValueError)


def scaled_sum(x):
    return np.sum(x) * 2.0


@sg.derivative(of=scaled_sum)
def scaled_sum_with_a_stacked_cotangent(x):
    return np.sum(x) * 2.0, lambda g: np.full((2, 3), g)  # sums back to (3,): 2 each


def uses_scaled_sum(x):
    return scaled_sum(x) * 1.5


@pytest.mark.parametrize("mode", MODES)
def test_a_cotangent_that_sums_back_to_its_argument_is_kept(mode):
    x = np.array([0.3, -0.7, 1.2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(uses_scaled_sum, mode=mode), x), np.full(3, 3.0))


def _pair_sum(pair):
    return pair[0] * 2.0 + pair[1] * 3.0


@sg.derivative(of=_pair_sum)
def _pair_sum_flat_derivative(pair):  # two cotangents for one (tuple) argument: a mistake
    return _pair_sum(pair), lambda g: (g * 2.0, g * 3.0)


def _product(x, y):
    return x * y


@sg.derivative(of=_product)
def _product_extra_derivative(x, y):  # three cotangents for two arguments
    return x * y, lambda g: (g * y, g * x, g)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_more_cotangents_than_arguments_is_refused_at_the_derivative(mode):
    with pytest.raises(CotangentShapeError, match=r"returned 2 cotangents .* 1-tuple"):
        sg.grad(lambda a, b: _pair_sum((a, b)), wrt=(0, 1), mode=mode)(1.0, 2.0)
    with pytest.raises(CotangentShapeError, match="returned 3 cotangents for a call with 2"):
        sg.grad(lambda a: _product(a, 2.0), mode=mode)(1.5)


def _power(x, p=2.0):
    return x**p


@sg.derivative(of=_power)
def _power_derivative(x, p=2.0):  # a cotangent for the keyword parameter too: allowed
    return x**p, lambda g: (g * p * x ** (p - 1), None)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_cotangent_for_a_parameter_passed_by_keyword_is_allowed(mode):
    x = float(np.random.default_rng(2).uniform(0.5, 2.0))
    assert sg.grad(lambda v: _power(v, p=3.0), mode=mode)(x) == pytest.approx(3 * x**2)
