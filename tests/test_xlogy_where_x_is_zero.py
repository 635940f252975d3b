"""``scipy.special.xlogy(x, y)`` and ``xlog1py`` are 0 wherever ``x`` is 0, whatever ``y``,
so their slope in ``y`` is 0 there, also at ``y = 0`` (``y = -1``): the rules computed
``x / y`` and raised ZeroDivisionError from generated code (Python floats) or gave NaN
(arrays), e.g. for the entropy term ``xlogy(p, p)``-style losses at a zero probability.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_grad_jvp_and_hvp, call_twice
from scipy import special

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


WEIGHTS = np.array([0.0, 1.5, 2.0])


def xlogy_at_zero(y):
    return special.xlogy(0.0, y)


def xlog1py_at_minus_one(y):
    return special.xlog1py(0.0, y)


def weighted_xlogy(y):
    return np.sum(special.xlogy(WEIGHTS, y))


def weighted_xlog1py(y):
    return np.sum(special.xlog1py(WEIGHTS, y))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "scalar, weighted, at",
    [(xlogy_at_zero, weighted_xlogy, 0.0), (xlog1py_at_minus_one, weighted_xlog1py, -1.0)],
)
def test_slope_in_y_where_x_is_zero(scalar, weighted, at, mode):
    y = np.array([at, at + 0.5, at + 2.0])
    expected = np.array([0.0, 1.5 / 0.5, 2.0 / 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(scalar, mode=mode), at), 0.0)
        assert_close(call_twice(sg.grad(weighted, mode=mode), y), expected)
        _, tangent = sg.jvp(weighted, (y,), (np.ones(3),), mode=mode)
    assert_close(tangent, np.sum(expected))


def weighted_log_terms(y):
    x = np.array([0.0, 0.5, 1.5, 0.0])
    return np.sum(special.xlogy(x, y) + special.xlog1py(x, y)) + np.sum(y**2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", [0, 1])
def test_away_from_zero_unchanged(seed, mode):
    rng = np.random.default_rng(seed)
    y = rng.uniform(0.3, 2.0, size=4)
    assert_grad_jvp_and_hvp(weighted_log_terms, y, rng.normal(size=4), mode)
