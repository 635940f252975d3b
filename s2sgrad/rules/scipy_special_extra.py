"""Rules of ``scipy.special`` functions JAX's and SciPy's test suites differentiate that the
other rule modules leave out: ``loggamma`` (real arguments), the aliases ``expm1`` and
``log1p`` of NumPy's, ``exprel``, ``k0e``, ``k1e``, Student's ``stdtr`` in ``t`` and Owen's
``owens_t`` in both arguments. Loaded with :mod:`s2sgrad.rules.scipy_special`.

Each rule is written with functions that have rules, so every order follows:
``loggamma' = psi``, ``exprel'(x) = (x e^x - e^x + 1) / x^2`` (a series near 0, where that
quotient cancels), ``k0e' = k0e - k1e``, ``k1e' = k1e (1 - 1/x) - k0e``,
``d stdtr(df, t) / dt`` is the density of Student's t, and
``d T(h, a) / dh = -phi(h) erf(a h / sqrt 2) / 2``,
``d T(h, a) / da = exp(-h^2 (1 + a^2) / 2) / (2 pi (1 + a^2))``.

Example::

    sg.grad(lambda x: np.sum(special.exprel(x)))(np.array([0.0, 1.0]))  # [0.5, 1.]
"""

from __future__ import annotations

import numpy as np
from scipy import special

from s2sgrad.rules.registry import jvp_rule, vjp_and_jvp_rule, vjp_rule
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import unbroadcast

SQRT_2 = float(np.sqrt(2.0))
SQRT_2PI = float(np.sqrt(2.0 * np.pi))
_STDTR_DF_REFUSED = (
    "scipy.special.stdtr(df, t) has a closed-form derivative in t only, and here it is "
    "differentiated in the degrees of freedom df; hold df constant (wrap it in "
    "s2sgrad.stop_gradient), or give the function a derivative of your own with "
    "@s2sgrad.derivative(of=...)"
)


@vjp_and_jvp_rule(special.loggamma)
def _loggamma(g, ans, x):
    return g * special.psi(x)


@vjp_and_jvp_rule(special.expm1)
def _expm1(g, ans, x):
    return g * (ans + 1.0)


@vjp_and_jvp_rule(special.log1p)
def _log1p(g, ans, x):
    return g / (1.0 + x)


@vjp_and_jvp_rule(special.exprel)
def _exprel(g, ans, x):
    near_zero = np.abs(x) < 1e-3
    safe_x = np.where(near_zero, 1.0, x)
    slope = (np.exp(safe_x) * (safe_x - 1.0) + 1.0) / (safe_x * safe_x)
    series = 0.5 + x / 3.0 + x * x / 8.0
    return g * np.where(near_zero, series, slope)


@vjp_and_jvp_rule(special.k0e)
def _k0e(g, ans, x):
    return g * (ans - special.k1e(x))


@vjp_and_jvp_rule(special.k1e)
def _k1e(g, ans, x):
    return g * (ans * (1.0 - 1.0 / x) - special.k0e(x))


def _student_density(df, t):
    log_norm = special.gammaln((df + 1.0) / 2.0) - special.gammaln(df / 2.0)
    log_norm = log_norm - 0.5 * np.log(df * np.pi)
    return np.exp(log_norm - (df + 1.0) / 2.0 * np.log1p(t * t / df))


@vjp_rule(special.stdtr)
def _stdtr(g, ans, df, t):
    return refuse(_STDTR_DF_REFUSED), unbroadcast(g * _student_density(df, t), t)


@jvp_rule(special.stdtr)
def _stdtr_jvp(tangent, ans, df, t):
    return refuse(_STDTR_DF_REFUSED), tangent * _student_density(df, t)


def _owens_t_slopes(h, a):
    by_h = -np.exp(-h * h / 2.0) / SQRT_2PI * special.erf(a * h / SQRT_2) / 2.0
    by_a = np.exp(-h * h * (1.0 + a * a) / 2.0) / (2.0 * np.pi * (1.0 + a * a))
    return by_h, by_a


@vjp_rule(special.owens_t)
def _owens_t(g, ans, h, a):
    by_h, by_a = _owens_t_slopes(h, a)
    return unbroadcast(g * by_h, h), unbroadcast(g * by_a, a)


@jvp_rule(special.owens_t)
def _owens_t_jvp(t, ans, h, a):
    by_h, by_a = _owens_t_slopes(h, a)
    return t * by_h, t * by_a
