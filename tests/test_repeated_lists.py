"""``*`` on a list or tuple repeats it: refused by the source transformer where it
repeats differentiated values (the tape, and so ``mode="auto"``, is right), accepted for
lists of constants (``[0.0] * n``)."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.errors import FallbackWarning, UnsupportedError


def repeated_list(x):
    xs = [x, x * 2.0]
    ys = xs * 2
    return np.sum(ys[3] * ys[0]) + np.sum(ys[2])


def repeated_slice(x):
    t = [x][0:1]
    ys = t * 2  # the source transformer once scaled the gradient by 2 here
    return np.sum(ys[1] * ys[0])


def repeated_tuple(x):
    xs = (x, x * 2.0)
    ys = 2 * xs
    return np.sum(ys[3] * ys[0])


def list_of_constants(x):
    hs = [0.0] * 3
    for i in range(3):
        hs[i] = x * (i + 1.0)
    return np.sum(hs[2] * hs[0])


REPEATING = [repeated_list, repeated_slice, repeated_tuple]
X = np.array([0.3, -0.2])


@pytest.mark.parametrize("function", REPEATING, ids=lambda f: f.__name__)
def test_repeating_differentiated_values_is_refused_by_source(function):
    with pytest.raises(UnsupportedError, match=r"test_repeated_lists\.py:\d+: '\*' repeats"):
        sg.grad(function, mode="s2s")(X)


@pytest.mark.parametrize("mode", ["tape", "auto"])
@pytest.mark.parametrize("function", REPEATING, ids=lambda f: f.__name__)
def test_repeating_differentiated_values_is_right_by_tape(function, mode):
    with pytest.warns(FallbackWarning) if mode == "auto" else nullcontext():
        gradient = sg.grad(function, mode=mode)(X)
    assert_close(gradient, numeric_grad(function, (X,), 0))


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_a_list_of_constants_may_be_repeated(mode):
    gradient = sg.grad(list_of_constants, mode=mode)
    for _ in range(2):
        assert_close(gradient(X), numeric_grad(list_of_constants, (X,), 0))
