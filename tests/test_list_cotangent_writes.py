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
