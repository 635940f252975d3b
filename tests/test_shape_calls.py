"""Specialised code calls ``a.reshape(shape)`` for ``np.reshape(a, shape)`` and indexes with
``None`` for ``np.expand_dims`` (``specialize/rewrites.py``, ``specialize/new_axes.py``):
the same arrays without NumPy's dispatch in Python; right against central differences in
every mode."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_gradient_in_every_mode, call_twice, numeric_grad

import s2sgrad as sg

RNG = np.random.default_rng(23)


def pooled(x, w):
    n, h, c = x.shape
    windows = np.reshape(x * w, (n, h // 2, 2, c))
    return np.sum(np.max(windows, axis=2) ** 2)


def new_axes(x, v):
    a = np.expand_dims(x, -1) * v  # (3, 4, 1) * (2,) → (3, 4, 2)
    b = np.expand_dims(np.sin(x), (0, 2))  # (1, 3, 1, 4)
    return np.sum(a**2) + np.sum(b * np.reshape(x, (3, 1, 4)))


def reshaped_views(x):
    flat = np.reshape(x.T, -1)  # a copy (x.T is not contiguous)
    return np.sum(flat * np.arange(flat.size)) + np.sum(np.reshape(x, (2, -1)) ** 3)


CASES = [
    (pooled, (RNG.standard_normal((2, 4, 3)), RNG.standard_normal(3))),
    (new_axes, (RNG.standard_normal((3, 4)), RNG.standard_normal(2))),
    (reshaped_views, (RNG.standard_normal((3, 4)),)),
]


@pytest.mark.parametrize("f, args", CASES)
def test_gradient_against_differences(f, args):
    assert_gradient_in_every_mode(f, args)


def test_second_order():
    x, v = RNG.standard_normal((3, 4)), RNG.standard_normal(2)
    direction = RNG.standard_normal((3, 4))
    gradient = sg.grad(new_axes, mode="s2s")
    expected = numeric_grad(lambda y: np.sum(gradient(y, v) * direction), (x,), 0)
    (actual,) = sg.hvp(lambda y: new_axes(y, v), (x,), (direction,), mode="s2s")
    assert_close(actual, expected, rtol=1e-4, atol=1e-6)


def test_the_specialised_code_has_no_shape_functions():
    for f, args in CASES[:2]:
        gradient = sg.grad(f, mode="s2s")
        call_twice(gradient, *args)
        lines = sg.source(gradient).splitlines()
        code = "\n".join(line for line in lines if not line.strip().startswith("#"))
        assert "np.reshape" not in code and "np.expand_dims" not in code, code
    assert "x[:, :, None]" in code and "[None, :, None, :]" in code, code
