"""np.linalg.pinv of complex matrices, in the convention of docs/complex.md.

The gradient of a real loss moves the real and imaginary parts of ``a`` (the oracle,
``numeric_complex_grad``), in both engines and mode "auto", on the first and second call;
the tangent follows central differences along a complex direction; and the second order
goes through a real parameter of a complex matrix (``hvp`` against differences of the
gradient). svd and qr of complex matrices are still refused.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import call_twice, numeric_complex_grad

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")
rng = np.random.default_rng(41)


def cnormal(*shape):
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


W = cnormal(4, 4)
BASES = [cnormal(4, 3) / 2.0 for _ in range(3)]


def weighted_pinv(a):
    p = np.linalg.pinv(a)
    return np.sum(np.real(p * W[: p.shape[0], : p.shape[1]])) + np.sum(np.abs(p) ** 2)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_gradient_of_a_complex_pinv(shape):
    a = cnormal(*shape) + 2.0 * np.eye(*shape)
    expected = numeric_complex_grad(weighted_pinv, (a,), 0)
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = call_twice(sg.grad(weighted_pinv, mode=mode), a)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=mode)
        small = sg.grad(weighted_pinv, mode=mode)(a.astype(np.complex64))
        assert small.dtype == np.complex64, mode


def pinv_of(a):
    return np.linalg.pinv(a)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_tangent_of_a_complex_pinv(mode):
    a, t = cnormal(4, 3), cnormal(4, 3)
    step = 1e-6
    expected = (np.linalg.pinv(a + step * t) - np.linalg.pinv(a - step * t)) / (2 * step)
    _, got = sg.jvp(pinv_of, (a,), (t,), mode=mode)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def through_a_complex_pinv(x):
    a = BASES[0] + x[0] * BASES[1] + x[1] * np.conj(BASES[2]) + 2.0 * np.eye(4, 3)
    return weighted_pinv(a) + np.sum(np.real(np.linalg.pinv(a.T * (1.0 + x[2]))))


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_second_order_through_a_complex_pinv(mode):
    x, v = rng.normal(size=3) * 0.3, rng.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (got,) = sg.hvp(through_a_complex_pinv, (x,), (v,), mode=mode)

    def directional(y):
        return np.sum(sg.grad(through_a_complex_pinv, mode="tape")(y) * v)

    expected = numeric_complex_grad(directional, (x,), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    sg.check_grads(through_a_complex_pinv, x, order=2, mode=mode)
