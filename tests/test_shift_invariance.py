"""A row maximum subtracted for stability (``x - np.max(x, axis=1, keepdims=True)`` in a
softmax or log-softmax) cancels out of the result, so the generated backward skips its
derivative (no comparison with the maximum); where it does not cancel, the derivative
stays. Gradients checked against central differences in every mode, at ties too."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

RNG = np.random.default_rng(57)
MODES = ("s2s", "auto", "tape")


def softmax_weights(x, v):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    weights = e / np.sum(e, axis=1, keepdims=True)
    return np.sum((weights @ v) ** 2)


def log_softmax(x, y):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    return -np.sum(y * logp)


def squared_softmax(x):
    m = np.max(x, axis=0, keepdims=True)
    e = 3.0 * np.exp(1.0 - (x - m)) / 2.0
    p = e * e / (np.sum(e, axis=0, keepdims=True) * np.sum(e, axis=0, keepdims=True))
    return np.sum(np.sin(p))


# the maximum does not cancel: its derivative is needed
def shifted_sum(x):
    return np.sum(np.sin(x - np.max(x, axis=1, keepdims=True)))


def unnormalised(x):
    return np.sum(np.exp(x - np.max(x, axis=1, keepdims=True)))


def other_axis(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return np.sum(np.sin(e / np.sum(e, axis=0, keepdims=True)))


def squared_over_once(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return np.sum(e * e / np.sum(e, axis=1, keepdims=True))


def returned_shift(x):
    shifted = x - np.max(x, axis=1, keepdims=True)
    e = np.exp(shifted)
    return np.sum(np.log(e / np.sum(e, axis=1, keepdims=True))), shifted


def shift_in_loop(x):
    shifted = x - np.max(x, axis=1, keepdims=True)
    total = 0.0
    for _ in range(2):
        total = total + np.sum(shifted * shifted)
    return total


def source_rebound(x):
    m = np.max(x, axis=1, keepdims=True)
    for _ in range(1):
        x = np.stack([x, 2.0 * x])  # (2, rows, columns): axis 1 is no longer the rows
    e = np.exp(x - m)
    return np.sum(np.sin(e / np.sum(e, axis=1, keepdims=True)))


def source_rebound_by_unpacking(x):
    m = np.max(x, axis=1, keepdims=True)
    for _ in range(1):
        x, scale = np.stack([x, 2.0 * x]), 2.0  # the source bound again inside a tuple
    e = np.exp(x - m)
    return np.sum(np.sin(e / np.sum(e, axis=1, keepdims=True))) * scale


CANCELLING = [
    (softmax_weights, (RNG.standard_normal((4, 5)), RNG.standard_normal((5, 3)))),
    (log_softmax, (RNG.standard_normal((6, 4)), np.eye(4)[RNG.integers(0, 4, 6)])),
    (squared_softmax, (RNG.standard_normal((3, 4)),)),
]
KEPT = [
    (shifted_sum, (RNG.standard_normal((3, 4)),)),
    (unnormalised, (RNG.standard_normal((3, 4)),)),
    (other_axis, (RNG.standard_normal((3, 4)),)),
    (squared_over_once, (RNG.standard_normal((3, 4)),)),
    (shift_in_loop, (RNG.standard_normal((3, 4)),)),
    (source_rebound, (RNG.standard_normal((3, 3)),)),
    (source_rebound_by_unpacking, (RNG.standard_normal((3, 3)),)),
]


def _gradients(f, args, **options):
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            transformed = sg.grad(f, mode=mode, **options)
            yield mode, transformed, call_twice(transformed, *args)


@pytest.mark.parametrize("f, args", CANCELLING + KEPT, ids=lambda v: getattr(v, "__name__", ""))
def test_gradient_against_differences(f, args):
    expected = numeric_grad(f, args, 0)
    for _, _, actual in _gradients(f, args):
        assert_close(actual, expected, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("f, args", CANCELLING, ids=lambda v: getattr(v, "__name__", ""))
def test_a_cancelled_maximum_has_no_backward(f, args):
    gradient = sg.grad(f, mode="s2s")
    gradient(*args)
    assert "equal" not in sg.source(gradient)


@pytest.mark.parametrize("f, args", KEPT, ids=lambda v: getattr(v, "__name__", ""))
def test_a_maximum_that_stays_keeps_its_derivative(f, args):
    gradient = sg.grad(f, mode="s2s")
    gradient(*args)
    assert "equal" in sg.source(gradient) or "extremum" in sg.source(gradient)


def test_returned_shift_keeps_its_derivative_with_aux():
    x = RNG.standard_normal((3, 4))
    expected = numeric_grad(lambda v: returned_shift(v)[0], (x,), 0)
    for _, _, (actual, _aux) in _gradients(returned_shift, (x,), has_aux=True):
        assert_close(actual, expected, rtol=1e-5, atol=1e-8)
    gradient = sg.grad(returned_shift, mode="s2s", has_aux=True)
    gradient(x)
    assert "equal" in sg.source(gradient) or "extremum" in sg.source(gradient)


def test_at_ties_the_softmax_gradient_is_right():
    x = np.array([[1.0, 1.0, 0.5], [2.0, 2.0, 2.0]])
    y = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    # softmax is smooth at ties of the maximum: differences are the oracle there too
    expected = numeric_grad(log_softmax, (x, y), 0)
    for _, _, actual in _gradients(log_softmax, (x, y)):
        assert_close(actual, expected, rtol=1e-5, atol=1e-8)


def test_forward_mode_agrees():
    x, v = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 3))
    tangent = RNG.standard_normal((4, 5))
    expected = np.sum(numeric_grad(softmax_weights, (x, v), 0) * tangent)
    for mode in ("s2s", "tape"):
        _, derivative = sg.jvp(softmax_weights, (x, v), (tangent, np.zeros_like(v)), mode=mode)
        assert_close(derivative, expected, rtol=1e-5, atol=1e-8)
