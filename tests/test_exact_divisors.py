"""Division by a power of two that the shapes fix becomes multiplication by its reciprocal
in specialised code (``specialize/exact_divisors``): the same bits for every float64
dividend, so only there; other divisors and dividends stay divisions."""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")
RNG = np.random.default_rng(8)


def attention(Wq, Wk, X):
    q, k = X @ Wq, X @ Wk
    scores = (q @ k.T) / np.sqrt(X.shape[1])
    weights = np.exp(scores - np.max(scores, axis=1, keepdims=True))
    weights = weights / np.sum(weights, axis=1, keepdims=True)
    return np.sum((weights @ X) ** 2)


def scaled(w, x):  # dw = x / c: the bits of x / c for every x
    c = 2.0 ** (x.shape[0] * 127)  # 2**1016: its reciprocal is still normal
    return np.sum(w * (x / c)) + np.sum(w * (x / -x.shape[0])) + np.sum(w * (x / 0.5))


def on_a_number(a, x):
    return a / x.shape[0] * np.sum(x**2)


def _source(g):
    return "\n".join(line for line in sg.source(g).splitlines() if "#" not in line)


@pytest.mark.parametrize("mode", MODES)
def test_attention_multiplies_by_an_eighth(mode):
    Wq, Wk, X = RNG.normal(size=(64, 8)), RNG.normal(size=(64, 8)), RNG.normal(size=(5, 64))
    g = sg.grad(attention, wrt=(0, 1), mode=mode)
    for _ in range(2):
        for index, got in enumerate(g(Wq, Wk, X)):
            assert_close(got, numeric_grad(attention, (Wq, Wk, X), index))
    if mode == "s2s":
        code = _source(g)
        assert code.count("* 0.125") == 2 and "sqrt" not in code, code


@pytest.mark.parametrize("mode", ("s2s", "auto"))
def test_other_divisors_stay_divisions(mode):
    Wq, Wk, X = RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2)), RNG.normal(size=(4, 3))
    g = sg.grad(attention, wrt=(0, 1), mode=mode)
    for _ in range(2):
        for index, got in enumerate(g(Wq, Wk, X)):
            assert_close(got, numeric_grad(attention, (Wq, Wk, X), index))
    if mode == "s2s":
        assert "/ t" in _source(g) or "/ np.sqrt" in _source(g), _source(g)


def test_float32_dividends_stay_divisions():
    Wq, Wk = RNG.normal(size=(64, 8)).astype(np.float32), RNG.normal(size=(64, 8))
    X = RNG.normal(size=(5, 64)).astype(np.float32)
    g = sg.grad(attention, wrt=(0, 1))
    expected = sg.grad(attention, wrt=(0, 1), mode="tape")(Wq, Wk, X)
    for _ in range(2):
        for got, want in zip(g(Wq, Wk, X), expected):
            assert got.dtype == want.dtype
            assert_close(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ("s2s", "auto"))
def test_the_same_bits_for_special_values(mode):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -1e-310, 1.7e308])
    w = np.ones(8)
    g = sg.grad(scaled, mode=mode)
    with np.errstate(all="ignore"):
        expected = x / 2.0**1016 + x / -8 + x / 0.5
        for _ in range(2):
            got = g(w, x)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))
            np.testing.assert_array_equal(got, expected)
    if mode == "s2s":
        code = _source(g)
        assert code.count(" / ") == 1 and "/ 0.5" in code and "* -0.125" in code, code


@pytest.mark.parametrize("mode", MODES)
def test_a_python_float_dividend(mode):
    x = RNG.normal(size=(4,))
    g = sg.grad(on_a_number, wrt=(0, 1), mode=mode)
    for _ in range(2):
        da, dx = g(0.3, x)
        assert_close(da, numeric_grad(on_a_number, (0.3, x), 0))
        assert_close(dx, numeric_grad(on_a_number, (0.3, x), 1))
    if mode == "s2s":
        assert "* 0.25" in _source(g), _source(g)
