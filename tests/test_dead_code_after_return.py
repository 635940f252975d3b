"""Statements after a ``return`` that every path takes are dead: CPython leaves them out of
the code, so they have no position, yet their constants stay in ``co_consts``. The source
was read up to the last line with a position, which then compiled to other constants, and
mode="s2s" refused the function as "edited after it was imported" (found by
``tests/program_jumps.py``). The definition is read again by tokenizing before that
refusal."""

import numpy as np
import pytest
from oracle import assert_grad_jvp_and_hvp

import s2sgrad as sg

HERE = "test_dead_code_after_return.py"


def loop_then_return(x):
    s = x[0] * 0.1
    for i in range(2):
        s = s + x[i] * 0.7
    return s * 0.5 + np.sum(np.sin(x) * x)
    s = s + x[2] * 0.33  # dead: never runs
    w = 0
    while w < 1:
        w = w + 1
        s = s + x[w] * 0.25
    return s


def branches_then_dead(x):
    s = np.sum(x**2) * 0.1
    if x[1] > 0.0:
        return s * 3.0 + np.cos(x[0])
    else:
        return s * 2.0 + x[2] * x[0]
    s = s + 0.77  # dead: both branches return
    return s


def returns_through_finally(x):
    s = x[0] * 0.1
    try:
        s = s + x[1] ** 2
        return s * 0.5
    finally:
        s = s + x[0] * 0.125
    s = s + x[2] * 0.33  # dead: the try returns
    return s


@pytest.mark.parametrize("f", [loop_then_return, branches_then_dead])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_dead_statements_after_a_return(f, mode):
    rng = np.random.default_rng(21)
    for x in (rng.normal(size=4), -rng.normal(size=4)):
        assert_grad_jvp_and_hvp(f, x, rng.normal(size=4), mode)


def test_a_try_is_refused_for_itself_not_as_an_edited_file():
    x = np.random.default_rng(22).normal(size=4)
    with pytest.raises(sg.UnsupportedError, match="'try' statements") as refused:
        sg.grad(returns_through_finally, mode="s2s")(x)
    assert f"{HERE}:" in str(refused.value) and "edited" not in str(refused.value)
    assert_grad_jvp_and_hvp(returns_through_finally, x, np.ones(4), "auto")
