"""The quantile functions ``ppf`` and ``isf`` and the log survival function ``logsf`` of
``scipy.stats``' ``t``, ``beta``, ``gamma`` and ``chi2``, in ``q`` (``x``), ``loc`` and
``scale``; the shape parameters are refused (no closed form). Loaded with
:mod:`s2sgrad.rules.scipy_stats`.

``ppf(q) = loc + scale z(q)`` inverts the ``cdf``: its slope in ``q`` is ``1 / pdf(ppf(q))``,
in ``loc`` 1 and in ``scale`` ``(ppf(q) - loc) / scale``; ``isf(q) = ppf(1 - q)`` has the
opposite slope in ``q``. ``logsf`` has slope ``-pdf / sf = -exp(logpdf - logsf)`` in ``x``,
its opposite in ``loc``, and that times ``(x - loc) / scale`` in ``scale``. The rules are
written with each distribution's ``pdf`` and ``logpdf``, which have rules in every argument,
so derivatives of any order follow.

Example::

    sg.grad(lambda q: np.sum(stats.gamma.ppf(q, 2.5)))(np.array([0.2, 0.7]))
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import unbroadcast

_SHAPE_REFUSED = (
    "the derivative of scipy.stats.{name} in the shape parameter {shape} has no closed form, "
    "and {shape} is being differentiated here; hold {shape} constant (wrap it in "
    "s2sgrad.stop_gradient), or give the function a derivative of your own with "
    "@s2sgrad.derivative(of=...)"
)

# --------------------------------------------------------------------------------
# scipy.stats.t


@vjp_rule(stats.t.ppf)
def _t_ppf(g, ans, q, df, loc=0.0, scale=1.0):
    slope = 1.0 / stats.t.pdf(ans, df, loc, scale)
    return (
        unbroadcast(g * slope, q),
        refuse(_SHAPE_REFUSED.format(name="t.ppf", shape="df")),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.t.ppf)
def _t_ppf_jvp(t, ans, q, df, loc=0.0, scale=1.0):
    return (
        t * 1.0 / stats.t.pdf(ans, df, loc, scale),
        refuse(_SHAPE_REFUSED.format(name="t.ppf", shape="df")),
        t + 0.0 * ans,
        t * (ans - loc) / scale,
    )


@vjp_rule(stats.t.isf)
def _t_isf(g, ans, q, df, loc=0.0, scale=1.0):
    slope = -1.0 / stats.t.pdf(ans, df, loc, scale)
    return (
        unbroadcast(g * slope, q),
        refuse(_SHAPE_REFUSED.format(name="t.isf", shape="df")),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.t.isf)
def _t_isf_jvp(t, ans, q, df, loc=0.0, scale=1.0):
    return (
        t * -1.0 / stats.t.pdf(ans, df, loc, scale),
        refuse(_SHAPE_REFUSED.format(name="t.isf", shape="df")),
        t + 0.0 * ans,
        t * (ans - loc) / scale,
    )


@vjp_rule(stats.t.logsf)
def _t_logsf(g, ans, x, df, loc=0.0, scale=1.0):
    slope = -g * np.exp(stats.t.logpdf(x, df, loc, scale) - ans)
    return (
        unbroadcast(slope, x),
        refuse(_SHAPE_REFUSED.format(name="t.logsf", shape="df")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * (x - loc) / scale, scale),
    )


@jvp_rule(stats.t.logsf)
def _t_logsf_jvp(t, ans, x, df, loc=0.0, scale=1.0):
    slope = -np.exp(stats.t.logpdf(x, df, loc, scale) - ans)
    return (
        t * slope,
        refuse(_SHAPE_REFUSED.format(name="t.logsf", shape="df")),
        -t * slope,
        -t * slope * (x - loc) / scale,
    )


# --------------------------------------------------------------------------------
# scipy.stats.beta


@vjp_rule(stats.beta.ppf)
def _beta_ppf(g, ans, q, a, b, loc=0.0, scale=1.0):
    slope = 1.0 / stats.beta.pdf(ans, a, b, loc, scale)
    return (
        unbroadcast(g * slope, q),
        refuse(_SHAPE_REFUSED.format(name="beta.ppf", shape="a")),
        refuse(_SHAPE_REFUSED.format(name="beta.ppf", shape="b")),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.beta.ppf)
def _beta_ppf_jvp(t, ans, q, a, b, loc=0.0, scale=1.0):
    return (
        t * 1.0 / stats.beta.pdf(ans, a, b, loc, scale),
        refuse(_SHAPE_REFUSED.format(name="beta.ppf", shape="a")),
        refuse(_SHAPE_REFUSED.format(name="beta.ppf", shape="b")),
        t + 0.0 * ans,
        t * (ans - loc) / scale,
    )


@vjp_rule(stats.beta.isf)
def _beta_isf(g, ans, q, a, b, loc=0.0, scale=1.0):
    slope = -1.0 / stats.beta.pdf(ans, a, b, loc, scale)
    return (
        unbroadcast(g * slope, q),
        refuse(_SHAPE_REFUSED.format(name="beta.isf", shape="a")),
        refuse(_SHAPE_REFUSED.format(name="beta.isf", shape="b")),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.beta.isf)
def _beta_isf_jvp(t, ans, q, a, b, loc=0.0, scale=1.0):
    return (
        t * -1.0 / stats.beta.pdf(ans, a, b, loc, scale),
        refuse(_SHAPE_REFUSED.format(name="beta.isf", shape="a")),
        refuse(_SHAPE_REFUSED.format(name="beta.isf", shape="b")),
        t + 0.0 * ans,
        t * (ans - loc) / scale,
    )


@vjp_rule(stats.beta.logsf)
def _beta_logsf(g, ans, x, a, b, loc=0.0, scale=1.0):
    slope = -g * np.exp(stats.beta.logpdf(x, a, b, loc, scale) - ans)
    return (
        unbroadcast(slope, x),
        refuse(_SHAPE_REFUSED.format(name="beta.logsf", shape="a")),
        refuse(_SHAPE_REFUSED.format(name="beta.logsf", shape="b")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * (x - loc) / scale, scale),
    )


@jvp_rule(stats.beta.logsf)
def _beta_logsf_jvp(t, ans, x, a, b, loc=0.0, scale=1.0):
    slope = -np.exp(stats.beta.logpdf(x, a, b, loc, scale) - ans)
    return (
        t * slope,
        refuse(_SHAPE_REFUSED.format(name="beta.logsf", shape="a")),
        refuse(_SHAPE_REFUSED.format(name="beta.logsf", shape="b")),
        -t * slope,
        -t * slope * (x - loc) / scale,
    )


# --------------------------------------------------------------------------------
# scipy.stats.gamma


@vjp_rule(stats.gamma.ppf)
def _gamma_ppf(g, ans, q, a, loc=0.0, scale=1.0):
    slope = 1.0 / stats.gamma.pdf(ans, a, loc, scale)
    return (
        unbroadcast(g * slope, q),
        refuse(_SHAPE_REFUSED.format(name="gamma.ppf", shape="a")),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.gamma.ppf)
def _gamma_ppf_jvp(t, ans, q, a, loc=0.0, scale=1.0):
    return (
        t * 1.0 / stats.gamma.pdf(ans, a, loc, scale),
        refuse(_SHAPE_REFUSED.format(name="gamma.ppf", shape="a")),
        t + 0.0 * ans,
        t * (ans - loc) / scale,
    )


@vjp_rule(stats.gamma.isf)
def _gamma_isf(g, ans, q, a, loc=0.0, scale=1.0):
    slope = -1.0 / stats.gamma.pdf(ans, a, loc, scale)
    return (
        unbroadcast(g * slope, q),
        refuse(_SHAPE_REFUSED.format(name="gamma.isf", shape="a")),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.gamma.isf)
def _gamma_isf_jvp(t, ans, q, a, loc=0.0, scale=1.0):
    return (
        t * -1.0 / stats.gamma.pdf(ans, a, loc, scale),
        refuse(_SHAPE_REFUSED.format(name="gamma.isf", shape="a")),
        t + 0.0 * ans,
        t * (ans - loc) / scale,
    )


@vjp_rule(stats.gamma.logsf)
def _gamma_logsf(g, ans, x, a, loc=0.0, scale=1.0):
    slope = -g * np.exp(stats.gamma.logpdf(x, a, loc, scale) - ans)
    return (
        unbroadcast(slope, x),
        refuse(_SHAPE_REFUSED.format(name="gamma.logsf", shape="a")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * (x - loc) / scale, scale),
    )


@jvp_rule(stats.gamma.logsf)
def _gamma_logsf_jvp(t, ans, x, a, loc=0.0, scale=1.0):
    slope = -np.exp(stats.gamma.logpdf(x, a, loc, scale) - ans)
    return (
        t * slope,
        refuse(_SHAPE_REFUSED.format(name="gamma.logsf", shape="a")),
        -t * slope,
        -t * slope * (x - loc) / scale,
    )


# --------------------------------------------------------------------------------
# scipy.stats.chi2


@vjp_rule(stats.chi2.ppf)
def _chi2_ppf(g, ans, q, df, loc=0.0, scale=1.0):
    slope = 1.0 / stats.chi2.pdf(ans, df, loc, scale)
    return (
        unbroadcast(g * slope, q),
        refuse(_SHAPE_REFUSED.format(name="chi2.ppf", shape="df")),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.chi2.ppf)
def _chi2_ppf_jvp(t, ans, q, df, loc=0.0, scale=1.0):
    return (
        t * 1.0 / stats.chi2.pdf(ans, df, loc, scale),
        refuse(_SHAPE_REFUSED.format(name="chi2.ppf", shape="df")),
        t + 0.0 * ans,
        t * (ans - loc) / scale,
    )


@vjp_rule(stats.chi2.isf)
def _chi2_isf(g, ans, q, df, loc=0.0, scale=1.0):
    slope = -1.0 / stats.chi2.pdf(ans, df, loc, scale)
    return (
        unbroadcast(g * slope, q),
        refuse(_SHAPE_REFUSED.format(name="chi2.isf", shape="df")),
        unbroadcast(g, loc),
        unbroadcast(g * (ans - loc) / scale, scale),
    )


@jvp_rule(stats.chi2.isf)
def _chi2_isf_jvp(t, ans, q, df, loc=0.0, scale=1.0):
    return (
        t * -1.0 / stats.chi2.pdf(ans, df, loc, scale),
        refuse(_SHAPE_REFUSED.format(name="chi2.isf", shape="df")),
        t + 0.0 * ans,
        t * (ans - loc) / scale,
    )


@vjp_rule(stats.chi2.logsf)
def _chi2_logsf(g, ans, x, df, loc=0.0, scale=1.0):
    slope = -g * np.exp(stats.chi2.logpdf(x, df, loc, scale) - ans)
    return (
        unbroadcast(slope, x),
        refuse(_SHAPE_REFUSED.format(name="chi2.logsf", shape="df")),
        unbroadcast(-slope, loc),
        unbroadcast(-slope * (x - loc) / scale, scale),
    )


@jvp_rule(stats.chi2.logsf)
def _chi2_logsf_jvp(t, ans, x, df, loc=0.0, scale=1.0):
    slope = -np.exp(stats.chi2.logpdf(x, df, loc, scale) - ans)
    return (
        t * slope,
        refuse(_SHAPE_REFUSED.format(name="chi2.logsf", shape="df")),
        -t * slope,
        -t * slope * (x - loc) / scale,
    )
