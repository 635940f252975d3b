"""A name generated code calls as a builtin (``range``, ``len``, ``min`` for a loop over
``zip``), hidden by a variable of the function or by the module (``from numpy import *``
binds ``min``): the loop's generated ``range(min(len(a), len(b)))`` called the user's
value. Source transformation refuses it, naming the line, and mode "auto" takes the tape."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import star_imported_numpy_module as starred
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad import UnsupportedError


def local_range(x):
    range = [0, 2]
    total = 0.0
    for i in range:
        total = total + x[i] ** 2
    return total


def local_len(x):
    len = 2.0
    total = 0.0
    for a in x:
        total = total + np.sin(a)
    return total * len


def local_min(x):
    min = 0.5
    total = 0.0
    for a, b in zip(x, x[1:]):
        total = total + a * b * min
    return total


def local_len_without_loops(x):
    len = 2
    return np.sum(x[:len] ** 3)


HIDDEN = [local_range, local_len, local_min, *[starred.zipped_products] * hasattr(starred, "max")]


@pytest.mark.parametrize("f", HIDDEN, ids=[f.__name__ for f in HIDDEN])
def test_refused_in_s2s_and_taped_in_auto(f):
    x = np.random.default_rng(12).normal(size=4)
    kept = x.copy()
    with pytest.raises(UnsupportedError, match=r"test_hidden_builtins\.py:\d+|module\.py:\d+"):
        sg.grad(f, mode="s2s")(x)
    expected = numeric_grad(f, [x], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mode in ("auto", "tape"):
            gradient = sg.grad(f, mode=mode)
            for _ in range(2):
                assert_close(gradient(x), expected)
            (product,) = sg.hvp(f, (x,), (np.ones(4),), mode=mode)
            assert np.all(np.isfinite(product))
    np.testing.assert_array_equal(x, kept)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("f", [local_len_without_loops, starred.reversed_weights])
def test_still_transformed_where_no_generated_call_is_hidden(f, mode):
    x = np.random.default_rng(13).normal(size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to the tape
        assert_close(sg.grad(f, mode=mode)(x), numeric_grad(f, [x], 0))
