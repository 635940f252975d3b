"""The quantile functions ``ppf`` and ``isf`` of the ``scipy.stats`` location-scale families
``cauchy``, ``laplace``, ``logistic``, ``gumbel_r``, ``expon`` and ``uniform``, in ``q``,
``loc`` and ``scale``. Loaded with :mod:`s2sgrad.rules.scipy_stats`.

``ppf(q, loc, scale) = loc + scale z(q)`` inverts the ``cdf``: its slope in ``q`` is
``1 / pdf(ppf(q), loc, scale)``, in ``loc`` 1 and in ``scale`` ``z = (ppf(q) - loc) /
scale``. ``isf(q) = ppf(1 - q)``: the slope in ``q`` changes sign. The rules are written
with each family's ``pdf``, which has rules in ``x``, ``loc`` and ``scale``, so derivatives
of any order follow.

Example::

    sg.grad(lambda q: np.sum(stats.logistic.ppf(q, 0.0, 2.0)))(np.array([0.2, 0.7]))
"""

from __future__ import annotations

from scipy import stats

from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.runtime import unbroadcast

# --------------------------------------------------------------------------------
# scipy.stats.cauchy


@vjp_rule(stats.cauchy.ppf)
def _cauchy_ppf(g, ans, q, loc=0.0, scale=1.0):
    slope = 1.0 / stats.cauchy.pdf(ans, loc, scale)
    return (
        unbroadcast(g * slope, q),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.cauchy.ppf)
def _cauchy_ppf_jvp(t, ans, q, loc=0.0, scale=1.0):
    slope = 1.0 / stats.cauchy.pdf(ans, loc, scale)
    return t * slope, t + 0.0 * ans, t * (ans - loc) / scale


@vjp_rule(stats.cauchy.isf)
def _cauchy_isf(g, ans, q, loc=0.0, scale=1.0):
    slope = -1.0 / stats.cauchy.pdf(ans, loc, scale)
    return (
        unbroadcast(g * slope, q),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.cauchy.isf)
def _cauchy_isf_jvp(t, ans, q, loc=0.0, scale=1.0):
    slope = -1.0 / stats.cauchy.pdf(ans, loc, scale)
    return t * slope, t + 0.0 * ans, t * (ans - loc) / scale


# --------------------------------------------------------------------------------
# scipy.stats.laplace


@vjp_rule(stats.laplace.ppf)
def _laplace_ppf(g, ans, q, loc=0.0, scale=1.0):
    slope = 1.0 / stats.laplace.pdf(ans, loc, scale)
    return (
        unbroadcast(g * slope, q),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.laplace.ppf)
def _laplace_ppf_jvp(t, ans, q, loc=0.0, scale=1.0):
    slope = 1.0 / stats.laplace.pdf(ans, loc, scale)
    return t * slope, t + 0.0 * ans, t * (ans - loc) / scale


@vjp_rule(stats.laplace.isf)
def _laplace_isf(g, ans, q, loc=0.0, scale=1.0):
    slope = -1.0 / stats.laplace.pdf(ans, loc, scale)
    return (
        unbroadcast(g * slope, q),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.laplace.isf)
def _laplace_isf_jvp(t, ans, q, loc=0.0, scale=1.0):
    slope = -1.0 / stats.laplace.pdf(ans, loc, scale)
    return t * slope, t + 0.0 * ans, t * (ans - loc) / scale


# --------------------------------------------------------------------------------
# scipy.stats.logistic


@vjp_rule(stats.logistic.ppf)
def _logistic_ppf(g, ans, q, loc=0.0, scale=1.0):
    slope = 1.0 / stats.logistic.pdf(ans, loc, scale)
    return (
        unbroadcast(g * slope, q),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.logistic.ppf)
def _logistic_ppf_jvp(t, ans, q, loc=0.0, scale=1.0):
    slope = 1.0 / stats.logistic.pdf(ans, loc, scale)
    return t * slope, t + 0.0 * ans, t * (ans - loc) / scale


