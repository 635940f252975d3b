"""Forward mode (jvp, hessian) of writes into an array that may share memory with another
(a view an expression makes: ``y[1:][::2] = v``, ``a[0][1] = v``, ``a.reshape(-1)[0] = v``,
``np.swapaxes(a, 0, 1)[0] = v``): refused naming the user's line, as reverse mode refuses
them, where the tangent of the view, made a private copy to be written, silently no longer
reached the array's. Views bound to a name and written (``v = y[1:]; v[0] = x``) keep their
forward-mode derivatives."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, numeric_jvp

import s2sgrad as sg

RNG = np.random.default_rng(880031)


def chained_slices(x):
    y = np.zeros(x.shape[0] + 1)
    y[1:][::2] = x[: (x.shape[0] + 1) // 2]
    return np.sum(y * x[0])


def chained_indices(x):
    a = np.zeros((2, x.shape[0]))
    a[0][1] = x[0]
    a[1, :][2] = x[1] ** 2
    return np.sum(a * 2.0) + a[0, 1] * a[1, 2]


def reshaped_write(x):
    b = np.outer(x, x)
    b.reshape(-1)[0] = 5.0
    return np.sum(b * x)


def swapped_axes_write(x):
    b = np.outer(x, x)
    np.swapaxes(b, 0, 1)[0] = x[0]
    return np.sum(b**2)


def named_view_write(x):
    y = np.ones(x.shape[0] + 1)
    v = y[1:]
    v[0] = x[0] ** 2
    v[1:] = np.sin(x[1:])
    return np.sum(y * y) + np.sum(v)


@pytest.mark.parametrize(
    "f",
    [chained_slices, chained_indices, reshaped_write, swapped_axes_write],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("transform", ["jvp", "hessian"])
def test_forward_mode_refuses_writes_into_shared_memory(f, transform):
    x = RNG.normal(size=4)
    with pytest.raises(sg.UnsupportedError, match=r"test_forward_mode_shared_writes\.py:\d+: "):
        if transform == "jvp":
            sg.jvp(f, (x,), (np.ones(4),), mode="s2s")
        else:
            sg.hessian(f, mode="s2s")(x)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("n", [3, 5])
def test_named_views_keep_forward_derivatives(mode, n):
    x, v = RNG.normal(size=n), RNG.normal(size=n)
    _, tangent = sg.jvp(named_view_write, (x,), (v,), mode=mode)
    assert_close(tangent, numeric_jvp(named_view_write, [x], 0, v), rtol=1e-5, atol=1e-6)
    hessian = sg.hessian(named_view_write, mode=mode)(x)
    columns = [
        numeric_jvp(sg.grad(named_view_write, mode=mode), [x], 0, e, step=1e-5) for e in np.eye(n)
    ]
    assert_close(hessian, np.stack(columns, axis=1), rtol=1e-4, atol=1e-5)
