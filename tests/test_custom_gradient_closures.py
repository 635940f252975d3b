"""A ``@custom_gradient`` function that reads a value being differentiated from its
enclosing function: its ``grad_fn`` gives cotangents of its arguments only, so the tape
took the closed-over value for a constant (``x * y`` with ``y = x`` gave ``x``, not
``2x``) or silently skipped the custom derivative; both are refused now, naming the line.
A closure over plain values keeps working."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad.errors import S2SGradError


def closure_and_argument(x):
    @sg.custom_gradient
    def scaled(y):
        return x * y, lambda g: g * x

    return scaled(x)


def closure_only(x):
    @sg.custom_gradient
    def scaled(y):
        return x * y, lambda g: g * x

    return scaled(2.0)


@pytest.mark.parametrize("mode", ("auto", "tape"))
@pytest.mark.parametrize("f", [closure_and_argument, closure_only])
def test_a_closed_over_differentiated_value_is_refused(mode, f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(S2SGradError, match=r"test_custom_gradient_closures\.py:\d+: .*reads"):
            sg.grad(f, mode=mode)(float(np.random.default_rng(0).uniform(1, 2)))


def clipped_scale(x):
    limit = 0.5  # a plain value: the closure is fine

    @sg.custom_gradient
    def clip(y):
        return y * 3.0, lambda g: np.clip(g * 3.0, -limit, limit)

    return np.sum(clip(x) ** 2)


@pytest.mark.parametrize("mode", ("auto", "tape"))
def test_a_closure_over_plain_values_still_works(mode):
    x = np.random.default_rng(1).normal(size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(clipped_scale, mode=mode)(x)
    np.testing.assert_allclose(got, np.clip(2 * 3.0 * x * 3.0, -0.5, 0.5))


def derivative_of_a_closure(x):
    def scaled(y):
        return x * y

    @sg.derivative(of=scaled)
    def _scaled_derivative(y):
        return x * y, lambda g: g * x

    try:
        return scaled(x)
    finally:
        sg.forget_derivative(of=scaled)


@pytest.mark.parametrize("mode", ("auto", "tape"))
def test_a_derivative_registered_for_a_closure_over_differentiated_values(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(S2SGradError, match="reads a value being differentiated"):
            sg.grad(derivative_of_a_closure, mode=mode)(1.5)
