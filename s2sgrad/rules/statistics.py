"""Rules for NumPy's statistics: ``cov``, ``corrcoef``, ``median``, ``quantile``, ``percentile``.

* ``np.cov(m, y, rowvar, bias, ddof)`` without weights (refused) is ``C = X_c X_c^T / k``
  for the centred rows ``X_c`` of the variables (:func:`s2sgrad.runtime.cov_rows`), so
  ``dX = (G + G^T) X_c / k``: the rows of ``X_c`` sum to zero, so the centring's adjoint
  changes nothing.
  With weights ``w = fweights * aweights`` (constants; a differentiated weight is refused)
  the rows are centred on their weighted means and ``C = (X_c w) X_c^T / k`` with NumPy's
  ``k = sum(w) - ddof sum(w aweights) / sum(w)``: ``dX = (G + G^T) (X_c w) / k``, as the
  weighted rows of ``X_c`` sum to zero; the tangent is ``cov_tangent`` of ``X_c w``.
* ``np.corrcoef`` is ``R = C / (d d^T)`` with ``d = sqrt(diag(C))``, for any scale of ``C``.
* ``np.median`` and ``np.quantile``/``np.percentile`` are ``W @ sort(a)`` along the
  reduced axes (grouped into one), where the interpolation weights ``W`` mix the two
  sorted values the result lies between (:func:`s2sgrad.runtime.quantile_cells`) by a
  fraction linear in ``q`` (constant for the methods that pick a sample, ``"lower"``,
  ``"higher"``, ``"nearest"``, or the middle of two, ``"midpoint"``); weights and the
  discontinuous inverted-CDF methods are refused. ``q`` is differentiated too (``dW/dq``
  is constant between samples).
"""

from __future__ import annotations

import numpy as np

from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.runtime import (
    cast_like,
    corrcoef_tangent,
    cov_divisor,
    cov_row_count,
    cov_rows,
    cov_rows_embed,
    cov_rows_part,
    cov_tangent,
    group_axes,
    quantile_cells,
    refuse_derivative,
    ungroup_axes,
)

# ---------------------------------------------------------------------------------------
# Covariance and correlation


