"""``np.r_[...]`` and ``np.c_[...]`` of values being differentiated, on the tape.

The tape refused them ("np.r_[...] / np.c_[...] convert their items to plain arrays"):
NumPy makes a plain array of each item before joining them. A function that source
transformation also refused for another reason (a ``try`` statement, an object it cannot
follow) was then refused in mode="auto" too (138 of 900 programs of
``tests/program_constructs.py`` on the tape, 19 in mode="auto"). Each item that is a tape
value now joins as itself (``tape/index_joins.py``); an item that is a list holding tape
values is still refused, naming the line.
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

R = np.random.default_rng(37)


def halves_joined(x, y):
    return np.sum(np.r_[x[:2], y[2:]] ** 2 * np.arange(1.0, x.size + 1))


def a_sum_and_a_tail(x, y):
    return np.sum((np.r_[np.sum(x), y[1:]] * x) ** 2)


def columns(x, y):
    return np.sum(np.tanh(np.c_[x, y] @ np.array([0.5, -1.0])) ** 2)


def split_again(x, y):
    p, q = np.split(np.r_[x, y], 2)
    return np.sum(p * q + p**2)


def with_a_constant_between(x, y):
    return np.sum(np.r_[x, 2.0, y[1:2]] ** 3)


def stacked_as_rows(x, y):
    return np.sum(np.r_["0,2", x, y] ** 2 * np.arange(2.0 * x.size).reshape(2, -1))


def joined_inside_try(x, y):
    try:  # source transformation refuses a try statement: mode="auto" tapes it
        v = np.r_[x, y * x]
    except ValueError:
        v = x
    return np.sum(np.sin(v) * v)


CASES = [
    halves_joined,
    a_sum_and_a_tail,
    columns,
    split_again,
    with_a_constant_between,
    stacked_as_rows,
    joined_inside_try,
]


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("mode", ["tape", "auto"])
@pytest.mark.parametrize("size", [3, 4])
def test_index_joins_are_recorded(f, mode, size):
    x, y = R.normal(size=size), R.normal(size=size)
    direction = R.normal(size=size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index in range(2):
            gradient = sg.grad(f, wrt=index, mode=mode)
            assert_close(call_twice(gradient, x, y), numeric_grad(f, [x, y], index))
        _, tangent = sg.jvp(f, (x, y), (direction, np.zeros(size)), mode=mode)
        product = sg.hvp(f, (x, y), (direction, np.zeros(size)), mode=mode)[0]
    assert_close(tangent, numeric_jvp(f, [x, y], 0, direction))
    step = 1e-5
    up = sg.grad(f, mode="tape")(x + step * direction, y)  # checked above
    down = sg.grad(f, mode="tape")(x - step * direction, y)
    assert_close(product, (up - down) / (2 * step), rtol=1e-4, atol=1e-6)


def a_list_item(x):
    return np.sum(np.r_[[x[0], x[1]], x[2:]] ** 2)


def test_a_list_of_tape_values_as_an_item_is_still_refused_naming_the_line():
    line = a_list_item.__code__.co_firstlineno + 1
    with pytest.raises(sg.NonDifferentiableError, match=rf"test_tape_index_joins\.py:{line}: "):
        sg.grad(a_list_item, mode="tape")(R.normal(size=3))
