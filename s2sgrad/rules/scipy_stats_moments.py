"""Rules of ``scipy.stats``' sample statistics built from central moments: ``zscore``,
``skew``, ``kurtosis``, ``variation`` and ``sem``. Loaded with :mod:`s2sgrad.rules.scipy_stats`.

With ``d = a - mean(a)`` along the axis and ``m_k = mean(d ** k)`` over ``n`` values,
``dm_k/da = k/n (d ** (k-1) - m_(k-1))`` (``m_1 = 0``), and each statistic is a
function of a few moments: ``skew = m3 / m2 ** 1.5``, ``kurtosis = m4 / m2 ** 2`` (less 3
for Fisher's), their unbiased forms affine in those, ``variation = std / mean``,
``sem = std / sqrt(n)``; ``zscore = d / std`` has the layer norm's derivative. Each rule
is written with NumPy functions that have rules, so every order follows. ``n`` is the
count of values reduced (``a.size // ans.size``, any ``axis``, ``keepdims`` or not).
``nan_policy='omit'`` (which drops values as the data decides) is refused.

Example::

    sg.grad(lambda x: stats.skew(x))(np.array([0.5, 1.2, 0.7, -0.3]))
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.rules.scipy_common import refuse

_OMITTED = (
    "scipy.stats.{name} with nan_policy='omit' drops the values that are nan, which the "
    "derivative cannot follow; remove them first (a[~np.isnan(a)]) or keep "
    "nan_policy='propagate'"
)


@vjp_rule(stats.zscore)
def _zscore(g, ans, a, axis=0, ddof=0, nan_policy="propagate"):
    if nan_policy == "omit":
        refuse(_OMITTED.format(name="zscore"))
    n = np.size(a) if axis is None else np.shape(a)[axis]
    spread = np.std(a, axis=axis, ddof=ddof, keepdims=True)
    centred = g - np.mean(g, axis=axis, keepdims=True)
    along = np.sum(g * ans, axis=axis, keepdims=True) / (n - ddof)
    return (centred - ans * along) / spread


@jvp_rule(stats.zscore)
def _zscore_jvp(t, ans, a, axis=0, ddof=0, nan_policy="propagate"):
    if nan_policy == "omit":
        refuse(_OMITTED.format(name="zscore"))
    n = np.size(a) if axis is None else np.shape(a)[axis]
    spread = np.std(a, axis=axis, ddof=ddof, keepdims=True)
    centred = t - np.mean(t, axis=axis, keepdims=True)
    along = np.sum(t * ans, axis=axis, keepdims=True) / (n - ddof)
    return (centred - ans * along) / spread


@vjp_rule(stats.skew)
def _skew(g, ans, a, axis=0, bias=True, nan_policy="propagate", keepdims=False):
    if nan_policy == "omit":
        refuse(_OMITTED.format(name="skew"))
    n = np.size(a) // np.size(ans)
    d = a - np.mean(a, axis=axis, keepdims=True)
    m2 = np.mean(d**2, axis=axis, keepdims=True)
    m3 = np.mean(d**3, axis=axis, keepdims=True)
    slope = (3.0 / n) * (d**2 - m2) / m2**1.5 - (3.0 / n) * m3 * d / m2**2.5
    if not bias:
        slope = slope * (np.sqrt(n * (n - 1.0)) / (n - 2.0))
    if axis is None or keepdims:  # noqa: SIM108  (folded where the rule is inlined)
        spread = g
    else:
        spread = np.expand_dims(g, axis)
    return spread * slope


@jvp_rule(stats.skew)
def _skew_jvp(t, ans, a, axis=0, bias=True, nan_policy="propagate", keepdims=False):
    if nan_policy == "omit":
        refuse(_OMITTED.format(name="skew"))
    n = np.size(a) // np.size(ans)
    d = a - np.mean(a, axis=axis, keepdims=True)
    m2 = np.mean(d**2, axis=axis, keepdims=True)
    m3 = np.mean(d**3, axis=axis, keepdims=True)
    slope = (3.0 / n) * (d**2 - m2) / m2**1.5 - (3.0 / n) * m3 * d / m2**2.5
    if not bias:
        slope = slope * (np.sqrt(n * (n - 1.0)) / (n - 2.0))
    return np.sum(t * slope, axis=axis, keepdims=keepdims)


@vjp_rule(stats.kurtosis)
def _kurtosis(g, ans, a, axis=0, fisher=True, bias=True, nan_policy="propagate", keepdims=False):
    if nan_policy == "omit":
        refuse(_OMITTED.format(name="kurtosis"))
    n = np.size(a) // np.size(ans)
    d = a - np.mean(a, axis=axis, keepdims=True)
    m2 = np.mean(d**2, axis=axis, keepdims=True)
    m3 = np.mean(d**3, axis=axis, keepdims=True)
    m4 = np.mean(d**4, axis=axis, keepdims=True)
    slope = (4.0 / n) * (d**3 - m3) / m2**2 - (4.0 / n) * m4 * d / m2**3
    if not bias:
        slope = slope * ((n * n - 1.0) / ((n - 2.0) * (n - 3.0)))
    if axis is None or keepdims:  # noqa: SIM108
        spread = g
    else:
        spread = np.expand_dims(g, axis)
    return spread * slope


@jvp_rule(stats.kurtosis)
def _kurtosis_jvp(
    t, ans, a, axis=0, fisher=True, bias=True, nan_policy="propagate", keepdims=False
):
    if nan_policy == "omit":
        refuse(_OMITTED.format(name="kurtosis"))
    n = np.size(a) // np.size(ans)
    d = a - np.mean(a, axis=axis, keepdims=True)
    m2 = np.mean(d**2, axis=axis, keepdims=True)
    m3 = np.mean(d**3, axis=axis, keepdims=True)
    m4 = np.mean(d**4, axis=axis, keepdims=True)
    slope = (4.0 / n) * (d**3 - m3) / m2**2 - (4.0 / n) * m4 * d / m2**3
    if not bias:
        slope = slope * ((n * n - 1.0) / ((n - 2.0) * (n - 3.0)))
    return np.sum(t * slope, axis=axis, keepdims=keepdims)


@vjp_rule(stats.variation)
def _variation(g, ans, a, axis=0, nan_policy="propagate", ddof=0, keepdims=False):
    if nan_policy == "omit":
        refuse(_OMITTED.format(name="variation"))
    n = np.size(a) // np.size(ans)
    mean = np.mean(a, axis=axis, keepdims=True)
    spread = np.std(a, axis=axis, ddof=ddof, keepdims=True)
    slope = (a - mean) / ((n - ddof) * spread * mean) - spread / (n * mean**2)
    if axis is None or keepdims:  # noqa: SIM108
        weight = g
    else:
        weight = np.expand_dims(g, axis)
    return weight * slope


@jvp_rule(stats.variation)
def _variation_jvp(t, ans, a, axis=0, nan_policy="propagate", ddof=0, keepdims=False):
    if nan_policy == "omit":
        refuse(_OMITTED.format(name="variation"))
    n = np.size(a) // np.size(ans)
    mean = np.mean(a, axis=axis, keepdims=True)
    spread = np.std(a, axis=axis, ddof=ddof, keepdims=True)
    slope = (a - mean) / ((n - ddof) * spread * mean) - spread / (n * mean**2)
    return np.sum(t * slope, axis=axis, keepdims=keepdims)


@vjp_rule(stats.sem)
def _sem(g, ans, a, axis=0, ddof=1, nan_policy="propagate", keepdims=False):
    if nan_policy == "omit":
        refuse(_OMITTED.format(name="sem"))
    n = np.size(a) // np.size(ans)
    d = a - np.mean(a, axis=axis, keepdims=True)
    spread = np.std(a, axis=axis, ddof=ddof, keepdims=True)
    slope = d / ((n - ddof) * spread * np.sqrt(n))
    if axis is None or keepdims:  # noqa: SIM108
        weight = g
    else:
        weight = np.expand_dims(g, axis)
    return weight * slope


@jvp_rule(stats.sem)
def _sem_jvp(t, ans, a, axis=0, ddof=1, nan_policy="propagate", keepdims=False):
    if nan_policy == "omit":
        refuse(_OMITTED.format(name="sem"))
    n = np.size(a) // np.size(ans)
    d = a - np.mean(a, axis=axis, keepdims=True)
    spread = np.std(a, axis=axis, ddof=ddof, keepdims=True)
    slope = d / ((n - ddof) * spread * np.sqrt(n))
    return np.sum(t * slope, axis=axis, keepdims=keepdims)
