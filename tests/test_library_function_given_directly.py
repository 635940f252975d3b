"""A transform given a library function itself (``sg.vjp(np.linalg.norm, x)``,
``sg.grad(scipy.special.logsumexp)``) differentiates it by its rule in source
transformation too, instead of refusing it (a C function has no source; a decorated SciPy
function's source was reported as a file edited after import)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close

import s2sgrad as sg

scipy_special = pytest.importorskip("scipy.special")
scipy_signal = pytest.importorskip("scipy.signal")

RNG = np.random.default_rng(11)


def central(f, x, v, step=1e-6):
    return (f(x + step * v) - f(x - step * v)) / (2 * step)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize(
    "function",
    [np.linalg.norm, np.sin, np.sum, scipy_special.logsumexp, scipy_special.expit],
    ids=lambda f: getattr(f, "__name__", repr(f)),
)
@pytest.mark.parametrize("shape", [(3,), (2, 4)])
def test_vjp_and_jvp_of_a_library_function(function, mode, shape):
    x = RNG.normal(size=shape)
    out, pullback = sg.vjp(function, x, mode=mode)
    assert_close(out, function(x))
    cotangent = RNG.normal(size=np.shape(out))
    (gx,) = pullback(cotangent)
    v = RNG.normal(size=shape)
    expected = np.sum(cotangent * central(function, x, v))
    assert np.isclose(np.sum(gx * v), expected, rtol=1e-6, atol=1e-8)
    _, tangent = sg.jvp(function, (x,), (v,), mode=mode)
    assert_close(tangent, central(function, x, v), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_decorated_scipy_function_of_two_arguments(mode):
    a, b = RNG.normal(size=5), RNG.normal(size=3)
    out, pullback = sg.vjp(scipy_signal.convolve, a, b, mode=mode)
    g = RNG.normal(size=out.shape)
    ga, gb = pullback(g)
    va, vb = RNG.normal(size=5), RNG.normal(size=3)
    assert np.isclose(
        np.sum(ga * va), np.sum(g * central(lambda t: scipy_signal.convolve(t, b), a, va))
    )
    assert np.isclose(
        np.sum(gb * vb), np.sum(g * central(lambda t: scipy_signal.convolve(a, t), b, vb))
    )


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_grad_and_hessian_by_name_of_a_library_function(mode):
    x = RNG.normal(size=4)
    gradient = sg.grad(np.linalg.norm, wrt="x", mode=mode)(x)
    assert_close(gradient, x / np.linalg.norm(x))
    n = np.linalg.norm(x)
    expected = (np.eye(4) - np.outer(x, x) / n**2) / n
    assert_close(sg.hessian(np.linalg.norm, mode=mode)(x), expected, rtol=1e-8)
    gradient = sg.grad(scipy_special.logsumexp, mode=mode)(x)
    assert_close(gradient, np.exp(x) / np.sum(np.exp(x)))
