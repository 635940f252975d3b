"""More rules of ``scipy.special``: the exponentially scaled and modified Bessel functions
``i0e``, ``i1e``, ``kv``, ``kve``, ``k0``, ``k1``, ``yv``; ``erfcx``, ``dawsn``; the exponential
integrals ``exp1``, ``expi``, the sine and cosine integrals ``sici`` and the dilogarithm
``spence``; ``log_expit``; the entropy terms ``rel_entr`` and ``kl_div``; the losses
``huber`` and ``pseudo_huber``; ``boxcox`` and ``boxcox1p``; and ``zeta`` in ``q``.
Loaded with :mod:`s2sgrad.rules.scipy_special`.

Each rule is written with NumPy and ``scipy.special`` functions that have rules, so every
order follows: ``i0e' = i1e - sign(x) i0e``, ``kv' = -(kv(v-1) + kv(v+1)) / 2``,
``erfcx' = 2x erfcx - 2/sqrt(pi)``, ``exp1' = -e^-x / x``. The order ``v`` of ``kv``, ``kve``
and ``yv`` and the exponent ``x`` of ``zeta(x, q)`` have no closed-form derivative and are
refused when differentiated (:mod:`s2sgrad.rules.scipy_common`). Where a function is
defined piecewise (``rel_entr``, ``kl_div``, ``huber``) each piece gets its own derivative;
outside the domain, where the value is ``inf``, the derivative is zero.

Example::

    sg.grad(lambda x: np.sum(special.i0e(x)))(np.array([0.5, 2.0]))  # i1e(x) - i0e(x)
"""

from __future__ import annotations

import numpy as np
from scipy import special

from s2sgrad.rules.registry import jvp_rule, vjp_and_jvp_rule, vjp_rule
from s2sgrad.rules.scipy_common import integer_valued, refuse
from s2sgrad.runtime import unbroadcast

TWO_OVER_SQRT_PI = float(2.0 / np.sqrt(np.pi))

_NO_CLOSED_FORM = (
    "scipy.special.{name} has a closed-form derivative in {only} only, and here it is "
    "differentiated in {wrt}; hold {wrt} constant (wrap it in s2sgrad.stop_gradient), or give "
    "the function a derivative of your own with @s2sgrad.derivative(of=...)"
)
_KV_REFUSED = _NO_CLOSED_FORM.format(name="kv(v, x)", wrt="the order v", only="x")
_KVE_REFUSED = _NO_CLOSED_FORM.format(name="kve(v, x)", wrt="the order v", only="x")
_YV_REFUSED = _NO_CLOSED_FORM.format(name="yv(v, x)", wrt="the order v", only="x")
_ZETA_REFUSED = _NO_CLOSED_FORM.format(name="zeta(x, q)", wrt="the exponent x", only="q")


# ----------------------------------------------------------------------- Bessel functions


@vjp_and_jvp_rule(special.i0e)
def _i0e(g, ans, x):
    return g * (special.i1e(x) - np.sign(x) * ans)


@vjp_and_jvp_rule(special.i1e)
def _i1e(g, ans, x):
    # i1'(x) = i0(x) - i1(x) / x, which is 1/2 at x = 0
    at_zero = x == 0
    safe_x = np.where(at_zero, 1.0, x)
    slope = special.i0e(x) - ans * (np.sign(x) + 1.0 / safe_x)
    return g * np.where(at_zero, 0.5, slope)


@vjp_and_jvp_rule(special.k0)
def _k0(g, ans, x):
    return -g * special.k1(x)


@vjp_and_jvp_rule(special.k1)
def _k1(g, ans, x):
    return -g * (special.k0(x) + special.kv(2, x)) / 2


@vjp_rule(special.kv)
def _kv(g, ans, v, x):
    return np.zeros(np.shape(v)) if integer_valued(v) else refuse(_KV_REFUSED), unbroadcast(
        -g * (special.kv(v - 1, x) + special.kv(v + 1, x)) / 2, x
    )


@jvp_rule(special.kv)
def _kv_jvp(t, ans, v, x):
    return np.zeros(np.shape(ans)) if integer_valued(v) else refuse(_KV_REFUSED), -t * (
        special.kv(v - 1, x) + special.kv(v + 1, x)
    ) / 2


# kve(v, x) = kv(v, x) e^x
@vjp_rule(special.kve)
def _kve(g, ans, v, x):
    slope = ans - (special.kve(v - 1, x) + special.kve(v + 1, x)) / 2
    return np.zeros(np.shape(v)) if integer_valued(v) else refuse(_KVE_REFUSED), unbroadcast(
        g * slope, x
    )


