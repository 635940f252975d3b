"""Generated code as lean as a hand-written gradient, and still right:

* a variable's value from before its first assignment is not saved when nothing after its
  restore would read it (``h = None; stack.append(h)`` ... ``h = stack.pop()`` go);
* an adjoint named after the user's variable (``dh``) that is read once, to make a
  temporary (``dt = dh * mask``), is folded there, so it does not stay alive beside it;
* copies of an adjoint read only before it is rebound go, and a loop's accumulations
  merge (the scalar recurrence's backward loop is one statement per gradient);
* ``for t in reversed(range(...))`` is differentiated by source transformation.

Gradients are checked against central differences in every mode.
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

RNG = np.random.default_rng(73)
MODES = ("s2s", "auto", "tape")


def rnn(Wx, Wh, xs):
    h = np.zeros((xs.shape[1], Wh.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh)
    return np.sum(h**2)


def rnn_from(h0, W, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ W + h)
    return np.sum(h**2), h


def overwrites_parameter(a, x):
    for _ in range(5):
        x = np.sin(x) * a + 0.5 * x
    return np.sum(x)


def restored_then_read(x):
    y = x * 2.0
    for _ in range(3):
        y = np.sin(y)
    return np.sum(y * x)


def backwards_loop(x):
    y = x
    for t in reversed(range(1, 4)):
        y = np.sin(y) * x + t
    return np.sum(y)


def scalar_recurrence(a, b, x):
    for _ in range(20):
        x = np.sin(x) * a + b * x
    return x


def items_then_rebound(x):
    y = x * 1.0
    for _ in range(2):
        for i in range(3):
            y[i] = y[i] * x[i]
        y = np.sin(y) + y
    return np.sum(y)


RNN_ARGS = (
    RNG.standard_normal((3, 4)) / 2,
    RNG.standard_normal((4, 4)) / 2,
    RNG.standard_normal((5, 2, 3)),
)
CASES = [
    (rnn, RNN_ARGS, (0, 1)),
    (overwrites_parameter, (RNG.standard_normal(3), RNG.standard_normal(3)), (0, 1)),
    (restored_then_read, (RNG.standard_normal(4),), 0),
    (backwards_loop, (RNG.standard_normal(3),), 0),
    (items_then_rebound, (RNG.standard_normal(3),), 0),
    (scalar_recurrence, (0.4, 0.3, 0.2), (0, 1, 2)),
]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_gradient_against_differences(f, args, wrt):
    indices = wrt if isinstance(wrt, tuple) else (wrt,)
    expected = [numeric_grad(f, args, i) for i in indices]
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = call_twice(sg.grad(f, wrt=wrt, mode=mode), *args)
        actual = actual if isinstance(wrt, tuple) else (actual,)
        for got, want in zip(actual, expected):
            assert_close(got, want, rtol=1e-5, atol=1e-8)


def test_the_value_before_the_first_assignment_is_not_saved():
    gradient = sg.grad(rnn, wrt=(0, 1), mode="s2s")
    assert "h = None" not in sg.source(gradient)  # the generic code
    gradient(*RNN_ARGS)
    specialised = sg.source(gradient)
    assert "h = None" not in specialised
    assert specialised.count("stack.append") == 1 and specialised.count("stack.pop()") == 1


def test_value_and_aux_are_the_functions_values():
    h0 = RNG.standard_normal((2, 4)) / 2
    args = (h0, RNG.standard_normal((3, 4)) / 2, RNG.standard_normal((5, 2, 3)))
    value, h = rnn_from(*args)
    expected = numeric_grad(lambda *a: rnn_from(*a)[0], args, 1)
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got_value, (got_h0, got_w) = call_twice(
                sg.value_and_grad(lambda *a: rnn_from(*a)[0], wrt=(0, 1), mode=mode), *args
            )
            (aux_h0, aux_w), got_h = call_twice(
                sg.grad(rnn_from, wrt=(0, 1), has_aux=True, mode=mode), *args
            )
        assert_close(got_value, value)
        assert_close(got_h, h)
        assert_close(got_w, expected, rtol=1e-5, atol=1e-8)
        assert_close(aux_w, expected, rtol=1e-5, atol=1e-8)
        assert_close(aux_h0, got_h0)


def relu_mlp(W1, W2, X):
    h = np.maximum(X @ W1, 0.0)
    return np.sum((h @ W2) ** 2)


def relu_mlp_by_hand(W1, W2, X):
    h = np.maximum(X @ W1, 0.0)
    dout = 2.0 * (h @ W2)
    dW2 = h.T @ dout
    dz = dout @ W2.T
    dz *= h > 0.0
    return X.T @ dz, dW2


def _peak(call) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_user_named_adjoint_read_once_is_not_kept_alive():
    # dW1 is the largest array: the peak is where it is made, the adjoints of h alive then
    W1, W2, X = (RNG.standard_normal(s) for s in ((600, 200), (200, 3), (100, 600)))
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = call_twice(sg.grad(relu_mlp, wrt=(0, 1), mode=mode), W1, W2, X)
        for got, want in zip(actual, relu_mlp_by_hand(W1, W2, X)):
            assert_close(got, want, rtol=1e-9)
    gradient = sg.grad(relu_mlp, wrt=(0, 1), mode="s2s")
    gradient(W1, W2, X)
    hidden = X.shape[0] * W1.shape[1] * 8  # one (100, 200) array of float64
    by_hand = _peak(lambda: relu_mlp_by_hand(W1, W2, X))
    generated = _peak(lambda: gradient(W1, W2, X))
    assert generated < by_hand + hidden // 2, sg.source(gradient)


def test_the_scalar_backward_loop_has_no_copies():
    gradient = sg.grad(scalar_recurrence, wrt=(0, 1), mode="s2s")
    gradient(0.4, 0.3, 0.2)
    code = sg.source(gradient)
    assert "dt" not in code, code  # no dt3 = dx, dt4 = dx
    assert code.count("dx = ") == 2, code  # its start and one update per step


def test_reversed_range_is_not_left_to_the_tape():
    x = RNG.standard_normal(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to the tape
        sg.grad(backwards_loop, mode="auto")(x)
        v = RNG.standard_normal(3)
        (product,) = sg.hvp(backwards_loop, (x,), (v,), mode="s2s")
    gradient = sg.grad(backwards_loop, mode="s2s")
    expected = numeric_grad(lambda z: np.sum(gradient(z) * v), (x,), 0)
    assert_close(product, expected, rtol=1e-4, atol=1e-6)
