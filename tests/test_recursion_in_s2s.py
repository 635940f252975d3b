"""Recursive helpers differentiated by source transformation: a recursive ``power(x, n)``,
Horner's rule over a list of coefficients, a binary-split power, the evaluation of a tree
of nested tuples, two functions calling each other, and a differentiated function that
calls itself.

Mode "s2s" refused them ("power calls itself; recursive functions are differentiated with
mode='tape'"): the derivative of a call of a function whose derivative is being built was
refused while building it. Mode "auto" already dispatched such a call when it runs
(``dynamic_vjp``), by which time that derivative exists; mode "s2s" now does the same
without the tape (``transformed_vjp``). Each is checked in every mode against central
differences, a first and a later call, forward mode and the Hessian-vector product, with
no fallback in mode "auto".
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def power(x, n):
    if n == 0:
        return np.ones_like(x)
    return x * power(x, n - 1)


def recursive_power(x):
    return np.sum(power(x, 3) * np.sin(x))


def _horner(coefficients, x, i=0):
    if i == len(coefficients) - 1:
        return coefficients[i] * np.ones_like(x)
    return coefficients[i] + x * _horner(coefficients, x, i + 1)


def recursive_polynomial(x):
    return np.sum(_horner([1.0, 2.0, -0.5, 0.3], x) ** 2)


def _split_power(x, n):
    if n == 1:
        return x
    half = _split_power(x, n // 2)
    if n % 2 == 0:
        return half * half
    return half * half * x


def binary_split_power(x):
    return np.sum(_split_power(x, 5))


def _evaluate(node, x):
    if isinstance(node, float):
        return node * x
    left, right = node
    return np.tanh(_evaluate(left, x)) + _evaluate(right, x) * x


def tree_evaluation(x):
    return np.sum(_evaluate(((0.5, 1.5), (2.0, (0.1, 0.3))), x))


def _even(x, n):
    return np.cos(x) if n == 0 else _odd(x * 0.9, n - 1)


def _odd(x, n):
    return np.sin(x) if n == 0 else _even(x + 0.1, n - 1) * x


def mutual_recursion(x):
    return np.sum(_even(x, 4))


def calls_itself(x, depth=3):
    if depth == 0:
        return np.sum(np.exp(x * 0.3))
    return calls_itself(np.tanh(x) * 1.2, depth - 1) + np.sum(x**2) * 0.1


PROGRAMS = [
    recursive_power,
    recursive_polynomial,
    binary_split_power,
    tree_evaluation,
    mutual_recursion,
    calls_itself,
]


def _point(seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.4, 1.3, size=4) * rng.choice([-1.0, 1.0], size=4)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_recursion_in_every_mode(f, mode):
    x = _point(5)
    direction = np.random.default_rng(6).normal(size=4)
    gradient = sg.grad(f, mode="tape")
    expected = numeric_grad(f, [x], 0)
    assert_close(gradient(x), expected, rtol=1e-5, atol=1e-7)
    second = numeric_jvp(gradient, [x], 0, direction)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # mode "auto" falls back nowhere
        got = call_twice(sg.grad(f, mode=mode), x)
        _, tangent = sg.jvp(f, (x,), (direction,), mode=mode)
        products = [sg.hvp(f, (x,), (direction,), mode=mode)[0] for _ in range(2)]
    assert_close(got, expected, rtol=1e-5, atol=1e-7)
    assert_close(tangent, numeric_jvp(f, [x], 0, direction), rtol=1e-5, atol=1e-7)
    for product in products:
        assert_close(product, second, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_recursion_to_another_depth_is_differentiated_afresh(mode):
    x = _point(9)
    for depth in (1, 4):

        def f(y, depth=depth):
            return np.sum(power(y, depth) * np.cos(y))

        assert_close(sg.grad(f, mode=mode)(x), numeric_grad(f, [x], 0), rtol=1e-5, atol=1e-7)
