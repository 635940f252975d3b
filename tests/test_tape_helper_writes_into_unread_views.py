"""A helper's in-place write into a view of an array that a caller's name holds but never
reads again, on the tape: D2L's ``masked_softmax``, which masks a reshaped view of the
attention scores in place (``X = sequence_mask(X.reshape(-1, n), lens, -1e6)``).

NumPy changes the scores too, but nothing reads them again (``X`` is bound anew; the
caller's ``scores`` is not read after the call), so the tape, which changes only the value
written, gives NumPy's results. The tape refused every such write; it now refuses only
where a name sharing the memory may be read once the call returns: later in the text, in
the same statement after the call, or in a loop around it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg


def softmax(X):
    e = np.exp(X - X.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def sequence_mask(X, valid_len, value=0.0):
    mask = np.arange(X.shape[1])[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


def masked_softmax(X, valid_lens):
    shape = X.shape
    if valid_lens.ndim == 1:  # noqa: SIM108 (D2L's text)
        valid_lens = np.repeat(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return softmax(X.reshape(shape))


def additive_attention(W_k, W_q, w_v, queries, keys, values, valid_lens):
    queries, keys = queries @ W_q, keys @ W_k
    features = np.tanh(queries[:, :, None, :] + keys[:, None, :, :])
    scores = np.squeeze(features @ w_v, axis=-1)
    attention_weights = masked_softmax(scores, valid_lens)
    return np.sum(np.matmul(attention_weights, values) ** 2)


def dot_product_attention(queries, keys, values, valid_lens):
    scores = queries @ keys.transpose(0, 2, 1) / np.sqrt(queries.shape[-1])
    return np.sum(np.tanh(masked_softmax(scores, valid_lens) @ values))


def arguments(rng, batch, n_queries, n_keys, valid_lens):
    return (
        rng.normal(size=(3, 5)) * 0.4,
        rng.normal(size=(4, 5)) * 0.4,
        rng.normal(size=(5, 1)) * 0.4,
        rng.normal(size=(batch, n_queries, 4)),
        rng.normal(size=(batch, n_keys, 3)),
        rng.normal(size=(batch, n_keys, 2)),
        valid_lens,
    )


SHAPES = [
    (2, 1, 4, np.array([2, 4])),
    (2, 3, 5, np.array([[1, 3, 5], [2, 2, 4]])),
    (1, 2, 3, np.array([3])),
]


@pytest.mark.parametrize("mode", ["tape", "auto"])
@pytest.mark.parametrize(("batch", "n_queries", "n_keys", "lens"), SHAPES)
def test_additive_attention_with_the_mask_written_in_place(mode, batch, n_queries, n_keys, lens):
    args = arguments(np.random.default_rng(batch + 7 * n_keys), batch, n_queries, n_keys, lens)
    wrt = (0, 1, 2, 3, 4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = sg.grad(additive_attention, wrt=wrt, mode=mode)
        for _ in range(2):
            for got, i in zip(g(*args), wrt):
                assert_close(got, numeric_grad(additive_attention, list(args), i), rtol=1e-5)


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_dot_product_attention_second_order_and_forward(mode):
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 2))
    lens = np.array([2, 5])

    def loss(q):
        return dot_product_attention(q, k, v, lens)

    direction = rng.normal(size=q.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(sg.grad(loss, mode=mode)(q), numeric_grad(loss, [q], 0), rtol=1e-5)
        _, tangent = sg.jvp(loss, (q,), (direction,), mode=mode)
        assert_close(tangent, numeric_jvp(loss, [q], 0, direction), rtol=1e-5)
        (product,) = sg.hvp(loss, (q,), (direction,), mode=mode)
    gradient = sg.grad(loss, mode="tape")
    expected = numeric_jvp(gradient, [q], 0, direction)
    assert_close(product, expected, rtol=1e-4, atol=1e-6)


LENS = np.array([1, 2, 3, 2])


def read_again_later(S):
    s = S * 1.0
    X = sequence_mask(s.reshape(-1, 3), LENS, -1e6)
    return np.sum(softmax(X) ** 2) + np.sum(s**2)


def read_again_in_a_loop(S):
    s = S * 1.0
    total = 0.0
    for _ in range(2):
        X = sequence_mask(s.reshape(-1, 3), LENS, -5.0)
        total = total + np.sum(softmax(X) ** 2)
    return total


def read_again_in_the_same_statement(S):
    s = S * 1.0
    y = sequence_mask(s.reshape(-1, 3), LENS, -5.0) + s.reshape(-1, 3)
    return np.sum(y**2)


def rebound_but_read_after_the_call(S):
    s = S * 1.0
    s = sequence_mask(s.reshape(-1, 3), LENS, -5.0) * s.reshape(-1, 3)
    return np.sum(s**2)


@pytest.mark.parametrize(
    "f",
    [
        read_again_later,
        read_again_in_a_loop,
        read_again_in_the_same_statement,
        rebound_but_read_after_the_call,
    ],
)
def test_a_view_whose_array_is_read_again_is_followed(f):
    # refused before the tape followed a helper's write through a view into the array the
    # caller reads again (tape/view_writes.py): the caller reads the masked values, as NumPy
    S = np.random.default_rng(0).normal(size=(2, 2, 3))
    if f is read_again_later:  # sum(s**2) adds 1e12 per masked entry: differences drown
        expected = sg.grad(read_again_later_from_a_copy, mode="tape")(S)  # no view
    else:
        expected = numeric_grad(lambda v: f(v.copy()), [S], 0)
    assert_close(sg.grad(f, mode="tape")(S), expected)


def read_again_later_from_a_copy(S):
    s = S * 1.0
    X = sequence_mask(s.reshape(-1, 3).copy(), LENS, -1e6)
    s = X.reshape(s.shape)  # what the caller reads after NumPy masked s through its view
    return np.sum(softmax(X) ** 2) + np.sum(s**2)


def masked_in_a_helper(S):
    s = S * 1.0
    X = sequence_mask(s.reshape(-1, 3), LENS, -5.0)
    return np.sum(softmax(X) ** 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_view_whose_array_is_not_read_again(seed):
    S = np.random.default_rng(seed).normal(size=(2, 2, 3))
    g = sg.grad(masked_in_a_helper, mode="tape")
    assert_close(g(S), numeric_grad(masked_in_a_helper, [S], 0), rtol=1e-6)
    assert_close(g(S), numeric_grad(masked_in_a_helper, [S], 0), rtol=1e-6)
