"""``x.sort()``, ``x.fill(v)`` and ``x.put(i, v)`` (``np.put``) of a value being differentiated,
on the tape under a function transform: item writes of ``x`` (tape/values.py), followed
through the views the function holds (tape/view_writes.py)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_tape_program

import s2sgrad as sg


def sorted_in_place(x):
    t = x * 1.0
    t.sort()
    return np.sum(t * np.arange(1.0, x.size + 1))


def sorted_along_the_rows(x):
    t = np.outer(x, x[::-1]) * 1.0
    t.sort(axis=0)
    return np.sum(t * np.outer(np.arange(x.size), x))


def filled(x):
    t = x * 1.0
    t.fill(np.sum(np.sin(x)))
    return np.sum(t * x)


def put_at_flat_indices(x):
    t = x * 1.0
    np.put(t, [0, 2], np.tanh(x)[:2])
    return np.sum(t * x)


def put_one_value_by_the_method(x):
    t = x * 1.0
    t.put([-1, 0], x[1] * 2.0)
    return np.sum(t * x * x)


def row_of_a_matrix_sorted(x):
    t = np.outer(x, x) * 1.0
    v = t[1]
    v.sort()
    return np.sum(t * t)


def column_filled(x):
    t = np.outer(x, x[::-1]) * 1.0
    t[:, 1].fill(x[0] * 3.0)
    return np.sum(t * np.outer(x, x))


PROGRAMS = [
    sorted_in_place,
    sorted_along_the_rows,
    filled,
    put_at_flat_indices,
    put_one_value_by_the_method,
    row_of_a_matrix_sorted,
    column_filled,
]


@pytest.mark.parametrize("size", [3, 5])
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda f: f.__name__)
def test_the_tape_writes_what_the_method_writes(program, size):
    assert_tape_program(program, size)


def test_a_gradient_tape_keeps_its_values_immutable():
    x = sg.constant(np.arange(3.0))
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
        with pytest.raises(sg.S2SGradError, match="immutable"):
            y.sort()
