"""``functools.reduce`` differentiated by source: lowered to a loop that applies the
function to what it has and the next item (``passes/comprehensions.py``), so that a chain
of matrix products (``reduce(np.matmul, [A, B, C])``), a running combination with a lambda,
an ``operator`` function, a helper of the user's or a ``partial`` are differentiated like
any loop. Each against central differences in every mode, first and second call, forward
mode and second order.
"""

import functools
import operator
import warnings
from functools import reduce

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

RNG = np.random.default_rng(41)


def mixed_by_a_lambda(x, y):
    return np.sum(functools.reduce(lambda s, u: s * 0.5 + np.sin(u), [x, y, x * y]))


def chain_of_products(a, b):
    return np.sum(reduce(np.matmul, [a, b, a.T, b]) ** 2)


def with_an_initial_value(x, y):
    return np.sum(reduce(operator.add, [np.sin(x), y**2], x * 0.5))


def over_the_rows_of_an_array(a, b):
    return np.sum(reduce(lambda s, row: s * np.tanh(row), a * b))


def through_a_helper(x, y):
    def step(acc, v):
        return np.tanh(acc + v * y)

    return np.sum(reduce(step, [x, x * 2.0, y], np.zeros_like(x)))


def inside_a_larger_expression(a, b):
    return np.sum(a) * reduce(lambda s, r: s + np.sum(r**2), list(a @ b), 0.0) + np.sum(b)


def weighted(s, u, k):
    return s + k * np.sin(u)


def through_a_partial(x, y):
    return np.sum(reduce(functools.partial(weighted, k=0.5), (x, y, np.cos(x))))


def of_a_generator(x, y):
    return np.sum(reduce(np.multiply, (np.exp(0.1 * k * x) for k in range(1, 4))) * y)


VECTORS = [
    mixed_by_a_lambda,
    with_an_initial_value,
    through_a_helper,
    through_a_partial,
    of_a_generator,
]
MATRICES = [chain_of_products, over_the_rows_of_an_array, inside_a_larger_expression]
CASES = [(f, (3,)) for f in VECTORS] + [(f, (3, 3)) for f in MATRICES]
IDS = [f.__name__ for f, _ in CASES]


def _arguments(shape):
    return RNG.normal(size=shape) * 0.7, RNG.normal(size=shape) * 0.7


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("f, shape", CASES, ids=IDS)
def test_reduce_in_every_mode(f, shape, mode):
    args = _arguments(shape)
    expected = (numeric_grad(f, args, 0), numeric_grad(f, args, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # auto needs no tape
        got = call_twice(sg.grad(f, wrt=(0, 1), mode=mode), *args)
    assert_close(got, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f, shape", CASES, ids=IDS)
def test_reduce_in_forward_mode_and_to_second_order(f, shape):
    x, y = _arguments(shape)
    along = RNG.normal(size=shape)
    _, tangent = sg.jvp(lambda v: f(v, y), (x,), (along,), mode="s2s")
    np.testing.assert_allclose(tangent, numeric_jvp(f, (x, y), 0, along), rtol=1e-5, atol=1e-7)
    (product,) = sg.hvp(lambda v: f(v, y), (x,), (along,), mode="s2s")
    gradient = sg.grad(f, mode="tape")
    want = numeric_jvp(lambda v: gradient(v, y), (x,), 0, along)
    np.testing.assert_allclose(product, want, rtol=1e-4, atol=1e-6)


def test_the_generated_code_shows_a_loop():
    a, b = _arguments((3, 3))
    gradient = sg.grad(chain_of_products, mode="s2s")
    gradient(a, b)
    code = [line for line in sg.source(gradient).splitlines() if not line.strip().startswith("#")]
    assert not any("reduce(" in line for line in code)


def test_an_empty_sequence_without_a_start_still_raises():
    with pytest.raises((TypeError, IndexError)):
        sg.grad(lambda x: np.sum(reduce(np.add, [])) * x, mode="s2s")(1.0)
