"""Specialisation through integer-array indexing: ``logp[np.arange(n), y]``.

An index whose values are integers picks as many elements as its shape says, so code
indexed that way is specialised to the argument shapes like any other; a parameter used
as an index is checked by the probe (a boolean mask of the same shape may pick any number
of elements, so it runs the generic code).
"""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.pipeline import derivative

MODES = ("s2s", "tape", "auto")


def label_loss(W, b, X, y):
    logits = np.tanh(X @ W + b)
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    n = X.shape[0]
    return -np.sum(logp[np.arange(n), y]) / n


def picked_by_argmax(x):
    n = x.shape[0]
    return np.sum(np.sin(x[np.arange(n), np.argmax(x, axis=1)]) * x[:, 0])


def masked(x, m):
    return np.mean(x[m] ** 2) + np.sum(x)


def label_args(rng, n, n_in=4, n_out=3):
    return (
        rng.normal(size=(n_in, n_out)),
        rng.normal(size=n_out),
        rng.normal(size=(n, n_in)),
        rng.integers(0, n_out, size=n),
    )


def _check_label_loss(g, args):
    expected = [numeric_grad(label_loss, args, i) for i in (0, 1)]
    for _ in range(2):  # the first call probes, the second runs the specialised code
        assert_close(list(g(*args)), expected)


@pytest.mark.parametrize("mode", MODES)
def test_integer_labels_against_finite_differences(mode):
    rng = np.random.default_rng(0)
    g = sg.grad(label_loss, wrt=(0, 1), mode=mode)
    _check_label_loss(g, label_args(rng, 6))
    _check_label_loss(g, label_args(rng, 6))  # other labels, same shapes
    _check_label_loss(g, label_args(rng, 9))  # other shapes: specialised anew


def test_integer_labels_are_specialised():
    rng = np.random.default_rng(1)
    g = sg.grad(label_loss, wrt=(0, 1), mode="s2s")
    g(*label_args(rng, 5))
    code = sg.source(g)
    assert "unbroadcast" not in code and "matmul_cotangent" not in code, code


def test_specialised_equals_generic():
    rng = np.random.default_rng(2)
    args = label_args(rng, 7)
    g = sg.grad(label_loss, wrt=(0, 1), mode="s2s")
    first, second = g(*args), g(*args)
    generic = derivative(label_loss, ("W", "b")).function(*args)
    for a, b, c in zip(first, second, generic):
        np.testing.assert_allclose(a, c, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(b, c, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("mode", MODES)
def test_index_computed_by_argmax(mode):
    rng = np.random.default_rng(3)
    g = sg.grad(picked_by_argmax, mode=mode)
    for shape in ((4, 3), (4, 3), (6, 5)):
        x = rng.normal(size=shape)
        assert_close(g(x), numeric_grad(picked_by_argmax, [x], 0))
        assert_close(g(x), numeric_grad(picked_by_argmax, [x], 0))


@pytest.mark.parametrize("mode", MODES)
def test_mask_parameter_runs_generic_code(mode):
    # the same signature (shape and dtype of the mask) picks 1 element, then 4
    rng = np.random.default_rng(4)
    g = sg.grad(masked, mode=mode)
    x = rng.normal(size=5)
    for m in ([True, False, False, False, False], [True, True, False, True, True]):
        m = np.array(m)
        expected = numeric_grad(masked, [x, m], 0)
        assert_close(g(x, m), expected)
        assert_close(g(x, m), expected)


@pytest.mark.parametrize("mode", MODES)
def test_integer_index_parameter_changes_values(mode):
    rng = np.random.default_rng(5)
    g = sg.grad(masked, mode=mode)
    x = rng.normal(size=6)
    for m in ([0, 0, 3], [5, 1, 2], [2, 2, 2]):
        m = np.array(m)
        expected = numeric_grad(masked, [x, m], 0)
        assert_close(g(x, m), expected)
        assert_close(g(x, m), expected)


def test_second_order_through_integer_labels():
    rng = np.random.default_rng(6)
    W, b, X, y = label_args(rng, 5)

    def first(W):
        return np.sum(sg.grad(label_loss, mode="s2s")(W, b, X, y) ** 2)

    for mode in ("s2s", "tape"):
        hessian_term = sg.grad(first, mode=mode)
        expected = numeric_grad(first, [W], 0)
        assert_close(hessian_term(W), expected, rtol=1e-4, atol=1e-6)
        assert_close(hessian_term(W), expected, rtol=1e-4, atol=1e-6)
