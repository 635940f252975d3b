"""The tape differentiating a gradient made by source transformation with respect to a
dataclass, a named tuple or a registered object (``sg.jvp(sg.grad(loss), (model,),
(direction,), mode="tape")``, ``sg.grad`` on the tape of a function calling that gradient,
and ``sg.hvp`` in mode "auto" when its source transformation falls back to the tape). The
tape recorded ``as_gradient``, which rebuilds the object's gradient, as one call whose
result, an object, it did not follow, and ``attribute_entry`` had no reverse rule: the
second derivatives with respect to the object came out as silent zeros."""

import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pytest
from oracle import assert_close, numeric_jvp

import s2sgrad as sg

X = np.random.default_rng(3).normal(size=(4, 3))


@dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray

    def predict(self, x):
        return np.tanh(x @ self.W + self.b)


@dataclass
class Stack:
    first: Dense
    extra: list
    scale: float


class Pair(NamedTuple):
    W: np.ndarray
    b: np.ndarray


class Registered:
    def __init__(self, W, b):
        self.W, self.b = W, b


sg.register_pytree(Registered, lambda r: ([r.W, r.b], None), lambda _, c: Registered(*c))


def dense_loss(model):
    return np.sum(np.tanh(X @ model.W + model.b) ** 2)


def method_loss(model):
    return np.sum(model.predict(X) ** 3)


def stack_loss(model):
    h = np.tanh(X @ model.first.W + model.first.b)
    for W in model.extra:
        h = np.sin(h @ W)
    return model.scale * np.sum(h**2)


def structures(rng):
    def dense():
        return Dense(rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3) * 0.1)

    return [
        (dense_loss, dense),
        (method_loss, dense),
        (dense_loss, lambda: Pair(rng.normal(size=(3, 2)), rng.normal(size=2))),
        (dense_loss, lambda: Registered(rng.normal(size=(3, 2)), rng.normal(size=2))),
        (stack_loss, lambda: Stack(dense(), [rng.normal(size=(3, 3)) * 0.5], 0.7)),
    ]


CASES = structures(np.random.default_rng(0))


def shifted(model, direction, t):
    leaves, tree = sg.tree_flatten(model)
    moved = [a + t * d for a, d in zip(leaves, sg.tree_flatten(direction)[0])]
    return sg.tree_unflatten(tree, moved)


def expected_product(f, model, direction):
    """The derivative of the tape's gradient (itself right on the tape) along direction."""
    gradient = sg.grad(f, mode="tape")
    along = numeric_jvp(
        lambda t: sg.tree_flatten(gradient(shifted(model, direction, t)))[0], [0.0], 0, 1.0
    )
    return along


def leaves(tree):
    return sg.tree_flatten(tree)[0]


@pytest.mark.parametrize("inner", ["s2s", "auto"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=lambda i: CASES[i][0].__name__ + str(i))
def test_forward_mode_on_the_tape_over_a_transformed_gradient(case, inner):
    f, make = CASES[case]
    model, direction = make(), make()
    expected = expected_product(f, model, direction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, product = sg.jvp(sg.grad(f, mode=inner), (model,), (direction,), mode="tape")
    assert type(product) is type(model)
    for got, want in zip(leaves(product), expected):
        assert_close(got, want, rtol=1e-4, atol=1e-6)
    if not isinstance(model, Stack):  # a float field: no tangent to give for it
        assert any(np.any(np.abs(leaf) > 1e-3) for leaf in leaves(product))


@pytest.mark.parametrize("case", range(len(CASES)), ids=lambda i: CASES[i][0].__name__ + str(i))
def test_reverse_mode_on_the_tape_over_a_transformed_gradient(case):
    f, make = CASES[case]
    model, direction = make(), make()
    expected = expected_product(f, model, direction)  # a symmetric Hessian: H v = grad <g, v>

    def along(m):
        gradient = sg.grad(f, mode="s2s")(m)
        return sum(np.sum(a * b) for a, b in zip(leaves(gradient), leaves(direction)))

    got = sg.grad(along, mode="tape")(model)
    for g, want in zip(leaves(got), expected):
        assert_close(g, want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("case", range(len(CASES)), ids=lambda i: CASES[i][0].__name__ + str(i))
def test_hvp_in_every_mode(case):
    f, make = CASES[case]
    model, direction = make(), make()
    expected = expected_product(f, model, direction)
    for mode in ("s2s", "auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                product = sg.hvp(f, (model,), (direction,), mode=mode)
            except sg.UnsupportedError:
                assert mode == "s2s"  # refused, never wrong
                continue
        product = product[0] if isinstance(product, tuple) and len(product) == 1 else product
        for got, want in zip(leaves(product), expected):
            assert_close(got, want, rtol=1e-4, atol=1e-6)
