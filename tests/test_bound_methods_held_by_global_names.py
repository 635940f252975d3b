"""A bound method held by a name (``forward = net.forward`` at module level, a classmethod
taken from its class, the ``f`` that ``sg.check_grads(model.loss, x)`` differentiates)
called from a differentiated function: generated code called the method's function
without the object it is bound to (``TypeError: loss_vjp() missing 1 required positional
argument``). And a method that stores a differentiated value on its object and reads it
back through another method, which source transformation refuses: mode "auto" takes the
tape, which follows the attributes."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_grad_jvp_and_hvp

import s2sgrad as sg

MODES = ["s2s", "tape", "auto"]


class Net:
    def __init__(self, weights, bias) -> None:
        self.weights = weights
        self.bias = bias
        self.scale = 1.0

    def forward(self, x):
        return np.tanh(x * self.weights + self.bias)

    def loss(self, x):
        return np.sum(self.forward(x) ** 2) * self.scale

    def rescaled(self, x):
        self.scale = self.scale * 1.0  # a store on the object that changes nothing
        return np.sum(np.sin(x * self.weights))

    def stored_then_read(self, x):
        return self._stored(x) + self._stored(x**2)

    def _stored(self, x):
        self.hidden = x * 2.0
        return np.sum(np.sin(self.hidden * self.weights))

    @classmethod
    def prior(cls, x):
        return 0.5 * np.sum(x**2) / cls.variance()

    @staticmethod
    def variance():
        return 4.0


_RNG = np.random.default_rng(31)
NET = Net(_RNG.normal(size=(3, 1)), _RNG.normal(size=4))
forward = NET.forward
loss = NET.loss
rescaled = NET.rescaled
prior = Net.prior


def through_a_named_forward(x):
    return np.sum(forward(x) * x)


def through_a_named_loss(x):
    return loss(x) + np.sum(np.cos(x))


def through_a_named_store(x):
    return rescaled(x) * 3.0


def through_a_named_classmethod(x):
    return prior(x) + np.sum(np.sin(x))


def through_two_named_methods(x):
    return loss(x) * prior(x)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f",
    [
        through_a_named_forward,
        through_a_named_loss,
        through_a_named_store,
        through_a_named_classmethod,
        through_two_named_methods,
    ],
)
def test_a_method_held_by_a_global_name(f, mode):
    rng = np.random.default_rng(32)
    x, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    kept = x.copy()
    assert_grad_jvp_and_hvp(f, x, v, mode)
    np.testing.assert_array_equal(x, kept)


def test_the_method_rebound_between_calls_is_the_one_differentiated():
    global forward
    rng = np.random.default_rng(33)
    x = rng.normal(size=(3, 4))
    other = Net(rng.normal(size=(3, 1)), rng.normal(size=4))
    gradient = sg.grad(through_a_named_forward, mode="s2s")
    try:
        first = gradient(x)
        forward = other.forward
        second = gradient(x)
    finally:
        forward = NET.forward
    for net, found in ((NET, first), (other, second)):
        y = net.forward(x)
        expected = y + x * (1 - y**2) * net.weights
        np.testing.assert_allclose(found, expected, rtol=1e-10)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", ["loss", "forward", "prior"])
def test_check_grads_of_a_bound_method(method, mode):
    """To first order: the second differentiates the gradient of a function calling
    ``self.forward``, a call resolved at run time, which source transformation refuses
    to reverse mode over reverse mode (``sg.hvp`` above is forward over reverse)."""
    x = np.random.default_rng(34).normal(size=(3, 4))
    owner = Net if method == "prior" else NET
    for _ in range(2):
        sg.check_grads(getattr(owner, method), x, mode=mode, order=1)


@pytest.mark.parametrize("how", ["bound method", "attribute call"])
def test_a_value_stored_on_the_object_and_read_back_is_taped_in_auto(how):
    rng = np.random.default_rng(35)
    net = Net(rng.normal(size=4), 0.0)
    f = net.stored_then_read if how == "bound method" else (lambda x: net.stored_then_read(x))
    x, v = rng.normal(size=4), rng.normal(size=4)
    with pytest.raises(sg.UnsupportedError, match="not carried through an object's attributes"):
        sg.grad(f, mode="s2s")(x)
    assert_grad_jvp_and_hvp(f, x, v, "auto")
