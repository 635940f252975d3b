"""``e = d.copy()`` of a dict given to the function, then ``e[key] = v``: ``.copy()``, named
as an array's method, took the array's rules, and a dict's cotangent and tangent met
array code (``assigned_cotangent`` indexing a 0-d array with a string, ``np.copy`` of a
dict), an IndexError from generated code in every transform. The copy's tangent is now
copied as the value is, and a dict's key is an index that selects one entry.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def one_entry_rescaled(d):
    e = d.copy()
    e["a"] = e["a"] * 3.0
    return np.sum(e["a"] * d["a"] + e["b"])


def copied_twice(d):
    e = d.copy()
    e["a"] = e["a"] * e["b"]
    e["b"] = e["a"] + 1.0
    f = e.copy()
    f["a"] = f["b"] ** 2
    return np.sum(f["a"] + e["a"] * d["b"])


def entries_in_a_loop(d):
    e = d.copy()
    for key in ("a", "b"):
        e[key] = np.tanh(e[key]) * 2.0
    return np.sum(e["a"] * e["b"] * d["a"])


def integer_keys(d):
    e = d.copy()
    e[0] = np.sin(e[0]) * e[1]
    return np.sum(e[0] * e[1])


def point(shape, keys=("a", "b")):
    rng = np.random.default_rng(sum(shape) + len(keys))
    return {key: rng.uniform(-1.0, 1.0, size=shape) for key in keys}


def direction(d):
    return {
        key: np.full_like(value, 0.5) + np.arange(value.size).reshape(value.shape) * 0.1
        for key, value in d.items()
    }


CASES = [
    (one_entry_rescaled, ("a", "b")),
    (copied_twice, ("a", "b")),
    (entries_in_a_loop, ("a", "b")),
    (integer_keys, (0, 1)),
]


@pytest.mark.parametrize("shape", [(2,), (2, 3)])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("f", "keys"), CASES)
def test_gradient(f, keys, mode, shape):
    d = point(shape, keys)
    assert_close(call_twice(sg.grad(f, mode=mode), d), numeric_grad(f, [d], 0), rtol=1e-5)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize(("f", "keys"), CASES)
def test_forward_mode(f, keys, mode):
    d = point((3,), keys)
    v = direction(d)
    _, tangent = sg.jvp(f, (d,), (v,), mode=mode)
    assert_close(tangent, numeric_jvp(f, [d], 0, v), rtol=1e-5)
    assert_close(v, direction(d))  # the tangent given is left as it was


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("f", [one_entry_rescaled, copied_twice])
def test_second_order(f, mode):
    d = point((3,))
    v = direction(d)

    def along(e):
        g = sg.grad(f, mode=mode)(e)
        return sum(np.sum(g[key] * v[key]) for key in g)

    tape_gradient = sg.grad(f, mode="tape")
    expected = numeric_grad(
        lambda e: sum(np.sum(tape_gradient(e)[k] * v[k]) for k in v), [d], 0, step=1e-5
    )
    assert_close(sg.grad(along, mode=mode)(d), expected, rtol=1e-4, atol=1e-6)
