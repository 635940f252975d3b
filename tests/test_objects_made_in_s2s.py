"""Objects the differentiated function makes from values being differentiated, by source
transformation (``runtime/records.py``).

Before, ``layer = Affine(W, b); y = layer(x)``, ``p = Params(w=w, b=b)`` (a dataclass), a
``NamedTuple``, ``types.SimpleNamespace`` and a class whose ``__init__`` stores its
arguments were refused by both sweeps ("keeps differentiated values inside an object",
"reads an attribute of an object made by a call") and mode "auto" took the tape. Now the
call of such a record class is differentiated like packing a tuple (each attribute's
cotangent goes back to the argument stored there), the object's methods and calls with the
object as their first argument, in reverse and forward mode and again (hvp). An attribute stored
on such an object that nothing else holds makes a new object (``passes/record_stores.py``).
Classes whose construction or methods do more (compute in ``__init__``, ``__post_init__``,
store on ``self`` in a method, ``__slots__``), and functions that store on objects other
names or containers hold, stay refused when transforming, and mode "auto" tapes them.
"""

from __future__ import annotations

import collections
import types
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_refused_in_s2s_and_taped_in_auto,
    call_twice,
    numeric_grad,
    numeric_jvp,
)

import s2sgrad as sg

HERE = "test_objects_made_in_s2s.py"
R = np.random.default_rng(1832)


class Affine:
    def __init__(self, w, shift=0.1):
        self.w = w
        self.shift = shift

    def __call__(self, v):
        return np.tanh(v * self.w + self.shift)

    def scaled(self, k):
        return Affine(self.w * k, self.shift)


@dataclass
class Pair:
    first: object
    second: object

    def mix(self, t):
        return self.first * t + self.second * (1.0 - t)


class Point(NamedTuple):
    w: object
    b: object = 0.5


Named = collections.namedtuple("Named", "w b")


class Model:
    """A model whose methods call each other."""

    def __init__(self, w, scale):
        self.w = w
        self.scale = scale

    def predict(self, v):
        return self.scale * np.sin(self.w * v)

    def loss(self, v):
        return np.sum(self.predict(v) ** 2)


def layer_called(x, y):
    layer = Affine(x * 2.0, y[0])
    return np.sum(layer(y) ** 2)


def dataclass_by_keyword(x, y):
    p = Pair(first=x**2, second=np.sin(y))
    return np.sum(p.first * p.second + p.mix(0.3))


def named_tuples(x, y):
    p = Point(x * y, y[1])
    q = Named(np.cos(x), b=y)
    return np.sum(p.w * p.b + p[0] * q.w + q[1] * Point(x).b)


def namespace(x, y):
    ns = types.SimpleNamespace(a=x * 3.0, b=np.exp(y))
    return np.sum(ns.a * ns.b)


def methods_calling_methods(x, y):
    return Model(np.cos(x), 3.0).loss(y)


def list_of_layers(x, y):
    layers = [Affine(x), Affine(np.cos(y), 0.0), Affine(x).scaled(0.5)]
    h = y * 1.0
    for layer in layers:
        h = layer(h)
    return np.sum(h)


def passed_to_a_helper(x, y):
    return np.sum(_mixed(Pair(x, y * y), x))


def _mixed(p, v):
    return p.first * v + p.second


def stored_after_made(x, y):
    layer = Affine(0.5)
    layer.w = x * y  # a store on a record no other name holds: a new object
    p = Pair(x, np.sin(y))
    for i in range(3):
        p.first = p.first * 0.5 + y * i
    p.second *= 2.0
    return np.sum(layer(y) * p.mix(0.25))


def namespace_filled_in(x, y):
    ns = types.SimpleNamespace()
    ns.a = x * 3.0
    ns.b = ns.a * y
    ns.a = np.sin(ns.b)
    return np.sum(ns.a * ns.b)


