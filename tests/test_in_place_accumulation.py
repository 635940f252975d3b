"""Cotangents accumulated in place (compiler/specialize/in_place.py): a loop's weight
gradients are added into their own arrays (``dWh += h.T @ dt``) where the probe saw every
sum keep the accumulator's shape and dtype and no other name can see its array; the
gradients are those of the generic code and of finite differences either way."""

import gast
import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.annotations import ACCUMULATION, annotate, annotation
from s2sgrad.compiler.codegen import to_source
from s2sgrad.compiler.pipeline import derivative
from s2sgrad.compiler.specialize.in_place import accumulate_in_place, note_sum
from s2sgrad.compiler.specialize.seen import Seen
from s2sgrad.compiler.syntax import load
from s2sgrad.runtime import zeros_like_value

MODES = ("s2s", "tape", "auto")


def rnn(Wx, Wh, b, xs):
    h = np.zeros((xs.shape[1], Wh.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
    return np.sum(h**2)


def rnn_again(Wx, Wh, b, xs):  # rnn with a code cache of its own
    h = np.zeros((xs.shape[1], Wh.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
    return np.sum(h**2)


def states(W, xs):  # the output is an array: its cotangent comes from the caller
    h = xs[0]
    for t in range(1, xs.shape[0]):
        h = np.sin(h @ W) + xs[t]
    return h


def _arguments(dtype=np.float64, data=np.float64):
    rng = np.random.default_rng(4)
    xs = rng.normal(size=(6, 2, 3)).astype(data)
    Wx = rng.normal(size=(3, 4)).astype(dtype)
    Wh = (rng.normal(size=(4, 4)) * 0.5).astype(dtype)
    b = rng.normal(size=4).astype(dtype)
    return Wx, Wh, b, xs


@pytest.mark.parametrize("mode", MODES)
def test_loop_gradients_against_finite_differences(mode):
    args = _arguments()
    g = sg.grad(rnn, wrt=(0, 1, 2), mode=mode)
    expected = [numeric_grad(rnn, args, i) for i in range(3)]
    for _ in range(3):
        for got, want in zip(g(*args), expected):
            assert_close(got, want)


def test_weight_gradients_add_into_their_arrays():
    args = _arguments()
    g = sg.grad(rnn_again, wrt=(0, 1, 2), mode="s2s")
    first = g(*args)
    code = sg.source(g)
    assert "dWh += h.T @ " in code and "dWx += " in code and "db += " in code, code
    generic = derivative(rnn_again, ("Wx", "Wh", "b")).function(*args)
    for _ in range(2):
        for got, want in zip(g(*args), generic):
            np.testing.assert_allclose(got, want, rtol=1e-12)
    for got, want in zip(first, generic):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_sum_of_another_dtype_makes_a_new_array():
    # float32 weights, float64 data: each term is float64, so dW + term is a new float64
    # array; += would round every step to float32
    args = _arguments(np.float32, np.float64)
    g = sg.grad(rnn, wrt=(0, 1, 2), mode="s2s")
    for _ in range(2):
        gradients = g(*args)
    assert "+=" not in sg.source(g), sg.source(g)
    generic = derivative(rnn, ("Wx", "Wh", "b")).function(*args)
    for got, want in zip(gradients, generic):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_the_callers_cotangent_is_left_alone(mode):
    rng = np.random.default_rng(5)
    W, xs = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(4, 2, 3))
    cotangent = rng.normal(size=(2, 3))
    kept = cotangent.copy()
    for _ in range(3):
        _, pullback = sg.vjp(states, W, xs, mode=mode)
        (dW, _) = pullback(cotangent)
        np.testing.assert_array_equal(cotangent, kept)

        def projected(W):
            return np.sum(states(W, xs) * kept)

        assert_close(dW, numeric_grad(projected, (W,), 0))


def test_only_a_sum_of_the_accumulators_shape_and_dtype_is_marked():
    left = Seen("array", (2, 3), "f")
    cases = [
        (Seen("array", (2, 3), "f"), True),
        (Seen("array", (2, 3), "d"), False),  # float32 + float64: a new float64 array
        (Seen("array", (4, 2, 3), "f"), False),  # broadcast to a larger shape
        (Seen("scalar", (), "f"), False),
    ]
    for result, kept in cases:
        sum_node = gast.BinOp(left=load("d"), op=gast.Add(), right=load("e"))
        annotate(sum_node, ACCUMULATION, False)
        note_sum(sum_node, left, Seen("array", (2, 3), "d"), result)
        assert annotation(sum_node, ACCUMULATION) is kept
    scalar_left = gast.BinOp(left=load("d"), op=gast.Add(), right=load("e"))
    annotate(scalar_left, ACCUMULATION, False)
    note_sum(scalar_left, Seen("float"), Seen("array", (2,), "d"), Seen("array", (2,), "d"))
    assert annotation(scalar_left, ACCUMULATION) is False


def _in_place(source: str) -> str:
    """``source`` after accumulate_in_place, every ``d = d + e`` marked as probed alike."""
    function = gast.parse(source).body[0]
    for node in gast.walk(function):
        if isinstance(node, gast.BinOp):
            annotate(node, ACCUMULATION, True)
    accumulate_in_place(function, {"np": np, "zeros_like_value": zeros_like_value})
    return to_source(function)


@pytest.mark.parametrize(
    "source, in_place",
    [
        ("def f(x, w):\n d = zeros_like_value(w)\n for t in x:\n  d = d + t\n return d", True),
        ("def f(x, w):\n d = np.zeros(3)\n for t in x:\n  d = d + t\n return (d, w)", True),
        ("def f(x, d):\n for t in x:\n  d = d + t\n return d", False),  # the caller's
        ("def f(x, w):\n d = w\n for t in x:\n  d = d + t\n return d", False),  # w's array
        ("def f(x, w):\n d = w * 1\n for t in x:\n  d = d + t\n e = d\n return e", False),
        ("def f(x, w, s):\n d = w * 1\n for t in x:\n  d = d + t\n  s.append(d)\n return d", False),
        ("def f(x, w):\n d = w * 1\n for t in x:\n  d = d + t\n return d[0]", False),
    ],
)
def test_only_an_array_no_other_name_sees_is_added_into(source, in_place):
    assert ("d += t" in _in_place(source)) is in_place
