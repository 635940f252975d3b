"""Rules of ``scipy.stats`` distributions with a shape parameter: ``lognorm`` and
``weibull_min`` (``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` in ``x``, the
shape, ``loc`` and ``scale``) and ``binom`` (``logpmf``, ``pmf``, ``cdf``, ``logcdf``,
``sf``, ``logsf`` in ``p``). Loaded with :mod:`s2sgrad.rules.scipy_stats`.

* ``lognorm(s)``: with ``w = log((x - loc) / scale)``, ``logpdf = -log(s) - log(x - loc) -
  log(2 pi) / 2 - w**2 / (2 s**2)``, and the distribution functions are the normal's of
  ``u = w / s``: their slope is ``pdf_normal(u)`` times that of ``u`` (``1 / (s (x - loc))``
  in ``x``, ``-u / s`` in ``s``, ``-1 / (s scale)`` in ``scale``), divided by ``cdf`` or
  ``sf`` for their logarithms.
* ``weibull_min(c)``: with ``z = (x - loc) / scale``, ``logsf = -z**c`` and ``logpdf =
  log(c) + (c - 1) log(z) - z**c - log(scale)``; ``sf``, ``cdf = 1 - sf`` and ``logcdf`` follow
  from ``logsf``'s slopes.
* ``binom(n, p)``: ``logpmf`` has slope ``k / p - (n - k) / (1 - p)`` in ``p`` and ``cdf(k)``
  has ``-n pmf(floor(k), n - 1, p)``; the count ``k``, the number of trials ``n`` and the
  shift ``loc`` are integers, refused when differentiated.

Below ``loc`` (``x <= loc``) the densities are 0 and the distribution functions constant:
the slopes there are 0. The bodies are made of NumPy, ``scipy.special`` and ``scipy.stats``
functions with rules, so derivatives of any order follow.

Example::

    sg.grad(lambda s: stats.lognorm.logpdf(1.5, s))(0.7)
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import unbroadcast

_HALF_LOG_TAU = 0.5 * np.log(2.0 * np.pi)
_BINOM_INTEGERS = (
    "scipy.stats.binom: the count k, the number of trials n and the shift loc are integers, "
    "which have no derivative; s2sgrad differentiates binom's functions in p"
)

# --------------------------------------------------------------------------------
# scipy.stats.lognorm(s): the log of x - loc, over scale, is normal with deviation s


@vjp_rule(stats.lognorm.logpdf)
def _lognorm_logpdf(g, ans, x, s, loc=0.0, scale=1.0):
    shifted = x - loc
    inside = shifted > 0.0
    safe = np.where(inside, shifted, 1.0)
    w = np.log(safe / scale)
    slope = np.where(inside, -(1.0 + w / s**2) / safe, 0.0)
    return (
        unbroadcast(g * slope, x),
        unbroadcast(g * np.where(inside, w**2 / s**3 - 1.0 / s, 0.0), s),
        unbroadcast(-g * slope, loc),
        unbroadcast(g * np.where(inside, w / (s**2 * scale), 0.0), scale),
    )


@jvp_rule(stats.lognorm.logpdf)
def _lognorm_logpdf_jvp(t, ans, x, s, loc=0.0, scale=1.0):
    shifted = x - loc
    inside = shifted > 0.0
    safe = np.where(inside, shifted, 1.0)
    w = np.log(safe / scale)
    slope = np.where(inside, -(1.0 + w / s**2) / safe, 0.0)
    return (
        t * slope,
        t * np.where(inside, w**2 / s**3 - 1.0 / s, 0.0),
        -t * slope,
        t * np.where(inside, w / (s**2 * scale), 0.0),
    )


@vjp_rule(stats.lognorm.pdf)
def _lognorm_pdf(g, ans, x, s, loc=0.0, scale=1.0):
    shifted = x - loc
    inside = shifted > 0.0
    safe = np.where(inside, shifted, 1.0)
    w = np.log(safe / scale)
    slope = np.where(inside, -(1.0 + w / s**2) / safe, 0.0)
    weighted = g * ans
    return (
        unbroadcast(weighted * slope, x),
        unbroadcast(weighted * np.where(inside, w**2 / s**3 - 1.0 / s, 0.0), s),
        unbroadcast(-weighted * slope, loc),
        unbroadcast(weighted * np.where(inside, w / (s**2 * scale), 0.0), scale),
    )


@jvp_rule(stats.lognorm.pdf)
def _lognorm_pdf_jvp(t, ans, x, s, loc=0.0, scale=1.0):
    shifted = x - loc
    inside = shifted > 0.0
    safe = np.where(inside, shifted, 1.0)
    w = np.log(safe / scale)
    slope = np.where(inside, -(1.0 + w / s**2) / safe, 0.0)
    return (
        t * ans * slope,
        t * ans * np.where(inside, w**2 / s**3 - 1.0 / s, 0.0),
        -t * ans * slope,
        t * ans * np.where(inside, w / (s**2 * scale), 0.0),
    )


@vjp_rule(stats.lognorm.cdf)
def _lognorm_cdf(g, ans, x, s, loc=0.0, scale=1.0):
    shifted = x - loc
    inside = shifted > 0.0
    safe = np.where(inside, shifted, 1.0)
    u = np.log(safe / scale) / s
    weighted = np.where(inside, g * np.exp(-0.5 * u**2 - _HALF_LOG_TAU), 0.0)
    return (
        unbroadcast(weighted / (s * safe), x),
        unbroadcast(-weighted * u / s, s),
        unbroadcast(-weighted / (s * safe), loc),
        unbroadcast(-weighted / (s * scale), scale),
    )


@jvp_rule(stats.lognorm.cdf)
def _lognorm_cdf_jvp(t, ans, x, s, loc=0.0, scale=1.0):
    shifted = x - loc
    inside = shifted > 0.0
    safe = np.where(inside, shifted, 1.0)
    u = np.log(safe / scale) / s
    density = np.where(inside, np.exp(-0.5 * u**2 - _HALF_LOG_TAU), 0.0)
    return (
        t * density / (s * safe),
        -t * density * u / s,
        -t * density / (s * safe),
        -t * density / (s * scale),
    )


@vjp_rule(stats.lognorm.sf)
def _lognorm_sf(g, ans, x, s, loc=0.0, scale=1.0):
    shifted = x - loc
    inside = shifted > 0.0
    safe = np.where(inside, shifted, 1.0)
    u = np.log(safe / scale) / s
    weighted = np.where(inside, -g * np.exp(-0.5 * u**2 - _HALF_LOG_TAU), 0.0)
    return (
        unbroadcast(weighted / (s * safe), x),
        unbroadcast(-weighted * u / s, s),
        unbroadcast(-weighted / (s * safe), loc),
        unbroadcast(-weighted / (s * scale), scale),
    )


@jvp_rule(stats.lognorm.sf)
def _lognorm_sf_jvp(t, ans, x, s, loc=0.0, scale=1.0):
    shifted = x - loc
    inside = shifted > 0.0
    safe = np.where(inside, shifted, 1.0)
    u = np.log(safe / scale) / s
    density = np.where(inside, -np.exp(-0.5 * u**2 - _HALF_LOG_TAU), 0.0)
    return (
        t * density / (s * safe),
        -t * density * u / s,
        -t * density / (s * safe),
        -t * density / (s * scale),
    )


@vjp_rule(stats.lognorm.logcdf)
def _lognorm_logcdf(g, ans, x, s, loc=0.0, scale=1.0):
    shifted = x - loc
    inside = shifted > 0.0
    safe = np.where(inside, shifted, 1.0)
    u = np.log(safe / scale) / s
    weighted = np.where(inside, g * np.exp(-0.5 * u**2 - _HALF_LOG_TAU - special.log_ndtr(u)), 0.0)
    return (
        unbroadcast(weighted / (s * safe), x),
        unbroadcast(-weighted * u / s, s),
        unbroadcast(-weighted / (s * safe), loc),
        unbroadcast(-weighted / (s * scale), scale),
    )


@jvp_rule(stats.lognorm.logcdf)
def _lognorm_logcdf_jvp(t, ans, x, s, loc=0.0, scale=1.0):
    shifted = x - loc
    inside = shifted > 0.0
    safe = np.where(inside, shifted, 1.0)
    u = np.log(safe / scale) / s
    ratio = np.where(inside, np.exp(-0.5 * u**2 - _HALF_LOG_TAU - special.log_ndtr(u)), 0.0)
    return (
        t * ratio / (s * safe),
        -t * ratio * u / s,
        -t * ratio / (s * safe),
        -t * ratio / (s * scale),
    )


@vjp_rule(stats.lognorm.logsf)
def _lognorm_logsf(g, ans, x, s, loc=0.0, scale=1.0):
    shifted = x - loc
    inside = shifted > 0.0
    safe = np.where(inside, shifted, 1.0)
    u = np.log(safe / scale) / s
    weighted = np.where(
        inside, -g * np.exp(-0.5 * u**2 - _HALF_LOG_TAU - special.log_ndtr(-u)), 0.0
    )
    return (
        unbroadcast(weighted / (s * safe), x),
        unbroadcast(-weighted * u / s, s),
        unbroadcast(-weighted / (s * safe), loc),
        unbroadcast(-weighted / (s * scale), scale),
    )


@jvp_rule(stats.lognorm.logsf)
def _lognorm_logsf_jvp(t, ans, x, s, loc=0.0, scale=1.0):
    shifted = x - loc
    inside = shifted > 0.0
    safe = np.where(inside, shifted, 1.0)
    u = np.log(safe / scale) / s
    ratio = np.where(inside, -np.exp(-0.5 * u**2 - _HALF_LOG_TAU - special.log_ndtr(-u)), 0.0)
    return (
        t * ratio / (s * safe),
        -t * ratio * u / s,
        -t * ratio / (s * safe),
        -t * ratio / (s * scale),
    )


# --------------------------------------------------------------------------------
# scipy.stats.weibull_min(c): logsf = -z**c with z = (x - loc) / scale


@vjp_rule(stats.weibull_min.logpdf)
def _weibull_logpdf(g, ans, x, c, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z > 0.0
    safe = np.where(inside, z, 1.0)
    power = safe**c
    slope = np.where(inside, ((c - 1.0) - c * power) / (safe * scale), 0.0)
    return (
        unbroadcast(g * slope, x),
        unbroadcast(g * np.where(inside, 1.0 / c + np.log(safe) * (1.0 - power), 0.0), c),
        unbroadcast(-g * slope, loc),
        unbroadcast(g * np.where(inside, c * (power - 1.0) / scale, 0.0), scale),
    )


@jvp_rule(stats.weibull_min.logpdf)
def _weibull_logpdf_jvp(t, ans, x, c, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z > 0.0
    safe = np.where(inside, z, 1.0)
    power = safe**c
    slope = np.where(inside, ((c - 1.0) - c * power) / (safe * scale), 0.0)
    return (
        t * slope,
        t * np.where(inside, 1.0 / c + np.log(safe) * (1.0 - power), 0.0),
        -t * slope,
        t * np.where(inside, c * (power - 1.0) / scale, 0.0),
    )


@vjp_rule(stats.weibull_min.pdf)
def _weibull_pdf(g, ans, x, c, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z > 0.0
    safe = np.where(inside, z, 1.0)
    power = safe**c
    weighted = g * ans
    slope = np.where(inside, ((c - 1.0) - c * power) / (safe * scale), 0.0)
    return (
        unbroadcast(weighted * slope, x),
        unbroadcast(weighted * np.where(inside, 1.0 / c + np.log(safe) * (1.0 - power), 0.0), c),
        unbroadcast(-weighted * slope, loc),
        unbroadcast(weighted * np.where(inside, c * (power - 1.0) / scale, 0.0), scale),
    )


@jvp_rule(stats.weibull_min.pdf)
def _weibull_pdf_jvp(t, ans, x, c, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z > 0.0
    safe = np.where(inside, z, 1.0)
    power = safe**c
    slope = np.where(inside, ((c - 1.0) - c * power) / (safe * scale), 0.0)
    return (
        t * ans * slope,
        t * ans * np.where(inside, 1.0 / c + np.log(safe) * (1.0 - power), 0.0),
        -t * ans * slope,
        t * ans * np.where(inside, c * (power - 1.0) / scale, 0.0),
    )


@vjp_rule(stats.weibull_min.logsf)
def _weibull_logsf(g, ans, x, c, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z > 0.0
    safe = np.where(inside, z, 1.0)
    weighted = np.where(inside, -g * safe**c, 0.0)
    return (
        unbroadcast(weighted * c / (safe * scale), x),
        unbroadcast(weighted * np.log(safe), c),
        unbroadcast(-weighted * c / (safe * scale), loc),
        unbroadcast(-weighted * c / scale, scale),
    )


@jvp_rule(stats.weibull_min.logsf)
def _weibull_logsf_jvp(t, ans, x, c, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z > 0.0
    safe = np.where(inside, z, 1.0)
    power = np.where(inside, -(safe**c), 0.0)
    return (
        t * power * c / (safe * scale),
        t * power * np.log(safe),
        -t * power * c / (safe * scale),
        -t * power * c / scale,
    )


@vjp_rule(stats.weibull_min.sf)
def _weibull_sf(g, ans, x, c, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z > 0.0
    safe = np.where(inside, z, 1.0)
    weighted = np.where(inside, -g * ans * safe**c, 0.0)
    return (
        unbroadcast(weighted * c / (safe * scale), x),
        unbroadcast(weighted * np.log(safe), c),
        unbroadcast(-weighted * c / (safe * scale), loc),
        unbroadcast(-weighted * c / scale, scale),
    )


@jvp_rule(stats.weibull_min.sf)
def _weibull_sf_jvp(t, ans, x, c, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z > 0.0
    safe = np.where(inside, z, 1.0)
    power = np.where(inside, -ans * safe**c, 0.0)
    return (
        t * power * c / (safe * scale),
        t * power * np.log(safe),
        -t * power * c / (safe * scale),
        -t * power * c / scale,
    )


@vjp_rule(stats.weibull_min.cdf)
def _weibull_cdf(g, ans, x, c, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z > 0.0
    safe = np.where(inside, z, 1.0)
    power = safe**c
    weighted = np.where(inside, g * np.exp(-power) * power, 0.0)
    return (
        unbroadcast(weighted * c / (safe * scale), x),
        unbroadcast(weighted * np.log(safe), c),
        unbroadcast(-weighted * c / (safe * scale), loc),
        unbroadcast(-weighted * c / scale, scale),
    )


@jvp_rule(stats.weibull_min.cdf)
def _weibull_cdf_jvp(t, ans, x, c, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z > 0.0
    safe = np.where(inside, z, 1.0)
    power = safe**c
    density = np.where(inside, np.exp(-power) * power, 0.0)
    return (
        t * density * c / (safe * scale),
        t * density * np.log(safe),
        -t * density * c / (safe * scale),
        -t * density * c / scale,
    )


@vjp_rule(stats.weibull_min.logcdf)
def _weibull_logcdf(g, ans, x, c, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z > 0.0
    safe = np.where(inside, z, 1.0)
    power = safe**c
    weighted = np.where(inside, g * power / np.expm1(power), 0.0)
    return (
        unbroadcast(weighted * c / (safe * scale), x),
        unbroadcast(weighted * np.log(safe), c),
        unbroadcast(-weighted * c / (safe * scale), loc),
        unbroadcast(-weighted * c / scale, scale),
    )


@jvp_rule(stats.weibull_min.logcdf)
def _weibull_logcdf_jvp(t, ans, x, c, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z > 0.0
    safe = np.where(inside, z, 1.0)
    power = safe**c
    ratio = np.where(inside, power / np.expm1(power), 0.0)
    return (
        t * ratio * c / (safe * scale),
        t * ratio * np.log(safe),
        -t * ratio * c / (safe * scale),
        -t * ratio * c / scale,
    )


# --------------------------------------------------------------------------------
# scipy.stats.binom(n, p): in the success probability p


@vjp_rule(stats.binom.logpmf)
def _binom_logpmf(g, ans, k, n, p, loc=0):
    count = k - loc
    return (
        refuse(_BINOM_INTEGERS),
        refuse(_BINOM_INTEGERS),
        unbroadcast(g * (count / p - (n - count) / (1.0 - p)), p),
        refuse(_BINOM_INTEGERS),
    )


@jvp_rule(stats.binom.logpmf)
def _binom_logpmf_jvp(t, ans, k, n, p, loc=0):
    return (
        refuse(_BINOM_INTEGERS),
        refuse(_BINOM_INTEGERS),
        t * ((k - loc) / p - (n - k + loc) / (1.0 - p)),
        refuse(_BINOM_INTEGERS),
    )


@vjp_rule(stats.binom.pmf)
def _binom_pmf(g, ans, k, n, p, loc=0):
    count = k - loc
    return (
        refuse(_BINOM_INTEGERS),
        refuse(_BINOM_INTEGERS),
        unbroadcast(g * ans * (count / p - (n - count) / (1.0 - p)), p),
        refuse(_BINOM_INTEGERS),
    )


@jvp_rule(stats.binom.pmf)
def _binom_pmf_jvp(t, ans, k, n, p, loc=0):
    return (
        refuse(_BINOM_INTEGERS),
        refuse(_BINOM_INTEGERS),
        t * ans * ((k - loc) / p - (n - k + loc) / (1.0 - p)),
        refuse(_BINOM_INTEGERS),
    )


@vjp_rule(stats.binom.cdf)
def _binom_cdf(g, ans, k, n, p, loc=0):
    return (
        refuse(_BINOM_INTEGERS),
        refuse(_BINOM_INTEGERS),
        unbroadcast(-g * n * stats.binom.pmf(np.floor(k), n - 1, p, loc), p),
        refuse(_BINOM_INTEGERS),
    )


@jvp_rule(stats.binom.cdf)
def _binom_cdf_jvp(t, ans, k, n, p, loc=0):
    return (
        refuse(_BINOM_INTEGERS),
        refuse(_BINOM_INTEGERS),
        -t * n * stats.binom.pmf(np.floor(k), n - 1, p, loc),
        refuse(_BINOM_INTEGERS),
    )


@vjp_rule(stats.binom.sf)
def _binom_sf(g, ans, k, n, p, loc=0):
    return (
        refuse(_BINOM_INTEGERS),
        refuse(_BINOM_INTEGERS),
        unbroadcast(g * n * stats.binom.pmf(np.floor(k), n - 1, p, loc), p),
        refuse(_BINOM_INTEGERS),
    )


@jvp_rule(stats.binom.sf)
def _binom_sf_jvp(t, ans, k, n, p, loc=0):
    return (
        refuse(_BINOM_INTEGERS),
        refuse(_BINOM_INTEGERS),
        t * n * stats.binom.pmf(np.floor(k), n - 1, p, loc),
        refuse(_BINOM_INTEGERS),
    )


@vjp_rule(stats.binom.logcdf)
def _binom_logcdf(g, ans, k, n, p, loc=0):
    return (
        refuse(_BINOM_INTEGERS),
        refuse(_BINOM_INTEGERS),
        unbroadcast(-g * n * stats.binom.pmf(np.floor(k), n - 1, p, loc) / np.exp(ans), p),
        refuse(_BINOM_INTEGERS),
    )


@jvp_rule(stats.binom.logcdf)
def _binom_logcdf_jvp(t, ans, k, n, p, loc=0):
    return (
        refuse(_BINOM_INTEGERS),
        refuse(_BINOM_INTEGERS),
        -t * n * stats.binom.pmf(np.floor(k), n - 1, p, loc) / np.exp(ans),
        refuse(_BINOM_INTEGERS),
    )


@vjp_rule(stats.binom.logsf)
def _binom_logsf(g, ans, k, n, p, loc=0):
    return (
        refuse(_BINOM_INTEGERS),
        refuse(_BINOM_INTEGERS),
        unbroadcast(g * n * stats.binom.pmf(np.floor(k), n - 1, p, loc) / np.exp(ans), p),
        refuse(_BINOM_INTEGERS),
    )


@jvp_rule(stats.binom.logsf)
def _binom_logsf_jvp(t, ans, k, n, p, loc=0):
    return (
        refuse(_BINOM_INTEGERS),
        refuse(_BINOM_INTEGERS),
        t * n * stats.binom.pmf(np.floor(k), n - 1, p, loc) / np.exp(ans),
        refuse(_BINOM_INTEGERS),
    )
