"""Objects the function makes whose state is read without naming their attributes.

Branch con18 differentiated such objects by source as "records" (``runtime/records.py``)
and was silently wrong where NumPy or Python reads them through a protocol or as a whole:
``np.asarray(Holder(x))`` of a class whose ``__array__`` returns an attribute, ``vars(p)``,
``p.__dict__``, gave zero gradients in modes "s2s" and "auto"; a class with ``__iter__``,
``__getitem__`` or arithmetic of its own crashed or was wrong. Now a class defining
anything Python or NumPy calls implicitly (or a property or other descriptor) is no
record, refused by source transformation and taped in mode "auto"; a record read as a
whole by a call on the tape (``vars``, ``object.__getattribute__``) or through
``__dict__`` is refused so, and ``p.__class__(...)`` (read as a call of ``type``, a
constant, even for a dataclass given as an argument) is refused rather than constant.
"""

from __future__ import annotations

import copy
import operator
import types
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_grad_jvp_and_hvp,
    assert_refused_in_s2s_and_taped_in_auto,
    numeric_grad,
)

import s2sgrad as sg

HERE = "test_records_without_named_attributes.py"
R = np.random.default_rng(3319)


class Holder:
    def __init__(self, v):
        self.v = v

    def __array__(self, dtype=None, copy=None):
        return self.v


class Pair:
    def __init__(self, a, b):
        self.a = a
        self.b = b

    def __iter__(self):
        return iter((self.a, self.b))


class Items:
    def __init__(self, w):
        self.w = w

    def __getitem__(self, i):
        return self.w[i]

    def __len__(self):
        return len(self.w)


class Scaled:
    def __init__(self, v):
        self.v = v

    def __mul__(self, other):
        return self.v * other


class Copied:
    def __init__(self, v):
        self.v = v

    def __copy__(self):
        return Copied(self.v * 3.0)


class Twice:
    def __init__(self, v):
        self.v = v

    @property
    def doubled(self):
        return self.v * 2.0


def through_iter(x):
    a, b = Pair(x, x * 3.0)
    return np.sum(a * b)


def through_getitem(x):
    items = Items(x)
    total = 0.0
    for i in range(len(items)):
        total = total + items[i] ** 2
    return total


def through_mul(x):
    return np.sum(Scaled(x) * 3.0)


def through_copy(x):
    return np.sum(copy.copy(Copied(x)).v ** 2)


def through_property(x):
    return np.sum(Twice(np.sin(x)).doubled ** 2)


@pytest.mark.parametrize(
    "f",
    [through_iter, through_getitem, through_mul, through_copy, through_property],
)
def test_a_class_with_implicit_methods_is_refused_and_taped(f):
    x = R.uniform(0.3, 1.2, size=3)
    assert_refused_in_s2s_and_taped_in_auto(f, [x], "Items|Pair|Scaled|Copied|Twice", HERE)


def through_array(x):
    return np.sum(np.asarray(Holder(x * 2.0)) ** 2)


