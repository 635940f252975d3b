"""Derivative rules for reductions: sums, means, products, extrema, moments, cumulative sums
and products, traces and norms.

A reduction over ``axis`` without ``keepdims`` drops the reduced axes. Each VJP first puts
them back as length-1 axes with ``np.expand_dims(g, axis)`` (which takes negative and tuple
axes as they are, because the restored array has the input's number of dimensions), then
lets broadcasting spread ``g`` over the reduced elements. With ``axis=None`` or
``keepdims=True`` ``g`` broadcasts already and the transformer folds the step away, so the
gradient of ``np.sum(x)`` reads ``dx = np.broadcast_to(dy, np.shape(x))``.

Ties: ``max``, ``min`` and the ``inf``-norms split the cotangent equally among all the
elements equal to the extremum, so ``np.max([1.0, 1.0])`` has gradient ``[0.5, 0.5]``.

Products never divide by the input (see :func:`s2sgrad.runtime.prod_of_others`), so zeros
are fine in ``prod`` and ``cumprod``.

Only the parameters listed in a rule's signature are supported. A ``where=`` mask leaves
entries out of a reduction: they get no cotangent, and ``mean``, ``var`` and ``std`` count
only the entries kept. The ``initial=`` of ``max`` and ``min`` takes part like one more
element (its cotangent is its share where it is the extremum); that of ``prod`` multiplies.
"""

from __future__ import annotations

import numpy as np

from s2sgrad.rules.registry import jvp_rule, nondifferentiable, vjp_rule
from s2sgrad.runtime import (
    exclusive_cumprod,
    kept_count,
    linear_recurrence,
    nonzero_norm,
    norm_direction,
    prod_of_others,
    shift_along,
    tie_share,
    unbroadcast,
    zero_if_integer,
)

# ---------------------------------------------------------------------------------------
# Sums and means


