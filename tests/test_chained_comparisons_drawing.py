"""A chained comparison's middle operand runs once in Python. Written as two comparisons
it ran twice: a random draw there (``lo < rng.normal() < hi``) drew again and could take the
other branch, a wrong gradient. Where the chain is an ``if``'s test or an assignment's value
the operand is named first; elsewhere (a ``while`` test, a comprehension's condition) a
draw or ``next`` there is refused by source transformation, and ``mode="auto"`` tapes it.
Middle operands that draw nothing keep being differentiated in every mode."""

import os
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")
HERE = os.path.basename(__file__)
SHAPES = [(3,), (4,), (2, 3)]
W = np.array([0.2, -0.4, 0.3])


def helper_energy(v):
    return np.sum(v**2)


def drawn_in_a_loop_test(x):
    rng = np.random.default_rng(1)
    y = x
    n = 0
    while -1.0 < rng.normal() < 0.5 and n < 5:  # draws 0.35, then 0.82: one pass
        y = np.sin(y)
        n += 1
    return np.sum(y)


def drawn_in_a_condition(x):
    rng = np.random.default_rng(1)
    return sum(v**2 for v in x.ravel() if -1.0 < rng.normal() < 0.5) + np.sum(x)


@pytest.mark.parametrize(
    "f", [drawn_in_a_loop_test, drawn_in_a_condition], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_draw_in_a_middle_operand_is_refused_then_taped(f, shape):
    x = np.random.default_rng(len(shape)).normal(size=shape)
    with pytest.raises(sg.UnsupportedError, match="chained comparison") as refused:
        sg.grad(f, mode="s2s")(x)
    assert f"{HERE}:" in str(refused.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call_twice(sg.grad(f, mode="auto"), x)
    assert_close(got, numeric_grad(f, [x], 0), rtol=1e-5)


def pure_middle_operands(x):
    total = 0.0
    for v in x.ravel():
        if -5.0 < abs(v) * 2 < 5.0:
            total = total + v**3
    n = 0
    while 0.0 < np.sum(x**2) * (3 - n) < 100.0 and 0 <= W.sum() + n < 3 and n < 3:
        n += 1
    return total * n + (np.sum(x) if -1e3 < helper_energy(x) < 1e3 else 0.0)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
def test_middle_operands_that_draw_nothing_are_differentiated(shape, mode):
    x = np.random.default_rng(sum(shape)).normal(size=shape)
    f = pure_middle_operands
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call_twice(sg.grad(f, mode=mode), x)
    assert_close(got, numeric_grad(f, [x], 0), rtol=1e-5)
