"""The tape takes over a plain array the function made when a value being differentiated
is written into it (``un = np.zeros(3); un[1:] = ...``) also when the array's name is bound
again only by swaps with other such names (``u, un = un, u``, a stencil's double buffer),
and when the value written is what a helper of the user's returns (``out[i] = cell(x)``)
whose every ``return`` surely gives one value, asked of the helper the name holds when
the write runs. (Both were refused: "writing a value being differentiated into an element
of a plain array".) A helper that may return a list, and an alias that is not a swap,
stay refused.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_grad_jvp_and_hvp_of_two,
    numeric_grad,
)

import s2sgrad as sg

RNG = np.random.default_rng(1404)


def double_buffer(x, y):
    u = x * 1.0
    un = np.zeros(x.shape)
    for _ in range(3):
        un[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2 * u[1:-1] + u[:-2]) * y[1:-1]
        un[0] = u[0] * y[0]
        un[-1] = u[-1]
        u, un = un, u
    return np.sum(u**2) + np.sum(un * x)


def three_buffers(x, y):
    a = x * 1.0
    b = np.zeros(x.shape)
    c = np.zeros(x.shape)
    for _ in range(2):
        b[:] = np.sin(a) * y
        c[1:] = b[:-1] + a[1:]
        c[0] = b[0]
        a, b, c = c, a, b
    return np.sum(a * b) + np.sum(c)


def cell(v, w):
    h = np.tanh(v * w)
    return h * 2.0 - v


def rows_by_a_helper(x, y):
    out = np.zeros((len(y), len(x)))
    for i in range(len(y)):
        out[i] = cell(x, y[i])
    return np.sum(out**2)


PROGRAMS = [double_buffer, three_buffers, rows_by_a_helper]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("size", [3, 5])
@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_gradient_jvp_and_hvp(f, size, mode):
    x, y = RNG.uniform(-1, 1, size), RNG.uniform(-1, 1, size)
    v = RNG.normal(size=size)
    assert_grad_jvp_and_hvp_of_two(f, x, y, v, mode, seed=size)


def pair(v):
    return [v, v * 2.0]


def rows_by_a_helper_returning_a_list(x, y):
    out = np.zeros((3, 2))
    for i in range(3):
        out[i] = pair(x[i] * y[i])
    return np.sum(out**2)


def an_alias_not_a_swap(x, y):
    u = np.zeros(3)
    un = np.zeros(3)
    w = u
    for _ in range(2):
        un[:] = x * y + u
        u, un = un, w
    return np.sum(u * x) + np.sum(un)


@pytest.mark.parametrize("f", [rows_by_a_helper_returning_a_list, an_alias_not_a_swap])
def test_still_refused(f):
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    with pytest.raises(sg.S2SGradError) as refused:
        sg.grad(f, mode="tape")(x, y)
    assert f"{__file__}:" in str(refused.value)


def test_a_helper_rebound_to_one_returning_a_list_is_refused(monkeypatch):
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    gradient = sg.grad(rows_by_a_helper, mode="tape")
    assert_close(gradient(x, y), numeric_grad(rows_by_a_helper, [x, y], 0))
    monkeypatch.setitem(globals(), "cell", lambda v, w: [v[0] * w, v[1], v[2] * w])
    with pytest.raises(sg.NonDifferentiableError, match="plain array"):
        gradient(x, y)
