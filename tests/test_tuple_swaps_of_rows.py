"""A tuple assignment swapping rows of a matrix by integer indices, as NumPy runs it.

``b[0], b[1] = b[1], b[0]`` reads two views (rows) first, writes ``b[0]``, and then writes
``b[1]`` from the view of row 0, which the first write already changed: both rows end as
the old row 1. Every mode differentiated a swap (round 29's known gap). The same code on
a vector swaps two numbers, and on a list swaps two entries: those stay as they were.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")
_C = np.arange(1.0, 13.0)


def _swaps_two_rows(x):
    b = np.stack([x, 2.0 * x, x**2])
    b[0], b[1] = b[1], b[0]
    return np.sum(b * _C[:9].reshape(3, 3) ** 2)


def _swaps_rows_in_a_loop(x):
    b = np.stack([x, 2.0 * x, x**2])
    for i in range(2):
        j = i + 1
        b[i], b[j] = b[j], b[i]
    return np.sum(b * _C[:9].reshape(3, 3))


def _swap(b, i, j):
    b[i], b[j] = b[j], b[i]


def _swaps_rows_in_a_helper(x):
    b = np.outer(x, x[:2] + 1.0)
    _swap(b, 0, 2)
    return np.sum(b * _C[:6].reshape(3, 2) ** 2)


def _rotates_three_rows(x):
    b = np.stack([x, 2.0 * x, x**2])
    b[0], b[1], b[2] = b[1], b[2], b[0]
    return np.sum(b * _C[:9].reshape(3, 3) ** 2)


def _swaps_rows_of_a_cube(x):
    b = np.stack([np.stack([x, 2.0 * x]), np.stack([x**2, np.sin(x)])])
    b[0, 1], b[1, 0] = b[1, 0], b[0, 1]
    return np.sum(b * _C.reshape(2, 2, 3))


def _pivots_by_the_largest_entry(x):
    a = np.stack([x, x[::-1] * 2.0, x**2 + 1.0])
    for k in range(2):
        p = int(np.argmax(np.abs(a[k:, k]))) + k
        if p != k:
            a[k], a[p] = a[p], a[k]
        a[k + 1 :] = a[k + 1 :] - np.outer(a[k + 1 :, k] / a[k, k], a[k])
    return np.sum(a * _C[:9].reshape(3, 3))


def _swaps_columns_in_a_loop(x):
    b = np.outer(x, x + 1.0)
    for i in range(2):
        b[:, i], b[:, i + 1] = b[:, i + 1], b[:, i]
    return np.sum(b * _C[:9].reshape(3, 3))


# as before: numbers of a vector and entries of a list are swapped


def _bubble_sorts_a_vector(x):
    b = x * 1.0
    for i in range(len(b)):
        for j in range(len(b) - 1 - i):
            if b[j] > b[j + 1]:
                b[j], b[j + 1] = b[j + 1], b[j]
    return np.sum(b * _C[: len(b)])


def _swaps_list_entries(x):
    items = [x, 2.0 * x, x**2]
    items[0], items[2] = items[2], items[0]
    return np.sum(items[0] * _C[:3]) + np.sum(items[2] ** 3)


def _swaps_numbers_of_a_vector_in_a_helper(x):
    b = x * 2.0
    _swap(b, 0, 2)
    return np.sum(b * _C[:3] ** 2)


_ROWS = [
    _swaps_two_rows,
    _swaps_rows_in_a_loop,
    _swaps_rows_in_a_helper,
    _rotates_three_rows,
    _swaps_rows_of_a_cube,
    _pivots_by_the_largest_entry,
    _swaps_columns_in_a_loop,
]
_NUMBERS = [_bubble_sorts_a_vector, _swaps_list_entries, _swaps_numbers_of_a_vector_in_a_helper]


@pytest.mark.parametrize("f", _ROWS + _NUMBERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", MODES)
def test_a_swap_by_integer_indices_is_right_or_refused(f, mode):
    x = np.random.default_rng(7).standard_normal(3)
    v = np.random.default_rng(8).standard_normal(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = call_twice(sg.grad(f, mode=mode), x)
            _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        except sg.S2SGradError as error:  # the tape holds no view on Python's stack
            assert mode == "tape" and f in _ROWS, error
            assert f"{__file__}:" in str(error)
            return
    assert_close(got, numeric_grad(f, [x], 0))
    assert_close(tangent, numeric_jvp(f, [x], 0, v))


@pytest.mark.parametrize(
    "f", [_swaps_two_rows, _swaps_rows_of_a_cube, *_NUMBERS], ids=lambda f: f.__name__
)
def test_the_hessian_of_a_swap_is_right_or_refused(f):
    x = np.random.default_rng(9).standard_normal(3)
    v = np.random.default_rng(10).standard_normal(3)
    expected = numeric_jvp(lambda y: numeric_grad(f, [y], 0, step=1e-4), [x], 0, v, step=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            product = sg.hvp(f, (x,), (v,), mode="auto")
        except sg.S2SGradError as error:
            assert f in _ROWS, error
            assert f"{__file__}:" in str(error)
            return
    assert_close(np.asarray(product).reshape(3), expected, rtol=1e-3, atol=1e-5)


def test_vectors_and_lists_still_swap_with_a_hessian_from_source_transformation():
    x = np.random.default_rng(11).standard_normal(3)
    v = np.random.default_rng(12).standard_normal(3)
    for f in (_swaps_list_entries, _swaps_numbers_of_a_vector_in_a_helper):
        expected = numeric_jvp(
            lambda y, f=f: numeric_grad(f, [y], 0, step=1e-4), [x], 0, v, step=1e-4
        )
        product = sg.hvp(f, (x,), (v,), mode="s2s")
        assert_close(np.asarray(product).reshape(3), expected, rtol=1e-3, atol=1e-5)


def _mixes_rows_and_numbers(x):
    m = np.stack([x, 2.0 * x])
    v = x * 3.0
    m[0], v[0], m[1] = m[1], v[1], m[0]  # rows (views) and a number (a copy) of a vector
    return np.sum(v * _C[:3]) + np.sum(m * _C[:6].reshape(2, 3) ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_rows_and_numbers_in_one_assignment_are_right_or_refused_naming_the_line(mode):
    x = np.random.default_rng(13).standard_normal(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = sg.grad(_mixes_rows_and_numbers, mode=mode)(x)
        except sg.S2SGradError as error:
            assert f"{__file__}:" in str(error)
            return
    assert_close(got, numeric_grad(_mixes_rows_and_numbers, [x], 0))
