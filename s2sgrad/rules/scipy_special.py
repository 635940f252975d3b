"""Derivative rules of ``scipy.special``, loaded when SciPy's special functions are imported.

Most of ``scipy.special`` are ufuncs: the tape sees them through ``__array_ufunc__`` like
NumPy's. Each rule is written with NumPy and ``scipy.special`` functions that have rules
themselves (``gammaln' = psi``, ``psi' = polygamma(1, .)``, ``jv' = (jv(v-1) - jv(v+1))/2``),
so derivatives of any order follow.

Arguments with no closed-form derivative are refused when they are differentiated: the
order ``v`` of the Bessel functions ``jv``/``iv``/``ive``, the integer orders of ``yn`` and
``polygamma``, the shape ``a`` of ``gammainc``/``gammaincc`` and ``a``, ``b`` of ``betainc``
(see :mod:`s2sgrad.rules.scipy_common`). ``jn`` is ``jv`` and ``psi`` is ``digamma``.
"""

from __future__ import annotations

import numpy as np
from scipy import special

import s2sgrad.rules.scipy_special_closed_forms  # noqa: F401  (registers its rules)
import s2sgrad.rules.scipy_special_complex  # noqa: F401  (registers its rules)
import s2sgrad.rules.scipy_special_extra  # noqa: F401  (registers its rules)
import s2sgrad.rules.scipy_special_integrals  # noqa: F401  (registers its rules)
import s2sgrad.rules.scipy_special_more  # noqa: F401  (registers its rules)
import s2sgrad.rules.scipy_special_spherical  # noqa: F401  (registers its rules)
from s2sgrad.rules.registry import jvp_rule, vjp_and_jvp_rule, vjp_rule
from s2sgrad.rules.scipy_common import integer_valued, refuse
from s2sgrad.runtime import unbroadcast

SQRT_PI = float(np.sqrt(np.pi))
SQRT_2PI = float(np.sqrt(2 * np.pi))
LOG_2PI = float(np.log(2 * np.pi))


# ---------------------------------------------------------------- gamma and beta functions


@vjp_and_jvp_rule(special.gammaln)
def _gammaln(g, ans, x):
    return g * special.psi(x)


@vjp_and_jvp_rule(special.gamma)
def _gamma(g, ans, x):
    return g * ans * special.psi(x)


@vjp_and_jvp_rule(special.rgamma)
def _rgamma(g, ans, x):
    return -g * ans * special.psi(x)


@vjp_and_jvp_rule(special.psi)
def _psi(g, ans, x):
    return g * special.polygamma(1, x)


@vjp_rule(special.polygamma)
def _polygamma(g, ans, n, x):
    return np.zeros(np.shape(n)) if integer_valued(n) else refuse(_POLYGAMMA_REFUSED), unbroadcast(
        g * special.polygamma(n + 1, x), x
    )


@jvp_rule(special.polygamma)
def _polygamma_jvp(t, ans, n, x):
    return np.zeros(np.shape(ans)) if integer_valued(n) else refuse(
        _POLYGAMMA_REFUSED
    ), t * special.polygamma(n + 1, x)


# multigammaln(a, d) = d (d - 1) / 4 log(pi) + sum_j gammaln(a - j / 2), j = 0 .. d - 1
@vjp_rule(special.multigammaln)
def _multigammaln(g, ans, a, d):
    return g * np.sum(special.psi(np.expand_dims(a, -1) - np.arange(d) / 2), axis=-1)


@jvp_rule(special.multigammaln)
def _multigammaln_jvp(t, ans, a, d):
    return t * np.sum(special.psi(np.expand_dims(a, -1) - np.arange(d) / 2), axis=-1)


@vjp_rule(special.beta)
def _beta(g, ans, a, b):
    total = special.psi(a + b)
    return (
        unbroadcast(g * ans * (special.psi(a) - total), a),
        unbroadcast(g * ans * (special.psi(b) - total), b),
    )


@jvp_rule(special.beta)
def _beta_jvp(t, ans, a, b):
    total = special.psi(a + b)
    return t * ans * (special.psi(a) - total), t * ans * (special.psi(b) - total)


@vjp_rule(special.betaln)
def _betaln(g, ans, a, b):
    total = special.psi(a + b)
    return unbroadcast(g * (special.psi(a) - total), a), unbroadcast(
        g * (special.psi(b) - total), b
    )


