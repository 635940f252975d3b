"""np.linalg.pinv, qr and svd of complex matrices, in the convention of docs/complex.md.

The gradient of a real loss moves the real and imaginary parts of ``a`` (the oracle,
``numeric_complex_grad``), in both engines and mode "auto", on the first and second call;
the tangent follows central differences along a complex direction; and the second order
goes through a real parameter of a complex matrix (``hvp`` against differences of the
gradient). QR's R has a real diagonal (LAPACK's choice), which fixes the phases of Q's
columns, so every function of Q and R is differentiated. A complex singular pair
(u_j, v_j) is defined up to a common phase: as its peers do, the svd is checked through
functions blind to it (|U|, |Vh|, s, u_j v_j^H).
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


def qr_loss(a):
    q, r = np.linalg.qr(a)
    weights = W[: q.shape[0], : q.shape[1]]
    return np.sum(np.abs(q) ** 3) + np.sum(np.real(q * weights)) + np.sum(np.abs(r) ** 2 * r.real)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3)])
def test_gradient_of_a_complex_qr(shape):
    a = cnormal(*shape)
    expected = numeric_complex_grad(qr_loss, (a,), 0)
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = call_twice(sg.grad(qr_loss, mode=mode), a)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=mode)
    small = sg.grad(qr_loss, mode="tape")(a.astype(np.complex64))
    assert small.dtype == np.complex64


def qr_of(a):
    return np.linalg.qr(a)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_tangent_of_a_complex_qr(mode):
    a, t = cnormal(4, 3), cnormal(4, 3)
    step = 1e-6
    up, down = np.linalg.qr(a + step * t), np.linalg.qr(a - step * t)
    _, (t_q, t_r) = sg.jvp(qr_of, (a,), (t,), mode=mode)
    np.testing.assert_allclose(t_q, (up[0] - down[0]) / (2 * step), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(t_r, (up[1] - down[1]) / (2 * step), rtol=1e-5, atol=1e-6)


def through_a_complex_qr(x):
    return qr_loss(BASES[0] + x[0] * BASES[1] + x[1] * np.conj(BASES[2]))


def test_second_order_through_a_complex_qr_on_the_tape():
    # qr's rule is called, not inlined: its second order is the tape's (mode "auto" too)
    x, v = rng.normal(size=2) * 0.3, rng.normal(size=2)
    (got,) = sg.hvp(through_a_complex_qr, (x,), (v,), mode="tape")

    def directional(y):
        return np.sum(sg.grad(through_a_complex_qr, mode="tape")(y) * v)

    expected = numeric_complex_grad(directional, (x,), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def svd_loss(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    pair = u[:, :1] * vh[:1, :]  # u_0 v_0^H: blind to the pair's phase
    weights = W[: pair.shape[0], : pair.shape[1]]
    return (
        np.sum(np.abs(u) ** 3)
        + np.sum(np.abs(vh) ** 3)
        + np.sum(s**3)
        + np.sum(np.real(pair * weights))
    )


def svd_full_loss(a):
    u, s, vh = np.linalg.svd(a)  # full matrices: the first min(m, n) columns are used
    k = s.shape[0]
    return np.sum(np.abs(u[:, :k]) ** 3) + np.sum(np.abs(vh[:k]) ** 2 * s[:, None])


def singular_values(a):
    return np.sum(np.linalg.svd(a, compute_uv=False) ** 3)


@pytest.mark.parametrize("f", [svd_loss, svd_full_loss, singular_values])
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_gradient_of_a_complex_svd(f, shape):
    a = cnormal(*shape)
    expected = numeric_complex_grad(f, (a,), 0)
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = call_twice(sg.grad(f, mode=mode), a)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=mode)
    small = sg.grad(f, mode="tape")(a.astype(np.complex64))
    assert small.dtype == np.complex64


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_tangent_through_a_complex_svd(mode):
    a, t = cnormal(3, 4), cnormal(3, 4)
    step = 1e-6
    expected = (svd_loss(a + step * t) - svd_loss(a - step * t)) / (2 * step)
    _, got = sg.jvp(svd_loss, (a,), (t,), mode=mode)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def through_a_complex_svd(x):
    return svd_loss(BASES[0] + x[0] * BASES[1] + x[1] * np.conj(BASES[2]))


def test_second_order_through_a_complex_svd_on_the_tape():
    x, v = rng.normal(size=2) * 0.3, rng.normal(size=2)
    (got,) = sg.hvp(through_a_complex_svd, (x,), (v,), mode="tape")

    def directional(y):
        return np.sum(sg.grad(through_a_complex_svd, mode="tape")(y) * v)

    expected = numeric_complex_grad(directional, (x,), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
