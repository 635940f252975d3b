"""``np.put(t, indices, v)`` of values being differentiated: by source transformation the
item write ``t[put_index(t, indices)] = np.resize(v, np.size(indices))`` (``v`` cycled over
the indices, the last of repeated indices kept, as NumPy does), on the tape ``t.put`` of a
tape value, or of a plain array the function made, taken over. (Both engines refused it:
"np.put writes into 't' in place" and "np.put has no derivative rule".)
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import (
    assert_grad_jvp_and_hvp_of_two,
)

import s2sgrad as sg
from s2sgrad.runtime import put_index

RNG = np.random.default_rng(1408)


def into_a_copy(x, y):
    t = x * 1.0
    np.put(t, [0, 2], (y**2)[:2])
    return np.sum(np.tanh(t * y) * x[0])


def into_zeros(x, y):
    t = np.zeros(x.shape)
    np.put(t, [0, 2], (y * 1.5)[:2])
    return np.sum(np.sin(t * y))


def cycled_with_repeats(x, y):
    t = np.sin(x) * 1.0
    np.put(t, [0, -1, 0, 1], y[:2] * x[1])
    return np.sum(t**2 * y)


def one_value(x, y):
    t = x * y
    np.put(t, 1, np.sum(y))
    return np.sum(t**3)


def into_a_matrix(x, y):
    t = np.outer(x, y)
    np.put(t, [1, 5, 7], x[:3])
    return np.sum(np.sin(t))


PROGRAMS = [into_a_copy, into_zeros, cycled_with_repeats, one_value, into_a_matrix]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("size", [3, 4])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_gradient_jvp_and_hvp(f, size, mode):
    x, y = RNG.uniform(-1, 1, size), RNG.uniform(-1, 1, size)
    v = RNG.normal(size=size)
    assert_grad_jvp_and_hvp_of_two(f, x, y, v, mode, seed=size)


def test_the_index_written():
    assert [list(i) for i in put_index(np.zeros((2, 3)), [0, -1, 4])] == [[0, 1, 1], [0, 2, 1]]
    with pytest.raises(IndexError, match="out of bounds"):
        put_index(np.zeros(3), [3])
    source = sg.source(sg.grad(into_a_copy, mode="s2s"))
    assert "put_index(t, [0, 2])" in source


def clipped_mode(x):
    t = x * 1.0
    np.put(t, [0, 5], x[:2], mode="clip")
    return np.sum(t**2)


def test_another_mode_is_still_refused():
    with pytest.raises(sg.UnsupportedError, match="np.put") as refused:
        sg.grad(clipped_mode, mode="s2s")(RNG.uniform(-1, 1, 3))
    assert f"{__file__}:" in str(refused.value)
