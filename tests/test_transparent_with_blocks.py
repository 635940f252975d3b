"""``with np.errstate(...)``, ``warnings.catch_warnings()`` and ``np.printoptions(...)``
around differentiated code: source transformation refused them ("'with' statements that
compute differentiated values cannot be transformed") and forward mode refused any
``with``. They change no value and no flow of control, so both sweeps now differentiate
their body in place and keep the block around the user's own statements.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_gradient_in_every_mode, numeric_grad, numeric_jvp

import s2sgrad as sg

HERE = "test_transparent_with_blocks.py"
POINT = np.array([0.5, 1.3, 2.0])


def safe_log_loss(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(x) * x
        z = np.where(x > 0, y, 0.0)
    return np.sum(z * x)


def block_in_a_loop(x):
    s = 0.0
    for i in range(3):
        with np.errstate(all="ignore"):
            s = s + np.sum(np.sqrt(x) * (i + 1))
    return s


def loop_in_a_block(x):
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = x
        for _ in range(3):
            h = np.tanh(h * 1.5)
    return np.sum(h**2)


def branch_in_a_block(x):
    with np.printoptions(precision=3):
        if x[0] > 0:  # noqa: SIM108 (a statement, as users write it)
            y = x / np.abs(x[1])
        else:
            y = x * 2
    return np.sum(y * x)


def nothing_in_particular(x):
    with contextlib.nullcontext():
        y = np.exp(-x) * x
    return y @ x


FUNCTIONS = [safe_log_loss, block_in_a_loop, loop_in_a_block, branch_in_a_block]


@pytest.mark.parametrize("f", [*FUNCTIONS, nothing_in_particular])
def test_gradient_in_every_mode(f):
    assert_gradient_in_every_mode(f, [POINT])


@pytest.mark.parametrize("f", FUNCTIONS)
def test_gradient_is_source_transformed(f):
    g = sg.grad(f, mode="s2s")
    g(POINT)
    assert "with np." in sg.source(g)


@pytest.mark.parametrize("f", FUNCTIONS)
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_forward_mode(f, mode):
    tangent = np.array([1.0, -0.5, 0.25])
    value, derivative = sg.jvp(f, (POINT,), (tangent,), mode=mode)
    assert_close(value, f(POINT))
    assert_close(derivative, numeric_jvp(f, [POINT], 0, tangent), rtol=1e-5)


@pytest.mark.parametrize("f", [safe_log_loss, block_in_a_loop, loop_in_a_block])
def test_second_order(f):
    v = np.array([0.3, -1.0, 0.7])
    expected = numeric_grad(lambda z: sg.grad(f)(z) @ v, [POINT], 0, step=1e-5)
    for mode in ("s2s", "auto"):
        inner = sg.grad(f, mode=mode)
        got = sg.grad(lambda z, inner=inner: inner(z) @ v, mode=mode)(POINT)
        assert_close(got, expected, rtol=1e-5, atol=1e-7)


def raises_on_a_zero(x):
    with np.errstate(divide="raise"):
        y = np.log(x)
    return np.sum(y)


def test_the_block_still_raises_where_the_function_does():
    with pytest.raises(FloatingPointError):
        sg.grad(raises_on_a_zero, mode="s2s")(np.array([1.0, 0.0]))
    assert_close(sg.grad(raises_on_a_zero, mode="s2s")(POINT), 1 / POINT)


@contextlib.contextmanager
def scaled_by_the_user():
    yield 2.0


def bound_with_as(x):
    with np.errstate(all="ignore") as state:
        y = np.sum(x**2) * (1.0 if state is None else 1.0)
    return y


def users_own_manager(x):
    with scaled_by_the_user():
        y = np.sum(x**2)
    return y


@pytest.mark.parametrize("f", [bound_with_as, users_own_manager])
def test_other_with_blocks_are_still_refused_by_source_transformation(f):
    with pytest.raises(sg.UnsupportedError, match="'with' statements") as refused:
        sg.grad(f, mode="s2s")(POINT)
    assert f"{HERE}:" in str(refused.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(sg.grad(f, mode="auto")(POINT), 2 * POINT)