@jvp_rule(special.betaln)
def _betaln_jvp(t, ans, a, b):
    total = special.psi(a + b)
    return t * (special.psi(a) - total), t * (special.psi(b) - total)


# d/dx betainc(a, b, x) = x^(a-1) (1-x)^(b-1) / B(a, b); xlogy keeps a == 1 at x == 0 finite
@vjp_rule(special.betainc)
def _betainc(g, ans, a, b, x):
    density = np.exp(special.xlogy(a - 1, x) + special.xlog1py(b - 1, -x) - special.betaln(a, b))
    return (
        refuse(_BETAINC_REFUSED),
        refuse(_BETAINC_REFUSED),
        unbroadcast(g * density, x),
    )


@jvp_rule(special.betainc)
def _betainc_jvp(t, ans, a, b, x):
    density = np.exp(special.xlogy(a - 1, x) + special.xlog1py(b - 1, -x) - special.betaln(a, b))
    return (
        refuse(_BETAINC_REFUSED),
        refuse(_BETAINC_REFUSED),
        t * density,
    )


# d/dx gammainc(a, x) = x^(a-1) e^-x / Gamma(a) = -d/dx gammaincc(a, x)
@vjp_rule(special.gammainc)
def _gammainc(g, ans, a, x):
    density = np.exp(special.xlogy(a - 1, x) - x - special.gammaln(a))
    return refuse(_GAMMAINC_REFUSED), unbroadcast(g * density, x)


@jvp_rule(special.gammainc)
def _gammainc_jvp(t, ans, a, x):
    return refuse(_GAMMAINC_REFUSED), t * np.exp(special.xlogy(a - 1, x) - x - special.gammaln(a))


@vjp_rule(special.gammaincc)
def _gammaincc(g, ans, a, x):
    density = np.exp(special.xlogy(a - 1, x) - x - special.gammaln(a))
    return refuse(_GAMMAINCC_REFUSED), unbroadcast(-g * density, x)


@jvp_rule(special.gammaincc)
def _gammaincc_jvp(t, ans, a, x):
    return refuse(_GAMMAINCC_REFUSED), -t * np.exp(special.xlogy(a - 1, x) - x - special.gammaln(a))


# ------------------------------------------------------------------------ Bessel functions


@vjp_and_jvp_rule(special.j0)
def _j0(g, ans, x):
    return -g * special.j1(x)


@vjp_and_jvp_rule(special.j1)
def _j1(g, ans, x):
    return g * (special.j0(x) - special.jv(2, x)) / 2


@vjp_and_jvp_rule(special.y0)
def _y0(g, ans, x):
    return -g * special.y1(x)


@vjp_and_jvp_rule(special.y1)
def _y1(g, ans, x):
    return g * (special.y0(x) - ans / x)


@vjp_and_jvp_rule(special.i0)
def _i0(g, ans, x):
    return g * special.i1(x)


@vjp_and_jvp_rule(special.i1)
def _i1(g, ans, x):
    return g * (special.i0(x) + special.iv(2, x)) / 2


@vjp_rule(special.jv)
def _jv(g, ans, v, x):
    return np.zeros(np.shape(v)) if integer_valued(v) else refuse(_JV_REFUSED), unbroadcast(
        g * (special.jv(v - 1, x) - special.jv(v + 1, x)) / 2, x
    )


@jvp_rule(special.jv)
def _jv_jvp(t, ans, v, x):
    return np.zeros(np.shape(ans)) if integer_valued(v) else refuse(_JV_REFUSED), t * (
        special.jv(v - 1, x) - special.jv(v + 1, x)
    ) / 2


@vjp_rule(special.yn)
def _yn(g, ans, n, x):
    return np.zeros(np.shape(n)) if integer_valued(n) else refuse(_YN_REFUSED), unbroadcast(
        g * (special.yn(n - 1, x) - special.yn(n + 1, x)) / 2, x
    )


@jvp_rule(special.yn)
def _yn_jvp(t, ans, n, x):
    return np.zeros(np.shape(ans)) if integer_valued(n) else refuse(_YN_REFUSED), t * (
        special.yn(n - 1, x) - special.yn(n + 1, x)
    ) / 2


