"""Rules of more ``scipy.special`` functions whose derivatives have closed forms:
``erfi``, ``exp2``, ``exp10``, ``cbrt``,
``softplus``, the trigonometric functions in degrees (``sindg``, ``cosdg``, ``tandg``,
``cotdg``), the complete elliptic integrals ``ellipk``, ``ellipkm1``, ``ellipe``, the inverses
``gammaincinv``, ``gammainccinv``, ``inv_boxcox``, ``inv_boxcox1p``, ``poch``,
``expn``, the hypergeometric functions ``hyp0f1``, ``hyp1f1``, ``hyperu``, ``hyp2f1`` in their
argument, and the distribution functions ``chdtr``, ``chdtrc``, ``gdtr``, ``fdtr``
in ``x``. Loaded with :mod:`s2sgrad.rules.scipy_special` (``loggamma``, ``k0e``, ``k1e``,
``expm1``, ``log1p``, ``stdtr`` and ``owens_t`` are in :mod:`.scipy_special_extra`).

Each is written with functions that have rules, so every order follows:
``ellipe' = (E - K) / 2m``, ``hyp1f1(a, b, x)' = a/b hyp1f1(a+1, b+1, x)``, ``gammaincinv(a,
y)' = 1 / (the gamma density at the result)``. A parameter with no closed-form derivative (the
order ``n`` of ``expn``, the parameters of the hypergeometric functions, the degrees of
freedom of a distribution) is refused when differentiated.

Example::

    sg.grad(lambda m: np.sum(special.ellipe(m)))(np.array([0.2, 0.5]))  # (E - K) / 2m
"""

from __future__ import annotations

import numpy as np
from scipy import special

from s2sgrad.rules.registry import jvp_rule, vjp_and_jvp_rule, vjp_rule
from s2sgrad.rules.scipy_common import integer_valued, refuse
from s2sgrad.runtime import unbroadcast

_TWO_OVER_SQRT_PI = float(2.0 / np.sqrt(np.pi))
_DEGREE = float(np.pi / 180.0)
_LOG_2 = float(np.log(2.0))
_LOG_10 = float(np.log(10.0))
_QUARTER_PI_HALVED = float(np.pi / 8.0)  # the slope of K at m = 0, minus that of E

_NO_CLOSED_FORM = (
    "scipy.special.{name} is differentiated in {only} only, and here it is differentiated "
    "in {wrt}; hold {wrt} constant (wrap it in s2sgrad.stop_gradient), or give the function "
    "a derivative of your own with @s2sgrad.derivative(of=...)"
)


def _refused(name: str, wrt: str, only: str) -> str:
    return _NO_CLOSED_FORM.format(name=name, wrt=wrt, only=only)


_GAMMAINCINV = _refused("gammaincinv(a, y)", "the shape a", "y")
_GAMMAINCCINV = _refused("gammainccinv(a, y)", "the shape a", "y")
_EXPN = _refused("expn(n, x)", "the order n", "x")
_HYP0F1 = _refused("hyp0f1(b, z)", "the parameter b", "z")
_HYP1F1 = _refused("hyp1f1(a, b, x)", "the parameters a and b", "x")
_HYPERU = _refused("hyperu(a, b, x)", "the parameters a and b", "x")
_HYP2F1 = _refused("hyp2f1(a, b, c, z)", "the parameters a, b and c", "z")
_CHDTR = _refused("chdtr(v, x)", "the degrees of freedom v", "x")
_CHDTRC = _refused("chdtrc(v, x)", "the degrees of freedom v", "x")
_GDTR = _refused("gdtr(a, b, x)", "the rate a and shape b", "x")
_FDTR = _refused("fdtr(dfn, dfd, x)", "the degrees of freedom", "x")


# ------------------------------------------------------------------ elementary functions


@vjp_and_jvp_rule(special.erfi)
def _erfi(g, ans, x):
    return g * _TWO_OVER_SQRT_PI * np.exp(x**2)


@vjp_and_jvp_rule(special.exp2)
def _exp2(g, ans, x):
    return g * ans * _LOG_2


@vjp_and_jvp_rule(special.exp10)
def _exp10(g, ans, x):
    return g * ans * _LOG_10


@vjp_and_jvp_rule(special.cbrt)
def _cbrt(g, ans, x):
    return g / (3.0 * special.cbrt(x) ** 2)


@vjp_and_jvp_rule(special.softplus)
def _softplus(g, ans, x):
    return g * special.expit(x)


@vjp_and_jvp_rule(special.sindg)
def _sindg(g, ans, x):
    return g * _DEGREE * special.cosdg(x)


@vjp_and_jvp_rule(special.cosdg)
def _cosdg(g, ans, x):
    return -g * _DEGREE * special.sindg(x)


@vjp_and_jvp_rule(special.tandg)
def _tandg(g, ans, x):
    return g * _DEGREE * (1.0 + special.tandg(x) ** 2)


@vjp_and_jvp_rule(special.cotdg)
def _cotdg(g, ans, x):
    return -g * _DEGREE * (1.0 + special.cotdg(x) ** 2)


