"""scipy.special.wofz and scipy.special.lambertw (s2sgrad/rules/scipy_special_complex.py):
real arguments to second order, reverse and forward, in s2s, tape and auto on a first and a
later call; complex arguments against finite differences that move the real and imaginary
parts separately (docs/complex.md); lambertw on its other real branch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, check_grads_on_two_calls, numeric_complex_grad
from rulecheck import assert_every_rule_is_tested, rules_defined_in

import s2sgrad as sg

special = pytest.importorskip("scipy.special")

MODES = ("s2s", "tape", "auto")


def voigt_profile(x, y):
    return np.sum(np.real(special.wofz(x + 1j * y)) ** 2)


def faddeeva_of_reals(x, y):
    w = special.wofz(x * y)
    return np.sum(np.imag(w) + np.abs(w))


def lambert_principal(x, y):
    return np.sum(np.real(special.lambertw(x * y)) ** 2 + np.real(special.lambertw(x)))


def lambert_lower_branch(x, y):
    return np.sum(np.real(special.lambertw(-0.2 * x * y, k=-1)))


PROGRAMS = [voigt_profile, faddeeva_of_reals, lambert_principal, lambert_lower_branch]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", [((2, 3), (3,)), ((4,), ())], ids=["broadcast", "number"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_reverse_and_forward_against_differences(f, shapes, mode):
    generator = np.random.default_rng(len(f.__name__))
    x = generator.uniform(0.3, 1.5, shapes[0])
    y = generator.uniform(0.3, 1.5, shapes[1])
    check_grads_on_two_calls(f, (x, y), mode)


def faddeeva_of_a_complex(z):
    return np.sum(special.wofz(z) * (1.0 + 0.5j))


def lambert_of_a_complex(z):
    return np.sum(special.lambertw(z) ** 2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [faddeeva_of_a_complex, lambert_of_a_complex])
def test_complex_arguments_against_differences_of_both_parts(f, mode):
    generator = np.random.default_rng(4)
    z = generator.uniform(0.2, 1.5, (2, 3)) + 1j * generator.uniform(-1.0, 1.0, (2, 3))
    expected = numeric_complex_grad(f, (z,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradient = sg.grad(f, mode=mode)
        for _ in range(2):
            assert_close(gradient(z), expected, rtol=1e-6, atol=1e-8)


def test_every_rule_is_tested():
    module = "s2sgrad.rules.scipy_special_complex"
    tested = [special.wofz, special.lambertw]
    assert set(rules_defined_in([module])) == set(tested)
    assert_every_rule_is_tested([module], tested)
