"""``.fill(v)`` and ``.sort()`` called on a part of an array (``y[2:4].fill(v)``,
``y[1:].sort()``): a basic index makes a view, so the method writes into ``y``. Source
transformation writes them as the item assignments they are (it ran them as opaque calls
and differentiated ``y`` as unchanged: wrong gradients); a part it cannot tell is a view
(``y.T.sort()``, ``y[i].fill(v)``, a list's item) is refused, and so is ``np.copyto`` into
a view on the tape (which wrote a new version of the view only)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg
from s2sgrad.errors import S2SGradError


def fill_part(x):
    y = x * 1.5
    y[2:4].fill(1.0)
    return np.sum(y**2) + np.sum(np.sin(y))


def sort_tail(x):
    y = x.copy()
    y[1:].sort()
    return np.sum(y * np.arange(1.0, 7.0) * y)


def sort_strided_rows(x):
    y = x.reshape(2, 3) * 2.0
    y[:, ::2].sort(axis=0)
    return np.sum(np.tanh(y) * np.arange(6.0).reshape(2, 3))


def fill_negative_bounds(x):
    y = np.cos(x)
    n = 2
    y[-n:].fill(0.5)
    return np.sum(y**3)


CASES = [fill_part, sort_tail, sort_strided_rows, fill_negative_bounds]


@pytest.mark.parametrize("mode", ("s2s", "auto"))
@pytest.mark.parametrize("f", CASES)
def test_first_and_second_order(mode, f):
    rng = np.random.default_rng(CASES.index(f))
    x, v = rng.normal(size=6), rng.normal(size=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to the tape: the source is transformed
        assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        hvp = sg.hvp(f, (x,), (v,), mode=mode)
    assert_close(tangent, numeric_jvp(f, [x], 0, v))
    expected = numeric_jvp(lambda y: sg.grad(f, mode="s2s")(y), [x], 0, v, step=1e-5)
    assert_close(np.asarray(hvp).reshape(6), expected, rtol=1e-4, atol=1e-6)


def sort_transpose(x):
    y = x.copy()
    y.T.sort()
    return np.sum(y * np.arange(6.0))


def fill_reshaped_row(x):
    y = x.copy()
    y.reshape(2, 3)[0].fill(2.0)
    return np.sum(y**2)


def partition_tail(x):
    y = x.copy()
    y[1:].partition(2)
    return np.sum(y * np.arange(6.0))


def sort_list_item_part(x):
    ys = [x.copy(), x * 2.0]
    ys[0][1:].sort()
    return np.sum(ys[0] * np.arange(6.0))


@pytest.mark.parametrize("mode", ("s2s", "auto"))
@pytest.mark.parametrize("f", [sort_transpose, fill_reshaped_row, partition_tail])
def test_writes_through_other_views_are_refused(mode, f):
    # refused by source transformation; mode "auto" may take the tape, which follows a
    # write through a view of an array the function holds (tape/view_writes.py)
    x = np.random.default_rng(9).normal(size=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = sg.grad(f, mode=mode)(x)
        except S2SGradError as refusal:
            assert re.search(r"test_methods_writing_into_views\.py:\d+", str(refusal))
            return
    assert mode == "auto"
    np.testing.assert_allclose(got, numeric_grad(f, [x], 0), rtol=1e-5, atol=1e-7)


def test_a_list_items_part_is_refused_by_source_transformation():
    x = np.random.default_rng(10).normal(size=6)
    with pytest.raises(S2SGradError, match=r"\.sort\(\) of part of 'ys'"):
        sg.grad(sort_list_item_part, mode="s2s")(x)


def copy_into_part(x):
    y = x.copy()
    np.copyto(y[2:4], 1.0)
    return np.sum(y**2)


@pytest.mark.parametrize("mode", ("auto", "tape"))
def test_copyto_into_a_view_reaches_the_array_on_the_tape(mode):
    # it wrote the view's new version alone (a wrong gradient), then was refused; the tape
    # now writes through to the array the view lies in (tape/view_writes.py)
    x = np.random.default_rng(11).normal(size=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(copy_into_part, mode=mode)(x)
    np.testing.assert_allclose(got, numeric_grad(copy_into_part, [x], 0), rtol=1e-5, atol=1e-7)
