"""Helpers specialised with their caller: the derivative of a user function the code calls
is specialised to the signature it is called with, as the caller is to its own.

Each gradient is checked against central finite differences, on the first call (the
probe) and later ones (the specialised code), when shapes change between calls, and when
a helper is called with a signature that values decide (the generic pair runs then).
"""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.pipeline import derivative

MODES = ("s2s", "tape", "auto")


def conv2d(x, w):
    kh, kw = w.shape[2], w.shape[3]
    H = x.shape[2] - kh + 1
    W = x.shape[3] - kw + 1
    out = np.zeros((x.shape[0], w.shape[0], H, W))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i : i + H, j : j + W]
            out = out + np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j])
    return out


def cnn(w, V, x):
    h = np.maximum(conv2d(x, w), 0.0)
    n = h.shape[0]
    return np.sum((h.reshape(n, -1) @ V) ** 2) / n


def cnn_args(rng, n=2, size=5):
    w = rng.normal(size=(3, 2, 2, 2))
    x = rng.normal(size=(n, 2, size, size))
    V = rng.normal(size=(3 * (size - 1) ** 2, 2)) * 0.3
    return w, V, x


def conv_by_matmul(x, kernel, bias):
    kh, kw, _, _ = kernel.shape
    oh, ow = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    out = bias
    for i in range(kh):
        for j in range(kw):
            out = out + x[:, i : i + oh, j : j + ow, :] @ kernel[i, j]
    return out


def cnn_by_matmul(kernel, bias, x):
    return np.sum(np.tanh(conv_by_matmul(x, kernel, bias)) ** 2)


def scaled(a, b):
    return np.tanh(a * b + 1.0)


def two_shapes(x, y):
    return np.sum(scaled(x, 2.0)) + np.sum(scaled(y, x) ** 2)


def shrinking(x):
    for _ in range(3):
        x = scaled(x[1:], x[:-1])
    return np.sum(x)


def head(x, k):
    return np.mean(x[:k] ** 2) * np.sum(np.sin(x))


def head_by_sign(x):
    k = int(x[0] > 0) + 2
    return head(x, k)


def _check(g, f, args, wrt):
    expected = [numeric_grad(f, args, i) for i in wrt]
    for _ in range(2):
        actual = g(*args)
        assert_close(list(actual) if len(wrt) > 1 else [actual], expected)


@pytest.mark.parametrize("mode", MODES)
def test_helper_with_loops_and_einsum(mode):
    rng = np.random.default_rng(0)
    g = sg.grad(cnn, wrt=(0, 1), mode=mode)
    _check(g, cnn, cnn_args(rng), (0, 1))
    _check(g, cnn, cnn_args(rng), (0, 1))
    _check(g, cnn, cnn_args(rng, n=3, size=6), (0, 1))  # new shapes: specialised anew


@pytest.mark.parametrize("mode", MODES)
def test_helper_with_stacked_matmul(mode):
    # x[...] @ kernel[i, j]: a stack of matrices times one, whose b cotangent is a tensordot
    rng = np.random.default_rng(6)
    g = sg.grad(cnn_by_matmul, wrt=(0, 1), mode=mode)
    for n in (2, 2, 3):
        args = (rng.normal(size=(2, 2, 3, 2)), rng.normal(size=2), rng.normal(size=(n, 4, 5, 3)))
        _check(g, cnn_by_matmul, args, (0, 1))
    if mode == "s2s":
        assert "tensordot" in sg.source(g)
        generic = derivative(cnn_by_matmul, ("kernel", "bias")).function(*args)
        for a, b in zip(g(*args), generic):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_helper_code_is_specialised():
    rng = np.random.default_rng(1)
    args = cnn_args(rng)
    g = sg.grad(cnn, wrt=(0, 1), mode="s2s")
    g(*args)
    code = sg.source(g)
    assert "def conv2d_vjp" in code and "_backward(saved" in code
    assert "unbroadcast" not in code and "vjp_call" not in code and "owned" not in code, code
    generic = derivative(cnn, ("w", "V")).function(*args)
    for a, b in zip(g(*args), generic):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mode", MODES)
def test_helper_called_with_two_signatures(mode):
    rng = np.random.default_rng(2)
    g = sg.grad(two_shapes, wrt=(0, 1), mode=mode)
    _check(g, two_shapes, (rng.normal(size=3), rng.normal(size=(2, 3))), (0, 1))


@pytest.mark.parametrize("mode", MODES)
def test_helper_in_a_loop_of_changing_shapes(mode):
    rng = np.random.default_rng(3)
    g = sg.grad(shrinking, mode=mode)
    for size in (6, 6, 8):
        _check(g, shrinking, (rng.normal(size=size),), (0,))


@pytest.mark.parametrize("mode", MODES)
def test_helper_signature_set_by_values(mode):
    # the specialised caller calls head with k=3, then k=2: the generic pair must run
    rng = np.random.default_rng(4)
    g = sg.grad(head_by_sign, mode=mode)
    x = rng.normal(size=5)
    for sign in (1.0, -1.0, 1.0):
        x[0] = sign * abs(x[0])
        _check(g, head_by_sign, (x.copy(),), (0,))


def test_second_order_through_a_specialised_helper():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=3), rng.normal(size=(2, 3))

    def squared_gradient(x):
        return np.sum(sg.grad(two_shapes, mode="s2s")(x, y) ** 2)

    expected = numeric_grad(squared_gradient, [x], 0)
    for mode in ("s2s", "tape"):
        outer = sg.grad(squared_gradient, mode=mode)
        for _ in range(2):
            assert_close(outer(x), expected, rtol=1e-4, atol=1e-6)
