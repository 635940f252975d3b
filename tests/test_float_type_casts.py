"""``np.float64(x)``, ``np.float32(x)`` of a value being differentiated: a cast, whose
derivative is the identity (cast back to the argument's dtype), by source transformation
(reverse, forward, second order); the tape refuses it, naming the user's line."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, call_twice

import s2sgrad as sg

X = np.array([0.3, -0.7, 1.2])


def cast_to_float64(x):
    return np.sum(np.float64(x) ** 2) * np.sin(np.float64(x[0]))


def cast_to_float32(x):
    return np.sum(np.float32(x) ** 2)


def scalar_cast(t):
    return np.float64(t) * t


def expected_float64(x):
    g = 2.0 * x * np.sin(x[0])
    g[0] += np.sum(x**2) * np.cos(x[0])
    return g


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_casts_are_differentiated(mode):
    assert_close(call_twice(sg.grad(cast_to_float64, mode=mode), X), expected_float64(X))
    g32 = call_twice(sg.grad(cast_to_float32, mode=mode), X)
    assert_close(g32, 2.0 * X, rtol=1e-6)
    g_single = sg.grad(cast_to_float32, mode=mode)(X.astype(np.float32))
    assert g_single.dtype == np.float32
    assert_close(call_twice(sg.grad(scalar_cast, mode=mode), 0.7), 1.4)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_casts_forward_and_second_order(mode):
    v = np.array([0.5, 0.1, -0.4])
    _, out = sg.jvp(cast_to_float64, (X,), (v,), mode=mode)
    assert np.isclose(out, expected_float64(X) @ v)
    hessian = sg.hessian(cast_to_float32, mode=mode)(X)
    assert_close(hessian, 2.0 * np.eye(3))


def test_the_tape_refuses_with_the_line():
    with pytest.raises(sg.NonDifferentiableError) as refused:
        sg.grad(cast_to_float64, mode="tape")(X)
    assert "test_float_type_casts.py:" in str(refused.value)


@pytest.mark.parametrize("kind", [np.float32, np.float16])
def test_narrow_casts_are_the_identity_in_their_dtype(kind):
    x = np.array([0.5, -1.25, 2.0])
    g = sg.grad(lambda v: np.sum(kind(v) * np.array([1.0, 2.0, 3.0], kind)), mode="s2s")
    assert_close(g(x), np.array([1.0, 2.0, 3.0]))
    _, out = sg.jvp(lambda v: kind(v), (x,), (np.ones(3),), mode="s2s")
    assert out.dtype == kind and np.array_equal(out, np.ones(3, kind))
