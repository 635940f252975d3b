"""``math.fsum`` and ``math.prod`` of numbers being differentiated, as scalar code written
with Python's ``math`` module uses them (``rules/python_math.py``): of a list, a tuple or a
1-d array, in every mode, on a first and a later call, forward mode and second order,
against central differences. A product's derivative in a number that is zero is the product
of the others (not ``ans / x``). ``start=`` (keyword-only) differentiated is refused with
advice that can be followed."""

import math
import warnings

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_hvp_matches_differences,
    call_twice,
    numeric_grad,
    numeric_jvp,
)

import s2sgrad as sg

HERE = __file__.rsplit("/", 1)[-1]
MODES = ("s2s", "tape", "auto")


def product_of_a_list(w):
    return math.prod([w[0], w[1] * 2.0, w[2] + 1.0]) + math.fsum([w[0] ** 2, w[1], 3.0])


def product_of_the_array(w):
    return math.prod(w) * math.fsum(w)


def product_of_a_tuple_made_in_a_loop(w):
    factors = []
    for i in range(len(w)):
        factors.append(w[i] * (i + 1))
    return math.log(math.prod(tuple(factors)) ** 2 + 1.0) + math.fsum(tuple(factors))


def product_with_a_plain_start(w):
    return math.prod((w[0], w[1]), start=2.5) - math.fsum([])


PROGRAMS = [
    product_of_a_list,
    product_of_the_array,
    product_of_a_tuple_made_in_a_loop,
    product_with_a_plain_start,
]
# a zero among the numbers: the others' product, not ans / 0
POINTS = [np.array([0.7, -1.3, 0.4]), np.array([0.7, -1.3, 0.0]), np.array([0.0, 0.0, 1.1])]


@pytest.mark.parametrize("point", range(len(POINTS)))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_gradient_and_forward_mode(program, mode, point):
    w = POINTS[point]
    direction = np.array([0.3, -0.2, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # auto needs no tape
        assert_close(call_twice(sg.grad(program, mode=mode), w), numeric_grad(program, [w], 0))
        _, tangent = sg.jvp(program, (w,), (direction,), mode=mode)
    assert_close(tangent, numeric_jvp(program, [w], 0, direction))


@pytest.mark.parametrize("mode", ("s2s", "tape"))
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_second_order(program, mode):
    assert_hvp_matches_differences(program, (POINTS[1],), mode, seed=4)


def test_product_of_others_at_a_zero():
    # d/dx0 of x0 * x1 * x2 at x0 = 0 is x1 * x2 exactly
    gradient = sg.grad(lambda w: math.prod(w), mode="s2s")(np.array([0.0, 3.0, -2.0]))
    np.testing.assert_array_equal(gradient, [-6.0, 0.0, 0.0])


def differentiated_start(w):
    return math.prod([w[0], 2.0], start=w[1])


@pytest.mark.parametrize("mode", ("s2s", "tape"))
def test_a_differentiated_start_is_refused_with_advice_that_can_be_followed(mode):
    with pytest.raises(sg.S2SGradError, match="cannot be passed by position") as refused:
        sg.grad(differentiated_start, mode=mode)(np.array([0.5, 1.5]))
    assert f"{HERE}:" in str(refused.value)
    assert "pass it positionally" not in str(refused.value)


def test_multiplying_outside_the_call_is_differentiated():
    def followed(w):
        return math.prod([w[0], 2.0]) * w[1]

    w = np.array([0.5, 1.5])
    for mode in MODES:
        assert_close(call_twice(sg.grad(followed, mode=mode), w), numeric_grad(followed, [w], 0))
