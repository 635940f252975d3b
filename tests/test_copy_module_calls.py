"""``copy.copy`` and ``copy.deepcopy`` of values being differentiated (arrays, lists,
dicts, dataclasses): the same values in new containers, differentiated by a rule in every
mode. Source transformation followed the ``copy`` module's own source and refused, naming
a line of ``copy.py`` and asking the user to change its defaults."""

from __future__ import annotations

import copy
import dataclasses
import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_grad_jvp_and_hvp

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")


def shallow_array(x):
    y = copy.copy(x)
    return np.sum(np.sin(y) * x)


def deep_array(x):
    y = copy.deepcopy(x) * 2.0
    return np.sum(y**3)


def shallow_list(x):
    items = copy.copy([x, x**2])
    return np.sum(items[0] * items[1])


def deep_nested(x):
    tree = copy.deepcopy({"a": x, "b": [x * 2.0, np.cos(x)]})
    return np.sum(tree["a"] * tree["b"][0] ** 2 + tree["b"][1])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [shallow_array, deep_array, shallow_list, deep_nested])
@pytest.mark.parametrize("size", [1, 4])
def test_first_and_second_order(mode, f, size):
    rng = np.random.default_rng(size)
    with warnings.catch_warnings():
        warnings.simplefilter("error" if mode == "auto" else "ignore")  # no fallback
        assert_grad_jvp_and_hvp(f, rng.normal(size=size), rng.normal(size=size), mode)


@dataclasses.dataclass
class Point:
    x: float
    y: float


def product_of_copy(p):
    q = copy.copy(p)
    return q.x * q.y**2


def params_loss(params):
    kept = copy.deepcopy(params)
    return np.sum(np.tanh(kept["w"]) * params["b"])


@pytest.mark.parametrize("mode", MODES)
def test_containers_given_as_arguments(mode):
    x, y = np.random.default_rng(3).normal(size=2)
    got = sg.grad(product_of_copy, mode=mode)(Point(float(x), float(y)))
    assert (got.x, got.y) == pytest.approx((y**2, 2 * x * y))
    w, b = np.random.default_rng(4).normal(size=(2, 3))
    grads = sg.grad(params_loss, mode=mode)({"w": w, "b": b})
    assert_close(grads["w"], (1 - np.tanh(w) ** 2) * b)
    assert_close(grads["b"], np.tanh(w))