@jvp_rule(special.kve)
def _kve_jvp(t, ans, v, x):
    return np.zeros(np.shape(ans)) if integer_valued(v) else refuse(_KVE_REFUSED), t * (
        ans - (special.kve(v - 1, x) + special.kve(v + 1, x)) / 2
    )


@vjp_rule(special.yv)
def _yv(g, ans, v, x):
    return np.zeros(np.shape(v)) if integer_valued(v) else refuse(_YV_REFUSED), unbroadcast(
        g * (special.yv(v - 1, x) - special.yv(v + 1, x)) / 2, x
    )


@jvp_rule(special.yv)
def _yv_jvp(t, ans, v, x):
    return np.zeros(np.shape(ans)) if integer_valued(v) else refuse(_YV_REFUSED), t * (
        special.yv(v - 1, x) - special.yv(v + 1, x)
    ) / 2


# -------------------------------------------------------- error-function relatives, integrals


@vjp_and_jvp_rule(special.erfcx)
def _erfcx(g, ans, x):
    return g * (2.0 * x * ans - TWO_OVER_SQRT_PI)


@vjp_and_jvp_rule(special.dawsn)
def _dawsn(g, ans, x):
    return g * (1.0 - 2.0 * x * ans)


@vjp_and_jvp_rule(special.exp1)
def _exp1(g, ans, x):
    return -g * np.exp(-x) / x


@vjp_and_jvp_rule(special.expi)
def _expi(g, ans, x):
    return g * np.exp(x) / x


# sici(x) = (Si, Ci): Si' = sin(x) / x (1 at 0, as np.sinc has it), Ci' = cos(x) / x
@vjp_rule(special.sici)
def _sici(g, ans, x):
    slope_si = np.sinc(x / np.pi)
    slope_ci = np.cos(x) / x
    if g[0] is None:
        return g[1] * slope_ci
    if g[1] is None:
        return g[0] * slope_si
    return g[0] * slope_si + g[1] * slope_ci


@jvp_rule(special.sici)
def _sici_jvp(t, ans, x):
    return ((t * np.sinc(x / np.pi), t * np.cos(x) / x),)


# spence(z) = integral from 1 to z of log(t) / (1 - t); its slope at z = 1 is -1
@vjp_and_jvp_rule(special.spence)
def _spence(g, ans, z):
    at_one = z == 1
    safe_z = np.where(at_one, 2.0, z)
    return g * np.where(at_one, -1.0, np.log(safe_z) / (1.0 - safe_z))


@vjp_and_jvp_rule(special.log_expit)
def _log_expit(g, ans, x):
    return g * special.expit(-x)


# ------------------------------------------------------------- entropy terms and losses


def _rel_entr_partials(ans, x, y):
    # x log(x / y) for x, y > 0; 0 at x = 0 <= y; inf elsewhere
    inside = (x > 0) & (y > 0)
    safe_x, safe_y = np.where(inside, x, 1.0), np.where(inside, y, 1.0)
    dx = np.where(inside, np.log(safe_x / safe_y) + 1.0, 0.0)
    dy = np.where(inside, -safe_x / safe_y, 0.0)
    return dx, dy


def _kl_div_partials(ans, x, y):
    # x log(x / y) - x + y for x, y > 0; y at x = 0 <= y; inf elsewhere
    inside = (x > 0) & (y > 0)
    safe_x, safe_y = np.where(inside, x, 1.0), np.where(inside, y, 1.0)
    dx = np.where(inside, np.log(safe_x / safe_y), 0.0)
    dy = np.where(inside, 1.0 - safe_x / safe_y, np.where((x == 0) & (y >= 0), 1.0, 0.0))
    return dx, dy


def _huber_partials(ans, delta, r):
    # r^2 / 2 for |r| <= delta, delta (|r| - delta / 2) beyond; inf for delta < 0
    inside = np.abs(r) <= delta
    d_delta = np.where(inside, 0.0, np.abs(r) - delta)
    d_r = np.where(inside, r, delta * np.sign(r))
    valid = delta >= 0
    return np.where(valid, d_delta, 0.0), np.where(valid, d_r, 0.0)


def _pseudo_huber_partials(ans, delta, r):
    # delta^2 (sqrt(1 + (r / delta)^2) - 1) for delta > 0
    valid = delta > 0
    safe_delta = np.where(valid, delta, 1.0)
    root = np.sqrt(1.0 + (r / safe_delta) ** 2)
    d_delta = 2.0 * safe_delta * (root - 1.0) - r**2 / (safe_delta * root)
    return np.where(valid, d_delta, 0.0), np.where(valid, r / root, 0.0)


