"""``np.lexsort`` of values being differentiated gives integer positions, constant between
ties, as ``np.argsort`` does: the values picked with them are differentiated (first and
second order, every mode) where source transformation refused it for want of a rule."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

RNG = np.random.default_rng(880051)


def rows_in_order(a):
    order = np.lexsort(a.T)
    return np.sum(a[order] ** 2 * np.arange(a.size).reshape(a.shape))


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("shape", [(4, 2), (5, 3)])
def test_values_picked_by_lexsort(mode, shape):
    a = RNG.normal(size=shape)
    assert_close(
        call_twice(sg.grad(rows_in_order, mode=mode), a), numeric_grad(rows_in_order, [a], 0)
    )
    v = RNG.normal(size=shape)
    _, tangent = sg.jvp(rows_in_order, (a,), (v,), mode=mode)
    assert_close(tangent, numeric_jvp(rows_in_order, [a], 0, v), rtol=1e-5, atol=1e-6)
    hvp = sg.hvp(rows_in_order, (a,), (v,), mode=mode)
    assert_close(
        np.ravel(hvp),
        np.ravel(numeric_jvp(sg.grad(rows_in_order, mode=mode), [a], 0, v, step=1e-5)),
        rtol=1e-4,
        atol=1e-5,
    )
