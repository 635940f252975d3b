"""A loop whose variable reuses a name an earlier step's derivative reads.

``k = 3.0; y = x * k; for k in range(2): ...`` gave a silently wrong gradient in
mode="s2s" and mode="auto": the backward sweep runs the loop again, last item first,
which leaves ``k`` at the loop's first item, and the derivative of ``y = x * k``, which
comes after it in the backward sweep, read that instead of 3.0. The same with an
``enumerate(..., start=1)`` counter reused by a later ``for i in range(n)`` (found by
``tests/program_constructs.py``, seed 1038). The forward sweep now saves what the name held
before the loop, and the backward sweep puts it back after the loop's iterations
(``reverse/forward_sweep.forward_loop``).
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

R = np.random.default_rng(23)


def scale_then_counter(x):
    k = 3.0
    y = x * k
    for k in range(2):
        y = y * 0.5 + x * k
    return np.sum(y**2)


def item_then_counter(x):
    y = x * 1.0
    for w in x:
        y = y * w
    z = x * w
    for w in range(2):
        z = z + y * (w + 1)
    return np.sum(z**2)


def enumerate_then_range(x, y):
    v = y * 0.0
    for i, u in enumerate(x, start=1):
        v = v + u * i * y
    w = x * 1.0
    for i in range(2):
        w = w * (0.9 + 0.01 * i) + v**2
    return np.sum(np.sin(w))


def reversed_enumerate_then_range(x, y):
    v = y * 0.0
    for i, u in enumerate(reversed(list(x)), start=1):
        v = v + u * i * y
    w = x * 1.0
    for i in range(3):
        w = w * (0.9 + 0.01 * i) + np.log1p(v**2)
    return np.sum(np.sin(w))


def inner_loops_sharing_a_counter(x, y):
    total = x * 0.0
    for _ in range(2):
        for i in range(2):
            total = total + x * (i + 1.5) * y
        for i in range(3):
            total = total * (1.0 + 0.1 * i)
    return np.sum(total**2)


CASES = [
    (scale_then_counter, 1),
    (item_then_counter, 1),
    (enumerate_then_range, 2),
    (reversed_enumerate_then_range, 2),
    (inner_loops_sharing_a_counter, 2),
]


@pytest.mark.parametrize("f, arity", CASES, ids=[f.__name__ for f, _ in CASES])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("size", [3, 4])
def test_a_reused_loop_variable_gives_back_what_it_held(f, arity, mode, size):
    args = [R.uniform(-1.0, 1.0, size=size) for _ in range(arity)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index in range(arity):
            gradient = sg.grad(f, wrt=index, mode=mode)
            assert_close(call_twice(gradient, *args), numeric_grad(f, args, index))
        directions = tuple(R.normal(size=size) for _ in range(arity))
        _, tangent = sg.jvp(f, tuple(args), directions, mode=mode)
        products = sg.hvp(f, tuple(args), directions, mode=mode)
    along = sum(numeric_jvp(f, args, i, d) for i, d in enumerate(directions))
    assert_close(tangent, along)
    wrt = tuple(range(arity))
    step = 1e-5
    up = sg.grad(f, wrt=wrt, mode="tape")(*[a + step * d for a, d in zip(args, directions)])
    down = sg.grad(f, wrt=wrt, mode="tape")(*[a - step * d for a, d in zip(args, directions)])
    for product, high, low in zip(products, up, down):
        assert_close(product, (high - low) / (2 * step), rtol=1e-4, atol=1e-6)
