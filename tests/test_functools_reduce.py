"""``functools.reduce(f, items[, initial])`` of values being differentiated, by source
transformation: the dispatch differentiates the chain ``acc = f(acc, item)`` call by call
(first and second order, forward mode), over a list, a tuple or an array's rows. (It was
refused: "reduce has no source to transform".) A function holding differentiated values
stays refused.
"""

from __future__ import annotations

import functools
from functools import reduce

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_grad_jvp_and_hvp_of_two,
    call_twice,
    numeric_grad,
)

import s2sgrad as sg

RNG = np.random.default_rng(1405)


def mul_add(a, b):
    return a * np.tanh(b) + b


def of_a_lambda(x, y):
    return np.sum(functools.reduce(lambda a, b: a * b + np.sin(a), [x, y, x * y]))


def with_an_initial_value(x, y):
    return np.sum(reduce(mul_add, (x, y, x), y * 2.0))


def over_the_rows_of_an_array(x, y):
    return np.sum(reduce(mul_add, np.outer(x, y)) ** 2)


def of_numpy_functions(x, y):
    return np.sum(reduce(np.multiply, [x, y, np.sin(x)])) + np.sum(reduce(np.add, [x * x, y]))


def from_an_integer(x, y):
    return np.sum(reduce(lambda a, b: a + b**2, [x, y], 0))


PROGRAMS = [
    of_a_lambda,
    with_an_initial_value,
    over_the_rows_of_an_array,
    of_numpy_functions,
    from_an_integer,
]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("size", [1, 4])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_gradient_jvp_and_hvp(f, size, mode):
    x, y = RNG.uniform(-1, 1, size), RNG.uniform(-1, 1, size)
    v = RNG.normal(size=size)
    assert_grad_jvp_and_hvp_of_two(f, x, y, v, mode, seed=size)


def test_generated_code_writes_the_fold_as_a_loop():
    gradient = sg.grad(with_an_initial_value, mode="s2s")
    gradient(RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3))
    code = [line for line in sg.source(gradient).splitlines() if not line.strip().startswith("#")]
    assert not any("reduce(" in line for line in code)


def of_a_closure(x, y):
    return np.sum(reduce(lambda a, b: a * b * y, [x, x]))


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_function_holding_differentiated_values_is_differentiated(mode):
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    gradient = call_twice(sg.grad(of_a_closure, wrt=(0, 1), mode=mode), x, y)
    assert_close(gradient[0], numeric_grad(of_a_closure, [x, y], 0))
    assert_close(gradient[1], numeric_grad(of_a_closure, [x, y], 1))
