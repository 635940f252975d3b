"""NumPy's polynomial algebra (s2sgrad/rules/polynomials.py): np.polyadd, np.polysub,
np.polymul, np.polyder, np.polyint, np.poly, np.roots, np.polydiv and
np.polynomial.polynomial.polyval, to second order, reverse and forward, in s2s, tape and
auto on a first and a later call, against central differences; complex roots; and what is
refused (a repeated root, a matrix, stacked coefficient vectors) names the line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, check_grads_on_two_calls, numeric_grad, numeric_jvp
from rulecheck import assert_every_rule_is_tested

import s2sgrad as sg

HERE = __file__
MODES = ("s2s", "tape", "auto")
P = np.polynomial.polynomial
chebyshev = np.polynomial.chebyshev
legendre = np.polynomial.legendre
hermite = np.polynomial.hermite
hermite_e = np.polynomial.hermite_e
laguerre = np.polynomial.laguerre
rng = np.random.default_rng(2911)


def weighted(out):
    """A weighted sum of squares and sines: every entry of ``out`` counts differently."""
    weights = np.linspace(0.5, 1.5, int(np.size(out))).reshape(np.shape(out))
    return np.sum(weights * out**2 + np.sin(out))


def added(a, b):
    return weighted(np.polyadd(a, b))


def added_to_a_number(a, b):
    return weighted(np.polyadd(a[0], b) + np.polyadd(b, a[1]))


def subtracted(a, b):
    return weighted(np.polysub(a, b))


def multiplied(a, b):
    return weighted(np.polymul(a, b))


def multiplied_by_a_number(a, b):
    return weighted(np.polymul(b, a[0] * 2.0))


def derivatives(p, b):
    return weighted(np.polyder(p)) + weighted(np.polyder(p * b[0], 2))


def derivative_past_the_degree(p, b):
    return weighted(np.polyder(p[:2], 3)) + weighted(p * b[0])


def integrals(p, k):
    return weighted(np.polyint(p, 2, k)) + weighted(np.polyint(p))


def integral_with_one_constant(p, k):
    return weighted(np.polyint(p, 3, k[0]))


def from_roots(r, b):
    return weighted(np.poly(r * b[0]))


def real_roots(p, b):
    return weighted(np.roots(p * b))


def complex_roots(p, b):
    r = np.roots(p + b)
    return weighted(np.real(r)) + weighted(np.imag(r) * np.real(r)) + np.sum(np.abs(r))


def quotient_and_remainder(u, v):
    q, r = np.polydiv(u, v)
    return weighted(q) + weighted(r)


def quotient_only(u, v):
    return weighted(np.polydiv(u, v)[0])


def remainder_only(u, v):
    return weighted(np.polydiv(u, v)[1])


def shorter_dividend(u, v):
    return weighted(np.polydiv(u[:2], v)[1]) + weighted(v)


def lowest_power_first(x, c):
    return weighted(P.polyval(x, c))


def lowest_power_first_at_a_number(x, c):
    return weighted(P.polyval(x[0, 1], c))


def coefficient_columns(x, c):
    return weighted(P.polyval(x, np.reshape(c, (3, 2)))) + weighted(P.polyval(x[0], c))


def coefficient_columns_broadcast(x, c):
    return weighted(P.polyval(x, np.reshape(c, (3, 2, 1)), tensor=False))


def in_each_basis(x, c):
    matrix = np.reshape(c, (3, 2))
    power = weighted(P.polyval(x[0], matrix)) + weighted(P.polyval(x, c[:4], tensor=False))
    cheb = weighted(chebyshev.chebval(x[0], matrix)) + weighted(chebyshev.chebval(x, c[:4]))
    leg = weighted(legendre.legval(x[0], matrix)) + weighted(legendre.legval(x, c[:4]))
    herm = weighted(hermite.hermval(x[0], matrix)) + weighted(hermite.hermval(x, c[:4]))
    herme = weighted(hermite_e.hermeval(x[0], matrix)) + weighted(hermite_e.hermeval(x, c[:4]))
    lag = weighted(laguerre.lagval(x[0], matrix)) + weighted(laguerre.lagval(x, c[:4]))
    return power + cheb + leg + herm + herme + lag


BASES = [
    P.polyval,
    np.polynomial.chebyshev.chebval,
    np.polynomial.legendre.legval,
    np.polynomial.hermite.hermval,
    np.polynomial.hermite_e.hermeval,
    np.polynomial.laguerre.lagval,
]


def x_outer_coefficient_columns(x):
    # the tape ran NumPy's code of these on its values, where isinstance(x, np.ndarray) is
    # false: it broadcast x against c's columns instead of taking their outer product
    c = np.array([[1.0, 2.0], [0.5, -1.0], [0.3, 0.2]])
    weights = np.array([[1.0, 2.0], [3.0, 4.0]])
    total = np.sum(P.polyval(x, c) * weights)
    total = total + np.sum(np.polynomial.chebyshev.chebval(x, c) * weights)
    total = total + np.sum(np.polynomial.legendre.legval(x, c) * weights)
    total = total + np.sum(np.polynomial.hermite.hermval(x, c) * weights)
    total = total + np.sum(np.polynomial.hermite_e.hermeval(x, c) * weights)
    return total + np.sum(np.polynomial.laguerre.lagval(x, c) * weights)


ROOTS = np.array([0.5, -1.0, 2.0, 1.4])
WITH_COMPLEX_ROOTS = np.array([1.0, 0.3, 2.0, -0.5])
CASES = [
    (added, rng.normal(size=5), rng.normal(size=3)),
    (added, rng.normal(size=2), rng.normal(size=4)),
    (added_to_a_number, rng.normal(size=2), rng.normal(size=3)),
    (subtracted, rng.normal(size=2), rng.normal(size=4)),
    (subtracted, rng.normal(size=4), rng.normal(size=4)),
    (multiplied, rng.normal(size=3), rng.normal(size=4)),
    (multiplied_by_a_number, rng.normal(size=2), rng.normal(size=3)),
    (derivatives, rng.normal(size=5), rng.uniform(0.5, 1.5, 2)),
    (derivative_past_the_degree, rng.normal(size=4), rng.uniform(0.5, 1.5, 2)),
    (integrals, rng.normal(size=4), rng.normal(size=2)),
    (integral_with_one_constant, rng.normal(size=3), rng.normal(size=1)),
    (from_roots, ROOTS, rng.uniform(0.5, 1.5, 2)),
    (real_roots, np.poly(ROOTS[:3]) * 1.7, rng.uniform(0.8, 1.2, 4)),
    (complex_roots, WITH_COMPLEX_ROOTS, rng.normal(size=4) * 0.05),
    (quotient_and_remainder, rng.normal(size=6), np.array([1.5, 0.3, -0.4])),
    (quotient_only, rng.normal(size=5), np.array([1.5, 0.3])),
    (remainder_only, rng.normal(size=5), np.array([-1.2, 0.3, 0.7])),
    (shorter_dividend, rng.normal(size=3), np.array([1.2, 0.3, 0.7])),
    (lowest_power_first, rng.normal(size=(2, 3)), rng.normal(size=4)),
    (lowest_power_first_at_a_number, rng.normal(size=(2, 3)), rng.normal(size=3)),
    (coefficient_columns, rng.normal(size=(2, 3)), rng.normal(size=6)),
    (coefficient_columns_broadcast, rng.normal(size=(2, 3)), rng.normal(size=6)),
    (in_each_basis, rng.uniform(-0.8, 0.8, 4), rng.normal(size=6)),
]
IDS = [f"{case[0].__name__}-{i}" for i, case in enumerate(CASES)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("f", "a", "b"), CASES, ids=IDS)
def test_second_order_reverse_and_forward_against_differences(f, a, b, mode):
    check_grads_on_two_calls(f, (a, b), mode)


@pytest.mark.parametrize(("f", "a", "b"), CASES, ids=IDS)
def test_gradient_and_jvp_against_central_differences(f, a, b):
    expected = [numeric_grad(f, (a, b), i) for i in (0, 1)]
    tangents = (rng.normal(size=np.shape(a)), rng.normal(size=np.shape(b)))
    along = numeric_jvp(f, (a, b), 0, tangents[0]) + numeric_jvp(f, (a, b), 1, tangents[1])
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            gradient = sg.grad(f, wrt=(0, 1), mode=mode)
            for _ in range(2):
                for actual, wanted in zip(gradient(a, b), expected):
                    assert_close(actual, wanted, rtol=1e-5, atol=1e-7)
        if mode != "auto":
            assert_close(sg.jvp(f, (a, b), tangents, mode=mode)[1], along, rtol=1e-5, atol=1e-7)


def test_roots_of_complex_coefficients_are_holomorphic():
    def f(p):
        return np.sum(np.roots(p) ** 2 * np.array([1.0, 2.0, 3.0]))

    p = np.array([1.0 + 0.2j, -0.4 + 1.0j, 0.3, 2.0 - 0.1j])
    step = 1e-6
    tangent = rng.normal(size=4) + 1j * rng.normal(size=4)
    # a holomorphic f: f(p + h t) - f(p - h t) / 2h is the derivative along t, for complex t
    along = (f(p + step * tangent) - f(p - step * tangent)) / (2 * step)
    for mode in ("s2s", "tape"):
        assert_close(sg.jvp(f, (p,), (tangent,), mode=mode)[1], along, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_each_basis_with_coefficient_columns_takes_the_outer_product(mode):
    x = np.array([0.5, -0.7])
    expected = numeric_grad(x_outer_coefficient_columns, (x,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradient = sg.grad(x_outer_coefficient_columns, mode=mode)
        for _ in range(2):
            assert_close(gradient(x), expected, rtol=1e-6)


def repeated_root(p):
    return np.sum(np.roots(np.poly(np.array([1.0, 1.0, 2.0])) * p))


def characteristic_polynomial(a):
    return np.sum(np.poly(a @ a.T))


def stacked_coefficients(a):
    return np.sum(np.polyadd(a, a * 2.0) ** 2)


REFUSED = [
    (repeated_root, np.ones(4), "repeated root"),
    (characteristic_polynomial, np.eye(3) + 0.1, "characteristic polynomial"),
    (stacked_coefficients, np.ones((2, 3)), "coefficient vectors"),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("f", "x", "match"), REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_what_is_not_differentiated_is_refused_naming_the_line(f, x, match, mode):
    refused = pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+: .*{match}")
    with refused, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sg.grad(f, mode=mode)(x)


def test_every_rule_is_tested():
    tested = [
        np.polyadd,
        np.polysub,
        np.polymul,
        np.polyder,
        np.polyint,
        np.poly,
        np.roots,
        np.polydiv,
        *BASES,
    ]
    assert_every_rule_is_tested(["s2sgrad.rules.polynomials"], tested)
