"""Passes that look cheaply first whether they can apply (issue 15's transform time) still
apply wherever they did: each function below has just the one thing a pass looks for
(a helper returning a function, a lambda called in place, map, partial, a loop, a
softmax's maximum, a repeated call, a scalar seed), and its gradient is right in every
mode against central differences."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

RNG = np.random.default_rng(151)


def _scaler(w):
    return lambda v: v * w


def with_a_helper_returning_a_function(x):
    scale = _scaler(np.tanh(x))
    return np.sum(scale(x))


def with_a_lambda_called_in_place(x):
    return np.sum((lambda v: np.sin(v) * v)(x))


def with_map(x):
    rows = list(map(np.tanh, [x, 2.0 * x]))
    return np.sum(rows[0] * rows[1])


def _weighted(a, b):
    return a * np.exp(b)


def with_partial(x):
    h = functools.partial(_weighted, np.cos(x))
    return np.sum(h(x))


def with_a_loop(x):
    y = x
    for _ in range(3):
        y = np.sin(y) * 0.9
    return np.sum(y)


def with_a_shifted_softmax(x):
    z = x.reshape(2, 3)
    m = np.max(z, axis=1, keepdims=True)
    e = np.exp(z - m)
    p = e / np.sum(e, axis=1, keepdims=True)
    return np.sum(p * np.arange(3.0))


def with_a_repeated_call(x):
    return np.sum(np.exp(x) * np.exp(x) + x)


def with_a_scalar_seed(x):
    return np.sum(x * 3.0)


@pytest.mark.parametrize(
    "f",
    [
        with_a_helper_returning_a_function,
        with_a_lambda_called_in_place,
        with_map,
        with_partial,
        with_a_loop,
        with_a_shifted_softmax,
        with_a_repeated_call,
        with_a_scalar_seed,
    ],
)
@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_gradient_right_where_the_pass_applies(f, mode):
    x = RNG.standard_normal(6)
    expected = numeric_grad(f, (x,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode=mode), x), expected, rtol=1e-5, atol=1e-7)