FUNCTIONS = [
    stored_after_made,
    namespace_filled_in,
    layer_called,
    dataclass_by_keyword,
    named_tuples,
    namespace,
    methods_calling_methods,
    list_of_layers,
    passed_to_a_helper,
]


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_objects_made_in_the_function_in_every_mode(f, mode):
    x = R.normal(size=3)
    y = R.normal(size=3) if f in (layer_called, named_tuples) else R.normal(size=(2, 3))
    vx, vy = R.normal(size=x.shape), R.normal(size=y.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # mode "auto": no fallback
        gradient = call_twice(sg.grad(f, wrt=(0, 1), mode=mode), x, y)
        _, tangent = sg.jvp(f, (x, y), (vx, vy), mode=mode)
        products = [sg.hvp(f, (x, y), (vx, vy), mode=mode) for _ in range(2)]
    assert_close(gradient[0], numeric_grad(f, [x, y], 0))
    assert_close(gradient[1], numeric_grad(f, [x, y], 1))
    along = numeric_jvp(lambda t: f(x + t * vx, y + t * vy), [0.0], 0, 1.0)
    assert_close(float(tangent), float(along), rtol=1e-5)
    taped = sg.grad(f, wrt=(0, 1), mode="tape")
    second = numeric_jvp(lambda t: taped(x + t * vx, y + t * vy), [0.0], 0, 1.0)
    for product in products:
        assert_close(tuple(product), tuple(second), rtol=1e-4, atol=1e-6)


class Computes:
    def __init__(self, w):
        self.w = w * 2.0  # computed: not the value given

    def __call__(self, v):
        return v * self.w


class Slotted:
    __slots__ = ("w",)

    def __init__(self, w):
        self.w = w

    def __call__(self, v):
        return v * self.w


class Keeper:
    def __init__(self, w):
        self.w = w

    def keep(self, v):
        self.last = v * self.w  # stores on the object
        return self.last


@dataclass
class Tripled:
    a: object

    def __post_init__(self):
        self.a = self.a * 3.0


def computes_in_init(x):
    return np.sum(Computes(x)(x))


def slotted(x):
    return np.sum(Slotted(x)(x))


def method_storing(x):
    k = Keeper(x)
    y = k.keep(x)
    return np.sum(k.last * y)


def post_init(x):
    return np.sum(Tripled(x).a * x)


def stored_through_an_alias(x):
    p = Pair(x, x * 2.0)
    q = p
    q.first = np.sin(x)
    return np.sum(p.first * p.second)


def kept_in_a_list_then_stored(x):
    p = Pair(x, x * 2.0)
    items = [p]  # another holder: the store is seen through items[0] too
    p.first = np.sin(x)
    return np.sum(items[0].first * p.second)


def _update(p, v):
    p.first = p.first - 0.1 * v
    return v * 2.0


def helper_storing(x):
    p = Pair(x, np.sin(x))
    y = _update(p, x * x)
    return np.sum(p.first * y)


@pytest.mark.parametrize(
    "f, match",
    [
        (computes_in_init, "keeps differentiated values inside an object"),
        (slotted, "keeps differentiated values inside an object"),
        (method_storing, "keeps differentiated values inside an object"),
        (post_init, "made by a call"),
        (stored_through_an_alias, "also stores on objects' attributes"),
        (kept_in_a_list_then_stored, "also stores on objects' attributes"),
        (helper_storing, "also stores on objects' attributes"),
    ],
    ids=lambda p: getattr(p, "__name__", "")[:30],
)
def test_objects_that_do_more_stay_refused_and_taped_in_auto(f, match):
    x = R.normal(size=3)
    assert_refused_in_s2s_and_taped_in_auto(f, [x], match, HERE)


class Shown:
    def __init__(self, w):
        self.w = w

    @property
    def squared(self):
        return self.w**2


def through_a_property(x):
    return np.sum(Shown(np.sin(x)).squared)


@pytest.mark.parametrize("transform", ["grad", "jvp"])
def test_a_property_of_a_made_object_is_refused_not_zero(transform):
    """Forward mode read a property's tangent off the tangent by attribute name as zero.
    A class with a property is no record (``records._no_protocols``): refused as made."""
    x, v = R.normal(size=3), R.normal(size=3)
    with pytest.raises(sg.UnsupportedError, match="Shown"):
        if transform == "grad":
            sg.grad(through_a_property, mode="s2s")(x)
        else:
            sg.jvp(through_a_property, (x,), (v,), mode="s2s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        if transform == "grad":
            got = sg.grad(through_a_property, mode="auto")(x)
            assert_close(got, numeric_grad(through_a_property, [x], 0))
        else:
            _, tangent = sg.jvp(through_a_property, (x,), (v,), mode="auto")
            assert_close(float(tangent), float(2.0 * np.sin(x) * np.cos(x) @ v), rtol=1e-6)


def test_a_class_changed_after_the_first_call_is_read_again():
    """Whether a class is a record is decided as the code runs, each call: a ``__call__``
    assigned to the class later that stores on the object makes it one no more."""

    class Scaling:
        def __init__(self, w):
            self.w = w

        def __call__(self, v):
            return v * self.w

    def f(x):
        return np.sum(Scaling(x)(x) ** 2)

    x = R.normal(size=3)
    gradient = sg.grad(f, mode="s2s")
    assert_close(gradient(x), numeric_grad(f, [x], 0))

    def storing(self, v):
        self.last = v
        return v * self.w * 3.0

    Scaling.__call__ = storing
    with pytest.raises(sg.UnsupportedError, match="does more than store what it is given"):
        gradient(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        assert_close(sg.grad(f, mode="auto")(x), numeric_grad(f, [x], 0))
