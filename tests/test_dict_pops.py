"""``value = d.pop(key)`` of a dict the function made: desugaring writes a private
container's ``pop`` as ``value = d[key]; d = without_entry(d, key)``, whose helper took
lists only and refused a dict as it ran ("differentiated here as a list's"), so mode
"auto" raised too. A dict is now left without the entry, and its cotangent has no entry
there (a zero), in both sweeps and to any order.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def first_entry_popped(params):
    rest = dict(params)
    first = rest.pop("a")
    return np.sum(first * rest["b"]) + np.sum(np.sin(rest["c"]))


def entries_popped_in_a_loop(params):
    rest = dict(params)
    total = 0.0
    for key in ("a", "b"):
        value = rest.pop(key)
        total = total + np.sum(np.tanh(value) * rest["c"])
    return total


def point(shape):
    rng = np.random.default_rng(sum(shape))
    return {key: rng.uniform(-1.0, 1.0, size=shape) for key in ("a", "b", "c")}


@pytest.mark.parametrize("shape", [(3,), (2, 2)])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [first_entry_popped, entries_popped_in_a_loop])
def test_gradient(f, mode, shape):
    params = point(shape)
    assert_close(call_twice(sg.grad(f, mode=mode), params), numeric_grad(f, [params], 0))


@pytest.mark.parametrize("f", [first_entry_popped, entries_popped_in_a_loop])
def test_forward_mode_and_second_order_by_source(f):
    params = point((3,))
    v = {key: np.linspace(0.5, 1.5, num=3) * (i + 1) for i, key in enumerate(params)}
    _, tangent = sg.jvp(f, (params,), (v,), mode="s2s")
    assert_close(tangent, numeric_jvp(f, [params], 0, v), rtol=1e-5)
    inner = sg.grad(f, mode="s2s")

    def along(p):
        g = inner(p)
        return sum(np.sum(g[key] * v[key]) for key in v)

    expected = numeric_grad(along, [params], 0, step=1e-5)
    assert_close(sg.grad(along, mode="s2s")(params), expected, rtol=1e-4, atol=1e-6)


def test_a_missing_key_still_raises_keyerror():
    with pytest.raises(KeyError):
        sg.grad(first_entry_popped, mode="s2s")({"b": np.ones(2), "c": np.ones(2)})
