"""A name bound again, for another value, at the top of the function.

``for u in x: ...`` then ``u = np.zeros(5); u[1:4] = np.sin(x)`` was refused by source
transformation ("'u' is updated in place but may share memory with another array"): the
sharing analysis follows a name through the whole function, and took the new array for the
loop's item. From its new binding on the name is another variable
(``passes/rebound_names.py``), so the write into the new array is differentiated (found by
``tests/program_constructs.py``, seed 5463).
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

R = np.random.default_rng(41)


def item_then_buffer(x, y):
    v = y * 0.0
    for u in x:
        v = v + u * y
    u = np.zeros(x.size + 2)
    u[1:-1] = np.sin(x)
    return np.sum(u[1:-1] * v)


def listed_item_then_buffer(x, y):
    v = y * 0.0
    for u in list(x):
        v = v + u * y
    u = np.zeros(x.size + 2)
    u[1:-1] = np.sin(x) * v
    for _ in range(2):
        u[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return np.sum(u**2)


def view_then_buffer(x, y):
    u = x[1:]
    w = np.sum(u * y[1:])
    u = np.ones(x.size) * w
    u[0] = x[0] * 2.0
    return np.sum(u * x) + w


def rebound_twice(x, y):
    t = x * y
    s = np.sum(t)
    t = np.zeros(x.size)
    t[::2] = x[::2] * s
    t = t + np.tanh(t)
    return np.sum(t**2)


CASES = [item_then_buffer, listed_item_then_buffer, view_then_buffer, rebound_twice]


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("size", [3, 4])
def test_a_name_bound_again_is_differentiated_by_source(f, size):
    x, y = R.normal(size=size), R.normal(size=size)
    direction = R.normal(size=size)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # auto takes no tape
        for mode in ("s2s", "auto"):
            for index in range(2):
                gradient = sg.grad(f, wrt=index, mode=mode)
                assert_close(call_twice(gradient, x, y), numeric_grad(f, [x, y], index))
            _, tangent = sg.jvp(f, (x, y), (direction, np.zeros(size)), mode=mode)
            assert_close(tangent, numeric_jvp(f, [x, y], 0, direction))
