"""Derivative rules of ``scipy.stats.poisson``, ``dirichlet`` and ``multivariate_normal``.

* ``poisson.pmf(k, mu, loc=0)`` / ``logpmf``: ``logpmf = (k - loc) log(mu) - mu - log((k -
  loc)!)``, differentiated in ``mu``; the count ``k`` and the shift ``loc`` are integers,
  refused when differentiated.
* ``dirichlet.pdf(x, alpha)`` / ``logpdf``: ``logpdf = sum((alpha - 1) log(x)) - log B(alpha)``
  with the components along the first axis of ``x`` (all ``K`` of them: the short form with
  ``K - 1`` rows is refused).
* ``multivariate_normal.pdf(x, mean, cov)`` / ``logpdf`` and ``entropy(mean, cov)``: with
  ``s = cov^-1 (x - mean)``, ``logpdf`` has derivative ``-s`` in ``x``, ``s`` in ``mean`` and
  ``(s s^T - cov^-1) / 2`` in ``cov``. ``cov`` is symmetric, and SciPy reads one triangle of
  it: the cotangent is the symmetric one (as for ``np.linalg.cholesky``), which is the
  derivative along symmetric changes of ``cov``. A ``cov`` given as a number or a vector
  (``sigma^2 I``, ``diag(v)``) gets the cotangent of that number or vector.
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
_SHORT_DIRICHLET = (
    "scipy.stats.dirichlet: x with one row fewer than alpha (the last component implied) is "
    "not differentiated; pass all the components of x"
)

# ----------------------------------------------------------------------------- poisson


@vjp_rule(stats.poisson.logpmf)
def _poisson_logpmf(g, ans, k, mu, loc=0):
    return (
        refuse(_COUNT.format(name="logpmf")),
        unbroadcast(g * ((k - loc) / mu - 1), mu),
        refuse(_COUNT.format(name="logpmf")),
    )


@jvp_rule(stats.poisson.logpmf)
def _poisson_logpmf_jvp(t, ans, k, mu, loc=0):
    return (
        refuse(_COUNT.format(name="logpmf")),
        t * ((k - loc) / mu - 1),
        refuse(_COUNT.format(name="logpmf")),
    )


@vjp_rule(stats.poisson.pmf)
def _poisson_pmf(g, ans, k, mu, loc=0):
    return (
        refuse(_COUNT.format(name="pmf")),
        unbroadcast(g * ans * ((k - loc) / mu - 1), mu),
        refuse(_COUNT.format(name="pmf")),
    )


@jvp_rule(stats.poisson.pmf)
def _poisson_pmf_jvp(t, ans, k, mu, loc=0):
    return (
        refuse(_COUNT.format(name="pmf")),
        t * ans * ((k - loc) / mu - 1),
        refuse(_COUNT.format(name="pmf")),
    )


# --------------------------------------------------------------------------- dirichlet
# alpha has shape (K,), x (K,) or (K, n): alpha is turned into a column to meet x's rows.


@vjp_rule(stats.dirichlet.logpdf)
def _dirichlet_logpdf(g, ans, x, alpha):
    if np.shape(x)[0] != np.shape(alpha)[0]:
        refuse(_SHORT_DIRICHLET)
    column = np.reshape(alpha, np.shape(alpha) + (1,) * (np.ndim(x) - 1))
    samples = tuple(range(1, np.ndim(x)))
    to_alpha = np.sum(g * np.log(x), axis=samples)
    to_alpha = to_alpha - np.sum(g) * (special.psi(alpha) - special.psi(np.sum(alpha)))
    return g * (column - 1) / x, to_alpha


@jvp_rule(stats.dirichlet.logpdf)
def _dirichlet_logpdf_jvp(t, ans, x, alpha):
    if np.shape(x)[0] != np.shape(alpha)[0]:
        refuse(_SHORT_DIRICHLET)
    column = np.reshape(alpha, np.shape(alpha) + (1,) * (np.ndim(x) - 1))
    scores = np.log(x) - np.reshape(
        special.psi(alpha) - special.psi(np.sum(alpha)), np.shape(column)
    )
    return (
        np.sum(t * (column - 1) / x, axis=0),
        np.sum(np.reshape(t, np.shape(column)) * scores, axis=0),
    )


@vjp_rule(stats.dirichlet.pdf)
def _dirichlet_pdf(g, ans, x, alpha):
    if np.shape(x)[0] != np.shape(alpha)[0]:
        refuse(_SHORT_DIRICHLET)
    weight = g * ans
    column = np.reshape(alpha, np.shape(alpha) + (1,) * (np.ndim(x) - 1))
    samples = tuple(range(1, np.ndim(x)))
    to_alpha = np.sum(weight * np.log(x), axis=samples)
    to_alpha = to_alpha - np.sum(weight) * (special.psi(alpha) - special.psi(np.sum(alpha)))
    return weight * (column - 1) / x, to_alpha


@jvp_rule(stats.dirichlet.pdf)
def _dirichlet_pdf_jvp(t, ans, x, alpha):
    if np.shape(x)[0] != np.shape(alpha)[0]:
        refuse(_SHORT_DIRICHLET)
    column = np.reshape(alpha, np.shape(alpha) + (1,) * (np.ndim(x) - 1))
    scores = np.log(x) - np.reshape(
        special.psi(alpha) - special.psi(np.sum(alpha)), np.shape(column)
    )
    return (
        ans * np.sum(t * (column - 1) / x, axis=0),
        ans * np.sum(np.reshape(t, np.shape(column)) * scores, axis=0),
    )


# ------------------------------------------------------------------ multivariate_normal
# ``full`` is cov as a matrix; ``inverse_rows`` is cov^-1 (x - mean) for each row of x.


@vjp_rule(stats.multivariate_normal.logpdf)
def _mvn_logpdf(g, ans, x, mean=None, cov=1, allow_singular=False):
    if np.ndim(cov) == 2:  # noqa: SIM108  (decided where it runs)
        full = cov
    else:
        full = cov * np.eye(np.shape(x)[-1])
    if mean is None:  # noqa: SIM108  (folded where the rule is inlined)
        residual = x
    else:
        residual = x - mean
    inverse_rows = np.linalg.solve(full, np.expand_dims(residual, -1))[..., 0]
    weighted = np.expand_dims(g, -1) * inverse_rows
    rows = np.reshape(inverse_rows, (-1, np.shape(x)[-1]))
    outer = np.matmul(np.reshape(weighted, (-1, np.shape(x)[-1])).T, rows)
    to_full = (outer - np.sum(g) * np.linalg.inv(full)) / 2
    if np.ndim(cov) == 2:  # noqa: SIM108
        to_cov = to_full
    else:
        to_cov = unbroadcast(to_full * np.eye(np.shape(x)[-1]), cov)
    return unbroadcast(-weighted, x), unbroadcast(weighted, mean), to_cov


@jvp_rule(stats.multivariate_normal.logpdf)
def _mvn_logpdf_jvp(t, ans, x, mean=None, cov=1, allow_singular=False):
    if np.ndim(cov) == 2:  # noqa: SIM108  (decided where it runs)
        full = cov
        diagonal = 1.0
    else:
        full = cov * np.eye(np.shape(x)[-1])
        diagonal = np.eye(np.shape(x)[-1])
    if mean is None:  # noqa: SIM108  (folded where the rule is inlined)
        residual = x
    else:
        residual = x - mean
    inverse_rows = np.linalg.solve(full, np.expand_dims(residual, -1))[..., 0]
    return (
        np.reshape(-np.sum(inverse_rows * t, axis=-1), np.shape(ans)),
        np.reshape(np.sum(inverse_rows * t, axis=-1), np.shape(ans)),
        np.reshape(
            np.sum(inverse_rows * np.matmul(inverse_rows, (t * diagonal).T), axis=-1)
            - np.trace(np.linalg.solve(full, t * diagonal)),
            np.shape(ans),
        )
        / 2,
    )


@vjp_rule(stats.multivariate_normal.pdf)
def _mvn_pdf(g, ans, x, mean=None, cov=1, allow_singular=False):
    weight = g * ans
    if np.ndim(cov) == 2:  # noqa: SIM108
        full = cov
    else:
        full = cov * np.eye(np.shape(x)[-1])
    if mean is None:  # noqa: SIM108
        residual = x
    else:
        residual = x - mean
    inverse_rows = np.linalg.solve(full, np.expand_dims(residual, -1))[..., 0]
    weighted = np.expand_dims(weight, -1) * inverse_rows
    rows = np.reshape(inverse_rows, (-1, np.shape(x)[-1]))
    outer = np.matmul(np.reshape(weighted, (-1, np.shape(x)[-1])).T, rows)
    to_full = (outer - np.sum(weight) * np.linalg.inv(full)) / 2
    if np.ndim(cov) == 2:  # noqa: SIM108
        to_cov = to_full
    else:
        to_cov = unbroadcast(to_full * np.eye(np.shape(x)[-1]), cov)
    return unbroadcast(-weighted, x), unbroadcast(weighted, mean), to_cov


@jvp_rule(stats.multivariate_normal.pdf)
def _mvn_pdf_jvp(t, ans, x, mean=None, cov=1, allow_singular=False):
    if np.ndim(cov) == 2:  # noqa: SIM108  (decided where it runs)
        full = cov
        diagonal = 1.0
    else:
        full = cov * np.eye(np.shape(x)[-1])
        diagonal = np.eye(np.shape(x)[-1])
    if mean is None:  # noqa: SIM108  (folded where the rule is inlined)
        residual = x
    else:
        residual = x - mean
    inverse_rows = np.linalg.solve(full, np.expand_dims(residual, -1))[..., 0]
    return (
        ans * np.reshape(-np.sum(inverse_rows * t, axis=-1), np.shape(ans)),
        ans * np.reshape(np.sum(inverse_rows * t, axis=-1), np.shape(ans)),
        ans
        * np.reshape(
            np.sum(inverse_rows * np.matmul(inverse_rows, (t * diagonal).T), axis=-1)
            - np.trace(np.linalg.solve(full, t * diagonal)),
            np.shape(ans),
        )
        / 2,
    )


# entropy = (d log(2 pi e) + log det cov) / 2 does not depend on the mean; a cov given as a
# number stands for cov * I of the mean's dimension
@vjp_rule(stats.multivariate_normal.entropy)
def _mvn_entropy(g, ans, mean=None, cov=1):
    if mean is None:  # noqa: SIM108
        dimension = np.size(cov)
    else:
        dimension = np.size(mean)
    if np.ndim(cov) == 2:  # noqa: SIM108
        to_cov = g * np.linalg.inv(cov) / 2
    else:
        to_cov = unbroadcast(g / (2 * cov) * np.ones(dimension), cov)
    return np.zeros_like(mean), to_cov


@jvp_rule(stats.multivariate_normal.entropy)
def _mvn_entropy_jvp(t, ans, mean=None, cov=1):
    if mean is None:  # noqa: SIM108
        dimension = np.size(cov)
    else:
        dimension = np.size(mean)
    if np.ndim(cov) == 2:  # noqa: SIM108
        full = cov
        diagonal = 1.0
    else:
        full = cov * np.eye(dimension)
        diagonal = np.eye(dimension)
    return np.zeros_like(ans), np.trace(np.linalg.solve(full, t * diagonal)) / 2
