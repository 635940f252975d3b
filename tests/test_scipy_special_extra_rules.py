"""``scipy.special`` functions from JAX's and SciPy's gradient tests that were refused
("scipy.special.loggamma has no derivative rule"): ``loggamma``, ``expm1``, ``log1p``,
``exprel``, ``k0e``, ``k1e``, ``stdtr`` (in ``t``), ``owens_t``; and ``logsumexp(...,
return_sign=True)``, whose log-magnitude is differentiated where the signed sum is not 0.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_grad_jvp_and_hvp, call_twice, numeric_grad
from scipy import special

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
SHAPES = [(3,), (2, 3)]


def positive(shape, seed):
    return np.random.default_rng(seed).uniform(0.4, 3.0, size=shape)


def anywhere(shape, seed):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=shape)


def loggamma_sum(x):
    return np.sum(special.loggamma(x) * np.cos(x))


def expm1_log1p(x):
    return np.sum(special.expm1(x) * special.log1p(x))


def exprel_sum(x):
    return np.sum(special.exprel(x) ** 2)


def exprel_near_zero(x):
    return np.sum(special.exprel(1e-5 * x) * x)


def scaled_bessel_k(x):
    return np.sum(special.k0e(x) + special.k1e(x) * x)


def student_cdf(x):
    return np.sum(special.stdtr(3.5, x) ** 2)


def owens_t_in_h(x):
    return np.sum(special.owens_t(x, 0.7))


def owens_t_in_a(x):
    return np.sum(special.owens_t(0.4, x) * x)


CASES = [
    (loggamma_sum, positive),
    (expm1_log1p, positive),
    (exprel_sum, anywhere),
    (exprel_near_zero, anywhere),
    (scaled_bessel_k, positive),
    (student_cdf, anywhere),
    (owens_t_in_h, anywhere),
    (owens_t_in_a, anywhere),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("f, draw", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient_jvp_and_hvp(f, draw, shape, mode):
    x = draw(shape, seed=len(shape))
    v = np.random.default_rng(3).normal(size=shape)
    assert_grad_jvp_and_hvp(f, x, v, mode)


WEIGHTS = np.array([1.0, -1.0, 2.0, -0.3])


def signed_log_sum(x):
    value, sign = special.logsumexp(x, b=WEIGHTS, return_sign=True)
    return value * sign


def signed_log_sum_rows(x):
    value, sign = special.logsumexp(x, axis=-1, b=WEIGHTS, return_sign=True)
    return np.sum(value**2 * sign)


def sign_only(x):
    _, sign = special.logsumexp(x, b=WEIGHTS, return_sign=True)
    return sign * np.sum(x**2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [signed_log_sum, signed_log_sum_rows, sign_only])
def test_logsumexp_with_its_sign(f, mode):
    for seed in range(3):
        x = anywhere((2, 4), seed) if f is signed_log_sum_rows else anywhere((4,), seed)
        v = np.random.default_rng(seed + 5).normal(size=np.shape(x))
        assert_grad_jvp_and_hvp(f, x, v, mode)


@pytest.mark.parametrize("mode", MODES)
def test_logsumexp_sign_in_the_weights(mode):
    def in_weights(b):
        value, sign = special.logsumexp(np.array([0.3, -1.0, 0.5]), b=b, return_sign=True)
        return value

    b = np.array([1.0, -2.5, 0.4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = call_twice(sg.grad(in_weights, mode=mode), b)
    assert_close(gradient, numeric_grad(in_weights, [b], 0))


def test_the_degrees_of_freedom_of_stdtr_are_refused():
    def in_df(df):
        return np.sum(special.stdtr(df, np.array([0.3, 1.0])))

    with pytest.raises(sg.NonDifferentiableError, match="stdtr"):
        sg.grad(in_df, mode="tape")(3.0)
