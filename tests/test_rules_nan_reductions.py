"""The NaN-ignoring reductions (s2sgrad/rules/nan_reductions.py) at their edge cases: NaN
entries get a zero cotangent, ties in nanmax share it, an all-NaN slice gives what NumPy
gives and zero cotangents, ``ddof``, ``axis`` (None, int, tuple) and ``keepdims``; each in
s2s, auto and tape against central differences, and forward mode against the JVP of finite
differences."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_gradient_in_every_mode, call_twice, numeric_jvp

import s2sgrad as sg
from s2sgrad.errors import S2SGradError

MODES = ("s2s", "auto", "tape")
rng = np.random.default_rng(18)

KEEP = np.ones((3, 4), bool)
KEEP[0, 1] = KEEP[2, 1] = KEEP[2, 3] = False
HOLES = np.where(KEEP, 0.0, np.nan)  # NaN where KEEP is False, else 0.0


def with_holes(x):
    return np.where(KEEP, x, np.nan)


X = rng.uniform(0.5, 2.0, (3, 4))

CASES = [
    ("nanmax axis None", lambda x: np.nanmax(with_holes(x)) * 2.0),
    ("nanmax axis 1", lambda x: np.sum(np.nanmax(with_holes(x), axis=1) ** 2)),
    ("nanmin tuple axis", lambda x: np.nanmin(with_holes(x), axis=(0, 1), keepdims=True)[0, 0]),
    ("nanprod axis 0", lambda x: np.sum(np.nanprod(with_holes(x), axis=0) * [1.0, 2, 3, 4])),
    ("nanprod keepdims", lambda x: np.sum(np.nanprod(with_holes(x), axis=1, keepdims=True))),
    ("nanvar ddof 0", lambda x: np.sum(np.nanvar(with_holes(x), axis=0) * [1.0, 2, 3, 4])),
    ("nanvar ddof 1 all", lambda x: np.nanvar(with_holes(x), ddof=1)),
    ("nanstd keepdims", lambda x: np.sum(np.nanstd(with_holes(x), axis=1, keepdims=True) ** 3)),
    ("nanstd tuple axis", lambda x: np.nanstd(with_holes(x), axis=(0, 1), ddof=1)),
    ("nancumsum flat", lambda x: np.sum(np.nancumsum(with_holes(x)) ** 2)),
    ("nancumsum axis 0", lambda x: np.sum(np.nancumsum(with_holes(x), axis=0) ** 2)),
    ("nancumprod axis 1", lambda x: np.sum(np.nancumprod(with_holes(x), axis=1))),
    ("nanmedian odd and even", lambda x: np.sum(np.nanmedian(with_holes(x), axis=0) ** 2)),
    ("nanmedian all", lambda x: np.nanmedian(with_holes(x)) * 3.0),
    ("nanmedian keepdims", lambda x: np.sum(np.nanmedian(with_holes(x), axis=1, keepdims=True))),
    ("nanquantile", lambda x: np.sum(np.nanquantile(with_holes(x), [0.2, 0.7], axis=1) ** 2)),
    ("nanquantile ends", lambda x: np.sum(np.nanquantile(with_holes(x), [0.0, 1.0], axis=0))),
    ("nanpercentile", lambda x: np.sum(np.nanpercentile(with_holes(x), 35.0, axis=(0, 1)))),
]


@pytest.mark.parametrize(("name", "f"), CASES, ids=[c[0] for c in CASES])
def test_gradient_with_nan_entries(name, f):
    assert_gradient_in_every_mode(f, (X,))
    gradient = sg.grad(f, mode="s2s")(X)
    assert np.all(gradient[~KEEP] == 0.0)


@pytest.mark.parametrize(("name", "f"), CASES, ids=[c[0] for c in CASES])
def test_forward_mode_with_nan_entries(name, f):
    tangent = rng.standard_normal(X.shape)
    expected = numeric_jvp(f, (X,), 0, tangent)
    for mode in ("s2s", "tape"):
        _, actual = sg.jvp(f, (X,), (tangent,), mode=mode)
        assert_close(actual, expected, rtol=1e-5, atol=1e-7)


def test_ties_in_nanmax_share_the_cotangent():
    def f(x):
        return np.nanmax(np.stack([x[0], x[0], x[1], np.nan]))

    x = np.array([2.0, 1.0])
    for mode in MODES:
        assert_close(call_twice(sg.grad(f, mode=mode), x), np.array([1.0, 0.0]))
    x = np.array([1.0, 1.0])  # a three-way tie: thirds
    for mode in MODES:
        assert_close(call_twice(sg.grad(f, mode=mode), x), np.array([2.0, 1.0]) / 3.0)


ALL_NAN_ROW = [
    np.nanmax,
    np.nanmin,
    np.nanprod,
    np.nanvar,
    np.nanstd,
    np.nanmedian,
    lambda a, axis: np.nanquantile(a, 0.4, axis=axis),
    lambda a, axis: np.nanpercentile(a, [10.0, 90.0], axis=axis),
]


@pytest.mark.parametrize("reduction", ALL_NAN_ROW)
def test_an_all_nan_slice_gives_numpys_value_and_zero_cotangents(reduction):
    """Row 1 is all NaN: NumPy gives NaN (or 1 for nanprod) there, with its warning; the
    gradient of the other rows' results is right and the NaN row's entries get 0."""

    def f(x):
        rows = np.stack([x[0], np.full(3, np.nan), x[1]])
        out = reduction(rows, axis=1)
        return np.sum(np.where(np.isnan(out), 0.0, out * 1.5))

    x = rng.uniform(0.5, 2.0, (2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected_value = f(x)
        for mode in MODES:
            value, gradient = sg.value_and_grad(f, mode=mode)(x)
            assert_close(value, expected_value)
            assert np.all(np.isfinite(gradient))
        assert_gradient_in_every_mode(f, (x,))

    def cotangent_of_the_nan_row(x):
        rows = np.stack([x[0], x[1] * np.nan, x[1]])
        return np.sum(np.where(np.isnan(rows), 0.0, rows)) + np.nansum(reduction(rows, axis=1))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mode in ("s2s", "tape"):
            gradient = sg.grad(cotangent_of_the_nan_row, mode=mode)(x)
            assert np.all(np.isfinite(gradient[0]))


def test_float32_stays_float32():
    x = X.astype(np.float32)
    for _, f in CASES:
        for mode in ("s2s", "tape"):
            assert sg.grad(f, mode=mode)(x).dtype == np.float32


def test_quantile_q_is_differentiated():
    def f(x, q):
        return np.sum(np.nanquantile(with_holes(x), q, axis=1) ** 2)

    q = np.array([0.15, 0.55, 0.9])
    for mode in MODES:
        for index, argument in ((0, X), (1, q)):
            from oracle import numeric_grad

            expected = numeric_grad(f, (X, q), index)
            actual = sg.grad(f, wrt=index, mode=mode)(X, q)
            assert_close(actual, expected, rtol=1e-5, atol=1e-7)
            assert np.shape(actual) == np.shape(argument)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_other_quantile_methods_are_refused(mode):
    def f(x):
        return np.nanquantile(x, 0.3, method="nearest")

    with pytest.raises(S2SGradError, match="method='linear'"):
        sg.grad(f, mode=mode)(X)
