"""A ``math`` or ``numpy`` function the user replaced (``math.exp = math.sin``, a patched
``np.sum``) is the one the tape differentiates, and is still there after the call: the tape
puts its recording wrappers only where the library's own function is."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from oracle import assert_close

import s2sgrad as sg


def through_math_exp(z):
    total = 0.0
    for i in range(z.shape[0]):
        total = total + math.exp(z[i]) * (i + 1.0)
    return total


def through_np_sum(z):
    return np.sum(np.sin(z) * z)


def _halved_sum(a, *args, **kwargs):
    return 0.5 * np.add.reduce(np.ravel(a))


@pytest.mark.parametrize("mode", ["tape", "auto", "s2s"])
def test_math_function_replaced_by_another_with_a_rule(monkeypatch, mode):
    rng = np.random.default_rng(7)
    x, v = rng.normal(size=3), rng.normal(size=3)
    monkeypatch.setattr(math, "exp", math.sin)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            assert_close(sg.grad(through_math_exp, mode=mode)(x), np.cos(x) * [1, 2, 3])
            assert math.exp is math.sin
            (product,) = sg.hvp(through_math_exp, (x,), (v,), mode=mode)
            assert_close(product, -np.sin(x) * [1, 2, 3] * v)
            assert math.exp is math.sin


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_numpy_function_replaced_by_the_users(monkeypatch, mode):
    x = np.random.default_rng(8).normal(size=4)
    monkeypatch.setattr(np, "sum", _halved_sum)
    expected = 0.5 * (np.sin(x) + x * np.cos(x))  # (differences would call np.sum too)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            assert_close(sg.grad(through_np_sum, mode=mode)(x), expected)
            assert np.sum is _halved_sum
