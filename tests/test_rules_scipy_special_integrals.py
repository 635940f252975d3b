"""scipy.special's fresnel, airy, struve, modstruve, ellipkinc and ellipeinc
(s2sgrad/rules/scipy_special_integrals.py): to second order, reverse and forward, in s2s,
tape and auto on a first and a later call, over broadcasting shapes, against central
differences; the order of a Struve function is refused at the user's line."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import check_grads_on_two_calls
from rulecheck import assert_every_rule_is_tested, rules_defined_in

import s2sgrad as sg

special = pytest.importorskip("scipy.special")

MODES = ("s2s", "tape", "auto")
HERE = __file__.rsplit("/", 1)[-1]


def fresnel_both(x, y):
    s, c = special.fresnel(x)
    return np.sum(s * c + special.fresnel(y)[0] ** 2)


def fresnel_cosine_only(x, y):
    return np.sum(special.fresnel(x * y)[1] ** 2)


def airy_every_output(x, y):
    ai, ai_slope, bi, bi_slope = special.airy(x - y)
    return np.sum(ai * bi_slope + ai_slope**2 + np.sin(bi))


def airy_one_output(x, y):
    return np.sum(special.airy(x)[1] * y)


def struve_functions(x, y):
    return np.sum(special.struve(1.5, x) * special.modstruve(0.5, y) + special.struve(2, x * y))


def incomplete_elliptic(phi, m):
    first = special.ellipkinc(phi, m)
    return np.sum(first * special.ellipeinc(phi, m) + special.ellipeinc(phi, m) ** 2)


PROGRAMS = [
    fresnel_both,
    fresnel_cosine_only,
    airy_every_output,
    airy_one_output,
    struve_functions,
    incomplete_elliptic,
]
SHAPES = [((2, 3), (3,)), ((4,), ()), ((), (2, 1))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", SHAPES, ids=["broadcast", "number", "matrix"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_reverse_and_forward_against_differences(f, shapes, mode):
    generator = np.random.default_rng(len(f.__name__))
    first = generator.uniform(0.3, 1.4, shapes[0])
    second = generator.uniform(0.1, 0.9, shapes[1])  # a parameter m of the elliptic ones
    check_grads_on_two_calls(f, (first, second), mode)


def struve_in_its_order(v, x):
    return np.sum(special.struve(v, x))  # the refused line


@pytest.mark.parametrize("mode", MODES)
def test_the_order_of_a_struve_function_is_refused_at_the_users_line(mode):
    with pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+: scipy.special.struve\(v, x\)"):
        sg.grad(struve_in_its_order, mode=mode)(np.array(1.5), np.array([0.5, 1.0]))


def test_every_rule_is_tested():
    module = "s2sgrad.rules.scipy_special_integrals"
    tested = [
        special.fresnel,
        special.airy,
        special.struve,
        special.modstruve,
        special.ellipkinc,
        special.ellipeinc,
    ]
    assert set(rules_defined_in([module])) == set(tested)
    assert_every_rule_is_tested([module], tested)
