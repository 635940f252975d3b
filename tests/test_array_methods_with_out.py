"""An ndarray method given ``out=`` (``a.sum(axis=0, out=s)``) as a statement of its own.

The method writes its result into ``s``; neither engine saw the write (source
transformation only rewrote ``np.sum(..., out=s)``, the tape's method ran NumPy's on the
plain values), so ``s`` kept a zero derivative: a silently zero gradient in every mode.
Source transformation now writes it as ``s[...] = a.sum(axis=0)`` (``out=b[0]`` as
``b[0] = ...``); the tape takes the method's ``out=`` as the function's, following it or
refusing it naming the line.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")
_W = np.arange(1.0, 10.0)


def _sums_into(x):
    a = np.outer(x, x + 1.0)
    s = np.empty(3)
    a.sum(axis=0, out=s)
    return np.sum(s * _W[:3] ** 2)


def _means_into(x):
    a = np.outer(np.sin(x), x)
    s = np.zeros(3)
    a.mean(axis=1, out=s)
    return np.sum(s * _W[:3])


def _cumulates_into(x):
    b = np.zeros(3)
    (x**2).cumsum(out=b)
    return np.sum(b * _W[:3])


def _maxima_into(x):
    a = np.outer(x, x + 1.0)
    s = np.zeros(3)
    a.max(axis=0, out=s)
    return np.sum(s * _W[:3])


def _dots_into(x):
    a = np.outer(x, x + 1.0)
    c = np.zeros((3, 3))
    a.dot(a.T, out=c)
    return np.sum(c * _W.reshape(3, 3))


def _deviations_into(x):
    a = np.outer(x, x + 1.0)
    s = np.zeros(3)
    a.std(axis=0, out=s)
    return np.sum(s * _W[:3])


def _minima_into_its_own_row(x):
    a = np.outer(x, x + 1.0)
    a.min(axis=0, out=a[0])
    return np.sum(a * _W.reshape(3, 3))


def _maxima_into_and_named(x):
    a = np.outer(x, x + 1.0)
    s = np.zeros(3)
    r = a.max(axis=0, out=s)  # r is s
    return np.sum(r * s)


def _exponentials_into_and_named(x):
    b = np.zeros(3)
    r = np.exp(x, out=b)  # a NumPy function's out= too: r is b
    return np.sum(r * b * _W[:3])


def _sums_into_part_of_a_buffer(x):
    a = np.outer(x, x)
    s = np.zeros(5)
    a.sum(axis=0, out=s[1:4])
    return np.sum(s * _W[:5])


@pytest.mark.parametrize(
    "f",
    [
        _maxima_into_and_named,
        _exponentials_into_and_named,
        _sums_into_part_of_a_buffer,
        _sums_into,
        _means_into,
        _cumulates_into,
        _maxima_into,
        _dots_into,
        _deviations_into,
        _minima_into_its_own_row,
    ],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("mode", MODES)
def test_a_method_writing_out_is_differentiated_or_refused(f, mode):
    x = np.random.default_rng(41).standard_normal(3)
    v = np.random.default_rng(42).standard_normal(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = call_twice(sg.grad(f, mode=mode), x)
            _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        except sg.S2SGradError as error:
            assert mode == "tape", error  # source transformation takes every one
            assert f"{__file__}:" in str(error)
            return
    assert_close(got, numeric_grad(f, [x], 0))
    assert_close(tangent, numeric_jvp(f, [x], 0, v))


def test_a_method_writing_out_has_a_hessian_from_source_transformation():
    x = np.random.default_rng(43).standard_normal(3)
    v = np.random.default_rng(44).standard_normal(3)
    expected = numeric_jvp(
        lambda y: numeric_grad(_sums_into, [y], 0, step=1e-4), [x], 0, v, step=1e-4
    )
    product = sg.hvp(_sums_into, (x,), (v,), mode="s2s")
    assert_close(np.asarray(product).reshape(3), expected, rtol=1e-3, atol=1e-5)
