"""A chained comparison ``lo < f(x) < hi`` runs its middle operand once. Written as two
comparisons it ran ``f`` twice, and a helper of the user's that draws a random number there
(inside an expression: an argument, an augmented assignment's value, a loop body, an
``assert``) drew twice: a wrong gradient from every source-transformed mode, silently.

Such a middle operand is now named before its statement wherever that keeps Python's order
of evaluation; elsewhere a middle operand that calls code which may not run twice is refused
by source transformation (mode "auto" tapes it). Helpers whose source shows no effect, and
NumPy's functions, may still run twice and keep being differentiated."""

import os
import warnings

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_hvp_matches_differences,
    assert_refused_in_s2s_and_taped_in_auto,
    call_twice,
    numeric_grad,
)

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")
HERE = os.path.basename(__file__)
SHAPES = [(3,), (5,), (2, 3)]


def draw(rng):
    return rng.normal()


def energy(v):
    return np.sum(v**2)


def in_an_argument(x):
    rng = np.random.default_rng(1)
    kept = []
    kept.append(x * (-1.0 < draw(rng) < 0.5))
    return np.sum(kept[0] ** 2) + np.sum(x * draw(rng))


def in_an_augmented_value(x):
    rng = np.random.default_rng(1)
    y = x * 1.0
    y *= 2.0 if -1.0 < draw(rng) < 0.5 else 3.0
    return np.sum(np.sin(y) * draw(rng))


def in_a_loop_body(x):
    rng = np.random.default_rng(4)
    total = 0.0
    for v in x.ravel():
        total = total + (-0.5 < draw(rng) < 0.5) * v**2
    return total + np.sum(x) * draw(rng)


def in_a_return(x):
    rng = np.random.default_rng(1)
    return np.sum(np.cos(x) * draw(rng)) if -5.0 < draw(rng) < 5.0 else np.sum(x)


def in_a_where(x):
    rng = np.random.default_rng(1)
    y = np.where(-1.0 < abs(draw(rng)) < 0.5, x, 2 * x)
    return np.sum(y**2 * draw(rng))


NAMED_FIRST = [in_an_argument, in_an_augmented_value, in_a_loop_body, in_a_return, in_a_where]


@pytest.mark.parametrize("f", NAMED_FIRST, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
def test_a_drawing_middle_operand_runs_once(f, shape, mode):
    x = np.random.default_rng(len(shape) + 7).normal(size=shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call_twice(sg.grad(f, mode=mode), x)
    assert_close(got, numeric_grad(f, [x], 0), rtol=1e-5)


@pytest.mark.parametrize("f", NAMED_FIRST, ids=lambda f: f.__name__)
def test_second_order_through_a_named_middle_operand(f):
    x = np.random.default_rng(3).normal(size=(4,))
    assert_hvp_matches_differences(f, (x,), "s2s")


def test_the_middle_operand_is_called_once_in_the_generated_code():
    source = sg.source(sg.grad(in_an_argument, mode="s2s"))
    assert source.count("draw(") == 2  # the chain's, named first, and the product's


def computed_before_the_draw(x):
    rng = np.random.default_rng(1)
    return np.sum(x**2) * float(-1.0 < draw(rng) < 0.5) + np.sum(x) * draw(rng)


def a_later_middle_operand(x):
    rng = np.random.default_rng(1)
    return np.sum(x * (0.0 < draw(rng) < draw(rng) < 9.0)) + np.sum(x * draw(rng))


def drawn_in_an_assert(x):
    rng = np.random.default_rng(1)
    assert -5.0 < draw(rng) < 5.0  # not run under python -O: not named before it
    return np.sum(np.cos(x) * draw(rng))


def drawn_in_a_while_test(x):
    rng = np.random.default_rng(1)
    y = x
    n = 0
    while -1.0 < draw(rng) < 0.5 and n < 5:
        y = np.sin(y)
        n += 1
    return np.sum(y)


@pytest.mark.parametrize(
    "f",
    [computed_before_the_draw, a_later_middle_operand, drawn_in_an_assert, drawn_in_a_while_test],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_drawing_middle_operand_that_cannot_be_named_first_is_refused(f, shape):
    x = np.random.default_rng(len(shape)).normal(size=shape)
    assert_refused_in_s2s_and_taped_in_auto(f, [x], "chained comparison", HERE)


def effect_free_helpers(x):
    total = 0.0
    n = 0
    while 0.0 < energy(x) * (3 - n) < 1e3 and n < 3:  # a helper without effects: twice
        n += 1
    for v in x.ravel():
        total = total + v**3 * (-5.0 < abs(v) * 2 < 5.0)
    kept = [v**2 for v in x.ravel() if -1e3 < energy(v) < 1e3]
    return total * n + sum(kept) + np.sum(x) * (-1e3 < energy(x) < 1e3)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
def test_middle_operands_without_effects_are_differentiated(shape, mode):
    x = np.random.default_rng(sum(shape)).normal(size=shape)
    f = effect_free_helpers
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call_twice(sg.grad(f, mode=mode), x)
    assert_close(got, numeric_grad(f, [x], 0), rtol=1e-5)