@vjp_rule(np.cov)
def _cov(g, ans, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    rows = cov_rows(m, y, rowvar)
    count = np.shape(rows)[0]
    if fweights is None and aweights is None:
        centered = rows - np.mean(rows, axis=1, keepdims=True)
    else:  # weighted: the weights' own average centres, and scale the centred rows
        if fweights is None:  # noqa: SIM108
            frequencies = np.ones_like(rows[0])
        else:
            frequencies = np.ones_like(rows[0]) * fweights
        if aweights is None:  # noqa: SIM108
            weights = frequencies
        else:
            weights = frequencies * aweights
        total = np.sum(weights)
        centered = (rows - np.sum(rows * weights, axis=1, keepdims=True) / total) * weights
    divisor = cov_divisor(rows, bias, ddof, fweights, aweights)
    square = np.reshape(g, (count, count))
    g_rows = np.matmul(square + np.swapaxes(square, 0, 1), centered) / divisor
    if y is None:  # noqa: SIM108 (a rule body: statements, not expressions)
        gy = None
    else:
        gy = cov_rows_part(g_rows, y, rowvar, cov_row_count(m, rowvar))
    return cov_rows_part(g_rows, m, rowvar, 0), gy


@jvp_rule(np.cov)
def _cov_jvp(t, ans, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    rows = cov_rows(m, y, rowvar)
    count = np.shape(rows)[0]
    if fweights is None and aweights is None:
        centered = rows - np.mean(rows, axis=1, keepdims=True)
    else:  # weighted: the weights' own average centres, and scale the centred rows
        if fweights is None:  # noqa: SIM108
            frequencies = np.ones_like(rows[0])
        else:
            frequencies = np.ones_like(rows[0]) * fweights
        if aweights is None:  # noqa: SIM108
            weights = frequencies
        else:
            weights = frequencies * aweights
        total = np.sum(weights)
        centered = (rows - np.sum(rows * weights, axis=1, keepdims=True) / total) * weights
    divisor = cov_divisor(rows, bias, ddof, fweights, aweights)
    if y is None:  # noqa: SIM108
        y_start = count
    else:
        y_start = count - cov_row_count(y, rowvar)
    return (
        cov_tangent(cov_rows_embed(t, m, rowvar, 0, count), centered, divisor, np.shape(ans)),
        cov_tangent(cov_rows_embed(t, y, rowvar, y_start, count), centered, divisor, np.shape(ans)),
    )


# R_ij = C_ij / (d_i d_j): dR = dC / (d d^T) - R * (u_i + u_j) with u = diag(dC) / (2 diag(C)).


@vjp_rule(np.corrcoef)
def _corrcoef(g, ans, x, y=None, rowvar=True, bias=None, ddof=None, *, dtype=None):
    rows = cov_rows(x, y, rowvar)
    count = np.shape(rows)[0]
    centered = rows - np.mean(rows, axis=1, keepdims=True)
    products = np.matmul(centered, np.swapaxes(centered, 0, 1))
    variances = np.diagonal(products)
    scales = np.sqrt(variances)
    correlation = products / np.outer(scales, scales)
    square = np.reshape(g, (count, count))
    weighted = square * correlation
    spread = (np.sum(weighted, axis=1) + np.sum(weighted, axis=0)) / (2.0 * variances)
    g_products = square / np.outer(scales, scales) - np.diag(spread)
    g_rows = np.matmul(g_products + np.swapaxes(g_products, 0, 1), centered)
    if y is None:  # noqa: SIM108
        gy = None
    else:
        gy = cov_rows_part(g_rows, y, rowvar, cov_row_count(x, rowvar))
    return cov_rows_part(g_rows, x, rowvar, 0), gy


@jvp_rule(np.corrcoef)
def _corrcoef_jvp(t, ans, x, y=None, rowvar=True, bias=None, ddof=None, *, dtype=None):
    rows = cov_rows(x, y, rowvar)
    count = np.shape(rows)[0]
    centered = rows - np.mean(rows, axis=1, keepdims=True)
    if y is None:  # noqa: SIM108
        y_start = count
    else:
        y_start = count - cov_row_count(y, rowvar)
    return (
        corrcoef_tangent(cov_rows_embed(t, x, rowvar, 0, count), centered, np.shape(ans)),
        corrcoef_tangent(cov_rows_embed(t, y, rowvar, y_start, count), centered, np.shape(ans)),
    )


# ---------------------------------------------------------------------------------------
# Median and quantiles: W @ sort(a) along the grouped reduced axes


@vjp_rule(np.median)
def _median(g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    refuse_derivative("overwritten input", overwrite_input)
    grouped = group_axes(a, axis)
    count = np.shape(grouped)[-1]
    cells = quantile_cells(count, 0.5)
    mix = cast_like(cells[0] + (0.5 * (count - 1) - cells[2]) * (cells[1] - cells[0]), a)
    ranks = np.argsort(np.argsort(grouped, axis=-1), axis=-1)
    spread = np.reshape(g, np.shape(grouped)[:-1] + (1,)) * mix
    return ungroup_axes(np.take_along_axis(spread, ranks, axis=-1), a, axis)


@jvp_rule(np.median)
def _median_jvp(t, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    refuse_derivative("overwritten input", overwrite_input)
    grouped = group_axes(a, axis)
    count = np.shape(grouped)[-1]
    cells = quantile_cells(count, 0.5)
    mix = cast_like(cells[0] + (0.5 * (count - 1) - cells[2]) * (cells[1] - cells[0]), a)
    order = np.argsort(grouped, axis=-1)
    ordered = np.take_along_axis(group_axes(t, axis), order, axis=-1)
    return np.reshape(np.sum(ordered * mix, axis=-1), np.shape(ans))


@vjp_rule(np.quantile)
def _quantile(
    g,
    ans,
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
    interpolation=None,
):
    refuse_derivative("overwritten input", overwrite_input)
    grouped = group_axes(a, axis)
    count = np.shape(grouped)[-1]
    cells = quantile_cells(count, q, method, weights)
    fraction = np.expand_dims(np.multiply(q, cells[3]) + cells[4], -1)
    levels = np.reshape(cast_like(cells[0] + fraction * (cells[1] - cells[0]), a), (-1, count))
    order = np.argsort(grouped, axis=-1)
    ranks = np.argsort(order, axis=-1)
    g_levels = np.moveaxis(np.reshape(g, (np.shape(levels)[0],) + np.shape(grouped)[:-1]), 0, -1)
    ga = ungroup_axes(np.take_along_axis(np.matmul(g_levels, levels), ranks, axis=-1), a, axis)
    slopes = np.reshape(
        cast_like(np.expand_dims(cells[3], -1) * (cells[1] - cells[0]), a), (-1, count)
    )
    rates = np.matmul(np.take_along_axis(grouped, order, axis=-1), np.swapaxes(slopes, 0, 1))
    gq = np.sum(np.reshape(g_levels * rates, (-1, np.shape(slopes)[0])), axis=0)
    return ga, np.reshape(gq, np.shape(q))


@jvp_rule(np.quantile)
def _quantile_jvp(
    t,
    ans,
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
    interpolation=None,
):
    refuse_derivative("overwritten input", overwrite_input)
    grouped = group_axes(a, axis)
    count = np.shape(grouped)[-1]
    cells = quantile_cells(count, q, method, weights)
    fraction = np.expand_dims(np.multiply(q, cells[3]) + cells[4], -1)
    levels = np.reshape(cast_like(cells[0] + fraction * (cells[1] - cells[0]), a), (-1, count))
    order = np.argsort(grouped, axis=-1)
    slopes = np.reshape(
        cast_like(np.expand_dims(cells[3], -1) * (cells[1] - cells[0]), a), (-1, count)
    )
    rates = np.matmul(np.take_along_axis(grouped, order, axis=-1), np.swapaxes(slopes, 0, 1))
    return (  # [()]: one number is a NumPy scalar, as the quantile itself is
        np.reshape(
            np.moveaxis(
                np.matmul(
                    np.take_along_axis(group_axes(t, axis), order, axis=-1),
                    np.swapaxes(levels, 0, 1),
                ),
                -1,
                0,
            ),
            np.shape(ans),
        )[()],
        np.reshape(np.moveaxis(rates * np.ravel(t), -1, 0), np.shape(ans))[()],
    )


# np.percentile(a, q) is np.quantile(a, q / 100)


@vjp_rule(np.percentile)
def _percentile(
    g,
    ans,
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
    interpolation=None,
):
    refuse_derivative("overwritten input", overwrite_input)
    grouped = group_axes(a, axis)
    count = np.shape(grouped)[-1]
    cells = quantile_cells(count, q, method, weights, 0.01)
    fraction = np.expand_dims(np.multiply(q, cells[3]) + cells[4], -1)
    levels = np.reshape(cast_like(cells[0] + fraction * (cells[1] - cells[0]), a), (-1, count))
    order = np.argsort(grouped, axis=-1)
    ranks = np.argsort(order, axis=-1)
    g_levels = np.moveaxis(np.reshape(g, (np.shape(levels)[0],) + np.shape(grouped)[:-1]), 0, -1)
    ga = ungroup_axes(np.take_along_axis(np.matmul(g_levels, levels), ranks, axis=-1), a, axis)
    slopes = np.reshape(
        cast_like(np.expand_dims(cells[3], -1) * (cells[1] - cells[0]), a), (-1, count)
    )
    rates = np.matmul(np.take_along_axis(grouped, order, axis=-1), np.swapaxes(slopes, 0, 1))
    gq = np.sum(np.reshape(g_levels * rates, (-1, np.shape(slopes)[0])), axis=0)
    return ga, np.reshape(gq, np.shape(q))


@jvp_rule(np.percentile)
def _percentile_jvp(
    t,
    ans,
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
    interpolation=None,
):
    refuse_derivative("overwritten input", overwrite_input)
    grouped = group_axes(a, axis)
    count = np.shape(grouped)[-1]
    cells = quantile_cells(count, q, method, weights, 0.01)
    fraction = np.expand_dims(np.multiply(q, cells[3]) + cells[4], -1)
    levels = np.reshape(cast_like(cells[0] + fraction * (cells[1] - cells[0]), a), (-1, count))
    order = np.argsort(grouped, axis=-1)
    slopes = np.reshape(
        cast_like(np.expand_dims(cells[3], -1) * (cells[1] - cells[0]), a), (-1, count)
    )
    rates = np.matmul(np.take_along_axis(grouped, order, axis=-1), np.swapaxes(slopes, 0, 1))
    return (  # [()]: one number is a NumPy scalar, as the quantile itself is
        np.reshape(
            np.moveaxis(
                np.matmul(
                    np.take_along_axis(group_axes(t, axis), order, axis=-1),
                    np.swapaxes(levels, 0, 1),
                ),
                -1,
                0,
            ),
            np.shape(ans),
        )[()],
        np.reshape(np.moveaxis(rates * np.ravel(t), -1, 0), np.shape(ans))[()],
    )
