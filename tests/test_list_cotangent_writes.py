"""A gradient that writes into the entries of a list's cotangent (``dws[i] = ...``, the
list's arrays of different shapes) is differentiated again: the cotangent of an entry
written is that entry, not an element of an array made of the list."""

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

rng = np.random.default_rng(0)
DIRECTIONS = [rng.standard_normal(2), rng.standard_normal(3)]


def doubled_entries(ws):
    out = 0.0
    ws = list(ws)
    for i in range(len(ws)):
        ws[i] = ws[i] * 2
        out = out + np.sum(np.sin(ws[i]))
    return out


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_second_order_through_writes_into_a_list_of_arrays(mode):
    def along(ws):
        gradient = sg.grad(doubled_entries, mode=mode)(ws)
        total = 0.0
        for g, v in zip(gradient, DIRECTIONS):
            total = total + np.sum(g * v)
        return total

    ws = [rng.standard_normal(2), rng.standard_normal(3)]
    expected = [
        numeric_grad(lambda w, k=k: along([*ws[:k], w, *ws[k + 1 :]]), [ws[k]], 0) for k in range(2)
    ]
    assert_close(call_twice(sg.grad(along, mode=mode), ws), expected, rtol=1e-5, atol=1e-6)


LAYERS = [
    (rng.standard_normal((3, 4)) * 0.3, rng.standard_normal(4) * 0.3),
    (rng.standard_normal((4, 2)) * 0.3, rng.standard_normal(2) * 0.3),
]
LAYER_DIRECTIONS = [
    (rng.standard_normal((3, 4)), rng.standard_normal(4)),
    (rng.standard_normal((4, 2)), rng.standard_normal(2)),
]
INPUTS = rng.standard_normal((5, 3))


def squared_weights(params):  # autograd's examples: a list of (W, b) flattened
    flattened = np.concatenate([np.ravel(W) for W, b in params] + [b for W, b in params])
    return np.dot(flattened, flattened) + np.sum(np.tanh(INPUTS @ params[0][0]) ** 2)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_second_order_over_a_list_of_layer_tuples(mode):
    def along(params):
        gradient = sg.grad(squared_weights, mode=mode)(params)
        total = 0.0
        for layer, direction in zip(gradient, LAYER_DIRECTIONS):
            for g, v in zip(layer, direction):
                total = total + np.sum(g * v)
        return total

    expected = sg.grad(along, mode="tape")(LAYERS)
    W = LAYERS[0][0]
    numeric = numeric_grad(lambda w: along([(w, LAYERS[0][1]), LAYERS[1]]), [W], 0)
    assert_close(expected[0][0], numeric, rtol=1e-5, atol=1e-6)
    assert_close(call_twice(sg.grad(along, mode=mode), LAYERS), expected, rtol=1e-8, atol=1e-10)


def replaces_a_slice(x):
    ws = [x * 1.0, x * 2.0, x[::-1] * 3.0]
    ws[0:2] = [np.sin(x), x**2]
    return np.sum(ws[0] * ws[1] + ws[2] ** 2)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_second_order_through_a_slice_of_a_list_written(mode):
    """The gradient zeroes the slice of the list's cotangent it wrote; differentiated
    again, that cotangent is a list too (it crashed: 'can only assign an iterable')."""
    x = np.array([0.3, -0.4, 0.8])
    sg.check_grads(replaces_a_slice, x, order=2, mode=mode)
