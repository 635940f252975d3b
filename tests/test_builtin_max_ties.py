"""Python's ``max`` and ``min`` at a tie: the whole derivative goes to the value Python
returns, the first of equals (docs/conventions.md), in every mode. Source transformation
took two values as ``np.fmax`` of them (half each), while the tape, which runs Python's own
``max``, gave all of it to the value returned: the modes disagreed, and a running maximum
``m = max(m, v)`` in a loop got a different gradient in each."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")


def relu_first(x):
    return max(x[0], 0.0) * 3.0 + x[1]


def relu_second(x):
    return max(0.0, x[0]) * 3.0 + x[1]


def larger(x):
    return max(x[0], x[1]) * 2.0


def smaller(x):
    return min(x[1] * 1.0, x[0] * 1.0) * 2.0


def running_maximum(x):
    m = -np.inf
    for v in x:
        m = max(m, v)
    return m * 5.0


def by_key(x):
    return max(x[0], -x[1], key=abs) * 2.0


# f, the point (ties), the gradient there
CASES = [
    (relu_first, [0.0, 1.0, 2.0], [3.0, 1.0, 0.0]),
    (relu_second, [0.0, 1.0, 2.0], [0.0, 1.0, 0.0]),
    (larger, [1.5, 1.5, 0.0], [2.0, 0.0, 0.0]),
    (smaller, [0.5, 0.5, 3.0], [0.0, 2.0, 0.0]),
    (running_maximum, [1.0, 1.0, 1.0], [5.0, 0.0, 0.0]),
    (running_maximum, [0.5, 2.0, 2.0], [0.0, 5.0, 0.0]),
    (by_key, [1.0, 1.0, 0.0], [2.0, 0.0, 0.0]),
]


@pytest.mark.parametrize("f, point, expected", CASES, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("mode", MODES)
def test_a_tie_goes_to_the_value_python_returns(f, point, expected, mode):
    x = np.array(point)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call_twice(sg.grad(f, mode=mode), x)
        assert_close(got, np.array(expected))
        for k in range(3):
            direction = np.eye(3)[k]
            _, tangent = sg.jvp(f, (x,), (direction,), mode=mode)
            assert_close(tangent, expected[k])


@pytest.mark.parametrize("mode", MODES)
def test_away_from_ties_the_larger_value_is_differentiated(mode):
    x = np.random.default_rng(0).normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(running_maximum, mode=mode)(x)
    expected = np.zeros(3)
    expected[np.argmax(x)] = 5.0
    assert_close(got, expected)
