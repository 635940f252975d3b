"""``t, y = 0.0, y0`` binds ``t`` to the number and ``y`` to ``y0``: the sharing analysis
used to let every name of the tuple share every value, so the clock update ``t += h`` of
an ODE integrator counted as an in-place change of the argument ``y0``, and a function
calling the integrator was refused in every mode, forward and second order included
("neither engine can follow that change"). Checked against central differences."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

R = np.random.default_rng(1907)


def euler_growing_steps(k, y0):
    t, y, end = 0.0, y0, 1.0
    dt = 0.1
    while t < end - 1e-12:
        h = min(dt, end - t)
        y = y + h * (-k * y + np.sin(t))
        t += h
        dt *= 1.1
    return np.sum(y**2)


def fitted(k, y0):
    return euler_growing_steps(k, y0) + 0.5 * k**2


def swapped_buffers(u0, c):
    previous, current = u0.copy(), u0.copy()
    for _ in range(4):
        following = 2 * current - previous + c * (np.roll(current, 1) - current)
        previous, current = current, following
    previous = previous + 1.0
    return np.sum(current**2) + np.sum(previous)


def wave(u0, c):
    return swapped_buffers(u0, c) * 0.5


CASES = [
    (fitted, lambda: [0.7, R.normal() + 1.0]),
    (fitted, lambda: [0.7, R.normal(size=3) + 1.0]),
    (wave, lambda: [R.normal(size=5), 0.3]),
]


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("f, make", CASES)
def test_integrator_called_from_a_function(mode, f, make):
    args = make()
    wrt = (0, 1)
    expected = [numeric_grad(f, list(args), i) for i in wrt]
    tangents = tuple(np.ones_like(np.asarray(a, dtype=float)) * 0.5 for a in args)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # no fallback
        got = sg.grad(f, wrt=wrt, mode=mode)(*args)
        _, tangent = sg.jvp(f, tuple(args), tangents, mode=mode)
        product = sg.hvp(f, tuple(args), tangents, mode=mode)
    for g, e in zip(got, expected):
        assert_close(g, e, rtol=1e-5, atol=1e-7)

    def along(t):
        return f(*(a + t * d for a, d in zip(args, tangents)))

    assert_close(tangent, numeric_jvp(along, [0.0], 0, 1.0), rtol=1e-5, atol=1e-7)
    gradient = sg.grad(f, wrt=wrt, mode="tape")

    def gradient_along(t):
        return gradient(*(a + t * d for a, d in zip(args, tangents)))

    expected_product = numeric_jvp(gradient_along, [0.0], 0, 1.0)
    assert_close(tuple(product), tuple(expected_product), rtol=1e-4, atol=1e-6)
