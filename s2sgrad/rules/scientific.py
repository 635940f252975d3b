"""Rules for the functions scientists call: fits, integrals, interpolation, filters and
statistics.

* ``vander``, ``polyval``, ``polyfit`` (with respect to ``x`` and ``y``; ``full``, ``w`` and
  ``cov`` refused) and ``np.linalg.lstsq`` (with respect to ``a`` and ``b``, full-rank
  matrices only: a rank-deficient one is refused at run time). A least-squares solution
  is ``pinv(a) @ b``, so their derivatives are those of ``np.linalg.pinv``; the residuals'
  derivative uses that the residual is orthogonal to ``a``'s columns.
* ``trapezoid`` (and ``trapz`` where NumPy has it), with ``x=`` (one-dimensional or shaped
  like ``y``) or a scalar ``dx=``: linear in ``y`` and in the spacing.
* ``interp`` with respect to ``x``, ``fp``, ``left`` and ``right`` (with ``period=``, ``x %
  period`` among ``xp % period`` extended by a period at each end, as NumPy computes it);
  ``xp`` and ``period`` are refused. The derivative in ``x`` at a sample point of ``xp`` is
  the slope on its right.
* ``convolve`` and ``correlate`` (real inputs, every mode): bilinear, their adjoints are
  correlations with the cotangent placed in the full output.
* ``cov`` (without weights) and ``corrcoef``, with ``y``, ``rowvar``, ``bias`` and ``ddof``.
* ``median``, ``quantile`` and ``percentile`` with ``method="linear"`` (other methods are
  refused): a fixed mix of the sorted values, so the derivative goes to the one or two
  samples the result interpolates between (ties are split as ``np.sort`` orders them);
  ``q`` is differentiated too.

Every rule body is made of NumPy calls and runtime helpers that have rules of their own,
so derivatives of any order come out of both engines.
"""

from __future__ import annotations

import numpy as np

from s2sgrad.rules.registry import jvp_rule, refused_argument, vjp_rule, zero_by_design
from s2sgrad.runtime import (
    cast_like,
    full_convolution,
    full_rank,
    interp_cells,
    interp_wrapped_cells,
    pair_means,
    pinv_tangent,
    polyfit_degree,
    refuse_derivative,
    trapezoid_spacing,
    trapezoid_weights,
    unbroadcast,
    undo_spacing,
    unit_spacing,
    untake,
    vander_tangent,
)
from s2sgrad.runtime.scientific import REFUSALS

# ---------------------------------------------------------------------------------------
# Polynomials


@vjp_rule(np.vander)
def _vander(g, ans, x, N=None, increasing=False):
    count = np.shape(ans)[1]
    if increasing:
        powers = cast_like(np.arange(1, count), ans)
        gx = np.sum(g[:, 1:] * ans[:, :-1] * powers, axis=1)
    else:
        powers = cast_like(np.arange(count - 1, 0, -1), ans)
        gx = np.sum(g[:, :-1] * ans[:, 1:] * powers, axis=1)
    return cast_like(gx, x)


@jvp_rule(np.vander)
def _vander_jvp(t, ans, x, N=None, increasing=False):
    count = np.shape(ans)[1]
    edge = np.zeros_like(ans[:, :1])
    if increasing:
        powers = cast_like(np.arange(1, count), ans)
        slopes = np.concatenate([edge, ans[:, :-1] * powers], axis=1)
    else:
        powers = cast_like(np.arange(count - 1, 0, -1), ans)
        slopes = np.concatenate([ans[:, 1:] * powers, edge], axis=1)
    return np.expand_dims(t, 1) * slopes


# np.polyval(p, x) = sum_i p[i] x ** (n - 1 - i): the rows of np.vander(x, n) in p, and the
# derivative polynomial in x.


