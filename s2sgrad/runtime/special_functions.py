"""Special functions NumPy lacks, in plain NumPy, for the derivatives of those it (and
Python's ``math``) has: ``polygamma(n, x)`` (the digamma function for ``n = 0``), whose
derivative is ``polygamma(n + 1, x)``, for ``math.gamma`` and ``math.lgamma``; and
``bessel_i1``, the derivative of ``np.i0``, whose derivative is ``i0(x) - i1(x) / x``. Their
rules are written with them, so every order follows.

``polygamma`` moves ``x`` up by the recurrence ``psi_n(x) = psi_n(x + 1) - (-1)^n n! /
x^(n+1)`` until ``x >= 20 + n``, then sums the asymptotic series (Bernoulli numbers), to
about 1e-15 relative; ``bessel_i1`` sums its power series, whose terms are all of one sign.

Example::

    polygamma(0, 1.0)  # -0.5772156649015329 (minus Euler's constant)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from s2sgrad.rules.registry import jvp_rule, vjp_rule

__all__ = ["polygamma", "bessel_i1"]

# B_2k / (2k)!, k = 1 .. 8
_BERNOULLI_OVER_FACTORIAL = tuple(
    b / math.factorial(2 * k)
    for k, b in enumerate(
        (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510), start=1
    )
)


def polygamma(n: int, x: Any) -> Any:
    """The ``n``-th derivative of the digamma function (the log-derivative of gamma) at ``x``
    (floats or arrays; ``nan`` at the poles 0, -1, -2, ...).

    Example::

        polygamma(1, 1.0)  # 1.6449340668482264 (pi^2 / 6)
    """
    n = int(n)
    x = np.asarray(x, dtype=np.result_type(x, 1.0))
    pole = (x <= 0) & (x == np.floor(x))
    x = np.where(pole, np.nan, x)
    sign = -1.0 if n % 2 == 0 else 1.0  # (-1)^(n + 1)
    n_factorial = math.factorial(n)
    total = np.zeros_like(x)
    threshold = 20.0 + n
    low = x < threshold
    while np.any(low):
        term = sign * n_factorial / np.where(low, x, 1.0) ** (n + 1)  # -(-1)^n n! / x^(n+1)
        total = total + np.where(low, term, 0.0)
        x = np.where(low, x + 1.0, x)
        low = x < threshold
    if n == 0:
        series = np.log(x) - 0.5 / x
        for k, coefficient in enumerate(_BERNOULLI_OVER_FACTORIAL, start=1):
            series = series - coefficient * math.factorial(2 * k - 1) / x ** (2 * k)
    else:
        series = math.factorial(n - 1) / x**n + n_factorial / (2.0 * x ** (n + 1))
        for k, coefficient in enumerate(_BERNOULLI_OVER_FACTORIAL, start=1):
            series = series + coefficient * math.factorial(2 * k + n - 1) / x ** (2 * k + n)
        series = sign * series
    result = total + series
    return result[()] if result.ndim == 0 else result


@vjp_rule(polygamma)
def _polygamma_vjp(g, ans, n, x):
    return None, g * polygamma(n + 1, x)


@jvp_rule(polygamma)
def _polygamma_jvp(t, ans, n, x):
    return None, t * polygamma(n + 1, x)


def bessel_i1(x: Any) -> Any:
    """The modified Bessel function of the first kind of order 1 (``scipy.special.i1``),
    the derivative of ``np.i0``.

    Example::

        bessel_i1(1.0)  # 0.5651591039924851
    """
    x = np.asarray(x, dtype=np.result_type(x, 1.0))
    half = x / 2.0
    quarter_square = half * half
    term = half
    total = term
    largest = float(np.max(np.abs(x), initial=0.0)) if np.all(np.isfinite(x)) else 0.0
    count = int(largest / 2.0 + 12.0 * math.sqrt(largest) + 30.0)
    with np.errstate(over="ignore", invalid="ignore"):  # past x = 700 i1 is inf, as i0 is
        for k in range(1, count):
            term = term * quarter_square / (k * (k + 1))
            total = total + term
    total = np.where(np.isfinite(x), total, x)  # i1(inf) = inf, i1(-inf) = -inf
    return total[()] if total.ndim == 0 else total


@vjp_rule(bessel_i1)
def _bessel_i1_vjp(g, ans, x):
    at_zero = x == 0
    safe_x = np.where(at_zero, 1.0, x)
    return g * np.where(at_zero, 0.5, np.i0(x) - ans / safe_x)


@jvp_rule(bessel_i1)
def _bessel_i1_jvp(t, ans, x):
    at_zero = x == 0
    safe_x = np.where(at_zero, 1.0, x)
    return t * np.where(at_zero, 0.5, np.i0(x) - ans / safe_x)