@vjp_rule(special.iv)
def _iv(g, ans, v, x):
    return np.zeros(np.shape(v)) if integer_valued(v) else refuse(_IV_REFUSED), unbroadcast(
        g * (special.iv(v - 1, x) + special.iv(v + 1, x)) / 2, x
    )


@jvp_rule(special.iv)
def _iv_jvp(t, ans, v, x):
    return np.zeros(np.shape(ans)) if integer_valued(v) else refuse(_IV_REFUSED), t * (
        special.iv(v - 1, x) + special.iv(v + 1, x)
    ) / 2


# ive(v, x) = iv(v, x) exp(-|x|)
@vjp_rule(special.ive)
def _ive(g, ans, v, x):
    slope = (special.ive(v - 1, x) + special.ive(v + 1, x)) / 2 - np.sign(x) * ans
    return np.zeros(np.shape(v)) if integer_valued(v) else refuse(_IVE_REFUSED), unbroadcast(
        g * slope, x
    )


@jvp_rule(special.ive)
def _ive_jvp(t, ans, v, x):
    return np.zeros(np.shape(ans)) if integer_valued(v) else refuse(_IVE_REFUSED), t * (
        (special.ive(v - 1, x) + special.ive(v + 1, x)) / 2 - np.sign(x) * ans
    )


# ------------------------------------------------------------ error function and normal law


@vjp_and_jvp_rule(special.erf)
def _erf(g, ans, x):
    return g * (2 / SQRT_PI) * np.exp(-(x**2))


@vjp_and_jvp_rule(special.erfc)
def _erfc(g, ans, x):
    return g * (-2 / SQRT_PI) * np.exp(-(x**2))


@vjp_and_jvp_rule(special.erfinv)
def _erfinv(g, ans, x):
    return g * (SQRT_PI / 2) * np.exp(ans**2)


@vjp_and_jvp_rule(special.erfcinv)
def _erfcinv(g, ans, x):
    return g * (-SQRT_PI / 2) * np.exp(ans**2)


@vjp_and_jvp_rule(special.ndtr)
def _ndtr(g, ans, x):
    return g * np.exp(-(x**2) / 2) / SQRT_2PI


@vjp_and_jvp_rule(special.log_ndtr)
def _log_ndtr(g, ans, x):
    # the normal density over ndtr(x), as one exponential: finite far in the left tail
    return g * np.exp(-(x**2) / 2 - ans - LOG_2PI / 2)


@vjp_and_jvp_rule(special.ndtri)
def _ndtri(g, ans, x):
    return g * SQRT_2PI * np.exp(ans**2 / 2)


# ------------------------------------------------------------- logistic and log functions


@vjp_and_jvp_rule(special.expit)
def _expit(g, ans, x):
    return g * ans * (1 - ans)


@vjp_and_jvp_rule(special.logit)
def _logit(g, ans, x):
    return g / (x * (1 - x))


@vjp_and_jvp_rule(special.entr)
def _entr(g, ans, x):
    return -g * (np.log(x) + 1)


@vjp_rule(special.xlogy)
def _xlogy(g, ans, x, y):
    # xlogy(0, y) is 0 for every y: where x is 0 the slope in y is 0, even at y = 0
    return unbroadcast(g * np.log(y), x), unbroadcast(g * x / np.where(x == 0, 1.0, y), y)


@jvp_rule(special.xlogy)
def _xlogy_jvp(t, ans, x, y):
    return t * np.log(y), t * x / np.where(x == 0, 1.0, y)


@vjp_rule(special.xlog1py)
def _xlog1py(g, ans, x, y):
    # xlog1py(0, y) is 0 for every y: where x is 0 the slope in y is 0, even at y = -1
    return unbroadcast(g * np.log1p(y), x), unbroadcast(g * x / np.where(x == 0, 1.0, 1 + y), y)


@jvp_rule(special.xlog1py)
def _xlog1py_jvp(t, ans, x, y):
    return t * np.log1p(y), t * x / np.where(x == 0, 1.0, 1 + y)