@vjp_rule(np.polyval)
def _polyval(g, ans, p, x):
    count = np.shape(p)[0]
    gp = np.matmul(np.ravel(g * np.ones_like(ans)), np.vander(np.ravel(x), count))
    slope = np.polyval(p[:-1] * cast_like(np.arange(count - 1, 0, -1), p), x)
    return cast_like(gp, p), unbroadcast(g * slope, x)


@jvp_rule(np.polyval)
def _polyval_jvp(t, ans, p, x):
    count = np.shape(p)[0]
    slope = np.polyval(p[:-1] * cast_like(np.arange(count - 1, 0, -1), p), x)
    return np.polyval(t, x), t * slope


# np.polyfit(x, y, deg) = pinv(V) @ y with V = np.vander(x, deg + 1); pinv's derivative
# (P = pinv(V), full column rank): dP = -P dV P + P P^T dV^T (I - V P) + (I - P V) dV^T P^T P.


@vjp_rule(np.polyfit)
def _polyfit(g, ans, x, y, deg, rcond=None, full=False, w=None, cov=False):
    basis = np.vander(x, polyfit_degree(deg, full, w, cov) + 1)
    inverse = np.linalg.pinv(basis)
    inverse_t = np.swapaxes(inverse, 0, 1)
    gy = np.matmul(inverse_t, g)
    y_columns = np.reshape(y, (np.shape(y)[0], -1))
    g_inverse = np.matmul(np.reshape(g, (deg + 1, -1)), np.swapaxes(y_columns, 0, 1))
    g_t = np.swapaxes(g_inverse, 0, 1)
    through = -np.matmul(inverse_t, np.matmul(g_inverse, inverse_t))
    left_null = np.matmul(g_t - np.matmul(basis, np.matmul(inverse, g_t)), inverse @ inverse_t)
    right_null = np.matmul(inverse_t @ inverse, g_t - np.matmul(np.matmul(g_t, inverse), basis))
    g_basis = through + left_null + right_null
    powers = cast_like(np.arange(deg, 0, -1), basis)
    gx = np.sum(g_basis[:, :-1] * basis[:, 1:] * powers, axis=1)
    return cast_like(gx, x), cast_like(gy, y)


@jvp_rule(np.polyfit)
def _polyfit_jvp(t, ans, x, y, deg, rcond=None, full=False, w=None, cov=False):
    basis = np.vander(x, polyfit_degree(deg, full, w, cov) + 1)
    inverse = np.linalg.pinv(basis)
    return (
        np.matmul(pinv_tangent(vander_tangent(t, basis), basis, inverse), y),
        np.matmul(inverse, t),
    )


# np.linalg.lstsq(a, b) = (x, residuals, rank, s) with x = pinv(a) @ b. The residuals
# sum((b - a x) ** 2) change with a and b only through r = b - a x (r is orthogonal to
# a's columns, so x's own change adds nothing); s are the singular values of a, whose
# derivative is diag(U^T da V) (distinct singular values).


zero_by_design(np.linalg.lstsq, 2)  # rcond: a cutoff, piecewise constant


@vjp_rule(np.linalg.lstsq)
def _lstsq(g, ans, a, b, rcond=None):
    inverse = np.linalg.pinv(full_rank(a, ans[2]))
    inverse_t = np.swapaxes(inverse, 0, 1)
    b_columns = np.reshape(b, (np.shape(b)[0], -1))
    x_columns = np.reshape(ans[0], (np.shape(a)[1], -1))
    if g[0] is None:  # noqa: SIM108 (a rule body: statements, not expressions)
        g_x = np.zeros_like(x_columns)
    else:
        g_x = np.reshape(g[0], np.shape(x_columns))
    g_inverse_t = np.matmul(b_columns, np.swapaxes(g_x, 0, 1))
    gb = np.matmul(inverse_t, g_x)
    through = -np.matmul(inverse_t, np.matmul(np.swapaxes(g_inverse_t, 0, 1), inverse_t))
    left_null = np.matmul(g_inverse_t - a @ inverse @ g_inverse_t, inverse @ inverse_t)
    right_null = np.matmul(inverse_t @ inverse, g_inverse_t - g_inverse_t @ inverse @ a)
    ga = through + left_null + right_null
    if g[1] is not None and np.size(ans[1]) > 0:  # else no residuals (a square or short a)
        residual = b_columns - np.matmul(a, x_columns)
        weighted = residual * np.reshape(g[1], (1, -1))
        ga = ga - 2.0 * np.matmul(weighted, np.swapaxes(x_columns, 0, 1))
        gb = gb + 2.0 * weighted
    if g[3] is not None:
        directions = np.linalg.svd(a, full_matrices=False)
        ga = ga + np.matmul(directions[0] * np.reshape(g[3], (1, -1)), directions[2])
    return ga, np.reshape(gb, np.shape(b))


