"""Passes that look cheaply first whether they can apply (issue 15's transform time) still
apply wherever they did: each function below has just the one thing a pass looks for
(a helper returning a function, a lambda called in place, map, partial, a loop, a
softmax's maximum, a repeated call, a scalar seed), and its gradient is right in every
mode against central differences."""

from __future__ import annotations

import functools
import warnings

import gast
import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.passes import desugar, library_writes

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


def with_an_add_at(x):
    t = np.zeros(6)
    np.add.at(t, [0, 2, 2], x[:3] * x[3:])
    return np.sum(np.sin(t))


def with_a_diagonal_fill(x):
    a = np.outer(x[:3], x[3:])
    np.fill_diagonal(a, np.tanh(x[:3]))
    return np.sum(a * a)


def with_a_ufunc_at(x):
    t = np.exp(x)
    np.multiply.at(t, [1, 4], x[:2])
    return np.sum(t)


def with_an_out_argument(x):
    t = np.empty(6)
    np.sin(x * 2.0, out=t)
    return np.sum(t * x)


def with_a_fill(x):
    t = x * 1.5
    t.fill(np.sum(x))
    return np.sum(t * x)


def with_a_chained_item_write(x):
    a = np.zeros((2, 3))
    a[1][2] = np.sum(x**2)
    return np.sum(a * 3.0) + np.sum(x)


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
    _assert_gradient_right(f, mode)


def _assert_gradient_right(f, mode):
    x = RNG.standard_normal(6)
    expected = numeric_grad(f, (x,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode=mode), x), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "f",
    [
        with_an_add_at,
        with_a_diagonal_fill,
        with_a_ufunc_at,
        with_an_out_argument,
        with_a_fill,
        with_a_chained_item_write,
    ],
)
@pytest.mark.parametrize("mode", ["s2s", "auto"])  # the tape refuses some writes in place
def test_library_writes_still_rewritten(f, mode):
    _assert_gradient_right(f, mode)


def test_library_writes_look_only_where_a_statement_is_a_call(monkeypatch):
    """The five rewrites of calls that write into arrays (np.add.at, np.fill_diagonal,
    ufunc.at, out=, .fill/.sort) rewrite only statements that are calls: a function without
    one is not looked at five times."""

    def not_asked(*args, **kwargs):
        raise AssertionError("a library-write rewrite looked at a function without a call")

    for name in ("scatter_adds", "diagonal_fills", "ufunc_at_writes", "out_writes"):
        monkeypatch.setattr(desugar, name, not_asked)
    monkeypatch.setattr(desugar, "method_writes", not_asked)

    def f(x):
        t = np.sin(x) * 0.5
        u = t * np.exp(-x)
        return np.sum(u)

    x = RNG.standard_normal(6)
    assert_close(sg.grad(f, mode="s2s")(x), numeric_grad(f, (x,), 0), rtol=1e-5, atol=1e-7)


def test_call_statements_are_found_in_nested_blocks():
    source = "def f(x):\n    if x:\n        for i in x:\n            np.add.at(t, 0, i)\n"
    assert library_writes.has_call_statements(gast.parse(source).body)
    plain = "def f(x):\n    y = np.sin(x)\n    return y\n"
    assert not library_writes.has_call_statements(gast.parse(plain).body)