@vjp_rule(special.rel_entr)
def _rel_entr(g, ans, x, y):
    d_x, d_y = _rel_entr_partials(ans, x, y)
    return unbroadcast(g * d_x, x), unbroadcast(g * d_y, y)


@jvp_rule(special.rel_entr)
def _rel_entr_jvp(t, ans, x, y):
    d_x, d_y = _rel_entr_partials(ans, x, y)
    return t * d_x, t * d_y


@vjp_rule(special.kl_div)
def _kl_div(g, ans, x, y):
    d_x, d_y = _kl_div_partials(ans, x, y)
    return unbroadcast(g * d_x, x), unbroadcast(g * d_y, y)


@jvp_rule(special.kl_div)
def _kl_div_jvp(t, ans, x, y):
    d_x, d_y = _kl_div_partials(ans, x, y)
    return t * d_x, t * d_y


@vjp_rule(special.huber)
def _huber(g, ans, delta, r):
    d_delta, d_r = _huber_partials(ans, delta, r)
    return unbroadcast(g * d_delta, delta), unbroadcast(g * d_r, r)


@jvp_rule(special.huber)
def _huber_jvp(t, ans, delta, r):
    d_delta, d_r = _huber_partials(ans, delta, r)
    return t * d_delta, t * d_r


@vjp_rule(special.pseudo_huber)
def _pseudo_huber(g, ans, delta, r):
    d_delta, d_r = _pseudo_huber_partials(ans, delta, r)
    return unbroadcast(g * d_delta, delta), unbroadcast(g * d_r, r)


@jvp_rule(special.pseudo_huber)
def _pseudo_huber_jvp(t, ans, delta, r):
    d_delta, d_r = _pseudo_huber_partials(ans, delta, r)
    return t * d_delta, t * d_r


# ------------------------------------------------------------------ Box-Cox transforms


def _boxcox_partials_of_log(log_x, d_log_x, lmbda):
    """Partials of ((e^(lmbda L) - 1) / lmbda, or L at lmbda = 0) in x and lmbda, where
    L = log_x has derivative d_log_x in x."""
    at_zero = lmbda == 0
    safe = np.where(at_zero, 1.0, lmbda)
    power = np.exp(lmbda * log_x)
    dx = power * d_log_x
    d_lmbda = np.where(at_zero, log_x**2 / 2.0, (power * (safe * log_x - 1.0) + 1.0) / safe**2)
    return dx, d_lmbda


def _boxcox_partials(ans, x, lmbda):
    return _boxcox_partials_of_log(np.log(x), 1.0 / x, lmbda)


def _boxcox1p_partials(ans, x, lmbda):
    return _boxcox_partials_of_log(np.log1p(x), 1.0 / (1.0 + x), lmbda)


@vjp_rule(special.boxcox)
def _boxcox(g, ans, x, lmbda):
    d_x, d_lmbda = _boxcox_partials(ans, x, lmbda)
    return unbroadcast(g * d_x, x), unbroadcast(g * d_lmbda, lmbda)


@jvp_rule(special.boxcox)
def _boxcox_jvp(t, ans, x, lmbda):
    d_x, d_lmbda = _boxcox_partials(ans, x, lmbda)
    return t * d_x, t * d_lmbda


@vjp_rule(special.boxcox1p)
def _boxcox1p(g, ans, x, lmbda):
    d_x, d_lmbda = _boxcox1p_partials(ans, x, lmbda)
    return unbroadcast(g * d_x, x), unbroadcast(g * d_lmbda, lmbda)


@jvp_rule(special.boxcox1p)
def _boxcox1p_jvp(t, ans, x, lmbda):
    d_x, d_lmbda = _boxcox1p_partials(ans, x, lmbda)
    return t * d_x, t * d_lmbda


# -------------------------------------------------------------------------------- zeta


# Hurwitz zeta(x, q) = sum over n of (n + q)^-x: d/dq = -x zeta(x + 1, q)
@vjp_rule(special.zeta)
def _zeta(g, ans, x, q=None):
    return refuse(_ZETA_REFUSED), unbroadcast(-g * x * special.zeta(x + 1.0, q), q)


@jvp_rule(special.zeta)
def _zeta_jvp(t, ans, x, q=None):
    return refuse(_ZETA_REFUSED), -t * x * special.zeta(x + 1.0, q)