@jvp_rule(np.linalg.lstsq)
def _lstsq_jvp(t, ans, a, b, rcond=None):
    inverse = np.linalg.pinv(full_rank(a, ans[2]))
    b_columns = np.reshape(b, (np.shape(b)[0], -1))
    x_columns = np.reshape(ans[0], (np.shape(a)[1], -1))
    residual = b_columns - np.matmul(a, x_columns)
    count = np.size(ans[1])
    directions = np.linalg.svd(a, full_matrices=False)
    return (
        (
            np.reshape(np.matmul(pinv_tangent(t, a, inverse), b_columns), np.shape(ans[0])),
            (-2.0 * np.sum(residual * np.matmul(t, x_columns), axis=0))[:count],
            None,
            np.sum(directions[0] * np.matmul(t, np.swapaxes(directions[2], 0, 1)), axis=0),
        ),
        (
            np.reshape(np.matmul(inverse, t), np.shape(ans[0])),
            (2.0 * np.sum(residual * np.reshape(t, np.shape(b_columns)), axis=0))[:count],
            None,
            np.zeros_like(ans[3]),
        ),
    )


# ---------------------------------------------------------------------------------------
# The trapezoidal rule: sum over intervals of pair_means(y) * spacing. NumPy 2.0 renamed
# np.trapz to np.trapezoid (and 2.4 removed np.trapz): both names get the rule where they exist.

_TRAPEZOID = [f for f in (getattr(np, "trapezoid", None), getattr(np, "trapz", None)) if f]


@vjp_rule(*_TRAPEZOID)
def _trapezoid(g, ans, y, x=None, dx=1.0, axis=-1):
    spread = np.expand_dims(g, axis)
    if x is None:
        spacing = dx * unit_spacing(y, axis)
        gx = None
        g_dx = np.sum(g * np.sum(pair_means(y, axis), axis=axis))
    else:
        spacing = trapezoid_spacing(x, np.ndim(y), axis)
        gx = undo_spacing(unbroadcast(spread * pair_means(y, axis), spacing), x, axis)
        g_dx = None
    gy = unbroadcast(spread * trapezoid_weights(spacing, axis), y)
    return gy, gx, g_dx


@jvp_rule(*_TRAPEZOID)
def _trapezoid_jvp(t, ans, y, x=None, dx=1.0, axis=-1):
    means = pair_means(y, axis)
    if x is None:
        spacing = dx * unit_spacing(y, axis)
        rate = np.sum(means, axis=axis)
    else:
        spacing = trapezoid_spacing(x, np.ndim(y), axis)
        rate = 0.0
    return (
        np.sum(pair_means(t, axis) * spacing, axis=axis),
        np.sum(means * trapezoid_spacing(t, np.ndim(y), axis), axis=axis),
        t * rate,
    )


# ---------------------------------------------------------------------------------------
# Interpolation: value = w_lower * fp[lower] + w_upper * fp[upper] (+ left, right outside)


