"""``pullback(None)``: the caller used no output of the function. A ``None`` entry of a
tuple's cotangent already meant an output nobody used; the whole cotangent ``None`` gave
zeros on the tape and a TypeError from generated code in source transformation. It is the
zero cotangent in every engine."""

import numpy as np
import pytest

import s2sgrad as sg


def elementwise(v):
    return np.sin(v) * v


def pair(v):
    return np.sin(v), v * 2


def entries(v):
    return {"a": v**2, "b": np.sum(v)}


def total(v):
    return np.sum(v**3)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("f", [elementwise, pair, entries, total])
@pytest.mark.parametrize("shape", [(3,), (2, 2)])
def test_a_none_cotangent_is_zero(f, shape, mode):
    x = np.random.default_rng(sum(shape)).normal(size=shape)
    out, pullback = sg.vjp(f, x, mode=mode)
    for _ in range(2):
        (cotangent,) = pullback(None)
        np.testing.assert_array_equal(cotangent, np.zeros(shape))
    ones = sg.tree_map(np.ones_like, out)
    (cotangent,) = pullback(ones)  # a cotangent after it is still the right one
    want = sg.vjp(f, x, mode="tape")[1](ones)[0]
    np.testing.assert_allclose(cotangent, want, rtol=1e-12)
