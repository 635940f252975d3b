"""Python's ``sum``, ``max`` and ``min`` iterating over an array, and a helper whose branches
return a list or an array.

``min(x * 2)`` iterates over the rows of ``x * 2``: the rule gave their cotangents back as
a list, and the chain rule's ``* 2`` then repeated the list instead of scaling it (a NumPy
error from the generated code, in s2s and auto). A helper that builds a list in one branch
and an array in the other crashed in the branch not taken: the backward function copied the
list that branch never built.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_gradient_in_every_mode, numeric_grad

import s2sgrad as sg
from s2sgrad.errors import S2SGradError


def min_of_scaled(x):
    return min(x * 2) * 3


def max_of_sine_plus_min(x):
    return max(np.sin(x)) + min(x * 2)


def sum_of_scaled(x):
    return sum(x * 2) * 3 + sum(x * x)


def max_by_key(x):
    return max(x * 2, key=lambda v: -v) * 3


def max_row_of_matrix(x):
    m = x.reshape(2, 2)
    return np.sum(max(m * 2, key=lambda r: r[0]) * x[2:])


def sum_of_rows(x):
    m = np.tanh(x.reshape(2, 2))
    return np.sum(sum(m * 3) ** 2)


def sum_of_squares_generated(x):
    return sum(v * v for v in x * 2) * 2


def scaled(g, items):
    if isinstance(items, np.ndarray):
        return np.stack([g * r for r in items])
    return [g * item for item in items]


def branch_returns_list(x):
    cs = scaled(x[3], [x[0], x[1] * 2, x[2]])
    return cs[0] * cs[1] + cs[2] ** 2


def branch_returns_array(x):
    cs = scaled(x[3], np.sin(x[:3]))
    return np.sum(cs * cs)


FUNCTIONS = [
    min_of_scaled,
    max_of_sine_plus_min,
    sum_of_scaled,
    max_by_key,
    max_row_of_matrix,
    sum_of_rows,
    sum_of_squares_generated,
    branch_returns_list,
    branch_returns_array,
]


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_first_order_in_every_mode(f):
    x = np.random.default_rng(3).normal(size=4)
    assert_gradient_in_every_mode(f, (x,))


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_second_order_is_right_or_refused(f, mode):
    x = np.random.default_rng(4).normal(size=4)
    v = np.random.default_rng(5).normal(size=4)

    def along(x):
        return np.sum(sg.grad(f, mode=mode)(x) * v)

    expected = numeric_grad(along, (x,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            actual = sg.grad(along, mode=mode)(x)
        except S2SGradError:
            assert mode == "s2s", "auto and the tape give every second order here"
            return
    assert_close(actual, expected, rtol=1e-5, atol=1e-6)


def test_sum_of_an_empty_array_has_a_zero_gradient():
    def f(x, y):
        return sum(x[:0] * 2) + np.sum(y * y)

    x, y = np.ones(3), np.arange(3.0)
    for mode in ("s2s", "auto", "tape"):
        gx, gy = sg.grad(f, wrt=(0, 1), mode=mode)(x, y)
        assert_close(gx, np.zeros(3))
        assert_close(gy, 2 * y)
