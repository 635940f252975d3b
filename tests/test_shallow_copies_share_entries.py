"""A shallow copy of a list or dict holds the same entries: ``q = ps.copy(); q[0] += 1.0``
changes in place the array that ``ps[0]`` holds too (Python's ``+=`` on an array entry),
which every mode differentiated as if only ``q``'s entry changed. Now source
transformation refuses it as it runs (for an array entry; a number's update rebinds
``q``'s entry alone and stays differentiated), and the tape, told the line, follows the
change into ``ps``.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")


def _list_copy_updated(x):
    ps = [x * 1.0, x**2]
    q = ps.copy()
    q[0] += 1.0  # the array ps[0] holds changes too
    return np.sum(ps[0] * q[0]) + np.sum(ps[1])


def _dict_copy_updated(x):
    ps = {"a": np.sin(x), "b": x**2}
    q = ps.copy()
    q["a"] *= 3.0
    return np.sum(q["a"] * ps["a"]) + np.sum(ps["b"])


def _list_call_updated(x):
    ps = [x * 1.0, x**2]
    q = list(ps)
    q[1] -= x
    return np.sum(ps[1] * x)


def _copy_module_updated(x):
    ps = [x * 1.0, x**2]
    q = copy.copy(ps)
    q[0] += 1.0
    return np.sum(ps[0] * x)


def _updated_in_a_loop(x):
    ps = [x * 1.0, x**2]
    q = ps.copy()
    for i in range(2):
        q[i] *= 2.0
    return np.sum(ps[0] * ps[1]) + np.sum(q[0])


def _copy_of_a_parameter(ps):
    q = ps.copy()
    q[0] += 1.0
    return np.sum(ps[0] * q[0]) + np.sum(ps[1])


def _copies_a_list_it_is_given(x):
    return _copy_of_a_parameter([x * 1.0, x**2])


def _numbers_updated(x):
    ps = [x[0], x[1], x[2]]
    q = ps.copy()
    q[0] += 1.0  # a number: q's entry alone
    return q[0] * ps[0] + ps[1] * q[1] ** 2 + ps[2]


@pytest.mark.parametrize(
    "f",
    [
        _list_copy_updated,
        _dict_copy_updated,
        _list_call_updated,
        _copy_module_updated,
        _updated_in_a_loop,
        _copies_a_list_it_is_given,
        _numbers_updated,
    ],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("mode", MODES)
def test_an_entry_updated_through_a_shallow_copy_is_right_or_refused(f, mode):
    x = np.random.default_rng(21).standard_normal(3)
    v = np.random.default_rng(22).standard_normal(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = call_twice(sg.grad(f, mode=mode), x)
            _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        except sg.S2SGradError as error:
            assert mode == "s2s" and f is not _numbers_updated, error
            assert f"{__file__}:" in str(error)
            return
    assert_close(got, numeric_grad(f, [x], 0))
    assert_close(tangent, numeric_jvp(f, [x], 0, v))


def _row_of_an_array_copy_updated(x):
    a = np.outer(x, x)
    b = a.copy()
    b[0] += x  # a row of a new array: nothing else sees it
    return np.sum(a * b)


def test_a_row_of_an_array_copy_is_still_differentiated_by_source_transformation():
    x = np.random.default_rng(23).standard_normal(3)
    got = call_twice(sg.grad(_row_of_an_array_copy_updated, mode="s2s"), x)
    assert_close(got, numeric_grad(_row_of_an_array_copy_updated, [x], 0))