# ------------------------------------------------------------ complete elliptic integrals


def _ellipk_slope(m):
    # K'(m) = (E - (1 - m) K) / (2 m (1 - m)), which is pi / 8 at m = 0
    at_zero = m == 0
    safe = np.where(at_zero, 0.5, m)
    slope = (special.ellipe(safe) - (1.0 - safe) * special.ellipk(safe)) / (
        2.0 * safe * (1.0 - safe)
    )
    return np.where(at_zero, _QUARTER_PI_HALVED, slope)


@vjp_and_jvp_rule(special.ellipk)
def _ellipk(g, ans, m):
    return g * _ellipk_slope(m)


@vjp_and_jvp_rule(special.ellipkm1)
def _ellipkm1(g, ans, p):
    return -g * _ellipk_slope(1.0 - p)


@vjp_and_jvp_rule(special.ellipe)
def _ellipe(g, ans, m):
    # E'(m) = (E - K) / 2m, which is -pi / 8 at m = 0
    at_zero = m == 0
    safe = np.where(at_zero, 0.5, m)
    slope = (special.ellipe(safe) - special.ellipk(safe)) / (2.0 * safe)
    return g * np.where(at_zero, -_QUARTER_PI_HALVED, slope)


# -------------------------------------------------------------------------------- inverses


def _gamma_density(a, x):
    return np.exp(special.xlogy(a - 1.0, x) - x - special.gammaln(a))


@vjp_rule(special.gammaincinv)
def _gammaincinv(g, ans, a, y):
    return refuse(_GAMMAINCINV), unbroadcast(g / _gamma_density(a, ans), y)


@jvp_rule(special.gammaincinv)
def _gammaincinv_jvp(t, ans, a, y):
    return refuse(_GAMMAINCINV), t / _gamma_density(a, ans)


@vjp_rule(special.gammainccinv)
def _gammainccinv(g, ans, a, y):
    return refuse(_GAMMAINCCINV), unbroadcast(-g / _gamma_density(a, ans), y)


@jvp_rule(special.gammainccinv)
def _gammainccinv_jvp(t, ans, a, y):
    return refuse(_GAMMAINCCINV), -t / _gamma_density(a, ans)


def _inv_boxcox_partials(x, y, lmbda):
    # x = (1 + lmbda y)^(1 / lmbda), e^y at lmbda = 0
    at_zero = lmbda == 0
    safe = np.where(at_zero, 1.0, lmbda)
    base = 1.0 + lmbda * y
    d_y = x / base
    d_lmbda = x * np.where(at_zero, -(y**2) / 2.0, y / (safe * base) - np.log1p(safe * y) / safe**2)
    return d_y, d_lmbda


@vjp_rule(special.inv_boxcox)
def _inv_boxcox(g, ans, y, lmbda):
    d_y, d_lmbda = _inv_boxcox_partials(ans, y, lmbda)
    return unbroadcast(g * d_y, y), unbroadcast(g * d_lmbda, lmbda)


@jvp_rule(special.inv_boxcox)
def _inv_boxcox_jvp(t, ans, y, lmbda):
    d_y, d_lmbda = _inv_boxcox_partials(ans, y, lmbda)
    return t * d_y, t * d_lmbda


@vjp_rule(special.inv_boxcox1p)
def _inv_boxcox1p(g, ans, y, lmbda):
    d_y, d_lmbda = _inv_boxcox_partials(ans + 1.0, y, lmbda)
    return unbroadcast(g * d_y, y), unbroadcast(g * d_lmbda, lmbda)


@jvp_rule(special.inv_boxcox1p)
def _inv_boxcox1p_jvp(t, ans, y, lmbda):
    d_y, d_lmbda = _inv_boxcox_partials(ans + 1.0, y, lmbda)
    return t * d_y, t * d_lmbda


# ------------------------------------------------------------ Pochhammer, Owen's T, E_n


def _poch_partials(ans, z, m):
    # poch(z, m) = Gamma(z + m) / Gamma(z)
    upper = special.digamma(z + m)
    return ans * (upper - special.digamma(z)), ans * upper


@vjp_rule(special.poch)
def _poch(g, ans, z, m):
    d_z, d_m = _poch_partials(ans, z, m)
    return unbroadcast(g * d_z, z), unbroadcast(g * d_m, m)


@jvp_rule(special.poch)
def _poch_jvp(t, ans, z, m):
    d_z, d_m = _poch_partials(ans, z, m)
    return t * d_z, t * d_m


def _expn_slope(n, x):
    # E_n' = -E_(n-1) for n >= 1; E_0 = e^-x / x, whose slope is -e^-x (1 / x + 1 / x^2)
    lower = special.expn(np.maximum(n - 1, 0), x)
    first = -np.exp(-x) * (1.0 / x + 1.0 / x**2)
    return np.where(n >= 1, -lower, first)


