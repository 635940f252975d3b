"""A custom derivative of a function with several outputs, only some of them used: its
pullback sees zeros for the others in every mode (the tape gave ``None``, and a pullback
that multiplied it raised TypeError), first and second order."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg


def sin_and_cos(x):
    return np.sin(x), np.cos(x)


@sg.derivative(of=sin_and_cos)
def _sin_and_cos_derivative(x):
    def pullback(g):
        return g[0] * np.cos(x) - g[1] * np.sin(x)

    return (np.sin(x), np.cos(x)), pullback


def stats(x):
    return {"total": np.sum(x), "squares": np.sum(x**2)}


@sg.derivative(of=stats)
def _stats_derivative(x):
    def pullback(g):
        return g["total"] * np.ones_like(x) + 2 * g["squares"] * x

    return stats(x), pullback


def first_only(x):
    return np.sum(sin_and_cos(x)[0] * 2.0)


def second_only(x):
    _, c = sin_and_cos(x)
    return np.sum(c**2)


def squares_only(x):
    return stats(x)["squares"] * 3.0


CASES = [(first_only, 0), (second_only, 1), (squares_only, 2)]


@pytest.mark.parametrize("mode", ("s2s", "auto", "tape"))
@pytest.mark.parametrize("f", [first_only, second_only, squares_only])
@pytest.mark.parametrize("shape", [(3,), (2, 2)])
def test_unused_outputs_get_zero_cotangents(mode, f, shape):
    x = np.random.default_rng(len(shape)).normal(size=shape)
    gradient = sg.grad(f, mode=mode)
    for _ in range(2):
        assert_close(gradient(x), numeric_grad(f, [x], 0))


@pytest.mark.parametrize("mode", ("auto", "tape"))
def test_second_order(mode):
    x = np.random.default_rng(5).normal(size=3)
    v = np.random.default_rng(6).normal(size=3)

    def along(y):
        return np.sum(sg.grad(second_only, mode=mode)(y) * v)

    got = sg.grad(along, mode=mode)(x)
    assert_close(got, numeric_grad(along, [x], 0), rtol=1e-4, atol=1e-6)
