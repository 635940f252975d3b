"""``dict(a=x, b=y)`` of values being differentiated: a call of the type ``dict`` with
keywords was dispatched when it ran, with derivatives for positional arguments only, so
source transformation refused it ("pass differentiated values to dict positionally"). It
is now the literal ``{'a': x, 'b': y}`` it makes, differentiated in both sweeps; a
``dict`` the user binds stays the user's.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def _weighted(entries):
    return entries["w"] * np.sin(entries["b"]) + entries["c"]


def parameters_by_keyword(x):
    w, b = x[0], x[1:]
    return np.sum(_weighted(dict(w=w, b=b, c=w * b)))


def local_dict_updated(x):
    d = dict(scale=x * 2.0, shift=np.tanh(x))
    d["both"] = d["scale"] * d["shift"]
    return np.sum(d["both"] + d["scale"] ** 2)


def nested_keyword_dicts(x):
    layers = dict(first=dict(w=x, b=x**2), second=dict(w=np.cos(x), b=1.0))
    total = 0.0
    for name in ("first", "second"):
        total = total + np.sum(layers[name]["w"] * x + layers[name]["b"])
    return total


FUNCTIONS = [parameters_by_keyword, local_dict_updated, nested_keyword_dicts]


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", FUNCTIONS)
def test_gradient(f, mode, shape):
    x = np.random.default_rng(len(shape)).uniform(-1.0, 1.0, size=shape)
    assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0), rtol=1e-5)


@pytest.mark.parametrize("f", FUNCTIONS)
def test_forward_mode_and_second_order_by_source(f):
    x = np.array([0.3, -0.8, 1.1])
    v = np.array([1.0, 0.5, -0.25])
    _, tangent = sg.jvp(f, (x,), (v,), mode="s2s")
    assert_close(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-5)
    inner = sg.grad(f, mode="s2s")
    expected = numeric_grad(lambda z: inner(z) @ v, [x], 0, step=1e-5)
    assert_close(sg.grad(lambda z: inner(z) @ v, mode="s2s")(x), expected, rtol=1e-4, atol=1e-6)


def test_the_generated_code_calls_no_dict():
    g = sg.grad(local_dict_updated, mode="s2s")
    g(np.ones(2))
    code = [line for line in sg.source(g).splitlines() if not line.strip().startswith("#")]
    assert not any("dict(" in line for line in code)


def dict_as_a_parameter(x, dict=lambda **entries: entries["a"] * 2.0):
    return dict(a=x) * x


def dict_bound_here(x):
    dict = lambda **entries: entries["a"] * 3.0  # noqa: A001, E731 (a user's own name)
    return dict(a=x) * x


@pytest.mark.parametrize(("f", "factor"), [(dict_as_a_parameter, 4.0), (dict_bound_here, 6.0)])
def test_a_dict_of_the_users_own_is_not_rewritten(f, factor):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(sg.grad(f, mode="auto")(1.5), factor * 1.5)