@vjp_rule(special.expn)
def _expn(g, ans, n, x):
    return np.zeros(np.shape(n)) if integer_valued(n) else refuse(_EXPN), unbroadcast(
        g * _expn_slope(n, x), x
    )


@jvp_rule(special.expn)
def _expn_jvp(t, ans, n, x):
    return np.zeros(np.shape(ans)) if integer_valued(n) else refuse(_EXPN), t * _expn_slope(n, x)


# ------------------------------------------------------------ hypergeometric functions


@vjp_rule(special.hyp0f1)
def _hyp0f1(g, ans, b, z):
    return refuse(_HYP0F1), unbroadcast(g * special.hyp0f1(b + 1.0, z) / b, z)


@jvp_rule(special.hyp0f1)
def _hyp0f1_jvp(t, ans, b, z):
    return refuse(_HYP0F1), t * special.hyp0f1(b + 1.0, z) / b


@vjp_rule(special.hyp1f1)
def _hyp1f1(g, ans, a, b, x):
    slope = a / b * special.hyp1f1(a + 1.0, b + 1.0, x)
    return refuse(_HYP1F1), refuse(_HYP1F1), unbroadcast(g * slope, x)


@jvp_rule(special.hyp1f1)
def _hyp1f1_jvp(t, ans, a, b, x):
    return refuse(_HYP1F1), refuse(_HYP1F1), t * a / b * special.hyp1f1(a + 1.0, b + 1.0, x)


@vjp_rule(special.hyperu)
def _hyperu(g, ans, a, b, x):
    slope = -a * special.hyperu(a + 1.0, b + 1.0, x)
    return refuse(_HYPERU), refuse(_HYPERU), unbroadcast(g * slope, x)


@jvp_rule(special.hyperu)
def _hyperu_jvp(t, ans, a, b, x):
    return refuse(_HYPERU), refuse(_HYPERU), -t * a * special.hyperu(a + 1.0, b + 1.0, x)


@vjp_rule(special.hyp2f1)
def _hyp2f1(g, ans, a, b, c, z):
    slope = a * b / c * special.hyp2f1(a + 1.0, b + 1.0, c + 1.0, z)
    return refuse(_HYP2F1), refuse(_HYP2F1), refuse(_HYP2F1), unbroadcast(g * slope, z)


@jvp_rule(special.hyp2f1)
def _hyp2f1_jvp(t, ans, a, b, c, z):
    slope = a * b / c * special.hyp2f1(a + 1.0, b + 1.0, c + 1.0, z)
    return refuse(_HYP2F1), refuse(_HYP2F1), refuse(_HYP2F1), t * slope


# ------------------------------------------------------------ distribution functions


def _chi2_density(v, x):
    return _gamma_density(v / 2.0, x / 2.0) / 2.0


@vjp_rule(special.chdtr)
def _chdtr(g, ans, v, x):
    return refuse(_CHDTR), unbroadcast(g * _chi2_density(v, x), x)


@jvp_rule(special.chdtr)
def _chdtr_jvp(t, ans, v, x):
    return refuse(_CHDTR), t * _chi2_density(v, x)


@vjp_rule(special.chdtrc)
def _chdtrc(g, ans, v, x):
    return refuse(_CHDTRC), unbroadcast(-g * _chi2_density(v, x), x)


@jvp_rule(special.chdtrc)
def _chdtrc_jvp(t, ans, v, x):
    return refuse(_CHDTRC), -t * _chi2_density(v, x)


def _t_density(df, t):
    log_norm = special.gammaln((df + 1.0) / 2.0) - special.gammaln(df / 2.0)
    log_norm = log_norm - 0.5 * np.log(df * np.pi)
    return np.exp(log_norm - (df + 1.0) / 2.0 * np.log1p(t**2 / df))


# gdtr(a, b, x) = gammainc(b, a x): a is the rate, b the shape
@vjp_rule(special.gdtr)
def _gdtr(g, ans, a, b, x):
    return refuse(_GDTR), refuse(_GDTR), unbroadcast(g * a * _gamma_density(b, a * x), x)


@jvp_rule(special.gdtr)
def _gdtr_jvp(t, ans, a, b, x):
    return refuse(_GDTR), refuse(_GDTR), t * a * _gamma_density(b, a * x)


def _f_density(dfn, dfd, x):
    log_density = (
        -special.betaln(dfn / 2.0, dfd / 2.0)
        + dfn / 2.0 * np.log(dfn / dfd)
        + special.xlogy(dfn / 2.0 - 1.0, x)
        - (dfn + dfd) / 2.0 * np.log1p(dfn * x / dfd)
    )
    return np.exp(log_density)


@vjp_rule(special.fdtr)
def _fdtr(g, ans, dfn, dfd, x):
    return refuse(_FDTR), refuse(_FDTR), unbroadcast(g * _f_density(dfn, dfd, x), x)


@jvp_rule(special.fdtr)
def _fdtr_jvp(t, ans, dfn, dfd, x):
    return refuse(_FDTR), refuse(_FDTR), t * _f_density(dfn, dfd, x)
