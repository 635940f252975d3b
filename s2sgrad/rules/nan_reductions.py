"""Derivative rules for NumPy's NaN-ignoring reductions: ``nanmax``, ``nanmin``, ``nanprod``,
``nanvar``, ``nanstd``, ``nancumsum``, ``nancumprod``, ``nanmedian``, ``nanquantile`` and
``nanpercentile`` (``nansum`` and ``nanmean`` are in :mod:`s2sgrad.rules.reductions`).

Each is its plain twin over the entries that are not NaN, so a NaN entry gets a zero
cotangent (and contributes a zero tangent). A slice with no number in it (all NaN) gives
what NumPy gives (NaN, with NumPy's warning) and zero cotangents to its entries.

* ``nanmax``/``nanmin`` split the cotangent equally among the entries equal to the extremum,
  as ``np.max`` does;
* ``nanprod``, ``nancumsum`` and ``nancumprod`` are ``prod``, ``cumsum`` and ``cumprod`` of
  the input with its NaN entries replaced by 1, 0 and 1, constants;
* ``nanvar``/``nanstd`` (``ddof``) divide by ``count - ddof`` for the count of numbers in each
  slice; a zero deviation has derivative 0, as ``np.std``'s has;
* ``nanmedian``, ``nanquantile`` and ``nanpercentile`` (``method="linear"``, the default;
  others are refused) mix the two sorted numbers the result lies between, counted among the
  numbers of each slice: ``W @ sort(a)``, where ``W`` puts no weight on NaN entries. ``q``
  is differentiated too.

Only the parameters listed in a rule's signature are supported (``where=``, ``initial=``
and ``mean=`` are refused by name).
"""

from __future__ import annotations

import numpy as np

from s2sgrad.errors import NonDifferentiableError
from s2sgrad.rules.registry import jvp_rule, nondifferentiable, vjp_rule
from s2sgrad.runtime import (
    cast_like,
    exclusive_cumprod,
    group_axes,
    linear_recurrence,
    prod_of_others,
    refuse_derivative,
    shift_along,
    ungroup_axes,
    zero_if_integer,
)

# ---------------------------------------------------------------------------------------
# Extrema: the entries equal to the extremum share the cotangent (NaN equals nothing)


@vjp_rule(np.nanmax, np.nanmin)
def _nan_extremum(g, ans, a, axis=None, out=None, keepdims=False):
    g_kept = g
    ans_kept = ans
    if axis is not None and not keepdims:
        g_kept = np.expand_dims(g, axis)
        ans_kept = np.expand_dims(ans, axis)
    hits = np.equal(a, ans_kept)
    # an all-NaN slice has no hit: its count is taken as 1, so its entries get 0, not 0/0
    count = np.maximum(np.sum(hits, axis=axis, keepdims=True, dtype=ans.dtype), 1.0)
    return g_kept * (hits / count)


