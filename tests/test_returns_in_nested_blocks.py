"""Returns the jumps pass must structure: a ``return`` in an ``if`` inside an ``if`` whose
other path goes on, or in a loop inside an ``if`` or a ``with`` (the statements after the
outer block ran anyway and overwrote the result), a ``return`` or ``continue`` inside
``with np.errstate(...)`` (the return was kept, handing the user's value back as the
gradient; after the continue the body ran on), and a local ``def`` inlined with an ``if``
arm falling through taken for one returning None."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg


def nested_return(x):
    if x[0] > 0:  # noqa: SIM102 (the nesting is the case)
        if x[1] > 0:
            return np.sin(x[0]) * x[2]
    return x[1] * 3.0 + x[2] ** 2


def nested_return_in_a_loop(x):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:  # noqa: SIM102 (the nesting is the case)
            if total > 0.5:
                return total * x[i]
        total = total + x[i] ** 2
    return total


def return_in_errstate(x):
    with np.errstate(all="ignore"):
        return np.sum(np.sqrt(np.abs(x)) * x)


def return_in_errstate_under_if(x):
    with np.errstate(divide="ignore"):
        if x[0] > 0:
            return np.sum(np.sin(x) * x)
        y = x**2
    return np.sum(y * x[1])


def return_in_errstate_in_a_loop(x):
    total = 0.0
    for v in x:
        with np.errstate(invalid="ignore"):
            if v > 1.0:
                return total + np.sin(v)
            total = total + v**2
    return total


def return_from_a_loop_in_errstate(x):
    with np.errstate(all="ignore"):
        for i in range(4):
            if x[i] < 0:
                return x[i] * 3.0
    return np.sum(x**2)


def return_from_a_loop_in_an_if(x):
    if x[0] > 0:
        for v in x:
            if v > 1.0:
                return v * 2.0
    return np.sum(np.sin(x))


def continue_in_errstate(x):
    total = 0.0
    for v in x:
        with np.errstate(all="ignore"):
            if v < 0:
                continue
            total = total + v**2
    return total


def nested_return_in_a_local_def(x):
    def inner(v):
        if v > 0:  # noqa: SIM102 (the nesting is the case)
            if v > 0.6:
                return v * 2.0
        return v**3

    return inner(x[0]) + inner(x[3])


FUNCTIONS = [
    nested_return,
    nested_return_in_a_loop,
    return_in_errstate,
    return_in_errstate_under_if,
    return_in_errstate_in_a_loop,
    return_from_a_loop_in_errstate,
    return_from_a_loop_in_an_if,
    continue_in_errstate,
    nested_return_in_a_local_def,
]
POINTS = [
    np.array([0.5, 0.7, -0.3, 0.9]),
    np.array([0.5, -0.7, 1.3, 0.2]),
    np.array([-0.5, 0.7, 0.4, 1.6]),
    np.array([0.9, 0.8, 1.2, -0.4]),
]


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("f", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_every_path(f, mode):
    v = np.random.default_rng(14).normal(size=4)
    gradient = sg.grad(f, mode=mode)
    tape_gradient = sg.grad(f, mode="tape")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for x in POINTS:
            kept = x.copy()
            assert_close(gradient(x), numeric_grad(f, [x], 0))
            _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
            assert_close(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-5, atol=1e-7)
            (product,) = sg.hvp(f, (x,), (v,), mode=mode)
            assert_close(product, numeric_jvp(tape_gradient, [x], 0, v), rtol=1e-4, atol=1e-6)
            np.testing.assert_array_equal(x, kept)
