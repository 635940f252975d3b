"""Loops with ``else`` clauses and assignment expressions, by source transformation.

Both were refused in mode="s2s" (mode="auto" taped them): "'else' clauses on loops are not
supported" and "an assignment expression (:=) cannot be transformed". They are now written
with plainer statements first (``passes/statement_forms.py``): a flag set before each
``break`` of the loop, and an assignment before the statement whose first-evaluated operand
the assignment expression is (before each test of a ``while``). An assignment expression
evaluated after another operand, or only on one side of ``and``/``or``, is still refused,
naming its line: moving it would change what runs first.
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

R = np.random.default_rng(31)


def search_with_else(x, y):
    v = x * 1.0
    for i in range(4):
        if np.sum(v) > 2.5:
            break
        v = v * 0.9 + y * (i + 1)
    else:
        v = v * 2.0
    return np.sum(v**2)


def while_with_else(x, y):
    v = x * 1.0
    k = 0
    while k < 3:
        v = np.sin(v) + y
        if np.max(v) > 1.8:
            break
        k += 1
    else:
        v = v * 2.0
    return np.sum(v**2)


def found_or_default(x, y):
    for w in x:
        if w > 0.9:
            found = w * y[0]
            break
    else:
        found = np.sum(y * x)
    return found * np.sum(x)


def nested_loops_break_their_own(x, y):
    total = x * 0.0
    for i in range(3):
        for j in range(3):
            if j > i:
                break
            total = total + x * y[j]
        else:
            total = total * 1.5
    return np.sum(np.tanh(total))


def walrus_in_a_test(x, y):
    if (s := np.sum(x)) > 0.0:
        v = y * s
    elif (m := np.max(x)) > -0.5:
        v = y * m
    else:
        v = y - s
    return np.sum(v**2)


def walrus_in_a_value(x, y):
    v = (t := np.tanh(x)) * t + y
    w = np.sum(q := v * 2.0) + q
    return np.sum(w**2)


def walrus_in_a_while(x, y):
    v = x * 1.0
    k = 0
    while (k := k + 1) < 4:
        v = v * 0.5 + np.sin(y) * k
    return np.sum(v**2)


CASES = [
    search_with_else,
    while_with_else,
    found_or_default,
    nested_loops_break_their_own,
    walrus_in_a_test,
    walrus_in_a_value,
    walrus_in_a_while,
]


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("scale", [0.4, 1.0])
def test_differentiated_by_source_in_every_order(f, mode, scale):
    x, y = scale * R.normal(size=3), scale * R.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # no fallback to the tape
        for index in range(2):
            gradient = sg.grad(f, wrt=index, mode=mode)
            assert_close(call_twice(gradient, x, y), numeric_grad(f, [x, y], index))
        direction = R.normal(size=3)
        _, tangent = sg.jvp(f, (x, y), (direction, np.zeros(3)), mode=mode)
        assert_close(tangent, numeric_jvp(f, [x, y], 0, direction))
        product = sg.hvp(f, (x, y), (direction, np.zeros(3)), mode=mode)[0]
    step = 1e-5
    up = sg.grad(f, mode="tape")(x + step * direction, y)
    down = sg.grad(f, mode="tape")(x - step * direction, y)
    assert_close(product, (up - down) / (2 * step), rtol=1e-4, atol=1e-6)


def walrus_after_another_operand(x, y):
    v = np.sum(x) + (s := np.sum(y))
    return v * s


def walrus_on_one_side_of_or(x, y):
    if np.sum(x) > 5.0 or (s := np.sum(y)) > 0.0:
        return np.sum(x)
    return np.sum(x) * s


@pytest.mark.parametrize("f", [walrus_after_another_operand, walrus_on_one_side_of_or])
def test_an_assignment_expression_that_cannot_move_is_refused_naming_its_line(f):
    line = f.__code__.co_firstlineno + 1
    with pytest.raises(sg.UnsupportedError, match=rf"test_statement_forms\.py:{line}: .*:="):
        sg.grad(f, mode="s2s")(R.normal(size=3), R.normal(size=3))
