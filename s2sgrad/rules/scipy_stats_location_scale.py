"""Rules of the ``scipy.stats`` location-scale families ``cauchy``, ``laplace``,
``logistic``, ``gumbel_r``, ``expon`` and ``uniform``: ``logpdf``, ``pdf``, ``cdf``,
``logcdf``, ``sf`` and ``logsf``, in ``x``, ``loc`` and ``scale``. Loaded with
:mod:`s2sgrad.rules.scipy_stats`.

With ``z = (x - loc) / scale`` and the score ``l'(z)`` of the standardised log-density, the
``logpdf`` has derivatives ``l'(z) / scale``, ``-l'(z) / scale`` and ``-(l'(z) z + 1) / scale``
(``pdf`` is ``pdf`` times these); the ``cdf`` has ``pdf``, ``-pdf`` and ``-pdf z`` (``logcdf``
divides by the ``cdf``, ``sf`` changes the sign, ``logsf`` does both). The scores:

* ``cauchy``: ``-2.0 * z / (1.0 + z**2)``, l(z) = -log(pi (1 + z^2));
* ``laplace``: ``-np.sign(z)``, l(z) = -log 2 - |z|;
* ``logistic``: ``-np.tanh(z / 2.0)``, l(z) = -z - 2 log(1 + e^-z);
* ``gumbel_r``: ``np.exp(-z) - 1.0``, l(z) = -z - e^-z;
* ``expon``: ``np.where(z >= 0, -1.0, 0.0)``, l(z) = -z on z >= 0;
* ``uniform``: ``0.0 * z``, l(z) = 0 on 0 <= z <= 1.

The rules are written with NumPy and these methods themselves, all of which have rules,
so derivatives of any order follow.

Example::

    sg.grad(lambda x: np.sum(stats.cauchy.logpdf(x, 0.5, 2.0)))(np.zeros(2))
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.runtime import unbroadcast

# --------------------------------------------------------------------------------
# scipy.stats.cauchy


@vjp_rule(stats.cauchy.logpdf)
def _cauchy_logpdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -2.0 * z / (1.0 + z**2)
    return (
        unbroadcast(g * score / scale, x),
        unbroadcast(-g * score / scale, loc),
        unbroadcast(-g * (score * z + 1.0) / scale, scale),
    )


@jvp_rule(stats.cauchy.logpdf)
def _cauchy_logpdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -2.0 * z / (1.0 + z**2)
    return (t * score / scale, -t * score / scale, -t * (score * z + 1.0) / scale)


@vjp_rule(stats.cauchy.pdf)
def _cauchy_pdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -2.0 * z / (1.0 + z**2)
    weight = g * ans
    return (
        unbroadcast(weight * score / scale, x),
        unbroadcast(-weight * score / scale, loc),
        unbroadcast(-weight * (score * z + 1.0) / scale, scale),
    )


@jvp_rule(stats.cauchy.pdf)
def _cauchy_pdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -2.0 * z / (1.0 + z**2)
    weight = t * ans
    return (weight * score / scale, -weight * score / scale, -weight * (score * z + 1.0) / scale)


@vjp_rule(stats.cauchy.cdf)
def _cauchy_cdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.cauchy.logpdf(x, loc, scale))
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.cauchy.cdf)
def _cauchy_cdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.cauchy.logpdf(x, loc, scale))
    return slope, -slope, -slope * z


@vjp_rule(stats.cauchy.logcdf)
def _cauchy_logcdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.cauchy.logpdf(x, loc, scale) - ans)
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.cauchy.logcdf)
def _cauchy_logcdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.cauchy.logpdf(x, loc, scale) - ans)
    return slope, -slope, -slope * z


@vjp_rule(stats.cauchy.sf)
def _cauchy_sf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.cauchy.logpdf(x, loc, scale))
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.cauchy.sf)
def _cauchy_sf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.cauchy.logpdf(x, loc, scale))
    return slope, -slope, -slope * z


@vjp_rule(stats.cauchy.logsf)
def _cauchy_logsf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.cauchy.logpdf(x, loc, scale) - ans)
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.cauchy.logsf)
def _cauchy_logsf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.cauchy.logpdf(x, loc, scale) - ans)
    return slope, -slope, -slope * z


# --------------------------------------------------------------------------------
# scipy.stats.laplace


@vjp_rule(stats.laplace.logpdf)
def _laplace_logpdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -np.sign(z)
    return (
        unbroadcast(g * score / scale, x),
        unbroadcast(-g * score / scale, loc),
        unbroadcast(-g * (score * z + 1.0) / scale, scale),
    )


@jvp_rule(stats.laplace.logpdf)
def _laplace_logpdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -np.sign(z)
    return (t * score / scale, -t * score / scale, -t * (score * z + 1.0) / scale)


@vjp_rule(stats.laplace.pdf)
def _laplace_pdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -np.sign(z)
    weight = g * ans
    return (
        unbroadcast(weight * score / scale, x),
        unbroadcast(-weight * score / scale, loc),
        unbroadcast(-weight * (score * z + 1.0) / scale, scale),
    )


@jvp_rule(stats.laplace.pdf)
def _laplace_pdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -np.sign(z)
    weight = t * ans
    return (weight * score / scale, -weight * score / scale, -weight * (score * z + 1.0) / scale)


@vjp_rule(stats.laplace.cdf)
def _laplace_cdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.laplace.logpdf(x, loc, scale))
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.laplace.cdf)
def _laplace_cdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.laplace.logpdf(x, loc, scale))
    return slope, -slope, -slope * z


@vjp_rule(stats.laplace.logcdf)
def _laplace_logcdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.laplace.logpdf(x, loc, scale) - ans)
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.laplace.logcdf)
def _laplace_logcdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.laplace.logpdf(x, loc, scale) - ans)
    return slope, -slope, -slope * z


@vjp_rule(stats.laplace.sf)
def _laplace_sf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.laplace.logpdf(x, loc, scale))
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.laplace.sf)
def _laplace_sf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.laplace.logpdf(x, loc, scale))
    return slope, -slope, -slope * z


@vjp_rule(stats.laplace.logsf)
def _laplace_logsf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.laplace.logpdf(x, loc, scale) - ans)
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.laplace.logsf)
def _laplace_logsf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.laplace.logpdf(x, loc, scale) - ans)
    return slope, -slope, -slope * z


# --------------------------------------------------------------------------------
# scipy.stats.logistic


@vjp_rule(stats.logistic.logpdf)
def _logistic_logpdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -np.tanh(z / 2.0)
    return (
        unbroadcast(g * score / scale, x),
        unbroadcast(-g * score / scale, loc),
        unbroadcast(-g * (score * z + 1.0) / scale, scale),
    )


@jvp_rule(stats.logistic.logpdf)
def _logistic_logpdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -np.tanh(z / 2.0)
    return (t * score / scale, -t * score / scale, -t * (score * z + 1.0) / scale)


@vjp_rule(stats.logistic.pdf)
def _logistic_pdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -np.tanh(z / 2.0)
    weight = g * ans
    return (
        unbroadcast(weight * score / scale, x),
        unbroadcast(-weight * score / scale, loc),
        unbroadcast(-weight * (score * z + 1.0) / scale, scale),
    )


@jvp_rule(stats.logistic.pdf)
def _logistic_pdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -np.tanh(z / 2.0)
    weight = t * ans
    return (weight * score / scale, -weight * score / scale, -weight * (score * z + 1.0) / scale)


@vjp_rule(stats.logistic.cdf)
def _logistic_cdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.logistic.logpdf(x, loc, scale))
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.logistic.cdf)
def _logistic_cdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.logistic.logpdf(x, loc, scale))
    return slope, -slope, -slope * z


@vjp_rule(stats.logistic.logcdf)
def _logistic_logcdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.logistic.logpdf(x, loc, scale) - ans)
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.logistic.logcdf)
def _logistic_logcdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.logistic.logpdf(x, loc, scale) - ans)
    return slope, -slope, -slope * z


@vjp_rule(stats.logistic.sf)
def _logistic_sf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.logistic.logpdf(x, loc, scale))
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.logistic.sf)
def _logistic_sf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.logistic.logpdf(x, loc, scale))
    return slope, -slope, -slope * z


@vjp_rule(stats.logistic.logsf)
def _logistic_logsf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.logistic.logpdf(x, loc, scale) - ans)
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.logistic.logsf)
def _logistic_logsf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.logistic.logpdf(x, loc, scale) - ans)
    return slope, -slope, -slope * z


# --------------------------------------------------------------------------------
# scipy.stats.gumbel_r


@vjp_rule(stats.gumbel_r.logpdf)
def _gumbel_r_logpdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = np.exp(-z) - 1.0
    return (
        unbroadcast(g * score / scale, x),
        unbroadcast(-g * score / scale, loc),
        unbroadcast(-g * (score * z + 1.0) / scale, scale),
    )


@jvp_rule(stats.gumbel_r.logpdf)
def _gumbel_r_logpdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = np.exp(-z) - 1.0
    return (t * score / scale, -t * score / scale, -t * (score * z + 1.0) / scale)


@vjp_rule(stats.gumbel_r.pdf)
def _gumbel_r_pdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = np.exp(-z) - 1.0
    weight = g * ans
    return (
        unbroadcast(weight * score / scale, x),
        unbroadcast(-weight * score / scale, loc),
        unbroadcast(-weight * (score * z + 1.0) / scale, scale),
    )


@jvp_rule(stats.gumbel_r.pdf)
def _gumbel_r_pdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = np.exp(-z) - 1.0
    weight = t * ans
    return (weight * score / scale, -weight * score / scale, -weight * (score * z + 1.0) / scale)


@vjp_rule(stats.gumbel_r.cdf)
def _gumbel_r_cdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.gumbel_r.logpdf(x, loc, scale))
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.gumbel_r.cdf)
def _gumbel_r_cdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.gumbel_r.logpdf(x, loc, scale))
    return slope, -slope, -slope * z


@vjp_rule(stats.gumbel_r.logcdf)
def _gumbel_r_logcdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.gumbel_r.logpdf(x, loc, scale) - ans)
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.gumbel_r.logcdf)
def _gumbel_r_logcdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.gumbel_r.logpdf(x, loc, scale) - ans)
    return slope, -slope, -slope * z


@vjp_rule(stats.gumbel_r.sf)
def _gumbel_r_sf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.gumbel_r.logpdf(x, loc, scale))
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.gumbel_r.sf)
def _gumbel_r_sf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.gumbel_r.logpdf(x, loc, scale))
    return slope, -slope, -slope * z


@vjp_rule(stats.gumbel_r.logsf)
def _gumbel_r_logsf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.gumbel_r.logpdf(x, loc, scale) - ans)
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.gumbel_r.logsf)
def _gumbel_r_logsf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.gumbel_r.logpdf(x, loc, scale) - ans)
    return slope, -slope, -slope * z


# --------------------------------------------------------------------------------
# scipy.stats.expon


@vjp_rule(stats.expon.logpdf)
def _expon_logpdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = np.where(z >= 0, -1.0, 0.0)
    return (
        unbroadcast(g * score / scale, x),
        unbroadcast(-g * score / scale, loc),
        unbroadcast(-g * (score * z + 1.0) / scale, scale),
    )


@jvp_rule(stats.expon.logpdf)
def _expon_logpdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = np.where(z >= 0, -1.0, 0.0)
    return (t * score / scale, -t * score / scale, -t * (score * z + 1.0) / scale)


@vjp_rule(stats.expon.pdf)
def _expon_pdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = np.where(z >= 0, -1.0, 0.0)
    weight = g * ans
    return (
        unbroadcast(weight * score / scale, x),
        unbroadcast(-weight * score / scale, loc),
        unbroadcast(-weight * (score * z + 1.0) / scale, scale),
    )


@jvp_rule(stats.expon.pdf)
def _expon_pdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = np.where(z >= 0, -1.0, 0.0)
    weight = t * ans
    return (weight * score / scale, -weight * score / scale, -weight * (score * z + 1.0) / scale)


@vjp_rule(stats.expon.cdf)
def _expon_cdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.expon.logpdf(x, loc, scale))
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.expon.cdf)
def _expon_cdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.expon.logpdf(x, loc, scale))
    return slope, -slope, -slope * z


@vjp_rule(stats.expon.logcdf)
def _expon_logcdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.expon.logpdf(x, loc, scale) - ans)
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.expon.logcdf)
def _expon_logcdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.expon.logpdf(x, loc, scale) - ans)
    return slope, -slope, -slope * z


@vjp_rule(stats.expon.sf)
def _expon_sf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.expon.logpdf(x, loc, scale))
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.expon.sf)
def _expon_sf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.expon.logpdf(x, loc, scale))
    return slope, -slope, -slope * z


@vjp_rule(stats.expon.logsf)
def _expon_logsf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.expon.logpdf(x, loc, scale) - ans)
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.expon.logsf)
def _expon_logsf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.expon.logpdf(x, loc, scale) - ans)
    return slope, -slope, -slope * z


# --------------------------------------------------------------------------------
# scipy.stats.uniform


@vjp_rule(stats.uniform.logpdf)
def _uniform_logpdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = 0.0 * z
    return (
        unbroadcast(g * score / scale, x),
        unbroadcast(-g * score / scale, loc),
        unbroadcast(-g * (score * z + 1.0) / scale, scale),
    )


@jvp_rule(stats.uniform.logpdf)
def _uniform_logpdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = 0.0 * z
    return (t * score / scale, -t * score / scale, -t * (score * z + 1.0) / scale)


@vjp_rule(stats.uniform.pdf)
def _uniform_pdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = 0.0 * z
    weight = g * ans
    return (
        unbroadcast(weight * score / scale, x),
        unbroadcast(-weight * score / scale, loc),
        unbroadcast(-weight * (score * z + 1.0) / scale, scale),
    )


@jvp_rule(stats.uniform.pdf)
def _uniform_pdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = 0.0 * z
    weight = t * ans
    return (weight * score / scale, -weight * score / scale, -weight * (score * z + 1.0) / scale)


@vjp_rule(stats.uniform.cdf)
def _uniform_cdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.uniform.logpdf(x, loc, scale))
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.uniform.cdf)
def _uniform_cdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.uniform.logpdf(x, loc, scale))
    return slope, -slope, -slope * z


@vjp_rule(stats.uniform.logcdf)
def _uniform_logcdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.uniform.logpdf(x, loc, scale) - ans)
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.uniform.logcdf)
def _uniform_logcdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.uniform.logpdf(x, loc, scale) - ans)
    return slope, -slope, -slope * z


@vjp_rule(stats.uniform.sf)
def _uniform_sf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.uniform.logpdf(x, loc, scale))
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.uniform.sf)
def _uniform_sf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.uniform.logpdf(x, loc, scale))
    return slope, -slope, -slope * z


@vjp_rule(stats.uniform.logsf)
def _uniform_logsf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.uniform.logpdf(x, loc, scale) - ans)
    return unbroadcast(slope, x), unbroadcast(-slope, loc), unbroadcast(-slope * z, scale)


@jvp_rule(stats.uniform.logsf)
def _uniform_logsf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.uniform.logpdf(x, loc, scale) - ans)
    return slope, -slope, -slope * z
