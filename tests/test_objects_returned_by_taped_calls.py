"""A call the tape takes over inside source-transformed code (``Layer.build(w)``, a
classmethod making ``cls(w * 2)``) that returns an object holding a value being
differentiated: the transformed rest would read the object as a constant, and the gradient
came out 0. Mode "auto" now differentiates the whole function on the tape, rightly."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

X = np.array([0.3, -0.7, 1.2])


class Layer:
    def __init__(self, w):
        self.w = w

    @classmethod
    def build(cls, w):
        return cls(w * 2)

    def apply(self, x):
        return np.tanh(self.w * x)


def built_by_classmethod(w):
    return np.sum(Layer.build(w).apply(X))


def make_layer(w):
    return Layer(w + 1.0)


def built_by_helper(w):
    layer = make_layer(w)
    return np.sum(layer.apply(X) ** 2)


@pytest.mark.parametrize("f", [built_by_classmethod, built_by_helper])
@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_gradient_through_a_returned_object(f, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = call_twice(sg.grad(f, mode=mode), X)
    assert_close(g, numeric_grad(f, (X,), 0))


def test_hessian_through_a_returned_object_in_auto():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = sg.hessian(built_by_classmethod, mode="auto")(X)
    u = 2.0 * X * X  # f = sum(tanh(2 w X)) at w = X
    expected = np.diag(-8.0 * X * X * np.tanh(u) * (1 - np.tanh(u) ** 2))
    assert_close(h, expected, rtol=1e-6)
