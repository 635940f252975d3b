"""A bound method held by a name (``loss = model.loss`` at module level, then ``loss(x)``
in a differentiated function) was read as a call of the method's own derivative, which
takes the object first: the call passed only ``x`` (TypeError: missing argument 'x', in
s2s and auto, reverse and forward mode). It is called with its object, read where the
call runs."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_grad_jvp_and_hvp, numeric_grad

import s2sgrad as sg


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return np.sum(np.tanh(self.w * x) ** 2)


MODEL = Model(np.array([0.5, -1.0, 2.0, 0.25]))
LOSS = MODEL.loss


def through_a_global(x):
    return LOSS(x) + LOSS(x * 2.0)


def through_a_local(x):
    loss = MODEL.loss
    return loss(np.sin(x)) * 3.0


@pytest.mark.parametrize("f", [through_a_global, through_a_local])
@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_gradient_jvp_and_hvp(f, mode):
    rng = np.random.default_rng(81)
    assert_grad_jvp_and_hvp(f, rng.normal(size=4), rng.normal(size=4), mode)


@pytest.mark.parametrize("f", [through_a_global, through_a_local])
def test_source_transformation_differentiates_it(f):
    rng = np.random.default_rng(82)
    x = rng.normal(size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)
        for _ in range(2):
            assert_close(sg.grad(f, mode="s2s")(x), numeric_grad(f, [x], 0))
