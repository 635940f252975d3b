"""What a transform returns beside the gradient is the function's own value: the value of
``value_and_grad`` and the ``has_aux`` data, never a variable as the backward sweep left
it (restored from the stack, or its items written back), and never a tape value."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

MODES = ["s2s", "tape", "auto"]


def iterated_sine(a, y, n):
    for t in range(n):
        y = np.sin(a * y) + 0.1 * t
    return y


def grown_in_place(x):
    a = x * 1.0
    for _ in range(3):
        a[1:] = a[1:] * a[:-1] + 0.5
    return np.sum(a**2), a


def tanh_steps(w, y):
    for _ in range(4):
        y = np.tanh(w * y)
    return np.sum(y), {"last": y}


@pytest.mark.parametrize("mode", MODES)
def test_the_value_is_the_functions_when_its_variable_is_restored(mode):
    value, (da, dy) = call_twice(
        sg.value_and_grad(iterated_sine, wrt=(0, 1), mode=mode), 0.9, 0.3, 30
    )
    assert value == pytest.approx(iterated_sine(0.9, 0.3, 30), rel=1e-12)
    assert_close(da, numeric_grad(iterated_sine, (0.9, 0.3, 30), 0))
    assert_close(dy, numeric_grad(iterated_sine, (0.9, 0.3, 30), 1))


@pytest.mark.parametrize("mode", MODES)
def test_auxiliary_data_is_the_functions_and_plain(mode):
    x = np.array([0.3, 0.5, 0.7])
    gradient, aux = sg.grad(grown_in_place, has_aux=True, mode=mode)(x)
    assert type(aux) is np.ndarray
    assert_close(aux, grown_in_place(x)[1], rtol=1e-12)
    assert_close(gradient, numeric_grad(lambda v: grown_in_place(v)[0], (x,), 0))
    y = np.array([0.2, 0.4])
    (value, aux), _ = sg.value_and_grad(tanh_steps, has_aux=True, mode=mode)(0.7, y)
    expected_value, expected_aux = tanh_steps(0.7, y)
    assert value == pytest.approx(expected_value, rel=1e-12)
    assert type(aux["last"]) is np.ndarray
    assert_close(aux["last"], expected_aux["last"], rtol=1e-12)
