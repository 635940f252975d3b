"""``obj.method(x)`` of a global object whose method source transformation refuses (a
``try`` statement in it): mode "auto" dispatches the call when it runs, bound, with the
arguments as written. The call is classified as ``method(obj, x)``, and the receiver was
passed a second time (``TypeError: encode() takes 2 positional arguments but 3 were
given``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.errors import UnsupportedError


class Encoder:
    def __init__(self):
        self.k = 2.0

    def encode(self, v):
        try:
            return v * self.k  # a return in a try body stays refused in s2s
        except ValueError:
            out = v
        return out


ENCODER = Encoder()


def calls_the_method(x):
    return np.sum(ENCODER.encode(x) * x)


def through_a_helper(v):
    return ENCODER.encode(v) + 1.0  # d/dx sum((2x + 1) x) = 4x + 1


def calls_a_helper_calling_the_method(x):
    return np.sum(through_a_helper(x) * x)


@pytest.mark.parametrize(
    "f", [calls_the_method, calls_a_helper_calling_the_method], ids=lambda f: f.__name__
)
def test_a_refused_method_of_a_global_object_is_dispatched_in_auto(f):
    x = np.array([0.3, -0.7, 1.2])
    with pytest.raises(UnsupportedError, match="'try' statements"):
        sg.grad(f, mode="s2s")(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call_twice(sg.grad(f, mode="auto"), x)
    assert_close(got, numeric_grad(f, (x,), 0), rtol=1e-5)


def test_forward_mode_dispatches_a_refused_method_bound():
    x, v = np.array([0.3, -0.7, 1.2]), np.array([1.0, 0.5, -2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, tangent = sg.jvp(calls_the_method, (x,), (v,), mode="auto")
    assert_close(float(tangent), float(4.0 * x @ v))


class Scaler:
    def __init__(self):
        self.k = 2.0

    def product(self, a, b):
        return a * b * self.k


SCALER = Scaler()
MATRIX = np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 2.0], [0.3, 0.3, 0.3]])


def spreads_into_a_method(x):
    pair = (x, x)
    return np.sum(SCALER.product(*pair))


def spreads_into_an_array_method(x):
    args = (x,)
    return np.sum(MATRIX.dot(*args) ** 2)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_method_given_starred_arguments_gets_them_as_written(mode):
    x, v = np.array([0.3, -0.7, 1.2]), np.array([1.0, 0.5, -2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(spreads_into_a_method, mode=mode), x), 4.0 * x)
        _, tangent = sg.jvp(spreads_into_a_method, (x,), (v,), mode=mode)
    assert_close(float(tangent), float(4.0 * x @ v))


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_a_global_arrays_method_given_starred_arguments_is_refused_clearly(mode):
    x = np.array([0.3, -0.7, 1.2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for transform in (
            lambda: sg.grad(spreads_into_an_array_method, mode=mode)(x),
            lambda: sg.jvp(spreads_into_an_array_method, (x,), (np.ones(3),), mode=mode),
        ):
            with pytest.raises(sg.S2SGradError):
                transform()