@jvp_rule(np.nanmax, np.nanmin)
def _nan_extremum_jvp(t, ans, a, axis=None, out=None, keepdims=False):
    ans_kept = ans
    if axis is not None and not keepdims:
        ans_kept = np.expand_dims(ans, axis)
    hits = np.equal(a, ans_kept)
    count = np.maximum(np.sum(hits, axis=axis, keepdims=True, dtype=ans.dtype), 1.0)
    return np.sum(np.where(hits, t, 0.0) / count, axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------------------------------
# Products: NaN entries count as 1


@vjp_rule(np.nanprod)
def _nanprod(cotangent, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    g_kept = g
    if axis is not None and not keepdims:
        g_kept = np.expand_dims(g, axis)
    missing = np.isnan(a)
    return np.where(missing, 0.0, g_kept * prod_of_others(np.where(missing, 1.0, a), axis))


@jvp_rule(np.nanprod)
def _nanprod_jvp(tangent, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    missing = np.isnan(a)
    others = prod_of_others(np.where(missing, 1.0, a), axis)
    return np.sum(np.where(missing, 0.0, t * others), axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------------------------------
# Variance and standard deviation over the numbers of each slice (``count - ddof``)


@vjp_rule(np.nanvar)
def _nanvar(cotangent, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    g_kept = g
    if axis is not None and not keepdims:
        g_kept = np.expand_dims(g, axis)
    present = np.logical_not(np.isnan(a))
    count = np.sum(present, axis=axis, keepdims=True, dtype=ans.dtype)
    centered = np.where(present, a - np.nanmean(a, axis=axis, keepdims=True), 0.0)
    return np.where(present, g_kept * centered * (2.0 / (count - ddof)), 0.0)


@jvp_rule(np.nanvar)
def _nanvar_jvp(tangent, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    present = np.logical_not(np.isnan(a))
    count = np.sum(present, axis=axis, keepdims=True, dtype=ans.dtype)
    centered = np.where(present, a - np.nanmean(a, axis=axis, keepdims=True), 0.0)
    weighted = np.where(present, t * centered * (2.0 / (count - ddof)), 0.0)
    return np.sum(weighted, axis=axis, keepdims=keepdims)


@vjp_rule(np.nanstd)
def _nanstd(cotangent, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    g_kept = g
    ans_kept = ans
    if axis is not None and not keepdims:
        g_kept = np.expand_dims(g, axis)
        ans_kept = np.expand_dims(ans, axis)
    present = np.logical_not(np.isnan(a))
    count = np.sum(present, axis=axis, keepdims=True, dtype=ans.dtype)
    centered = np.where(present, a - np.nanmean(a, axis=axis, keepdims=True), 0.0)
    # where the deviation is 0, every centred value is 0 too: the gradient is 0, not 0/0
    divisor = np.where(ans_kept == 0, 1.0, ans_kept) * (count - ddof)
    return np.where(present, g_kept * centered / divisor, 0.0)


@jvp_rule(np.nanstd)
def _nanstd_jvp(tangent, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    ans_kept = ans
    if axis is not None and not keepdims:
        ans_kept = np.expand_dims(ans, axis)
    present = np.logical_not(np.isnan(a))
    count = np.sum(present, axis=axis, keepdims=True, dtype=ans.dtype)
    centered = np.where(present, a - np.nanmean(a, axis=axis, keepdims=True), 0.0)
    divisor = np.where(ans_kept == 0, 1.0, ans_kept) * (count - ddof)
    weighted = np.where(present, t * centered / divisor, 0.0)
    return np.sum(weighted, axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------------------------------
# Cumulative sums (NaN as 0) and products (NaN as 1); ``axis=None`` flattens


@vjp_rule(np.nancumsum)
def _nancumsum(cotangent, ans, a, axis=None, dtype=None, out=None):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    if axis is None:
        ga = np.reshape(np.flip(np.cumsum(np.flip(g))), np.shape(a))
    else:
        ga = np.flip(np.cumsum(np.flip(g, axis), axis), axis)
    return np.where(np.isnan(a), 0.0, ga)


@jvp_rule(np.nancumsum)
def _nancumsum_jvp(tangent, ans, a, axis=None, dtype=None, out=None):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    return np.cumsum(np.where(np.isnan(a), 0.0, t), axis)


@vjp_rule(np.nancumprod)
def _nancumprod(cotangent, ans, a, axis=None, dtype=None, out=None):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    missing = np.isnan(a)
    filled = np.where(missing, 1.0, a)
    if axis is None:
        flat = np.ravel(filled)
        after = linear_recurrence(shift_along(flat, 0, True), g, 0, True)
        ga = np.reshape(after * exclusive_cumprod(flat, 0), np.shape(a))
    else:
        after = linear_recurrence(shift_along(filled, axis, True), g, axis, True)
        ga = after * exclusive_cumprod(filled, axis)
    return np.where(missing, 0.0, ga)


@jvp_rule(np.nancumprod)
def _nancumprod_jvp(tangent, ans, a, axis=None, dtype=None, out=None):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    missing = np.isnan(a)
    filled = np.where(missing, 1.0, a)
    kept = np.where(missing, 0.0, t)
    if axis is None:
        flat = np.ravel(filled)
        ta = linear_recurrence(flat, exclusive_cumprod(flat, 0) * np.ravel(kept), 0)
    else:
        ta = linear_recurrence(filled, exclusive_cumprod(filled, axis) * kept, axis)
    return ta


# ---------------------------------------------------------------------------------------
# Median: the middle one or two of the numbers of each slice (NaN sorts last), grouped


@vjp_rule(np.nanmedian)
def _nanmedian(g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    refuse_derivative("overwritten input", overwrite_input)
    grouped = group_axes(a, axis)
    numbers = np.sum(np.logical_not(np.isnan(grouped)), axis=-1, keepdims=True)
    ranks = np.argsort(np.argsort(grouped, axis=-1), axis=-1)
    middle = 0.5 * np.equal(ranks, (numbers - 1) // 2) + 0.5 * np.equal(ranks, numbers // 2)
    mix = cast_like(np.where(ranks < numbers, middle, 0.0), a)
    spread = np.reshape(g, np.shape(grouped)[:-1] + (1,)) * mix
    return ungroup_axes(spread, a, axis)


@jvp_rule(np.nanmedian)
def _nanmedian_jvp(t, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    refuse_derivative("overwritten input", overwrite_input)
    grouped = group_axes(a, axis)
    numbers = np.sum(np.logical_not(np.isnan(grouped)), axis=-1, keepdims=True)
    ranks = np.argsort(np.argsort(grouped, axis=-1), axis=-1)
    middle = 0.5 * np.equal(ranks, (numbers - 1) // 2) + 0.5 * np.equal(ranks, numbers // 2)
    mix = cast_like(np.where(ranks < numbers, middle, 0.0), a)
    # [()]: one number is a NumPy scalar, as the median itself is
    return np.reshape(np.sum(group_axes(t, axis) * mix, axis=-1), np.shape(ans))[()]


# ---------------------------------------------------------------------------------------
# Quantiles and percentiles: for each q, weights on the two sorted numbers the result lies
# between (nan_quantile_cells), mixed by a fraction linear in q


def nan_quantile_cells(grouped, q, method="linear", weights=None, scale=1.0) -> tuple:
    """For ``np.nanquantile(a, q * scale)`` along the last axis of ``grouped``, with
    ``method="linear"`` (others are refused): ``(lower, upper, position, numbers)``.
    ``lower`` and ``upper`` (``(np.size(q),) + np.shape(grouped)``, 0 or 1) mark the two
    sorted numbers the result lies between, ``position`` is the lower one's rank and
    ``numbers`` the count of numbers of each slice. With
    ``f = (numbers - 1) * scale * q - position`` the result is
    ``sum((lower + f * (upper - lower)) * grouped, -1)``. NaN entries, and every entry of an
    all-NaN slice, are in neither. Everything here changes only where ``q`` crosses a
    sample or the order of ``grouped`` changes.

    Example::

        nan_quantile_cells(np.array([3.0, np.nan, 1.0]), 0.25)[0]  # [[0., 0., 1.]]
    """
    if method != "linear" or weights is not None:
        what = f"method={method!r}" if method != "linear" else "weights="
        raise NonDifferentiableError(
            "s2sgrad differentiates np.nanquantile and np.nanpercentile with "
            f"method='linear' (the default) and no weights, not {what}; the other methods "
            "pick or round to sample values, so use method='linear', or wrap the call in "
            "s2sgrad.stop_gradient(...) if no derivative should flow through it"
        )
    levels = np.reshape(np.asarray(q, dtype=np.float64), (-1,) + (1,) * np.ndim(grouped))
    present = np.logical_not(np.isnan(grouped))
    numbers = np.sum(present, axis=-1, keepdims=True).astype(np.float64)
    ranks = np.argsort(np.argsort(grouped, axis=-1), axis=-1)
    at = (numbers - 1.0) * scale * levels
    position = np.clip(np.floor(at), 0.0, np.maximum(numbers - 2.0, 0.0))
    upper = np.minimum(position + 1.0, numbers - 1.0)
    lower_cell = np.logical_and(ranks == position, present).astype(np.float64)
    upper_cell = np.logical_and(ranks == upper, present).astype(np.float64)
    return lower_cell, upper_cell, position, numbers


nondifferentiable(nan_quantile_cells)


@vjp_rule(np.nanquantile, inline=False)
def _nanquantile(
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
    cotangents = _nan_quantile_vjp(g, a, q, axis, method, weights, 1.0)
    return cotangents  # (of a, of q)


@jvp_rule(np.nanquantile, inline=False)
def _nanquantile_jvp(
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
    tangents = _nan_quantile_jvp(t, ans, a, q, axis, method, weights, 1.0)
    return tangents  # (from a, from q)


@vjp_rule(np.nanpercentile, inline=False)
def _nanpercentile(
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
    cotangents = _nan_quantile_vjp(g, a, q, axis, method, weights, 0.01)
    return cotangents  # (of a, of q)


@jvp_rule(np.nanpercentile, inline=False)
def _nanpercentile_jvp(
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
    tangents = _nan_quantile_jvp(t, ans, a, q, axis, method, weights, 0.01)
    return tangents  # (from a, from q)


def _nan_quantile_vjp(g, a, q, axis, method, weights, scale):
    grouped = group_axes(a, axis)
    cells = nan_quantile_cells(grouped, q, method, weights, scale)
    steps = (cells[3] - 1.0) * scale
    levels = np.reshape(q, (-1,) + (1,) * np.ndim(grouped))
    fraction = levels * steps - cells[2]
    mix = cast_like(cells[0] + fraction * (cells[1] - cells[0]), a)
    g_levels = np.reshape(g, (np.size(q),) + np.shape(grouped)[:-1] + (1,))
    ga = ungroup_axes(np.sum(g_levels * mix, axis=0), a, axis)
    slopes = cast_like(steps * (cells[1] - cells[0]), a)
    numbers = np.where(np.isnan(grouped), 0.0, grouped)
    rates = np.sum(slopes * numbers, axis=-1, keepdims=True)
    gq = np.sum(np.reshape(g_levels * rates, (np.size(q), -1)), axis=1)
    return ga, np.reshape(gq, np.shape(q))


def _nan_quantile_jvp(t, ans, a, q, axis, method, weights, scale):
    # forward mode calls this once per differentiated argument, with that argument's
    # tangent: an entry is computed only for a tangent of its argument's shape
    grouped = group_axes(a, axis)
    cells = nan_quantile_cells(grouped, q, method, weights, scale)
    steps = (cells[3] - 1.0) * scale
    levels = np.reshape(q, (-1,) + (1,) * np.ndim(grouped))
    from_a = from_q = None
    if np.shape(t) == np.shape(a):
        fraction = levels * steps - cells[2]
        mix = cast_like(cells[0] + fraction * (cells[1] - cells[0]), a)
        from_a = np.reshape(np.sum(group_axes(t, axis) * mix, axis=-1), np.shape(ans))[()]
    if np.shape(t) == np.shape(q):
        slopes = cast_like(steps * (cells[1] - cells[0]), a)
        numbers = np.where(np.isnan(grouped), 0.0, grouped)
        rates = np.sum(slopes * numbers, axis=-1)
        tq = np.reshape(t, (np.size(q),) + (1,) * (np.ndim(grouped) - 1))
        from_q = np.reshape(rates * tq, np.shape(ans))[()]
    return from_a, from_q
