"""Derivative rules of ``scipy.stats``, loaded when ``scipy.stats`` is imported.

The continuous families ``norm``, ``t``, ``beta``, ``gamma`` and ``chi2`` are keyed by their
bound methods (``stats.norm.logpdf``); the parameters mirror SciPy's: the shapes, then
``loc`` and ``scale``. With ``z = (x - loc) / scale`` and the standardised log-density
``l(z)``, ``logpdf = l(z) - log(scale)``, so:

* ``logpdf`` in ``x``, ``loc``, ``scale``: ``l'(z) / scale``, ``-l'(z) / scale`` and
  ``-(l'(z) z + 1) / scale``; in a shape, ``dl/dshape`` (digammas); ``pdf`` is ``pdf``
  times these;
* ``cdf`` in ``x``, ``loc``, ``scale``: ``pdf``, ``-pdf`` and ``-pdf z``; ``logcdf`` divides
  by ``cdf``, ``sf`` changes the sign. In a shape (``t``'s ``df``, ``beta``'s ``a`` and ``b``,
  ``gamma``'s ``a``, ``chi2``'s ``df``) the derivative of a cdf has no closed form and is
  refused when that shape is differentiated.

Every rule is written with NumPy, ``scipy.special`` and these methods themselves (the cdf's
rule calls ``logpdf``), all of which have rules, so derivatives of any order follow.
``poisson``, ``dirichlet`` and ``multivariate_normal`` are in
:mod:`s2sgrad.rules.scipy_stats_multivariate`.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

import s2sgrad.rules.scipy_stats_location_scale  # noqa: F401  (registers its rules)
import s2sgrad.rules.scipy_stats_moments  # noqa: F401  (registers its rules)
import s2sgrad.rules.scipy_stats_multivariate  # noqa: F401  (registers its rules)
import s2sgrad.rules.scipy_stats_quantiles  # noqa: F401  (registers its rules)
import s2sgrad.rules.scipy_stats_shape_quantiles  # noqa: F401  (registers its rules)
import s2sgrad.rules.scipy_stats_shapes  # noqa: F401  (registers its rules)
import s2sgrad.rules.scipy_stats_tails  # noqa: F401  (registers its rules)
from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import unbroadcast

_NO_CLOSED_FORM = (
    "the derivative of scipy.stats.{name} in the shape parameter {shape} has no closed form, "
    "and {shape} is being differentiated here; hold {shape} constant (wrap it in "
    "s2sgrad.stop_gradient), or give the function a derivative of your own with "
    "@s2sgrad.derivative(of=...)"
)

# --------------------------------------------------------------------------------
# scipy.stats.norm


@vjp_rule(stats.norm.logpdf)
def _norm_logpdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -z
    return (
        unbroadcast(g * score / scale, x),
        unbroadcast(-g * score / scale, loc),
        unbroadcast(-g * (score * z + 1) / scale, scale),
    )


@jvp_rule(stats.norm.logpdf)
def _norm_logpdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -z
    return (
        t * score / scale,
        -t * score / scale,
        -t * (score * z + 1) / scale,
    )


@vjp_rule(stats.norm.pdf)
def _norm_pdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -z
    weight = g * ans
    return (
        unbroadcast(weight * score / scale, x),
        unbroadcast(-weight * score / scale, loc),
        unbroadcast(-weight * (score * z + 1) / scale, scale),
    )


@jvp_rule(stats.norm.pdf)
def _norm_pdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -z
    weight = t * ans
    return (
        weight * score / scale,
        -weight * score / scale,
        -weight * (score * z + 1) / scale,
    )


@vjp_rule(stats.norm.cdf)
def _norm_cdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.norm.logpdf(x, loc, scale))
    return (
        unbroadcast(slope, x),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.norm.cdf)
def _norm_cdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.norm.logpdf(x, loc, scale))
    return (
        slope,
        -slope,
        -slope * z,
    )


@vjp_rule(stats.norm.logcdf)
def _norm_logcdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.norm.logpdf(x, loc, scale) - ans)
    return (
        unbroadcast(slope, x),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.norm.logcdf)
def _norm_logcdf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.norm.logpdf(x, loc, scale) - ans)
    return (
        slope,
        -slope,
        -slope * z,
    )


@vjp_rule(stats.norm.sf)
def _norm_sf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.norm.logpdf(x, loc, scale))
    return (
        unbroadcast(slope, x),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.norm.sf)
def _norm_sf_jvp(t, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.norm.logpdf(x, loc, scale))
    return (
        slope,
        -slope,
        -slope * z,
    )


# --------------------------------------------------------------------------------
# scipy.stats.t


@vjp_rule(stats.t.logpdf)
def _t_logpdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -(df + 1) * z / (df + z**2)
    return (
        unbroadcast(g * score / scale, x),
        unbroadcast(
            g
            * (
                (
                    special.psi((df + 1) / 2)
                    - special.psi(df / 2)
                    - 1 / df
                    - np.log1p(z**2 / df)
                    + (df + 1) * z**2 / (df * (df + z**2))
                )
                / 2
            ),
            df,
        ),
        unbroadcast(-g * score / scale, loc),
        unbroadcast(-g * (score * z + 1) / scale, scale),
    )


@jvp_rule(stats.t.logpdf)
def _t_logpdf_jvp(t, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -(df + 1) * z / (df + z**2)
    return (
        t * score / scale,
        t
        * (
            (
                special.psi((df + 1) / 2)
                - special.psi(df / 2)
                - 1 / df
                - np.log1p(z**2 / df)
                + (df + 1) * z**2 / (df * (df + z**2))
            )
            / 2
        ),
        -t * score / scale,
        -t * (score * z + 1) / scale,
    )


@vjp_rule(stats.t.pdf)
def _t_pdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -(df + 1) * z / (df + z**2)
    weight = g * ans
    return (
        unbroadcast(weight * score / scale, x),
        unbroadcast(
            weight
            * (
                (
                    special.psi((df + 1) / 2)
                    - special.psi(df / 2)
                    - 1 / df
                    - np.log1p(z**2 / df)
                    + (df + 1) * z**2 / (df * (df + z**2))
                )
                / 2
            ),
            df,
        ),
        unbroadcast(-weight * score / scale, loc),
        unbroadcast(-weight * (score * z + 1) / scale, scale),
    )


@jvp_rule(stats.t.pdf)
def _t_pdf_jvp(t, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = -(df + 1) * z / (df + z**2)
    weight = t * ans
    return (
        weight * score / scale,
        weight
        * (
            (
                special.psi((df + 1) / 2)
                - special.psi(df / 2)
                - 1 / df
                - np.log1p(z**2 / df)
                + (df + 1) * z**2 / (df * (df + z**2))
            )
            / 2
        ),
        -weight * score / scale,
        -weight * (score * z + 1) / scale,
    )


@vjp_rule(stats.t.cdf)
def _t_cdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.t.logpdf(x, df, loc, scale))
    return (
        unbroadcast(slope, x),
        refuse(_NO_CLOSED_FORM.format(name="t.cdf", shape="df")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.t.cdf)
def _t_cdf_jvp(t, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.t.logpdf(x, df, loc, scale))
    return (
        slope,
        refuse(_NO_CLOSED_FORM.format(name="t.cdf", shape="df")),
        -slope,
        -slope * z,
    )


@vjp_rule(stats.t.logcdf)
def _t_logcdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.t.logpdf(x, df, loc, scale) - ans)
    return (
        unbroadcast(slope, x),
        refuse(_NO_CLOSED_FORM.format(name="t.logcdf", shape="df")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.t.logcdf)
def _t_logcdf_jvp(t, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.t.logpdf(x, df, loc, scale) - ans)
    return (
        slope,
        refuse(_NO_CLOSED_FORM.format(name="t.logcdf", shape="df")),
        -slope,
        -slope * z,
    )


@vjp_rule(stats.t.sf)
def _t_sf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.t.logpdf(x, df, loc, scale))
    return (
        unbroadcast(slope, x),
        refuse(_NO_CLOSED_FORM.format(name="t.sf", shape="df")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.t.sf)
def _t_sf_jvp(t, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.t.logpdf(x, df, loc, scale))
    return (
        slope,
        refuse(_NO_CLOSED_FORM.format(name="t.sf", shape="df")),
        -slope,
        -slope * z,
    )


# --------------------------------------------------------------------------------
# scipy.stats.beta


@vjp_rule(stats.beta.logpdf)
def _beta_logpdf(g, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = (a - 1) / z - (b - 1) / (1 - z)
    return (
        unbroadcast(g * score / scale, x),
        unbroadcast(g * (np.log(z) - special.psi(a) + special.psi(a + b)), a),
        unbroadcast(g * (np.log1p(-z) - special.psi(b) + special.psi(a + b)), b),
        unbroadcast(-g * score / scale, loc),
        unbroadcast(-g * (score * z + 1) / scale, scale),
    )


@jvp_rule(stats.beta.logpdf)
def _beta_logpdf_jvp(t, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = (a - 1) / z - (b - 1) / (1 - z)
    return (
        t * score / scale,
        t * (np.log(z) - special.psi(a) + special.psi(a + b)),
        t * (np.log1p(-z) - special.psi(b) + special.psi(a + b)),
        -t * score / scale,
        -t * (score * z + 1) / scale,
    )


@vjp_rule(stats.beta.pdf)
def _beta_pdf(g, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = (a - 1) / z - (b - 1) / (1 - z)
    weight = g * ans
    return (
        unbroadcast(weight * score / scale, x),
        unbroadcast(weight * (np.log(z) - special.psi(a) + special.psi(a + b)), a),
        unbroadcast(weight * (np.log1p(-z) - special.psi(b) + special.psi(a + b)), b),
        unbroadcast(-weight * score / scale, loc),
        unbroadcast(-weight * (score * z + 1) / scale, scale),
    )


@jvp_rule(stats.beta.pdf)
def _beta_pdf_jvp(t, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = (a - 1) / z - (b - 1) / (1 - z)
    weight = t * ans
    return (
        weight * score / scale,
        weight * (np.log(z) - special.psi(a) + special.psi(a + b)),
        weight * (np.log1p(-z) - special.psi(b) + special.psi(a + b)),
        -weight * score / scale,
        -weight * (score * z + 1) / scale,
    )


@vjp_rule(stats.beta.cdf)
def _beta_cdf(g, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.beta.logpdf(x, a, b, loc, scale))
    return (
        unbroadcast(slope, x),
        refuse(_NO_CLOSED_FORM.format(name="beta.cdf", shape="a")),
        refuse(_NO_CLOSED_FORM.format(name="beta.cdf", shape="b")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.beta.cdf)
def _beta_cdf_jvp(t, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.beta.logpdf(x, a, b, loc, scale))
    return (
        slope,
        refuse(_NO_CLOSED_FORM.format(name="beta.cdf", shape="a")),
        refuse(_NO_CLOSED_FORM.format(name="beta.cdf", shape="b")),
        -slope,
        -slope * z,
    )


@vjp_rule(stats.beta.logcdf)
def _beta_logcdf(g, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.beta.logpdf(x, a, b, loc, scale) - ans)
    return (
        unbroadcast(slope, x),
        refuse(_NO_CLOSED_FORM.format(name="beta.logcdf", shape="a")),
        refuse(_NO_CLOSED_FORM.format(name="beta.logcdf", shape="b")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.beta.logcdf)
def _beta_logcdf_jvp(t, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.beta.logpdf(x, a, b, loc, scale) - ans)
    return (
        slope,
        refuse(_NO_CLOSED_FORM.format(name="beta.logcdf", shape="a")),
        refuse(_NO_CLOSED_FORM.format(name="beta.logcdf", shape="b")),
        -slope,
        -slope * z,
    )


@vjp_rule(stats.beta.sf)
def _beta_sf(g, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.beta.logpdf(x, a, b, loc, scale))
    return (
        unbroadcast(slope, x),
        refuse(_NO_CLOSED_FORM.format(name="beta.sf", shape="a")),
        refuse(_NO_CLOSED_FORM.format(name="beta.sf", shape="b")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.beta.sf)
def _beta_sf_jvp(t, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.beta.logpdf(x, a, b, loc, scale))
    return (
        slope,
        refuse(_NO_CLOSED_FORM.format(name="beta.sf", shape="a")),
        refuse(_NO_CLOSED_FORM.format(name="beta.sf", shape="b")),
        -slope,
        -slope * z,
    )


# --------------------------------------------------------------------------------
# scipy.stats.gamma


@vjp_rule(stats.gamma.logpdf)
def _gamma_logpdf(g, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = (a - 1) / z - 1
    return (
        unbroadcast(g * score / scale, x),
        unbroadcast(g * (np.log(z) - special.psi(a)), a),
        unbroadcast(-g * score / scale, loc),
        unbroadcast(-g * (score * z + 1) / scale, scale),
    )


@jvp_rule(stats.gamma.logpdf)
def _gamma_logpdf_jvp(t, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = (a - 1) / z - 1
    return (
        t * score / scale,
        t * (np.log(z) - special.psi(a)),
        -t * score / scale,
        -t * (score * z + 1) / scale,
    )


@vjp_rule(stats.gamma.pdf)
def _gamma_pdf(g, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = (a - 1) / z - 1
    weight = g * ans
    return (
        unbroadcast(weight * score / scale, x),
        unbroadcast(weight * (np.log(z) - special.psi(a)), a),
        unbroadcast(-weight * score / scale, loc),
        unbroadcast(-weight * (score * z + 1) / scale, scale),
    )


@jvp_rule(stats.gamma.pdf)
def _gamma_pdf_jvp(t, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = (a - 1) / z - 1
    weight = t * ans
    return (
        weight * score / scale,
        weight * (np.log(z) - special.psi(a)),
        -weight * score / scale,
        -weight * (score * z + 1) / scale,
    )


@vjp_rule(stats.gamma.cdf)
def _gamma_cdf(g, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.gamma.logpdf(x, a, loc, scale))
    return (
        unbroadcast(slope, x),
        refuse(_NO_CLOSED_FORM.format(name="gamma.cdf", shape="a")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.gamma.cdf)
def _gamma_cdf_jvp(t, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.gamma.logpdf(x, a, loc, scale))
    return (
        slope,
        refuse(_NO_CLOSED_FORM.format(name="gamma.cdf", shape="a")),
        -slope,
        -slope * z,
    )


@vjp_rule(stats.gamma.logcdf)
def _gamma_logcdf(g, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.gamma.logpdf(x, a, loc, scale) - ans)
    return (
        unbroadcast(slope, x),
        refuse(_NO_CLOSED_FORM.format(name="gamma.logcdf", shape="a")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.gamma.logcdf)
def _gamma_logcdf_jvp(t, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.gamma.logpdf(x, a, loc, scale) - ans)
    return (
        slope,
        refuse(_NO_CLOSED_FORM.format(name="gamma.logcdf", shape="a")),
        -slope,
        -slope * z,
    )


@vjp_rule(stats.gamma.sf)
def _gamma_sf(g, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.gamma.logpdf(x, a, loc, scale))
    return (
        unbroadcast(slope, x),
        refuse(_NO_CLOSED_FORM.format(name="gamma.sf", shape="a")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.gamma.sf)
def _gamma_sf_jvp(t, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.gamma.logpdf(x, a, loc, scale))
    return (
        slope,
        refuse(_NO_CLOSED_FORM.format(name="gamma.sf", shape="a")),
        -slope,
        -slope * z,
    )


# --------------------------------------------------------------------------------
# scipy.stats.chi2


@vjp_rule(stats.chi2.logpdf)
def _chi2_logpdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = (df / 2 - 1) / z - 0.5
    return (
        unbroadcast(g * score / scale, x),
        unbroadcast(g * ((np.log(z / 2) - special.psi(df / 2)) / 2), df),
        unbroadcast(-g * score / scale, loc),
        unbroadcast(-g * (score * z + 1) / scale, scale),
    )


@jvp_rule(stats.chi2.logpdf)
def _chi2_logpdf_jvp(t, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = (df / 2 - 1) / z - 0.5
    return (
        t * score / scale,
        t * ((np.log(z / 2) - special.psi(df / 2)) / 2),
        -t * score / scale,
        -t * (score * z + 1) / scale,
    )


@vjp_rule(stats.chi2.pdf)
def _chi2_pdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = (df / 2 - 1) / z - 0.5
    weight = g * ans
    return (
        unbroadcast(weight * score / scale, x),
        unbroadcast(weight * ((np.log(z / 2) - special.psi(df / 2)) / 2), df),
        unbroadcast(-weight * score / scale, loc),
        unbroadcast(-weight * (score * z + 1) / scale, scale),
    )


@jvp_rule(stats.chi2.pdf)
def _chi2_pdf_jvp(t, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    score = (df / 2 - 1) / z - 0.5
    weight = t * ans
    return (
        weight * score / scale,
        weight * ((np.log(z / 2) - special.psi(df / 2)) / 2),
        -weight * score / scale,
        -weight * (score * z + 1) / scale,
    )


@vjp_rule(stats.chi2.cdf)
def _chi2_cdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.chi2.logpdf(x, df, loc, scale))
    return (
        unbroadcast(slope, x),
        refuse(_NO_CLOSED_FORM.format(name="chi2.cdf", shape="df")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.chi2.cdf)
def _chi2_cdf_jvp(t, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.chi2.logpdf(x, df, loc, scale))
    return (
        slope,
        refuse(_NO_CLOSED_FORM.format(name="chi2.cdf", shape="df")),
        -slope,
        -slope * z,
    )


@vjp_rule(stats.chi2.logcdf)
def _chi2_logcdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(stats.chi2.logpdf(x, df, loc, scale) - ans)
    return (
        unbroadcast(slope, x),
        refuse(_NO_CLOSED_FORM.format(name="chi2.logcdf", shape="df")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.chi2.logcdf)
def _chi2_logcdf_jvp(t, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = t * np.exp(stats.chi2.logpdf(x, df, loc, scale) - ans)
    return (
        slope,
        refuse(_NO_CLOSED_FORM.format(name="chi2.logcdf", shape="df")),
        -slope,
        -slope * z,
    )


@vjp_rule(stats.chi2.sf)
def _chi2_sf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -g * np.exp(stats.chi2.logpdf(x, df, loc, scale))
    return (
        unbroadcast(slope, x),
        refuse(_NO_CLOSED_FORM.format(name="chi2.sf", shape="df")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * z, scale),
    )


@jvp_rule(stats.chi2.sf)
def _chi2_sf_jvp(t, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = -t * np.exp(stats.chi2.logpdf(x, df, loc, scale))
    return (
        slope,
        refuse(_NO_CLOSED_FORM.format(name="chi2.sf", shape="df")),
        -slope,
        -slope * z,
    )
