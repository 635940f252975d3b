"""A function with a forward-mode derivative of the user's (``@sg.derivative(of=f,
jvp=...)``, or a ``sg.checkpoint`` function, whose forward mode is its JVP) called with an
argument by keyword (``block(x, scale=3.0)``): source transformation's forward mode passed
the primals by position only and dropped the keyword, so the tangent was computed with
the default scale, silently wrong in s2s and auto (the gradient was right). The keyword
now takes its parameter's place among the primals."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_jvp

import s2sgrad as sg


@sg.checkpoint
def block(v, scale=2.0):
    return np.sin(v) * scale


def scaled(v, scale=2.0):
    return np.tanh(v) * scale


def _scaled_jvp(primals, tangents):
    v, scale = (*primals, 2.0)[:2]
    return scaled(v, scale), (1.0 - np.tanh(v) ** 2) * tangents[0] * scale


@sg.derivative(of=scaled, jvp=_scaled_jvp)
def _scaled_derivative(v, scale=2.0):
    return scaled(v, scale), lambda g: (g * (1.0 - np.tanh(v) ** 2) * scale, None)


def checkpointed_by_keyword(x):
    return np.sum(block(x, scale=3.0) * x) + np.sum(block(x))


def custom_by_keyword(x):
    return np.sum(scaled(x, scale=-1.5) ** 2) + np.sum(scaled(x))


@pytest.mark.parametrize("f", [checkpointed_by_keyword, custom_by_keyword])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_the_tangent_reads_the_keyword(f, mode):
    rng = np.random.default_rng(51)
    x, direction = rng.normal(size=5), rng.normal(size=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            value, tangent = sg.jvp(f, (x,), (direction,), mode=mode)
            assert_close(value, f(x))
            assert_close(tangent, numeric_jvp(f, [x], 0, direction))