def test_an_array_protocol_is_refused_not_zero():
    """The zero gradient review found: __array__ returning the stored value."""
    x = R.uniform(0.3, 1.2, size=3)
    for mode in ("s2s", "auto"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            with pytest.raises(sg.S2SGradError, match=HERE):
                sg.grad(through_array, mode=mode)(x)
            with pytest.raises(sg.S2SGradError, match=HERE):
                sg.jvp(through_array, (x,), (x,), mode=mode)


class Params:
    def __init__(self, w, b):
        self.w = w
        self.b = b


@dataclass
class Layer:
    w: object
    b: object


def vars_entry(x):
    p = Params(x * 2.0, x[0])
    return np.sum(vars(p)["w"] ** 2)


def dict_entry(x):
    p = Params(x, x[0] * 3.0)
    return p.__dict__["b"] * x[1]


def dict_through_getattr(x):
    p = Params(x * 2.0, x[0])
    name = "__dict__"
    return np.sum(getattr(p, name)["w"] ** 2)


def dict_items(x):
    p = Params(x * 2.0, np.sin(x))
    total = 0.0
    for _, v in p.__dict__.items():
        total = total + np.sum(v**2)
    return total


def namespace_vars(x):
    ns = types.SimpleNamespace(w=x * 2.0, b=x[0])
    return np.sum(vars(ns)["w"]) * ns.b


def object_getattribute(x):
    p = Params(x * 2.0, x[0])
    return np.sum(object.__getattribute__(p, "w") ** 2)


def attrgetter(x):
    p = Params(x * 2.0, x[0])
    return np.sum(operator.attrgetter("w")(p) ** 2)


def made_again_by_its_class(x):
    p = Params(x * 2.0, x[0])
    q = p.__class__(x * 3.0, p.b)
    return np.sum(q.w * p.w)


@pytest.mark.parametrize(
    "f",
    [
        vars_entry,
        dict_entry,
        dict_through_getattr,
        dict_items,
        namespace_vars,
        object_getattribute,
        attrgetter,
        made_again_by_its_class,
    ],
)
def test_state_read_without_its_names_is_refused_and_taped(f):
    x = R.uniform(0.3, 1.2, size=3)
    assert_refused_in_s2s_and_taped_in_auto(f, [x], ".", HERE)
    v = R.normal(size=3)
    assert_grad_jvp_and_hvp(f, x, v, "auto")


def layer_dict(layer):
    return np.sum(layer.__dict__["w"] ** 2)


def layer_made_again(layer):
    q = layer.__class__(layer.w * 3.0, 1.0)
    return np.sum(q.w * layer.w)


@pytest.mark.parametrize("f", [layer_dict, layer_made_again])
def test_a_dataclass_argument_read_as_a_whole_is_refused_not_constant(f):
    """On main too, d.__dict__["w"] read as a class constant (zero gradient) and
    d.__class__(...) as a call of type (a constant)."""
    w = R.uniform(0.3, 1.2, size=3)
    expected = numeric_grad(lambda v: f(Layer(v, 2.0)), [w], 0)
    with pytest.raises(sg.UnsupportedError, match=HERE):
        sg.grad(f, mode="s2s")(Layer(w, 2.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        for _ in range(2):
            assert_close(sg.grad(f, mode="auto")(Layer(w, 2.0)).w, expected)


def vars_of_a_dataclass_argument(layer):
    return np.sum(vars(layer)["w"] ** 2) * layer.b


def test_vars_of_a_dataclass_argument_stays_differentiated():
    """The tape rebuilds a dataclass of its fields: vars of it is followed."""
    w = R.uniform(0.3, 1.2, size=3)
    expected = numeric_grad(lambda v: vars_of_a_dataclass_argument(Layer(v, 2.0)), [w], 0)
    for _ in range(2):
        got = sg.grad(vars_of_a_dataclass_argument, mode="s2s")(Layer(w, 2.0))
        assert_close(got.w, expected)


def missing_with_default(x):
    p = Params(x * 2.0, x[0])
    return np.sum(getattr(p, "w", None) ** 2) + getattr(p, "missing", 0.5) * x[1]


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_getattr_with_a_default_in_forward_mode(mode):
    """Forward mode read the missing attribute off the class to make a zero tangent:
    AttributeError."""
    x, v = R.uniform(0.3, 1.2, size=3), R.normal(size=3)
    assert_grad_jvp_and_hvp(missing_with_default, x, v, mode)


def copied(x):
    p = Params(x * 2.0, x[0])
    q = copy.copy(p)
    return np.sum(q.w**2) + q.b


def plain(x):
    p = Params(np.sin(x), x[0])
    return np.sum(p.w * p.b)


def test_a_class_copied_once_is_still_a_record():
    """copy and pickle cache __slotnames__ on the class: bookkeeping, no protocol."""
    x, v = R.uniform(0.3, 1.2, size=3), R.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        sg.grad(copied, mode="auto")(x)
    copy.copy(Params(1.0, 2.0))
    assert_grad_jvp_and_hvp(plain, x, v, "s2s")
