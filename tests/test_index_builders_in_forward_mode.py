"""``np.s_[c, i:i + k, :]``: an index, whether the user writes it or the backward sweep of
a copy into a buffer (``cols[idx, :] = x[c, i:i + oh, j:j + ow].reshape(-1)``, im2col) does.
Forward mode refused any ``np.s_`` but one of slices alone ("forward mode cannot
differentiate np.s_[...]"), so the Hessian of such code failed in mode="s2s"; it builds
only an index, which has no derivative.
"""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

R = np.random.default_rng(2213)


def im2col_sum(x):
    C, H, W = x.shape
    oh, ow = H - 1, W - 1
    cols = np.zeros((C * 4, oh * ow))
    row = 0
    for c in range(C):
        for i in range(2):
            for j in range(2):
                cols[row, :] = x[c, i : i + oh, j : j + ow].reshape(-1)
                row += 1
    return np.sum(np.tanh(cols) ** 2)


def user_index(x):
    total = 0.0
    for c in range(x.shape[0]):
        index = np.s_[c, 1:]
        total = total + np.sum(np.sin(x[index]) ** 2)
    return total


@pytest.mark.parametrize("f", [im2col_sum, user_index])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_hvp_through_index_expressions(f, mode):
    x = R.normal(size=(2, 3, 3)) if f is im2col_sum else R.normal(size=(2, 4))
    v = R.normal(size=x.shape)
    assert_close(sg.grad(f, mode=mode)(x), numeric_grad(f, [x], 0))
    gradient = sg.grad(f, mode="tape")
    for _ in range(2):
        (product,) = sg.hvp(f, (x,), (v,), mode=mode)
        assert_close(product, numeric_jvp(gradient, [x], 0, v), rtol=1e-5, atol=1e-6)
