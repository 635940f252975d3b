"""scipy.special's spherical Bessel functions spherical_jn/yn/in/kn, with and without
``derivative=True`` (s2sgrad/rules/scipy_special_spherical.py): to second order, reverse
and forward, in s2s, tape and auto on a first and a later call, over broadcasting shapes,
against central differences; the order, which SciPy truncates, has a zero derivative."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import check_grads_on_two_calls
from rulecheck import assert_every_rule_is_tested, rules_defined_in

import s2sgrad as sg

special = pytest.importorskip("scipy.special")

MODES = ("s2s", "tape", "auto")
HERE = __file__.rsplit("/", 1)[-1]


def first_kind(x, y):
    return np.sum(special.spherical_jn(2, x) * y + special.spherical_jn(0, x * y) ** 2)


def second_kind(x, y):
    return np.sum(special.spherical_yn(1, x + y) + special.spherical_yn(0, x) * y)


def modified_kinds(x, y):
    return np.sum(special.spherical_in(1, x) * special.spherical_kn(2, y + 0.5))


def their_derivatives(x, y):
    slopes = special.spherical_jn(1, x, derivative=True) * special.spherical_in(0, y, True)
    return np.sum(slopes + special.spherical_kn(0, x + 1.0, derivative=True) ** 2)


def radial_wave(k, r):  # a scattering amplitude of the kind physics code sums
    terms = [(2 * n + 1) * special.spherical_jn(n, k * r) ** 2 for n in range(4)]
    return np.sum(sum(terms) + special.spherical_yn(1, k + r, derivative=True))


PROGRAMS = [first_kind, second_kind, modified_kinds, their_derivatives, radial_wave]
SHAPES = [((2, 3), (3,)), ((4,), ()), ((), (2, 1))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", SHAPES, ids=["broadcast", "number", "matrix"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_reverse_and_forward_against_differences(f, shapes, mode):
    generator = np.random.default_rng(len(f.__name__))
    first = generator.uniform(0.4, 2.0, shapes[0])
    second = generator.uniform(0.3, 1.5, shapes[1])
    check_grads_on_two_calls(f, (first, second), mode)


def at_zero(x):
    return np.sum(special.spherical_jn(0, x, derivative=True) + special.spherical_in(1, x))


@pytest.mark.parametrize("mode", MODES)
def test_first_and_second_derivatives_at_zero_are_the_limits(mode):
    x = np.zeros(2)
    # j0' = -j1, j0''(0) = -1/3; i1'(0) = 1/3, i1''(0) = 0
    np.testing.assert_allclose(sg.grad(at_zero, mode=mode)(x), [-1 / 3 + 1 / 3] * 2, atol=1e-15)
    hessian = sg.hessian(at_zero, mode=mode)(x)
    np.testing.assert_allclose(hessian, np.zeros((2, 2)), atol=1e-12)


def jn_in_its_order(n, x):
    return np.sum(special.spherical_jn(n, x))


@pytest.mark.parametrize("mode", MODES)
def test_the_order_is_piecewise_constant_and_its_derivative_zero(mode):
    x = np.array([0.5, 1.0])
    # the claim behind the declaration: SciPy truncates the order
    for function in (special.spherical_jn, special.spherical_yn, special.spherical_kn):
        assert np.array_equal(function(2.25, x), function(2.5, x))
        assert np.array_equal(function(2.25, x), function(2, x))
    gradient = sg.grad(jn_in_its_order, wrt=(0, 1), mode=mode)(np.array(2.3), x)
    assert gradient[0] == 0.0
    np.testing.assert_allclose(gradient[1], special.spherical_jn(2, x, derivative=True))


def test_every_rule_is_tested():
    module = "s2sgrad.rules.scipy_special_spherical"
    tested = [
        special.spherical_jn,
        special.spherical_yn,
        special.spherical_in,
        special.spherical_kn,
    ]
    assert set(rules_defined_in([module])) == set(tested)
    assert_every_rule_is_tested([module], tested)