@vjp_rule(stats.logistic.isf)
def _logistic_isf(g, ans, q, loc=0.0, scale=1.0):
    slope = -1.0 / stats.logistic.pdf(ans, loc, scale)
    return (
        unbroadcast(g * slope, q),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.logistic.isf)
def _logistic_isf_jvp(t, ans, q, loc=0.0, scale=1.0):
    slope = -1.0 / stats.logistic.pdf(ans, loc, scale)
    return t * slope, t + 0.0 * ans, t * (ans - loc) / scale


# --------------------------------------------------------------------------------
# scipy.stats.gumbel_r


@vjp_rule(stats.gumbel_r.ppf)
def _gumbel_r_ppf(g, ans, q, loc=0.0, scale=1.0):
    slope = 1.0 / stats.gumbel_r.pdf(ans, loc, scale)
    return (
        unbroadcast(g * slope, q),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.gumbel_r.ppf)
def _gumbel_r_ppf_jvp(t, ans, q, loc=0.0, scale=1.0):
    slope = 1.0 / stats.gumbel_r.pdf(ans, loc, scale)
    return t * slope, t + 0.0 * ans, t * (ans - loc) / scale


@vjp_rule(stats.gumbel_r.isf)
def _gumbel_r_isf(g, ans, q, loc=0.0, scale=1.0):
    slope = -1.0 / stats.gumbel_r.pdf(ans, loc, scale)
    return (
        unbroadcast(g * slope, q),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.gumbel_r.isf)
def _gumbel_r_isf_jvp(t, ans, q, loc=0.0, scale=1.0):
    slope = -1.0 / stats.gumbel_r.pdf(ans, loc, scale)
    return t * slope, t + 0.0 * ans, t * (ans - loc) / scale


# --------------------------------------------------------------------------------
# scipy.stats.expon


@vjp_rule(stats.expon.ppf)
def _expon_ppf(g, ans, q, loc=0.0, scale=1.0):
    slope = 1.0 / stats.expon.pdf(ans, loc, scale)
    return (
        unbroadcast(g * slope, q),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.expon.ppf)
def _expon_ppf_jvp(t, ans, q, loc=0.0, scale=1.0):
    slope = 1.0 / stats.expon.pdf(ans, loc, scale)
    return t * slope, t + 0.0 * ans, t * (ans - loc) / scale


@vjp_rule(stats.expon.isf)
def _expon_isf(g, ans, q, loc=0.0, scale=1.0):
    slope = -1.0 / stats.expon.pdf(ans, loc, scale)
    return (
        unbroadcast(g * slope, q),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.expon.isf)
def _expon_isf_jvp(t, ans, q, loc=0.0, scale=1.0):
    slope = -1.0 / stats.expon.pdf(ans, loc, scale)
    return t * slope, t + 0.0 * ans, t * (ans - loc) / scale


# --------------------------------------------------------------------------------
# scipy.stats.uniform


@vjp_rule(stats.uniform.ppf)
def _uniform_ppf(g, ans, q, loc=0.0, scale=1.0):
    slope = 1.0 / stats.uniform.pdf(ans, loc, scale)
    return (
        unbroadcast(g * slope, q),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.uniform.ppf)
def _uniform_ppf_jvp(t, ans, q, loc=0.0, scale=1.0):
    slope = 1.0 / stats.uniform.pdf(ans, loc, scale)
    return t * slope, t + 0.0 * ans, t * (ans - loc) / scale


@vjp_rule(stats.uniform.isf)
def _uniform_isf(g, ans, q, loc=0.0, scale=1.0):
    slope = -1.0 / stats.uniform.pdf(ans, loc, scale)
    return (
        unbroadcast(g * slope, q),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.uniform.isf)
def _uniform_isf_jvp(t, ans, q, loc=0.0, scale=1.0):
    slope = -1.0 / stats.uniform.pdf(ans, loc, scale)
    return t * slope, t + 0.0 * ans, t * (ans - loc) / scale
