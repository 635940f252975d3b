"""A restored in-place write after a loop that saved values on the stack.

The generated gradient of ``v2[i] = ...`` saves what it overwrites and puts it back in the
backward (``v2[i] = stack.pop()``). The walk along the paths (passes/aliases_paths.py) knew a
restore only when it knew every entry of the stack; a loop before the write made them unknown,
so differentiating the gradient again (hvp, Hessian) was refused in s2s for sharing that the
restore undoes (found by the random programs at scale, program 2994). The entries pushed after
the loop are known whatever the loop pushed. The oracle: central differences of the tape's
gradient, itself checked against central differences of the function.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import numeric_grad, numeric_jacobian

import s2sgrad as sg

MODES = ["s2s", "tape", "auto"]
X = np.array([0.3, -0.7, 1.1, 0.45])
V = np.array([0.2, -0.4, 0.9, -0.3])


def loop_then_flipped_or_same(x):
    h = x * 1.0
    for _ in range(2):
        h = h * 0.5 + np.sin(h)
    v1 = np.sqrt(1.0 + x**2)
    v2 = np.ones_like(x) * np.flip(v1, axis=-1) if np.ndim(v1) else v1
    if np.ndim(v2) > 0:
        v2[[0, -1, 0]] = np.tanh(np.sum(x))
    return np.sum(np.sin(h)) + np.sum(np.sin(v2) * 2.0)


def while_loop_then_flipped_or_same(x):
    h = x * 1.0
    k = 0
    while k < 3:
        h = np.tanh(h) + 0.1 * h
        k += 1
    v1 = x * x
    v2 = np.flip(v1) * np.sin(np.flip(v1)) if np.sum(x) > 0 else v1
    v2[1:3] = np.tanh(v2[0:2]) * h[:2]
    return np.sum(v2**2) + np.sum(h * x)


def helper_loop_then_flipped_or_same(x):
    def cell(a, s):
        out = np.tanh(a * s) + x * 0.5
        for _ in range(1):
            out = out * 0.5 + np.sin(out)
        if np.sum(out) > 100.0:
            return out
        return out * 2.0

    v = cell(x * 1.0, 0.5)
    v = cell(v, s=np.sin(x))
    w1 = np.sqrt(1.0 + x**2)
    w2 = np.ones_like(x) * np.flip(w1, axis=-1) if np.ndim(w1) else w1
    if np.ndim(w2) > 0:
        w2[[0, -1, 0]] = np.tanh(np.sum(x))
    return np.sum(np.sin(v)) + np.sum(np.sin(w2) * 2.0)


CASES = [
    loop_then_flipped_or_same,
    while_loop_then_flipped_or_same,
    helper_loop_then_flipped_or_same,
]


def _hessian_by_differences(f):
    gradient = sg.grad(f, mode="tape")
    np.testing.assert_allclose(
        gradient(X.copy()), numeric_grad(lambda x: f(x.copy()), [X.copy()], 0), rtol=1e-6, atol=1e-8
    )
    return numeric_jacobian(lambda x: gradient(x.copy()), [X.copy()], 0, step=1e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hvp_and_hessian_match_differences_of_gradients(f, mode):
    expected = _hessian_by_differences(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto must not fall back to the tape
        for _ in range(2):  # the second call runs the specialised code
            (product,) = sg.hvp(f, (X.copy(),), (V,), mode=mode)
            np.testing.assert_allclose(product, expected @ V, rtol=1e-5, atol=1e-5)
        hessian = sg.hessian(f, mode=mode)(X.copy())
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-5)
