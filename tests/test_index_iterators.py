"""Loops over iterators without a length: ``np.ndindex`` crashed the generated code
(``len()`` of it); ``np.ndenumerate`` of a tape value crashed inside NumPy
(AttributeError). Both give the right gradient now; an iterator giving numbers, which the
source cannot follow back, is refused with the line."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

W = np.array([[0.5, -0.2, 0.1], [0.3, 0.8, -0.4]])


def over_ndindex(a):
    s = 0.0
    for i, j in np.ndindex(a.shape):
        s = s + a[i, j] ** 2 * (i + 1) * (j - 1)
    return s


def over_product(a):
    s = 0.0
    for i, j in itertools.product(range(2), range(3)):
        s = s + a[i, j] ** 3 * (i + j)
    return s


def over_ndenumerate(a):
    s = 0.0
    for (i, j), v in np.ndenumerate(a):
        s = s + v**2 * (i + j)
    return s


def over_repeat(a):
    s = 0.0
    for c in itertools.repeat(0.5, 2):
        s = s + np.sum(a * c)
    return s


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("f", [over_ndindex, over_product])
def test_index_iterators(mode, f):
    assert_close(call_twice(sg.grad(f, mode=mode), W), numeric_grad(f, (W,), 0))
    v = np.ones_like(W)
    _, tangent = sg.jvp(f, (W,), (v,), mode=mode)
    assert np.isclose(tangent, np.sum(numeric_grad(f, (W,), 0)))


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_ndenumerate_on_the_tape(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = call_twice(sg.grad(over_ndenumerate, mode=mode), W)
    assert_close(g, numeric_grad(over_ndenumerate, (W,), 0))


def test_an_iterator_of_numbers_is_refused_by_source():
    with pytest.raises(sg.UnsupportedError, match="iterator") as refused:
        sg.grad(over_repeat, mode="s2s")(W)
    assert "test_index_iterators.py:" in str(refused.value)
