"""``*`` on a list or tuple repeats it (``[h] * 2``, ``xs * n``): differentiated as
repetition, whose derivative sums the copies, in every mode and to second order; ``*`` of
a list by a differentiated array stays NumPy's product."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

MODES = ["s2s", "tape", "auto"]


def repeated_list(h):
    s = [h] * 2
    return s[0] * s[1] ** 2


def repeated_pair_on_the_left(h):
    s = 2 * [h, h * h]
    return s[0] * s[3]


def repeated_tuple(h):
    s = (h,) * 3
    return s[0] * s[2] + s[1]


def repeated_by_a_parameter(h, n=3):
    s = [h, np.sin(h)] * n
    return s[0] * s[3] + s[2 * n - 1]


def repeated_slice(h):
    t = [h][0:1]
    ys = t * 2  # the source transformer once scaled the gradient by 2 here
    return ys[1] * ys[0]


def repeated_then_summed_in_a_loop(h):
    layers = [h * 0.5] * 4
    total = 0.0
    for layer in layers:
        total = total + np.tanh(layer * total + 0.3)
    return total


def repeated_zero_times(h):
    s = [h] * 0
    return h * len(s) + h**2


def _pair(h):
    return [h, np.sin(h)]


def repeated_from_a_helper(h):
    s = _pair(h)  # a helper's list, copied, then repeated
    u = s
    v = np.cos(h) * 2  # a product of a call that makes no list sits among them
    w = u * 2
    return w[0] * w[3] + w[2] * v


REPEATED = [
    repeated_list,
    repeated_pair_on_the_left,
    repeated_tuple,
    repeated_by_a_parameter,
    repeated_slice,
    repeated_then_summed_in_a_loop,
    repeated_zero_times,
    repeated_from_a_helper,
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", REPEATED, ids=lambda f: f.__name__)
def test_a_repeated_list_is_differentiated(f, mode):
    expected = numeric_grad(f, (1.3,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)
        assert_close(sg.grad(f, mode=mode)(1.3), expected)
        _, tangent = sg.jvp(f, (1.3,), (1.0,), mode=mode)
    assert_close(tangent, expected)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f", [repeated_list, repeated_by_a_parameter, repeated_tuple], ids=lambda f: f.__name__
)
def test_a_repeated_list_to_second_order(f, mode):
    sg.check_grads(f, 0.7, order=2, mode=mode)


def list_times_array(x):
    return np.sum([x[0], x[1]] * x)


def test_a_list_times_an_array_is_a_product_by_source():
    """(The tape refuses it: NumPy makes an array of the list of tape values.)"""
    x = np.array([1.0, 2.0])
    assert_close(sg.grad(list_times_array, mode="s2s")(x), np.array([2.0, 4.0]))


def list_of_constants(x):
    hs = [0.0] * 3
    for i in range(3):
        hs[i] = x * (i + 1.0)
    return np.sum(hs[2] * hs[0])


@pytest.mark.parametrize("mode", MODES)
def test_a_list_of_constants_may_be_repeated(mode):
    x = np.array([0.3, -0.2])
    gradient = sg.grad(list_of_constants, mode=mode)
    for _ in range(2):
        assert_close(gradient(x), numeric_grad(list_of_constants, (x,), 0))


def test_the_generated_code_repeats():
    assert "repeated(" in sg.source(repeated_by_a_parameter)


def test_the_tape_over_generated_code_refuses_a_joined_cotangent():
    """Known limit: the tape over an s2s gradient joins list cotangents where generated
    code adds them; repeated_sum refuses the wrong length instead of reading it."""
    gradient = sg.grad(repeated_by_a_parameter, mode="s2s")

    def projected(h):
        return gradient(h) * 0.5

    try:
        value = sg.grad(projected, mode="tape")(1.3)
    except sg.S2SGradError as refusal:
        assert "joined rather than added" in str(refusal)
    else:
        assert_close(value, numeric_grad(projected, (1.3,), 0))
