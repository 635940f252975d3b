"""Rules that were missing: ``math.gamma`` and ``math.lgamma`` (with the digamma function NumPy
lacks, ``s2sgrad.runtime.polygamma``), ``np.i0`` (with ``s2sgrad.runtime.bessel_i1``),
``scipy.special.sici``, ``scipy.signal.correlate`` (in source transformation; the tape
followed SciPy's own code), ``np.linalg.cond`` and ``np.linalg.tensorsolve``. Each in every
mode, on a first and a later call, against central differences at random points: the
gradient, the JVP, and the Hessian-vector product."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_gradient_in_every_mode,
    assert_hvp_matches_differences,
    call_twice,
    numeric_grad,
    numeric_jvp,
)

import s2sgrad as sg
from s2sgrad.runtime import bessel_i1, polygamma

try:
    from scipy import special
except ImportError:  # the tests of SciPy's functions skip
    special = None

MODES = ("s2s", "auto", "tape")
RNG = np.random.default_rng(1107)


def check_everything(f, args, rtol=1e-6, second_order=True):
    """The gradient wrt each argument, the JVP and (optionally) the HVP in every mode."""
    for index in range(len(args)):
        expected = numeric_grad(f, list(args), index)
        for mode in MODES:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = call_twice(sg.grad(f, wrt=index, mode=mode), *args)
            assert_close(got, expected, rtol=rtol, atol=1e-7)
    tangents = tuple(
        RNG.normal(size=np.shape(a)) if isinstance(a, np.ndarray) else 0.7 for a in args
    )
    expected_t = sum(numeric_jvp(f, list(args), i, t) for i, t in enumerate(tangents))
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, got_t = sg.jvp(f, args, tangents, mode=mode)
        assert np.isclose(got_t, expected_t, rtol=1e-5, atol=1e-7), (mode, got_t, expected_t)
    if second_order:
        for mode in MODES:
            assert_hvp_matches_differences(f, args, mode)


# ------------------------------------------------------------------ math.gamma, math.lgamma


def gamma_program(x):
    return math.gamma(x) * math.sin(x)


def lgamma_program(x):
    return math.lgamma(x) * x + math.gamma(x / 2.0)


@pytest.mark.parametrize("x", [0.3, 1.7, 4.2, -1.4, -2.6])
def test_math_gamma_and_lgamma(x):
    check_everything(gamma_program, (x,))
    check_everything(lgamma_program, (x,))


def test_polygamma_values():
    # psi(1) = -euler, psi(1/2) = -euler - 2 ln 2, psi_1(1) = pi^2 / 6, psi_2(1) = -2 zeta(3)
    euler = 0.5772156649015329
    assert np.isclose(polygamma(0, 1.0), -euler, rtol=1e-14)
    assert np.isclose(polygamma(0, 0.5), -euler - 2 * math.log(2), rtol=1e-14)
    assert np.isclose(polygamma(1, 1.0), math.pi**2 / 6, rtol=1e-14)
    assert np.isclose(polygamma(2, 1.0), -2 * 1.2020569031595942, rtol=1e-14)
    assert np.isclose(polygamma(0, -0.5), -euler - 2 * math.log(2) + 2.0, rtol=1e-13)
    assert np.isnan(polygamma(0, -2.0))
    x = np.linspace(0.1, 40.0, 50)
    for n in range(4):  # psi_n(x + 1) = psi_n(x) + (-1)^n n! / x^(n + 1)
        step = (-1) ** n * math.factorial(n) / x ** (n + 1)
        difference = polygamma(n, x + 1) - (polygamma(n, x) + step)
        assert np.all(np.abs(difference) <= 1e-12 * (np.abs(polygamma(n, x)) + np.abs(step)))
    special = pytest.importorskip("scipy.special")
    x = np.concatenate([np.linspace(-7.7, 30.0, 97), [1e-3, 100.0, 1e4]])
    for n in range(4):
        np.testing.assert_allclose(polygamma(n, x), special.polygamma(n, x), rtol=1e-12)


# ------------------------------------------------------------------------------- np.i0


def i0_program(x):
    return np.sum(np.i0(x) * np.cos(x))


@pytest.mark.parametrize("shape", [(4,), (2, 3)])
def test_i0(shape):
    x = RNG.normal(scale=2.0, size=shape)
    check_everything(i0_program, (np.asarray(x),))


def test_i0_at_zero_and_bessel_i1_values():
    assert_gradient_in_every_mode(lambda x: np.sum(np.i0(x) ** 2), [np.array([0.0, 1.0])])
    # i1(1) and i1(10) (Abramowitz and Stegun, table 9.8)
    assert np.isclose(bessel_i1(1.0), 0.565159103992485, rtol=1e-14)
    assert np.isclose(bessel_i1(10.0), 2670.988303701255, rtol=1e-13)
    assert bessel_i1(0.0) == 0.0 and np.isclose(bessel_i1(-1.0), -0.565159103992485)
    special = pytest.importorskip("scipy.special")
    x = np.linspace(-60.0, 60.0, 121)
    np.testing.assert_allclose(bessel_i1(x), special.i1(x), rtol=1e-13)


# ---------------------------------------------------------------------- scipy.special.sici


def sici_program(x):
    si, ci = special.sici(x)
    return np.sum(si * ci + si**2)


def si_only(x):
    return np.sum(special.sici(x)[0] * x)


def ci_only(x):
    _, ci = special.sici(x)
    return np.sum(np.tanh(ci))


def scipy_special():
    return pytest.importorskip("scipy.special")


@pytest.mark.parametrize("program", [sici_program, si_only, ci_only])
@pytest.mark.parametrize("shape", [(1,), (5,)])
def test_sici(program, shape):
    scipy_special()
    x = np.asarray(RNG.uniform(0.3, 4.0, size=shape))
    check_everything(program, (x,))


# -------------------------------------------------------------------- scipy.signal.correlate


def scipy_signal():
    return pytest.importorskip("scipy.signal")


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize(
    "shapes", [((6,), (3,)), ((3,), (6,)), ((4,), (4,)), ((4, 5), (2, 3)), ((2, 3), (4, 5))]
)
def test_scipy_signal_correlate(mode, shapes):
    signal = scipy_signal()
    if mode == "valid" and not (
        all(a >= b for a, b in zip(*shapes)) or all(a <= b for a, b in zip(*shapes))
    ):
        pytest.skip("valid mode needs one input at least as large as the other")
    weights = RNG.normal(size=signal.correlate(np.ones(shapes[0]), np.ones(shapes[1]), mode).shape)

    def program(a, b):
        return np.sum(np.sin(signal.correlate(a, b, mode=mode)) * weights)

    check_everything(program, (RNG.normal(size=shapes[0]), RNG.normal(size=shapes[1])))


# --------------------------------------------------------------------------- np.linalg.cond


@pytest.mark.parametrize("p", [None, 2, -2, "fro", 1, -1, np.inf, -np.inf])
def test_cond(p):
    a = RNG.normal(size=(3, 3)) + 3.0 * np.eye(3)

    def program(x):
        return np.linalg.cond(x, p) * np.sum(x)

    check_everything(program, (a,), rtol=1e-5)


def test_cond_of_a_stack_and_the_nuclear_norm():
    stack = RNG.normal(size=(2, 3, 3)) + 3.0 * np.eye(3)
    assert_gradient_in_every_mode(lambda x: np.sum(np.linalg.cond(x) ** 2), [stack], rtol=1e-5)
    a = RNG.normal(size=(3, 3)) + 3.0 * np.eye(3)
    assert_gradient_in_every_mode(lambda x: np.linalg.cond(x, "nuc"), [a], rtol=1e-5)


# -------------------------------------------------------------------- np.linalg.tensorsolve


@pytest.mark.parametrize(
    "a_shape, b_shape", [((6, 2, 3), (6,)), ((2, 3, 6), (2, 3)), ((2, 2, 4), (2, 2))]
)
def test_tensorsolve(a_shape, b_shape):
    n = int(np.prod(b_shape))
    a = (RNG.normal(size=(n, n)) + 4.0 * np.eye(n)).reshape(a_shape)
    b = RNG.normal(size=b_shape)

    def program(a, b):
        return np.sum(np.linalg.tensorsolve(a, b) ** 2)

    check_everything(program, (a, b), rtol=1e-5)


def test_tensorsolve_with_axes_is_refused_with_what_to_write():
    a = (RNG.normal(size=(6, 6)) + 4.0 * np.eye(6)).reshape(2, 3, 6)
    b = RNG.normal(size=6)

    def program(a):
        return np.sum(np.linalg.tensorsolve(a, b, axes=(0, 1)))

    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(sg.NonDifferentiableError, match="np.moveaxis") as refused:
                sg.grad(program, mode=mode)(a)
        assert "test_rules_gamma_i0_sici_correlate_cond_tensorsolve.py:" in str(refused.value)
