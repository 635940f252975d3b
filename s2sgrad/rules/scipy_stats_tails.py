"""Rules of ``scipy.stats``' distribution functions beyond the densities:
``norm.logsf``, the normal quantiles ``norm.ppf`` and ``norm.isf``, and ``poisson.cdf``,
``logcdf`` and ``sf`` in ``mu``. Loaded with :mod:`s2sgrad.rules.scipy_stats`.

``norm.ppf(q, loc, scale) = loc + scale ndtri(q)`` has slope ``scale / pdf(ndtri(q))`` in
``q``, ``1`` in ``loc`` and ``ndtri(q)`` in ``scale``; ``isf(q) = ppf(1 - q)``.
``norm.logsf`` has slope ``-pdf / sf`` in ``x``. ``poisson.cdf(k, mu)`` has slope
``-pmf(floor(k), mu)`` in ``mu``; the count ``k`` and the shift ``loc`` are integers,
refused when differentiated. The rules are written with NumPy, ``scipy.special`` and
``scipy.stats`` methods that have rules, so derivatives of any order follow.

Example::

    sg.grad(lambda q: np.sum(stats.norm.ppf(q)))(np.array([0.2, 0.7]))
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import unbroadcast

_COUNT = (
    "scipy.stats.poisson.{name}: the count k and the shift loc are integers, which have no "
    "derivative, and one of them is being differentiated here; pass integer constants (or "
    "wrap them in s2sgrad.stop_gradient)"
)


# --------------------------------------------------------------------------------
# scipy.stats.norm: the log survival function and the quantiles


@vjp_rule(stats.norm.logsf)
def _norm_logsf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.norm.logpdf(x, loc, scale) - ans)
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.norm.logsf)
def _norm_logsf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.norm.logpdf(x, loc, scale) - ans)
    return slope, -slope, -slope * z


@vjp_rule(stats.norm.ppf)
def _norm_ppf(g, ans, q, loc=0.0, scale=1.0):
    z = special.ndtri(q)
    return (
        unbroadcast(g * scale * np.exp(-stats.norm.logpdf(z)), q),
        unbroadcast(g + 0.0 * z, loc),
        unbroadcast(g * z, scale),
    )


@jvp_rule(stats.norm.ppf)
def _norm_ppf_jvp(t, ans, q, loc=0.0, scale=1.0):
    z = special.ndtri(q)
    return (t * scale * np.exp(-stats.norm.logpdf(z)), t + 0.0 * z, t * z)


@vjp_rule(stats.norm.isf)
def _norm_isf(g, ans, q, loc=0.0, scale=1.0):
    z = special.ndtri(q)
    return (
        unbroadcast(-g * scale * np.exp(-stats.norm.logpdf(z)), q),
        unbroadcast(g + 0.0 * z, loc),
        unbroadcast(-g * z, scale),
    )


@jvp_rule(stats.norm.isf)
def _norm_isf_jvp(t, ans, q, loc=0.0, scale=1.0):
    z = special.ndtri(q)
    return (-t * scale * np.exp(-stats.norm.logpdf(z)), t + 0.0 * z, -t * z)


# --------------------------------------------------------------------------------
# scipy.stats.poisson: the distribution function in mu


@vjp_rule(stats.poisson.cdf)
def _poisson_cdf(g, ans, k, mu, loc=0):
    return (
        refuse(_COUNT.format(name="cdf")),
        unbroadcast(-g * stats.poisson.pmf(np.floor(k), mu, loc), mu),
        refuse(_COUNT.format(name="cdf")),
    )


@jvp_rule(stats.poisson.cdf)
def _poisson_cdf_jvp(t, ans, k, mu, loc=0):
    return (
        refuse(_COUNT.format(name="cdf")),
        -t * stats.poisson.pmf(np.floor(k), mu, loc),
        refuse(_COUNT.format(name="cdf")),
    )


@vjp_rule(stats.poisson.logcdf)
def _poisson_logcdf(g, ans, k, mu, loc=0):
    return (
        refuse(_COUNT.format(name="logcdf")),
        unbroadcast(-g * np.exp(stats.poisson.logpmf(np.floor(k), mu, loc) - ans), mu),
        refuse(_COUNT.format(name="logcdf")),
    )


@jvp_rule(stats.poisson.logcdf)
def _poisson_logcdf_jvp(t, ans, k, mu, loc=0):
    return (
        refuse(_COUNT.format(name="logcdf")),
        -t * np.exp(stats.poisson.logpmf(np.floor(k), mu, loc) - ans),
        refuse(_COUNT.format(name="logcdf")),
    )


@vjp_rule(stats.poisson.sf)
def _poisson_sf(g, ans, k, mu, loc=0):
    return (
        refuse(_COUNT.format(name="sf")),
        unbroadcast(g * stats.poisson.pmf(np.floor(k), mu, loc), mu),
        refuse(_COUNT.format(name="sf")),
    )


@jvp_rule(stats.poisson.sf)
def _poisson_sf_jvp(t, ans, k, mu, loc=0):
    return (
        refuse(_COUNT.format(name="sf")),
        t * stats.poisson.pmf(np.floor(k), mu, loc),
        refuse(_COUNT.format(name="sf")),
    )
