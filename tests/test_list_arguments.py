"""Lists a loop appends to, given to NumPy functions whole: ``np.mean(losses)``,
``np.trace(rows)``. NumPy reads such a list as one array, so a rule's cotangent for it is
one array, which the adjoint of ``losses.append`` once tried to ``.pop()`` (an
AttributeError at the user); it is split into entries first now (``owned_items``). Each
program in s2s and auto (and on the tape where it follows the code), first and second
call, reverse and forward mode, against central differences."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, directional_derivative, numeric_grad

import s2sgrad as sg

RNG = np.random.default_rng(31)


def compound(rates):
    balance, history = 100.0, []
    for rate in rates:
        balance *= 1 + rate
        history.append(balance)
    return np.mean(history) + np.std(history) + np.max(history) + np.median(history)


def running_losses(x):
    losses, h = [], x
    for step in range(4):
        h = np.tanh(h * 1.3 + 0.1 * step)
        losses.append(np.sum(h**2))
    return np.linalg.norm(losses) + np.percentile(losses, 40) + np.dot(losses, losses)


def ufuncs_of_a_list(x):
    values = []
    for v in x:
        values.append(v**2)
    return np.sum(np.exp(values)) + np.logaddexp.reduce(values) + np.sum(np.diff(values))


def rows_read_as_a_matrix(x):
    rows = []
    for i in range(3):
        rows.append(np.sin(x * (i + 1)))
    return np.trace(rows) + np.einsum("ij,ij->", rows, rows) + np.sum(np.mean(rows, axis=0))


def sequence_functions(x):
    values = [x[0]]
    for i in range(1, 3):
        values.append(values[-1] * x[i])
    return np.sum(np.convolve(values, [1.0, -0.5]) ** 2) + np.polyval(values, 0.5)


PROGRAMS = [
    (compound, np.array([0.01, 0.02, -0.01, 0.03])),
    (running_losses, RNG.normal(size=3)),
    (ufuncs_of_a_list, RNG.normal(size=3)),
    (rows_read_as_a_matrix, RNG.normal(size=3)),
    (sequence_functions, RNG.normal(size=3) + 1.5),
]


@pytest.mark.parametrize("f, x", PROGRAMS, ids=[f.__name__ for f, _ in PROGRAMS])
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_list_a_loop_appends_to_given_whole_to_numpy(f, x, mode):
    expected = numeric_grad(f, (x,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # auto: no fallback
        assert_close(call_twice(sg.grad(f, mode=mode), x), expected, rtol=1e-5, atol=1e-7)
        direction = RNG.normal(size=x.shape)
        _, tangent = sg.jvp(f, (x,), (direction,), mode=mode)
        assert_close(tangent, directional_derivative(f, x, direction), rtol=1e-5, atol=1e-6)


def test_the_tape_agrees_where_it_follows_the_list():
    f, x = PROGRAMS[0]
    assert_close(sg.grad(f, mode="tape")(x), sg.grad(f, mode="s2s")(x), rtol=1e-10)


def test_a_list_parameter_given_to_einsum():
    def pairs(rows):
        return np.einsum("ij,ij->", rows, rows)

    rows = [RNG.normal(size=2), RNG.normal(size=2)]
    gradient = sg.grad(pairs, mode="s2s")(rows)
    assert isinstance(gradient, list)
    assert_close(gradient, [2 * r for r in rows])
