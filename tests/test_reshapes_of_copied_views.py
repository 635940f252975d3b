"""A reshape (``ravel``, ``reshape``) of a view, written into: NumPy gives a view of a
contiguous array and a copy of another, and source transformation asks which as the code
runs. It asked the contiguous copy it binds the inner view to (``B = A.T`` becomes
``A.T.copy()``), so ``B.ravel()`` of a transpose or of a sliced view was taken for a view
and its write reached ``B``: a wrong gradient. It now asks the uncopied view."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

RNG = np.random.default_rng(880041)


def ravel_of_transpose(a):
    b = a.T
    c = b.ravel()
    c[1] = 5.0
    return np.sum(b * a.T) + np.sum(c)


def reshape_of_slice(a):
    b = a[:, 1:]
    c = b.reshape(-1)
    c[0] = 7.0
    return np.sum(a**2) + np.sum(c * a[:, 1:].ravel())


def ravel_of_row_block(a):
    b = a[1:]  # contiguous rows: the ravel is a view, and the write reaches a
    c = b.ravel()
    c[0] = 3.0
    return np.sum(a**2) + np.sum(c)


CASES = [ravel_of_transpose, reshape_of_slice, ravel_of_row_block]


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 3)])
def test_gradient_follows_numpy_view_or_copy(f, mode, shape):
    a = RNG.normal(size=shape)
    assert_close(call_twice(sg.grad(f, mode=mode), a), numeric_grad(f, [a], 0))


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_forward_mode_follows_numpy_view_or_copy(f):
    a, v = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    _, tangent = sg.jvp(f, (a,), (v,), mode="s2s")
    assert_close(tangent, numeric_jvp(f, [a], 0, v), rtol=1e-5, atol=1e-6)


def test_uncopied_view_is_asked():
    code = sg.source(sg.grad(ravel_of_transpose, mode="s2s"))
    assert "_layout" in code and ".ravel(), b_layout" in code.replace("b_layout1", "b_layout")