@vjp_rule(np.interp)
def _interp(g, ans, x, xp, fp, left=None, right=None, period=None, *, differentiated=()):
    if period is None:
        cells = interp_cells(x, xp, left, right, period)
        start = np.take(xp, cells[0])
        scale = cast_like(cells[2] / (np.take(xp, cells[1]) - start + (1.0 - cells[2])), fp)
        fraction = (x - start) * scale + cast_like(cells[3], fp)
        keep = cast_like(cells[4], fp)
        from_left = cells[5]
        from_right = cells[6]
    else:  # cells of x % period among xp % period, extended by a period at each end
        cells = interp_wrapped_cells(x, xp, period)
        length = np.abs(period)
        start = np.take(np.mod(xp, length), cells[0]) + cells[2] * length
        stop = np.take(np.mod(xp, length), cells[1]) + cells[3] * length
        scale = cast_like(1.0 / (stop - start), fp)
        fraction = (np.mod(x, length) - start) * scale
        keep = 1.0
        from_left = 0.0  # left and right are not used with a period
        from_right = 0.0
    slope = (np.take(fp, cells[1]) - np.take(fp, cells[0])) * scale
    to_lower = untake(g * (keep * (1.0 - fraction)), fp, cells[0])
    gfp = to_lower + untake(g * (keep * fraction), fp, cells[1])
    return (
        unbroadcast(g * slope, x),
        refuse_derivative("interp xp", differentiated[1:2] == (True,)),
        gfp,
        np.sum(g * from_left),
        np.sum(g * from_right),
    )


# refused where the user's code gives xp a differentiated value (the rules' own refusal,
# below, is what code differentiated again meets)
refused_argument(np.interp, 1, REFUSALS["interp xp"])


@jvp_rule(np.interp)
def _interp_jvp(t, ans, x, xp, fp, left=None, right=None, period=None, *, differentiated=()):
    if period is None:
        cells = interp_cells(x, xp, left, right, period)
        start = np.take(xp, cells[0])
        scale = cast_like(cells[2] / (np.take(xp, cells[1]) - start + (1.0 - cells[2])), fp)
        fraction = (x - start) * scale + cast_like(cells[3], fp)
        keep = cast_like(cells[4], fp)
        from_left = cells[5]
        from_right = cells[6]
    else:  # see _interp
        cells = interp_wrapped_cells(x, xp, period)
        length = np.abs(period)
        start = np.take(np.mod(xp, length), cells[0]) + cells[2] * length
        stop = np.take(np.mod(xp, length), cells[1]) + cells[3] * length
        scale = cast_like(1.0 / (stop - start), fp)
        fraction = (np.mod(x, length) - start) * scale
        keep = 1.0
        from_left = 0.0
        from_right = 0.0
    slope = (np.take(fp, cells[1]) - np.take(fp, cells[0])) * scale
    return (
        t * slope,
        refuse_derivative("interp xp", differentiated[1:2] == (True,)),
        keep * ((1.0 - fraction) * np.take(t, cells[0]) + fraction * np.take(t, cells[1])),
        t * from_left,
        t * from_right,
    )


# ---------------------------------------------------------------------------------------
# Convolution and correlation (correlate(a, v) is convolve(a, v[::-1]) in every mode)


@vjp_rule(np.convolve)
def _convolve(g, ans, a, v, mode="full"):
    full = full_convolution(g, np.size(a), np.size(v), mode)
    return np.correlate(full, v, "valid"), np.correlate(full, a, "valid")


@jvp_rule(np.convolve)
def _convolve_jvp(t, ans, a, v, mode="full"):
    return np.convolve(t, v, mode), np.convolve(a, t, mode)


@vjp_rule(np.correlate)
def _correlate(g, ans, a, v, mode="valid"):
    full = full_convolution(g, np.size(a), np.size(v), mode)
    return np.correlate(full, np.flip(v), "valid"), np.flip(np.correlate(full, a, "valid"))


@jvp_rule(np.correlate)
def _correlate_jvp(t, ans, a, v, mode="valid"):
    return np.correlate(t, v, mode), np.correlate(a, t, mode)
