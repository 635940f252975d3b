"""A shape written out as a tuple, with an entry a helper computes from a differentiated
argument (``X.reshape((-1, width(W)))``), is a shape: the analysis takes the helper's
integer for a differentiated value, and the call stays the array method's rule, which
gives a shape no derivative. Sent to run-time dispatch instead (as ``m.sum(x)`` of
``m = np`` is), the generated code indexed the dispatched cotangent of the tuple, which is
None: a TypeError from generated code in s2s and auto (round 32's mutated program 26346).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg


def width(W):
    return W.shape[0]


def reshaped_by_tuple(W, X):
    return np.sum(np.tanh(X.reshape((-1, width(W))) @ W))


def reshaped_by_list(W, X):
    return np.sum(np.tanh(np.reshape(X, [-1, width(W)]) @ W) ** 2)


def reshaped_by_arguments(W, X):
    return np.sum(np.tanh(X.reshape(-1, width(W)) @ W))


def summed_over_a_tuple_of_axes(W, X):
    return np.sum(X.reshape(2, 2, width(W)).sum(axis=(0, width(W) - 2)) * W[:, 0])


PROGRAMS = [reshaped_by_tuple, reshaped_by_list, reshaped_by_arguments, summed_over_a_tuple_of_axes]
# shapes given as separate arguments are dispatched as the call runs, whose gradient forward
# mode over source cannot differentiate (refused at the user's line; auto tapes it)
DISPATCHED = {reshaped_by_arguments, summed_over_a_tuple_of_axes}


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_a_shape_tuple_with_a_helpers_entry(f, mode):
    rng = np.random.default_rng(3)
    W, X = rng.normal(size=(3, 2)), rng.normal(size=(4, 3))
    V = rng.normal(size=(3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = sg.grad(f, mode=mode)
        for _ in range(2):
            assert_close(gradient(W, X), numeric_grad(f, [W, X], 0))
        _, tangent = sg.jvp(lambda w: f(w, X), (W,), (V,), mode=mode)
        assert_close(tangent, numeric_jvp(f, [W, X], 0, V))
        if mode == "s2s" and f in DISPATCHED:
            with pytest.raises(sg.UnsupportedError, match=r"test_shape_tuples_from_helpers\.py:"):
                sg.hvp(lambda w: f(w, X), (W,), (V,), mode=mode)
            return
        hvp = sg.hvp(lambda w: f(w, X), (W,), (V,), mode=mode)
    expected = numeric_jvp(lambda w: sg.grad(f, mode="tape")(w, X), [W], 0, V, step=1e-5)
    assert_close(np.asarray(hvp).reshape(W.shape), expected, rtol=1e-4, atol=1e-6)
