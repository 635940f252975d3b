"""A list or dict of a subclass of the user's that defines its own item methods
(``__setitem__`` storing twice the value, ``__getitem__`` giving three times the item) was
differentiated as a plain container's item reads and writes: forward mode and mode="auto"
gave the derivative of the plain container, silently wrong. Such a container is refused
in source transformation, and mode="auto" takes the tape, which runs the class's methods; a
``collections.deque`` in forward mode crashed and is refused so too. Subclasses that change
no item method (a ``Params(dict)``, a named tuple) are differentiated as before."""

import collections
import warnings
from typing import NamedTuple

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg


class StoresTwice(dict):
    def __setitem__(self, key, value):
        super().__setitem__(key, value * 2)


class ReadsThrice(list):
    def __getitem__(self, index):
        return super().__getitem__(index) * 3


class AppendsTwice(list):
    def append(self, value):
        super().append(value * 2)


class Params(dict):
    pass


class Pair(NamedTuple):
    a: np.ndarray
    b: np.ndarray


def entry_stored_twice(x):
    d = StoresTwice()
    d["a"] = x
    return np.sum(d["a"] ** 2)


def item_read_thrice(x):
    items = ReadsThrice([x, x * 2])
    return np.sum(items[1] ** 2)


def appended_twice(x):
    items = AppendsTwice()
    items.append(np.sin(x))
    return np.sum(items[0] ** 2)


def last_two_kept(x):
    kept = collections.deque(maxlen=2)
    for i in range(3):
        kept.append(x * (i + 1))
    return np.sum(kept[0] * kept[1])


def plain_subclass(x):
    p = Params(w=x * 2)
    return np.sum(np.tanh(p["w"]))


def named_tuple(x):
    pair = Pair(np.sin(x), x**2)
    return np.sum(pair[0] * pair.b)


OVERRIDING = [entry_stored_twice, item_read_thrice, appended_twice, last_two_kept]


def forward_derivative(f, x, direction, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)  # auto: the tape's
        return sg.jvp(f, (x,), (direction,), mode=mode)[1]


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("f", OVERRIDING)
def test_an_overriding_container_is_right_or_refused(f, size):
    x = np.random.default_rng(size).uniform(-1, 1, size=size)
    direction = np.linspace(-1.0, 1.0, size)
    want = numeric_grad(f, [x], 0)
    for mode in ("auto", "tape"):
        for _ in range(2):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sg.S2SGradWarning)
                np.testing.assert_allclose(sg.grad(f, mode=mode)(x), want, rtol=1e-6, atol=1e-9)
            tangent = forward_derivative(f, x, direction, mode)
            np.testing.assert_allclose(tangent, want @ direction, rtol=1e-6, atol=1e-9)
    with pytest.raises(sg.UnsupportedError):
        sg.jvp(f, (x,), (direction,), mode="s2s")


@pytest.mark.parametrize("mode", ["auto", "tape"])
@pytest.mark.parametrize("f", [plain_subclass, named_tuple])
def test_a_subclass_changing_no_item_method_is_differentiated(f, mode):
    x = np.random.default_rng(5).uniform(-1, 1, size=3)
    want = numeric_grad(f, [x], 0)
    direction = np.array([0.5, -1.0, 2.0])
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            np.testing.assert_allclose(sg.grad(f, mode=mode)(x), want, rtol=1e-6, atol=1e-9)
        tangent = forward_derivative(f, x, direction, mode)
        np.testing.assert_allclose(tangent, want @ direction, rtol=1e-6, atol=1e-9)
