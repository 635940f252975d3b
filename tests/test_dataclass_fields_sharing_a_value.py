"""Dataclass fields that hold one object (``Layer(w=a, b=a)``, ``Point(1.0, 2.0, 2.0)``,
whose equal constants Python may share): each field gets its own gradient, in every
mode, against central differences, and with a custom derivative that returns the class."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray
    c: np.ndarray


@dataclasses.dataclass
class Point:
    x: float
    y: float
    z: float


def layer_loss(layer):
    return np.sum(np.sin(layer.w) ** 2) + np.sum(layer.b * 3.0) + np.sum(layer.c**3)


def point_value(p):
    return p.x * p.y + 3.0 * p.z**2


def field_gradients(f, obj):
    names = [field.name for field in dataclasses.fields(obj)]

    def of_fields(*values):
        return f(type(obj)(*values))

    values = [getattr(obj, name) for name in names]
    return {name: numeric_grad(of_fields, values, i) for i, name in enumerate(names)}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(3,), (2, 4)])
def test_fields_holding_one_array_get_their_own_gradients(mode, shape):
    shared = np.random.default_rng(1).normal(size=shape)
    layer = Layer(shared, shared, np.random.default_rng(2).normal(size=shape))
    got = sg.grad(layer_loss, mode=mode)(layer)
    again = sg.grad(layer_loss, mode=mode)(layer)
    want = field_gradients(layer_loss, Layer(shared.copy(), shared.copy(), layer.c.copy()))
    for result in (got, again):
        assert type(result) is Layer
        for name, expected in want.items():
            assert_close(getattr(result, name), expected)


@pytest.mark.parametrize("mode", MODES)
def test_equal_constants_in_two_fields(mode):
    got = sg.grad(point_value, mode=mode)(Point(1.0, 2.0, 2.0))
    assert (got.x, got.y, got.z) == pytest.approx((2.0, 1.0, 12.0))


@pytest.mark.parametrize("mode", MODES)
def test_second_order_through_shared_fields(mode):
    def first(p):
        g = sg.grad(point_value, mode=mode)(p)
        return g.z * p.y  # 6 z y

    got = sg.grad(first, mode=mode)(Point(0.5, 2.0, 2.0))
    assert (got.x, got.y, got.z) == pytest.approx((0.0, 12.0, 12.0))


def norm_of(p):
    return np.sqrt(p.x**2 + p.y**2 + p.z**2)


@sg.derivative(of=norm_of)
def _norm_of_derivative(p):
    n = norm_of(p)
    return n, lambda g: Point(g * p.x / n, g * p.y / n, g * p.z / n)


@pytest.mark.parametrize("mode", MODES)
def test_custom_derivative_returning_the_class_added_to_attribute_reads(mode):
    def f(p):
        return norm_of(p) + p.x * p.y

    x, y = np.random.default_rng(3).uniform(0.5, 2.0, size=2)
    point = Point(float(x), float(y), float(y))  # y and z: one float object
    got = sg.grad(f, mode=mode)(point)
    n = norm_of(point)
    assert (got.x, got.y, got.z) == pytest.approx((x / n + y, y / n + x, y / n))


class Pair:
    def __init__(self, first, second):
        self.first, self.second = first, second


sg.register_pytree(Pair, lambda p: ([p.second, p.first], None), lambda _, c: Pair(c[1], c[0]))


@pytest.mark.parametrize("mode", MODES)
def test_registered_class_holding_one_array_twice(mode):
    shared = np.random.default_rng(4).normal(size=3)

    def f(pair):
        return np.sum(pair.first**2) + np.sum(pair.second * 5.0)

    got = sg.grad(f, mode=mode)(Pair(shared, shared))
    assert_close(got.first, 2 * shared)
    assert_close(got.second, np.full(3, 5.0))
