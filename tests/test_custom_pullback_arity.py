"""A user's pullback for a function of two arguments that may both be differentiated must
return a tuple, one cotangent per argument. One value (a list of the two cotangents, or a
single array) was taken for the first argument's cotangent alone: a list ``[g * b, g * a]``
was summed into the first argument and the second's dropped, silently wrong in every
mode. It is refused at the derivative's definition; one value for a function whose other
arguments are integers (``power(v, n)``) stays the first argument's."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_grad_jvp_and_hvp, numeric_grad

import s2sgrad as sg
from s2sgrad.errors import CotangentShapeError

HERE = "test_custom_pullback_arity.py"


def weighted(a, b):
    return np.sum(a * b)


@sg.derivative(of=weighted)
def _weighted_as_a_list(a, b):
    return weighted(a, b), lambda g: [g * b, g * a]


def product_sum(a, b):
    return np.sum(np.sin(a) * b)


@sg.derivative(of=product_sum)
def _product_sum_one_value(a, b):
    return product_sum(a, b), lambda g: g * np.cos(a) * b


@sg.custom_gradient
def scaled_pair(a, b):
    return a * b, lambda g: [g * b, g * a]


def power(v, n):
    return v**n


@sg.derivative(of=power)
def _power_one_value(v, n):
    return power(v, n), lambda g: g * n * v ** (n - 1)


def through_a_list(x):
    return weighted(x, x**2)


def through_one_value(x):
    return product_sum(x, np.cos(x))


def through_one_value_of_a_sum(x):
    return product_sum(x, x + 1.0)


def through_custom_gradient(x):
    return np.sum(scaled_pair(x, np.tanh(x)))


@pytest.mark.parametrize(
    "f",
    [through_a_list, through_one_value, through_one_value_of_a_sum, through_custom_gradient],
)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_one_value_for_two_differentiated_arguments_is_refused(f, mode):
    x = np.random.default_rng(31).normal(size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CotangentShapeError, match="return a tuple") as refused:
            sg.grad(f, mode=mode)(x)
    assert f"{HERE}:" in str(refused.value)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_one_value_with_the_other_argument_constant_is_the_first_arguments(mode):
    """b a data array, not differentiated: one value is x's cotangent (a scale given as a
    float, shifted(x, 4.0), is written so too)."""
    b = np.random.default_rng(32).normal(size=4)
    x = np.random.default_rng(33).normal(size=4)

    def f(v):
        return product_sum(v, b)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(sg.grad(f, mode=mode)(x), numeric_grad(f, [x], 0))


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_one_value_with_an_integer_argument_is_the_first_arguments(mode):
    def f(x):
        return np.sum(power(x, 3) * np.sin(x))

    rng = np.random.default_rng(34)
    x = rng.normal(size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(sg.grad(f, mode=mode)(x), numeric_grad(f, [x], 0))
    if mode != "s2s":  # forward mode over a pullback: the tape's
        assert_grad_jvp_and_hvp(f, x, rng.normal(size=4), mode)


def test_a_tuple_is_right_in_every_mode():
    def pair(a, b):
        return np.sum(a * b)

    @sg.derivative(of=pair)
    def _pair_as_a_tuple(a, b):
        return pair(a, b), lambda g: (g * b, g * a)

    def f(x):
        return pair(x, x**2)

    x = np.random.default_rng(35).normal(size=4)
    for mode in ("s2s", "auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_close(sg.grad(f, mode=mode)(x), numeric_grad(f, [x], 0))