@vjp_rule(np.sum, np.ndarray.sum)
def _sum(
    cotangent, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    g_kept = g
    if axis is not None and not keepdims:
        g_kept = np.expand_dims(g, axis)
    if where is not True:  # where=mask: the entries left out get nothing
        g_kept = np.where(where, np.broadcast_to(g_kept, np.shape(a)), 0.0)
    # initial= (a number) is added to every sum
    return np.broadcast_to(g_kept, np.shape(a)), None, None, None, None, np.sum(g), None


@jvp_rule(np.sum, np.ndarray.sum)
def _sum_jvp(
    tangent, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    from_initial = None
    if initial is not None:  # initial= (a number) is added to every sum
        from_initial = np.broadcast_to(np.sum(t), np.shape(ans))
    summed = np.sum(t, axis=axis, keepdims=keepdims, where=where)
    return summed, None, None, None, None, from_initial, None


@vjp_rule(np.mean, np.ndarray.mean)
def _mean(cotangent, ans, a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    g_kept = g
    count = np.size(a)
    if axis is not None:
        count = np.size(a) // np.size(ans)
        if not keepdims:
            g_kept = np.expand_dims(g, axis)
    if where is not True:  # the mean of the entries kept: the others get nothing
        count = kept_count(where, a, axis)
        return np.where(where, g_kept / count, 0.0)
    return np.broadcast_to(g_kept / count, np.shape(a))


@jvp_rule(np.mean, np.ndarray.mean)
def _mean_jvp(tangent, ans, a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    if where is not True:
        return np.mean(np.broadcast_to(t, np.shape(a)), axis=axis, keepdims=keepdims, where=where)
    return np.mean(t, axis=axis, keepdims=keepdims)


@vjp_rule(np.nansum)
def _nansum(cotangent, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    g_kept = g
    if axis is not None and not keepdims:
        g_kept = np.expand_dims(g, axis)
    return np.where(np.isnan(a), 0.0, g_kept)


@jvp_rule(np.nansum)
def _nansum_jvp(tangent, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    return np.sum(np.where(np.isnan(a), 0.0, t), axis=axis, keepdims=keepdims)


@vjp_rule(np.nanmean)
def _nanmean(cotangent, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    g_kept = g
    if axis is not None and not keepdims:
        g_kept = np.expand_dims(g, axis)
    present = np.logical_not(np.isnan(a))
    count = np.sum(present, axis=axis, keepdims=True, dtype=ans.dtype)
    return np.where(present, g_kept / count, 0.0)


@jvp_rule(np.nanmean)
def _nanmean_jvp(tangent, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    return np.nanmean(np.where(np.isnan(a), np.nan, t), axis=axis, keepdims=keepdims)


# ``np.average`` has optional weights (of ``a``'s shape, or 1-D along an int ``axis``) and,
# with ``returned=True``, a second output (the sum of the weights): plain Python handles
# the cases, so its rules are called rather than inlined.


@vjp_rule(np.average, inline=False)
def _average(g, ans, a, axis=None, weights=None, returned=False, *, keepdims=False):
    g_average, g_total = g if returned else (g, None)
    average = ans[0] if returned else ans
    if weights is None:  # the mean; the count returned with it is a constant
        if g_average is None:
            return None
        return _mean(g_average, average, a, axis, keepdims=keepdims)
    w = np.broadcast_to(_weights_along(weights, a, axis), np.shape(a))
    total = np.sum(w, axis, keepdims=True)
    da = dw = None
    if g_average is not None:
        g_kept = _kept(g_average, axis, keepdims)
        da = g_kept * w / total
        dw = g_kept * (a - _kept(average, axis, keepdims)) / total
    if g_total is not None:
        from_total = np.broadcast_to(_kept(g_total, axis, keepdims), np.shape(a))
        dw = from_total if dw is None else dw + from_total
    if dw is not None:
        dw = np.reshape(unbroadcast(dw, _weights_along(weights, a, axis)), np.shape(weights))
    return da, None, dw


@jvp_rule(np.average, inline=False)
def _average_jvp(t, ans, a, axis=None, weights=None, returned=False, *, keepdims=False):
    # An entry whose argument has another shape than t is not asked for: it is None.
    average = ans[0] if returned else ans
    from_a = from_weights = None
    if np.shape(t) == np.shape(a):
        from_a = np.average(t, axis, weights, keepdims=keepdims)
        if returned:  # one tangent per output: (average, sum of the weights)
            from_a = (from_a, np.zeros_like(ans[1]))
    if weights is not None and np.shape(t) == np.shape(weights):
        w = np.broadcast_to(_weights_along(weights, a, axis), np.shape(a))
        tw = np.broadcast_to(_weights_along(t, a, axis), np.shape(a))
        centered = a - _kept(average, axis, keepdims)
        weighted = np.sum(tw * centered, axis, keepdims=True) / np.sum(w, axis, keepdims=True)
        from_weights = np.reshape(weighted, np.shape(average))
        if returned:
            total = np.reshape(np.sum(tw, axis, keepdims=True), np.shape(ans[1]))
            from_weights = (from_weights, total)
    return from_a, None, from_weights


def _weights_along(weights, a, axis):
    """``np.average``'s weights shaped to broadcast against ``a``."""
    if np.shape(weights) == np.shape(a):
        return weights
    shape = [1] * np.ndim(a)
    shape[axis] = np.size(weights)
    return np.reshape(weights, shape)


def _kept(value, axis, keepdims):
    """A reduction's result with the reduced axes restored as length-1 axes."""
    if axis is None or keepdims:
        return value
    return np.expand_dims(value, axis)


# ---------------------------------------------------------------------------------------
# Products and extrema


@vjp_rule(np.prod, np.ndarray.prod)
def _prod(
    cotangent, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    g_kept = g
    if axis is not None and not keepdims:
        g_kept = np.expand_dims(g, axis)
    if where is True and initial is None:
        return g_kept * prod_of_others(a, axis)
    kept = a
    if where is not True:  # the entries left out count as ones
        kept = np.where(where, a, 1.0)
    others = prod_of_others(kept, axis)
    g_initial = None
    if initial is not None:  # initial= (a number) multiplies every product
        g_initial = np.sum(g * np.prod(kept, axis=axis, keepdims=keepdims))
        others = others * initial
    if where is not True:
        others = np.where(where, others, 0.0)
    return g_kept * others, None, None, None, None, g_initial, None


@jvp_rule(np.prod, np.ndarray.prod)
def _prod_jvp(
    tangent, ans, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    if where is True and initial is None:
        return np.sum(t * prod_of_others(a, axis), axis=axis, keepdims=keepdims)
    kept = a
    if where is not True:  # the entries left out count as ones
        kept = np.where(where, a, 1.0)
    others = prod_of_others(kept, axis)
    t_initial = None
    if initial is not None:  # initial= (a number) multiplies every product
        t_initial = np.prod(kept, axis=axis, keepdims=keepdims)
        others = others * initial
    if where is not True:
        others = np.where(where, others, 0.0)
    from_a = np.sum(t * others, axis=axis, keepdims=keepdims)
    return from_a, None, None, None, None, t_initial, None


@vjp_rule(np.max, np.amax, np.min, np.amin, np.ndarray.max, np.ndarray.min)
def _extremum(g, ans, a, axis=None, out=None, keepdims=False, initial=None, where=True):
    g_kept = g
    ans_kept = ans
    if axis is not None and not keepdims:
        g_kept = np.expand_dims(g, axis)
        ans_kept = np.expand_dims(ans, axis)
    hits = np.equal(a, ans_kept)
    if where is True and initial is None:
        return hits * tie_share(g_kept, hits, axis, ans.dtype)
    hits = hits & where
    count = np.sum(hits, axis=axis, keepdims=True, dtype=ans.dtype)
    initial_hit = np.zeros_like(count)
    if initial is not None:  # initial= is one more element, sharing ties with the others
        initial_hit = np.equal(ans_kept, initial).astype(ans.dtype)
    count = count + initial_hit
    share = g_kept / np.where(count == 0, 1.0, count)
    g_initial = None
    if initial is not None:
        g_initial = np.sum(share * initial_hit)
    return hits * share, None, None, None, g_initial, None


@jvp_rule(np.max, np.amax, np.min, np.amin, np.ndarray.max, np.ndarray.min)
def _extremum_jvp(t, ans, a, axis=None, out=None, keepdims=False, initial=None, where=True):
    ans_kept = ans
    if axis is not None and not keepdims:
        ans_kept = np.expand_dims(ans, axis)
    hits = np.equal(a, ans_kept)
    if where is True and initial is None:
        share = hits / np.sum(hits, axis=axis, keepdims=True, dtype=ans.dtype)
        return np.sum(t * share, axis=axis, keepdims=keepdims)
    hits = hits & where
    count = np.sum(hits, axis=axis, keepdims=True, dtype=ans.dtype)
    initial_hit = np.zeros_like(count)
    if initial is not None:  # initial= is one more element, sharing ties with the others
        initial_hit = np.equal(ans_kept, initial).astype(ans.dtype)
    count = np.where(count + initial_hit == 0, 1.0, count + initial_hit)
    from_a = np.sum(t * (hits / count), axis=axis, keepdims=keepdims)
    t_initial = None
    if initial is not None:
        t_initial = np.reshape(initial_hit / count, np.shape(ans))
    return from_a, None, None, None, t_initial, None


# ``np.ptp`` is max - min: the cotangent goes to the maxima and, negated, to the minima.


@vjp_rule(np.ptp)
def _ptp(g, ans, a, axis=None, out=None, keepdims=False):
    g_kept = g
    if axis is not None and not keepdims:
        g_kept = np.expand_dims(g, axis)
    tops = np.equal(a, np.max(a, axis=axis, keepdims=True))
    bottoms = np.equal(a, np.min(a, axis=axis, keepdims=True))
    top_share = tops / np.sum(tops, axis=axis, keepdims=True, dtype=ans.dtype)
    bottom_share = bottoms / np.sum(bottoms, axis=axis, keepdims=True, dtype=ans.dtype)
    return g_kept * (top_share - bottom_share)


@jvp_rule(np.ptp)
def _ptp_jvp(t, ans, a, axis=None, out=None, keepdims=False):
    tops = np.equal(a, np.max(a, axis=axis, keepdims=True))
    bottoms = np.equal(a, np.min(a, axis=axis, keepdims=True))
    top_share = tops / np.sum(tops, axis=axis, keepdims=True, dtype=ans.dtype)
    bottom_share = bottoms / np.sum(bottoms, axis=axis, keepdims=True, dtype=ans.dtype)
    return np.sum(t * (top_share - bottom_share), axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------------------------------
# Variance and standard deviation (``count - ddof`` is NumPy's divisor)


@vjp_rule(np.var, np.ndarray.var)
def _var(cotangent, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    g_kept = g
    count = np.size(a)
    if axis is not None:
        count = np.size(a) // np.size(ans)
        if not keepdims:
            g_kept = np.expand_dims(g, axis)
    if where is not True:  # the variance of the entries kept: the others get nothing
        count = kept_count(where, a, axis)
        centered = a - np.mean(a, axis=axis, keepdims=True, where=where)
        return np.where(where, np.real(g_kept) * np.conj(centered) * (2.0 / (count - ddof)), 0.0)
    centered = a - np.mean(a, axis=axis, keepdims=True)
    return np.real(g_kept) * np.conj(centered) * (2.0 / (count - ddof))


@jvp_rule(np.var, np.ndarray.var)
def _var_jvp(
    tangent, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True
):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    count = np.size(a)
    if axis is not None:
        count = np.size(a) // np.size(ans)
    if where is not True:  # the variance of the entries kept
        count = np.reshape(kept_count(where, a, axis), np.shape(ans))
        centered = a - np.mean(a, axis=axis, keepdims=True, where=where)
        moved = np.sum(np.where(where, t * np.conj(centered), 0.0), axis=axis, keepdims=keepdims)
        return np.real(moved) * (2.0 / (count - ddof))
    centered = a - np.mean(a, axis=axis, keepdims=True)
    return np.real(np.sum(t * np.conj(centered), axis=axis, keepdims=keepdims)) * (
        2.0 / (count - ddof)
    )


@vjp_rule(np.std, np.ndarray.std)
def _std(cotangent, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    g_kept = g
    ans_kept = ans
    count = np.size(a)
    if axis is not None:
        count = np.size(a) // np.size(ans)
        if not keepdims:
            g_kept = np.expand_dims(g, axis)
            ans_kept = np.expand_dims(ans, axis)
    # where the deviation is 0, every centred value is 0 too: the gradient is 0, not 0/0
    divisor = np.where(ans_kept == 0, 1.0, ans_kept)
    if where is not True:  # the deviation of the entries kept: the others get nothing
        count = kept_count(where, a, axis)
        centered = a - np.mean(a, axis=axis, keepdims=True, where=where)
        moved = np.real(g_kept) * np.conj(centered) / (divisor * (count - ddof))
        return np.where(where, moved, 0.0)
    centered = a - np.mean(a, axis=axis, keepdims=True)
    return np.real(g_kept) * np.conj(centered) / (divisor * (count - ddof))


@jvp_rule(np.std, np.ndarray.std)
def _std_jvp(
    tangent, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True
):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    count = np.size(a)
    if axis is not None:
        count = np.size(a) // np.size(ans)
    divisor = np.where(ans == 0, 1.0, ans)
    if where is not True:  # the deviation of the entries kept
        count = np.reshape(kept_count(where, a, axis), np.shape(ans))
        centered = a - np.mean(a, axis=axis, keepdims=True, where=where)
        moved = np.sum(np.where(where, t * np.conj(centered), 0.0), axis=axis, keepdims=keepdims)
        return np.real(moved) / (divisor * (count - ddof))
    centered = a - np.mean(a, axis=axis, keepdims=True)
    return np.real(np.sum(t * np.conj(centered), axis=axis, keepdims=keepdims)) / (
        divisor * (count - ddof)
    )


# ---------------------------------------------------------------------------------------
# Cumulative sums and products (``axis=None`` works on the flattened input)


@vjp_rule(np.cumsum, np.ndarray.cumsum)
def _cumsum(cotangent, ans, a, axis=None, dtype=None, out=None):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    if axis is None:
        ga = np.reshape(np.flip(np.cumsum(np.flip(g))), np.shape(a))
    else:
        ga = np.flip(np.cumsum(np.flip(g, axis), axis), axis)
    return ga


@jvp_rule(np.cumsum, np.ndarray.cumsum)
def _cumsum_jvp(tangent, ans, a, axis=None, dtype=None, out=None):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    return np.cumsum(t, axis)


# y[i] = a[i] * y[i - 1]: the tangent satisfies dy[i] = a[i] * dy[i - 1] + y[i - 1] * t[i],
# and the cotangent runs that recurrence backwards. y[i - 1] is the exclusive product.


@vjp_rule(np.cumprod, np.ndarray.cumprod)
def _cumprod(cotangent, ans, a, axis=None, dtype=None, out=None):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    if axis is None:
        flat = np.ravel(a)
        after = linear_recurrence(shift_along(flat, 0, True), g, 0, True)
        ga = np.reshape(after * exclusive_cumprod(flat, 0), np.shape(a))
    else:
        after = linear_recurrence(shift_along(a, axis, True), g, axis, True)
        ga = after * exclusive_cumprod(a, axis)
    return ga


@jvp_rule(np.cumprod, np.ndarray.cumprod)
def _cumprod_jvp(tangent, ans, a, axis=None, dtype=None, out=None):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    if axis is None:
        flat = np.ravel(a)
        ta = linear_recurrence(flat, exclusive_cumprod(flat, 0) * np.ravel(t), 0)
    else:
        ta = linear_recurrence(a, exclusive_cumprod(a, axis) * t, axis)
    return ta


# ---------------------------------------------------------------------------------------
# Trace: the cotangent lies on the chosen diagonal of the (axis1, axis2) planes.


@vjp_rule(np.trace, np.ndarray.trace)
def _trace(cotangent, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    shape = np.shape(a)
    diagonal = np.eye(shape[axis1], shape[axis2], offset, dtype=np.result_type(ans))
    planes = np.expand_dims(g, (-2, -1)) * diagonal
    return np.moveaxis(planes, (-2, -1), (axis1, axis2))


@jvp_rule(np.trace, np.ndarray.trace)
def _trace_jvp(tangent, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    return np.trace(t, offset, axis1, axis2)


# ---------------------------------------------------------------------------------------
# Norms: the 2-norm and the Frobenius norm have direction x / norm; the others go through
# norm_direction (which also splits ties for the inf-norms and matrix 1-norms). At a zero
# vector, where a norm has no derivative, the direction is 0 (a subgradient, as for
# np.abs at 0; PyTorch does the same; JAX gives NaN); a second derivative there is refused
# (nonzero_norm).


@vjp_rule(np.linalg.norm)
def _norm(g, ans, x, ord=None, axis=None, keepdims=False):
    g_kept = g
    norm = ans
    if axis is not None and not keepdims:
        g_kept = np.expand_dims(g, axis)
        norm = np.expand_dims(ans, axis)
    direction = np.conj(x) / nonzero_norm(norm)
    if ord is not None and ord != "fro":
        direction = norm_direction(x, norm, ord, axis)
    return np.real(g_kept) * direction


@jvp_rule(np.linalg.norm)
def _norm_jvp(t, ans, x, ord=None, axis=None, keepdims=False):
    norm = ans
    if axis is not None and not keepdims:
        norm = np.expand_dims(ans, axis)
    direction = np.conj(x) / nonzero_norm(norm)
    if ord is not None and ord != "fro":
        direction = norm_direction(x, norm, ord, axis)
    return np.real(np.sum(t * direction, axis=axis, keepdims=keepdims))


# ---------------------------------------------------------------------------------------
# Reductions whose results do not depend continuously on the values

# the indices of an array's diagonal or triangle depend on its shape only
# (K[np.diag_indices_from(K)] += jitter)
nondifferentiable(np.diag_indices_from, np.tril_indices_from, np.triu_indices_from)

# where values fall among sorted ones: integers, constant between the sorted values
nondifferentiable(np.searchsorted, np.ndarray.searchsorted, np.digitize)

nondifferentiable(
    np.argmax,
    np.argmin,
    np.nanargmax,
    np.nanargmin,
    np.argsort,
    np.lexsort,
    np.argpartition,
    np.count_nonzero,
    np.all,
    np.any,
    np.ndarray.argmax,
    np.ndarray.argmin,
    np.ndarray.argsort,
    np.ndarray.argpartition,
    np.ndarray.all,
    np.ndarray.any,
)
