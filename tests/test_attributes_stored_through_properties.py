"""``o.a = v`` followed by a read of ``o.a``: source transformation reads ``v`` back, which is
what Python does for an attribute stored plainly, but not for one set through a property's
setter (``self._a = np.tanh(v)``), a ``__setattr__`` or read through a ``__getattribute__`` of
the user's class. Those gave the derivative of the value assigned, silently wrong; now
source transformation leaves them (refused in mode="s2s", the tape in mode="auto"), for an
object the function makes, a global one, and a method's ``self`` (checked as the code runs,
before the store). Plain stores, slots and SimpleNamespace are read back as before."""

import types
import warnings

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg


class Squashed:
    def __init__(self):
        self._a = None

    @property
    def a(self):
        return self._a

    @a.setter
    def a(self, value):
        self._a = np.tanh(value)

    def loss(self, x):
        self.a = x * 2
        return np.sum(self.a**2)


class Tripled:
    def __setattr__(self, name, value):
        object.__setattr__(self, name, value * 3)

    def loss(self, x):
        self.a = x * 2
        return np.sum(self.a**2)


class Doubled:
    def __getattribute__(self, name):
        value = object.__getattribute__(self, name)
        return value * 2 if name == "a" else value


class Slotted:
    __slots__ = ("a",)


class Plain:
    def loss(self, x):
        self.a = x * 2
        return np.sum(np.sin(self.a) ** 2)


def made_with_a_property(x):
    holder = Squashed()
    holder.a = x * 2
    return np.sum(holder.a**2)


def made_with_setattr(x):
    holder = Tripled()
    holder.a = x * 2
    return np.sum(holder.a**2)


def made_with_getattribute(x):
    holder = Doubled()
    holder.a = x * 2
    return np.sum(holder.a**2)


GLOBAL = Squashed()


def global_with_a_property(x):
    GLOBAL.a = x * 2
    return np.sum(GLOBAL.a**2)


def made_with_slots(x):
    holder = Slotted()
    holder.a = x * 2
    return np.sum(holder.a**3)


def made_as_a_namespace(x):
    holder = types.SimpleNamespace()
    holder.a = np.cos(x)
    return np.sum(holder.a * x)


STORED_OTHERWISE = [
    made_with_a_property,
    made_with_setattr,
    made_with_getattribute,
    global_with_a_property,
    Squashed().loss,
    Tripled().loss,
]
STORED_PLAINLY = [made_with_slots, made_as_a_namespace, Plain().loss]


def name(f):
    return getattr(f, "__qualname__", str(f))


@pytest.mark.parametrize("size", [2, 4])
@pytest.mark.parametrize("f", STORED_OTHERWISE, ids=name)
def test_a_store_through_the_class_is_not_read_back_as_the_value(f, size):
    x = np.random.default_rng(size).uniform(-1, 1, size=size)
    want = numeric_grad(f, [x], 0)
    with pytest.raises(sg.UnsupportedError):
        sg.grad(f, mode="s2s")(x)
    for mode in ("auto", "tape"):
        for _ in range(2):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sg.S2SGradWarning)  # auto: the tape's
                got = sg.grad(f, mode=mode)(x)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("size", [2, 4])
@pytest.mark.parametrize("f", STORED_PLAINLY, ids=name)
def test_a_plain_store_is_read_back(f, size, mode):
    x = np.random.default_rng(10 + size).uniform(-1, 1, size=size)
    want = numeric_grad(f, [x], 0)
    for _ in range(2):
        np.testing.assert_allclose(sg.grad(f, mode=mode)(x), want, rtol=1e-6, atol=1e-9)


def test_the_classes_that_store_plainly():
    from s2sgrad.runtime.attribute_stores import stores_plainly

    assert stores_plainly(Plain, "a") and stores_plainly(Slotted, "a")
    assert stores_plainly(types.SimpleNamespace, "a") and stores_plainly(Squashed, "b")
    assert not stores_plainly(Squashed, "a")
    assert not stores_plainly(Tripled, "a") and not stores_plainly(Doubled, "a")


class Bare:
    pass


def written_through_its_dict(x):
    holder = Bare()
    holder.__dict__["a"] = x * 2
    return np.sum(holder.a**2)


def written_through_vars(x):
    holder = Bare()
    vars(holder)["a"] = np.sin(x)
    return np.sum(holder.a**2)


@pytest.mark.parametrize("f", [written_through_its_dict, written_through_vars])
def test_forward_mode_of_an_attribute_written_through_the_objects_dict(f):
    """``o.__dict__["a"] = v`` changes what ``o.a`` reads: forward mode gave a zero tangent;
    the write is refused there like a write into a view, and mode="auto" tapes it."""
    x = np.random.default_rng(3).uniform(-1, 1, size=3)
    direction = np.array([0.5, -1.0, 2.0])
    want = numeric_grad(f, [x], 0) @ direction
    with pytest.raises(sg.UnsupportedError):
        sg.jvp(f, (x,), (direction,), mode="s2s")
    for mode in ("auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            tangent = sg.jvp(f, (x,), (direction,), mode=mode)[1]
        np.testing.assert_allclose(tangent, want, rtol=1e-6)


PLAIN_GLOBAL = Plain()


def made_by_a_factory():
    return Squashed()


def local_name_shadowing_a_plain_global(x):
    PLAIN_GLOBAL = made_by_a_factory()  # noqa: N806  (the local, not the global, is stored into)
    PLAIN_GLOBAL.a = x * 2
    return np.sum(PLAIN_GLOBAL.a**2)


def test_a_local_name_is_not_taken_for_the_global_it_shadows():
    x = np.random.default_rng(8).uniform(-1, 1, size=3)
    want = numeric_grad(local_name_shadowing_a_plain_global, [x], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        got = sg.grad(local_name_shadowing_a_plain_global, mode="auto")(x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
