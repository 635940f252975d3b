"""Generated code is kept per argument signature; a dataclass argument's signature holds
the shapes of its arrays, so a call with arrays of other shapes gets code of its own
(it ran the first shapes' code, whose shape constants broadcast wrongly or failed)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from oracle import assert_close

import s2sgrad as sg


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray


def loss(layer):
    return np.sum(layer.b * 3.0) + np.sum(layer.w**2)


def expected(layer):
    return 2 * layer.w, np.full(layer.b.shape, 3.0)


@pytest.mark.parametrize("mode", ("s2s", "auto", "tape"))
def test_one_transform_called_with_several_shapes(mode):
    rng = np.random.default_rng(0)
    gradient = sg.grad(loss, mode=mode)
    for shape in [(3,), (2, 4), (3,), (5, 1), (2, 4)]:
        layer = Layer(rng.normal(size=shape), rng.normal(size=shape))
        got = gradient(layer)
        want_w, want_b = expected(layer)
        assert type(got) is Layer
        assert_close(got.w, want_w)
        assert_close(got.b, want_b)


@pytest.mark.parametrize("mode", ("s2s", "auto"))
def test_nested_objects_in_a_list(mode):
    rng = np.random.default_rng(1)

    def total(layers):
        return sum(np.sum(layer.b * 2.0) for layer in layers)

    gradient = sg.grad(total, mode=mode)
    for shapes in [[(2,), (3,)], [(4,), (1,)]]:
        layers = [Layer(rng.normal(size=s), rng.normal(size=s)) for s in shapes]
        got = gradient(layers)
        for g, s in zip(got, shapes):
            assert_close(g.b, np.full(s, 2.0))
            assert_close(g.w, np.zeros(s))