# logsumexp(a, b=b) = log(sum(b * exp(a))): its derivative in a is b * exp(a - ans), in b
# exp(a - ans), with the axes the sum removed put back so that they broadcast against a. An
# entry a = -inf adds nothing whatever it is moved by: its weight is 0, also where every
# entry is -inf (ans = -inf too, and exp(a - ans) would be nan; the alpha recursion of CTC
# or of an HMM starts from such entries)
@vjp_rule(special.logsumexp)
def _logsumexp(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    if return_sign:  # (log|sum|, sign): the sign is piecewise constant, and
        g_value = g[0]  # d log|s| = ds / s = sign * ds / |s|
        if g_value is None:  # only the sign was used
            g_value = np.zeros_like(ans[0])
        g = g_value * ans[1]
        ans = ans[0]
    if axis is None or keepdims:
        spread = g
        weights = np.exp(a - np.where(a == -np.inf, 0.0, ans))
    else:
        spread = np.expand_dims(g, axis)
        weights = np.exp(a - np.where(a == -np.inf, 0.0, np.expand_dims(ans, axis)))
    if b is None:  # noqa: SIM108  (an if the transformer folds when b is not given)
        to_a = spread * weights
    else:
        to_a = spread * b * weights
    return unbroadcast(to_a, a), None, unbroadcast(spread * weights, b)


@jvp_rule(special.logsumexp)
def _logsumexp_jvp(t, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    sign = 1.0
    if return_sign:  # (log|sum|, sign): the sign is piecewise constant, and
        sign = ans[1]  # d log|s| = ds / s = sign * ds / |s|
        ans = ans[0]
    if axis is None or keepdims:  # noqa: SIM108  (folded where the rule is inlined)
        weights = np.exp(a - np.where(a == -np.inf, 0.0, ans))
    else:
        weights = np.exp(a - np.where(a == -np.inf, 0.0, np.expand_dims(ans, axis)))
    if b is None:  # noqa: SIM108
        scaled = weights
    else:
        scaled = b * weights
    from_a = np.sum(t * scaled, axis=axis, keepdims=keepdims)
    from_b = np.sum(t * weights, axis=axis, keepdims=keepdims)
    if return_sign:
        return (sign * from_a, 0.0 * sign), None, (sign * from_b, 0.0 * sign)
    return from_a, None, from_b


@vjp_rule(special.softmax)
def _softmax(g, ans, x, axis=None):
    return ans * (g - np.sum(g * ans, axis=axis, keepdims=True))


@jvp_rule(special.softmax)
def _softmax_jvp(t, ans, x, axis=None):
    return ans * (t - np.sum(t * ans, axis=axis, keepdims=True))


@vjp_rule(special.log_softmax)
def _log_softmax(g, ans, x, axis=None):
    return g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True)


@jvp_rule(special.log_softmax)
def _log_softmax_jvp(t, ans, x, axis=None):
    return t - np.sum(np.exp(ans) * t, axis=axis, keepdims=True)


_NO_CLOSED_FORM = (
    "scipy.special.{name} has a closed-form derivative in {only} only, and here it is "
    "differentiated in {wrt}; hold {wrt} constant (wrap it in s2sgrad.stop_gradient), or give "
    "the function a derivative of your own with @s2sgrad.derivative(of=...)"
)
_INTEGER_ORDER = (
    "scipy.special.{name}: the order {order} is an integer, which has no derivative, and it "
    "is being differentiated here; pass it as an integer constant (or wrap it in "
    "s2sgrad.stop_gradient)"
)
_POLYGAMMA_REFUSED = _INTEGER_ORDER.format(name="polygamma(n, x)", order="n")
_YN_REFUSED = _INTEGER_ORDER.format(name="yn(n, x)", order="n")
_BETAINC_REFUSED = _NO_CLOSED_FORM.format(name="betainc(a, b, x)", wrt="a and b", only="x")
_GAMMAINC_REFUSED = _NO_CLOSED_FORM.format(name="gammainc(a, x)", wrt="a", only="x")
_GAMMAINCC_REFUSED = _NO_CLOSED_FORM.format(name="gammaincc(a, x)", wrt="a", only="x")
_IV_REFUSED = _NO_CLOSED_FORM.format(name="iv(v, x)", wrt="the order v", only="x")
_IVE_REFUSED = _NO_CLOSED_FORM.format(name="ive(v, x)", wrt="the order v", only="x")
_JV_REFUSED = _NO_CLOSED_FORM.format(name="jv(v, x) (and jn)", wrt="the order v", only="x")
