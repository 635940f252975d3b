"""Rules for the methods of ufuncs: ``reduce``, ``accumulate`` and ``outer``.

``np.add.reduce(x, axis=0)`` is its own primitive: the rules are keyed by the bound method
(``np.add.reduce == np.add.reduce`` holds for the method objects NumPy makes on each
access), so the transformer finds them when it resolves the call, and the tape when
``__array_ufunc__`` is called with ``method="reduce"``.

* ``reduce`` of ``add``, ``multiply``, ``maximum``, ``minimum``, ``fmax``, ``fmin``,
  ``logaddexp``, ``logaddexp2``, ``hypot`` (any ``axis``, ``keepdims``) and ``subtract``
  (one axis); ``initial=`` and ``where=`` are refused.
* ``accumulate`` of ``add``, ``subtract``, ``multiply``, ``maximum``, ``minimum``, ``fmax``,
  ``fmin``, ``logaddexp``, ``logaddexp2`` and ``hypot``.
* ``outer`` of every binary ufunc with a rule (``add``, ``subtract``, ``multiply``,
  ``divide``, ``power``, ``float_power``, ``remainder``, ``fmod``, ``hypot``, ``arctan2``,
  ``logaddexp``, ``logaddexp2``, ``maximum``, ``minimum``, ``fmax``, ``fmin``, ``ldexp``,
  ``heaviside``, ``nextafter``): ``u.outer(a, b)`` is ``u(a[..., None, ...], b)``, so each
  rule is the ufunc's own with ``a`` reshaped.

The methods of the other ufuncs, and ``ufunc.at`` (except ``np.add.at`` and
``np.subtract.at``, which the transformer writes as item assignments), have no rule and are
refused. At ties, ``maximum``/``minimum`` reductions split the cotangent among equal
maxima as ``np.max`` does; their accumulations send it to the first maximum.
"""

from __future__ import annotations

import numpy as np

from s2sgrad.rules.registry import jvp_rule, vjp_rule, zero_by_design
from s2sgrad.runtime import (
    cast_like,
    exclusive_cumprod,
    first_positive,
    linear_recurrence,
    outer_shape,
    plain_reduction,
    prod_of_others,
    running_source,
    shift_along,
    unbroadcast,
    untake_along_axis,
)

# ---------------------------------------------------------------------------------------
# reduce: the cotangent spread back over the reduced axes


@vjp_rule(np.add.reduce)
def _add_reduce(
    g, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = array
    else:
        checked = plain_reduction(array, initial, where)
    spread = g
    if axis is not None and not keepdims:
        spread = np.expand_dims(g, axis)
    return np.broadcast_to(spread, np.shape(checked))


@jvp_rule(np.add.reduce)
def _add_reduce_jvp(
    t, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = t
    else:
        checked = plain_reduction(t, initial, where)
    return np.add.reduce(checked, axis=axis, keepdims=keepdims)


@vjp_rule(np.subtract.reduce)
def _subtract_reduce(
    g, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = array
    else:
        checked = plain_reduction(array, initial, where)
    spread = g
    if axis is not None and not keepdims:
        spread = np.expand_dims(g, axis)
    return spread * first_positive(checked, axis)


@jvp_rule(np.subtract.reduce)
def _subtract_reduce_jvp(
    t, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = t
    else:
        checked = plain_reduction(t, initial, where)
    return np.sum(checked * first_positive(array, axis), axis=axis, keepdims=keepdims)


@vjp_rule(np.multiply.reduce)
def _multiply_reduce(
    g, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = array
    else:
        checked = plain_reduction(array, initial, where)
    spread = g
    if axis is not None and not keepdims:
        spread = np.expand_dims(g, axis)
    return spread * prod_of_others(checked, axis)


@jvp_rule(np.multiply.reduce)
def _multiply_reduce_jvp(
    t, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = t
    else:
        checked = plain_reduction(t, initial, where)
    return np.sum(checked * prod_of_others(array, axis), axis=axis, keepdims=keepdims)


@vjp_rule(np.maximum.reduce, np.minimum.reduce, np.fmax.reduce, np.fmin.reduce)
def _extremum_reduce(
    g, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = array
    else:
        checked = plain_reduction(array, initial, where)
    spread = g
    ans_kept = ans
    if axis is not None and not keepdims:
        spread = np.expand_dims(g, axis)
        ans_kept = np.expand_dims(ans, axis)
    hits = np.equal(checked, ans_kept)
    return hits * (spread / np.sum(hits, axis=axis, keepdims=True, dtype=ans.dtype))


@jvp_rule(np.maximum.reduce, np.minimum.reduce, np.fmax.reduce, np.fmin.reduce)
def _extremum_reduce_jvp(
    t, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = t
    else:
        checked = plain_reduction(t, initial, where)
    ans_kept = ans
    if axis is not None and not keepdims:
        ans_kept = np.expand_dims(ans, axis)
    hits = np.equal(array, ans_kept)
    share = hits / np.sum(hits, axis=axis, keepdims=True, dtype=ans.dtype)
    return np.sum(checked * share, axis=axis, keepdims=keepdims)


@vjp_rule(np.logaddexp.reduce)
def _logaddexp_reduce(
    g, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = array
    else:
        checked = plain_reduction(array, initial, where)
    spread = g
    ans_kept = ans
    if axis is not None and not keepdims:
        spread = np.expand_dims(g, axis)
        ans_kept = np.expand_dims(ans, axis)
    # an entry -inf adds nothing (weight 0, also where every entry is: ans = -inf too)
    return spread * np.exp(checked - np.where(checked == -np.inf, 0.0, ans_kept))


@jvp_rule(np.logaddexp.reduce)
def _logaddexp_reduce_jvp(
    t, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = t
    else:
        checked = plain_reduction(t, initial, where)
    ans_kept = ans
    if axis is not None and not keepdims:
        ans_kept = np.expand_dims(ans, axis)
    weights = np.exp(array - np.where(array == -np.inf, 0.0, ans_kept))
    return np.sum(checked * weights, axis=axis, keepdims=keepdims)


@vjp_rule(np.logaddexp2.reduce)
def _logaddexp2_reduce(
    g, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = array
    else:
        checked = plain_reduction(array, initial, where)
    spread = g
    ans_kept = ans
    if axis is not None and not keepdims:
        spread = np.expand_dims(g, axis)
        ans_kept = np.expand_dims(ans, axis)
    # an entry -inf adds nothing (weight 0, also where every entry is: ans = -inf too)
    return spread * np.exp2(checked - np.where(checked == -np.inf, 0.0, ans_kept))


@jvp_rule(np.logaddexp2.reduce)
def _logaddexp2_reduce_jvp(
    t, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = t
    else:
        checked = plain_reduction(t, initial, where)
    ans_kept = ans
    if axis is not None and not keepdims:
        ans_kept = np.expand_dims(ans, axis)
    weights = np.exp2(array - np.where(array == -np.inf, 0.0, ans_kept))
    return np.sum(checked * weights, axis=axis, keepdims=keepdims)


@vjp_rule(np.hypot.reduce)
def _hypot_reduce(
    g, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = array
    else:
        checked = plain_reduction(array, initial, where)
    spread = g
    ans_kept = ans
    if axis is not None and not keepdims:
        spread = np.expand_dims(g, axis)
        ans_kept = np.expand_dims(ans, axis)
    return spread * checked / ans_kept


@jvp_rule(np.hypot.reduce)
def _hypot_reduce_jvp(
    t, ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True
):
    if initial is None and where is True:  # noqa: SIM108
        checked = t
    else:
        checked = plain_reduction(t, initial, where)
    ans_kept = ans
    if axis is not None and not keepdims:
        ans_kept = np.expand_dims(ans, axis)
    return np.sum(checked * array / ans_kept, axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------------------------------
# accumulate (one axis): cumulative sums run backwards in the VJP


@vjp_rule(np.add.accumulate)
def _add_accumulate(g, ans, array, axis=0, dtype=None, out=None):
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


@jvp_rule(np.add.accumulate)
def _add_accumulate_jvp(t, ans, array, axis=0, dtype=None, out=None):
    return np.add.accumulate(t, axis)


# x0 - x1 - ... - xi: x0 counts positively in every output, the others negatively.
@vjp_rule(np.subtract.accumulate)
def _subtract_accumulate(g, ans, array, axis=0, dtype=None, out=None):
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis) * first_positive(array, axis)


@jvp_rule(np.subtract.accumulate)
def _subtract_accumulate_jvp(t, ans, array, axis=0, dtype=None, out=None):
    return np.cumsum(t * first_positive(array, axis), axis)


@vjp_rule(np.multiply.accumulate)
def _multiply_accumulate(g, ans, array, axis=0, dtype=None, out=None):
    after = linear_recurrence(shift_along(array, axis, True), g, axis, True)
    return after * exclusive_cumprod(array, axis)


@jvp_rule(np.multiply.accumulate)
def _multiply_accumulate_jvp(t, ans, array, axis=0, dtype=None, out=None):
    return linear_recurrence(array, exclusive_cumprod(array, axis) * t, axis)


# Each running maximum is one of the elements: running_source says which.
@vjp_rule(np.maximum.accumulate, np.fmax.accumulate)
def _maximum_accumulate(g, ans, array, axis=0, dtype=None, out=None):
    return untake_along_axis(g, array, running_source(array, axis, "maximum"), axis)


@jvp_rule(np.maximum.accumulate, np.fmax.accumulate)
def _maximum_accumulate_jvp(t, ans, array, axis=0, dtype=None, out=None):
    return np.take_along_axis(t, running_source(array, axis, "maximum"), axis)


@vjp_rule(np.minimum.accumulate, np.fmin.accumulate)
def _minimum_accumulate(g, ans, array, axis=0, dtype=None, out=None):
    return untake_along_axis(g, array, running_source(array, axis, "minimum"), axis)


@jvp_rule(np.minimum.accumulate, np.fmin.accumulate)
def _minimum_accumulate_jvp(t, ans, array, axis=0, dtype=None, out=None):
    return np.take_along_axis(t, running_source(array, axis, "minimum"), axis)


# out_i = log(sum_{j <= i} exp(x_j)): d out_i / d x_j = exp(x_j - out_i), scaled by the
# last (largest) output so that nothing overflows for moderate ranges.
@vjp_rule(np.logaddexp.accumulate)
def _logaddexp_accumulate(g, ans, array, axis=0, dtype=None, out=None):
    top = np.take(ans, [-1], axis=axis)
    later = np.flip(np.cumsum(np.flip(g * np.exp(top - ans), axis), axis), axis)
    return np.exp(array - top) * later


@jvp_rule(np.logaddexp.accumulate)
def _logaddexp_accumulate_jvp(t, ans, array, axis=0, dtype=None, out=None):
    top = np.take(ans, [-1], axis=axis)
    return np.cumsum(t * np.exp(array - top), axis) * np.exp(top - ans)


@vjp_rule(np.logaddexp2.accumulate)
def _logaddexp2_accumulate(g, ans, array, axis=0, dtype=None, out=None):
    top = np.take(ans, [-1], axis=axis)
    later = np.flip(np.cumsum(np.flip(g * np.exp2(top - ans), axis), axis), axis)
    return np.exp2(array - top) * later


@jvp_rule(np.logaddexp2.accumulate)
def _logaddexp2_accumulate_jvp(t, ans, array, axis=0, dtype=None, out=None):
    top = np.take(ans, [-1], axis=axis)
    return np.cumsum(t * np.exp2(array - top), axis) * np.exp2(top - ans)


# out_i = sqrt(sum_{j <= i} x_j ** 2)
@vjp_rule(np.hypot.accumulate)
def _hypot_accumulate(g, ans, array, axis=0, dtype=None, out=None):
    return array * np.flip(np.cumsum(np.flip(g / ans, axis), axis), axis)


@jvp_rule(np.hypot.accumulate)
def _hypot_accumulate_jvp(t, ans, array, axis=0, dtype=None, out=None):
    return np.cumsum(array * t, axis) / ans


# ---------------------------------------------------------------------------------------
# outer: u.outer(a, b) = u(a reshaped to a.shape + (1,) * b.ndim, b)


@vjp_rule(np.add.outer)
def _add_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(unbroadcast(g, left), np.shape(a)), unbroadcast(g, b)


@jvp_rule(np.add.outer)
def _add_outer_jvp(t, ans, a, b):
    t_left = np.reshape(t, outer_shape(t, b))
    return np.broadcast_to(t_left, np.shape(ans)), np.broadcast_to(t, np.shape(ans))


@vjp_rule(np.subtract.outer)
def _subtract_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(unbroadcast(g, left), np.shape(a)), unbroadcast(-g, b)


@jvp_rule(np.subtract.outer)
def _subtract_outer_jvp(t, ans, a, b):
    t_left = np.reshape(t, outer_shape(t, b))
    return np.broadcast_to(t_left, np.shape(ans)), np.broadcast_to(-t, np.shape(ans))


@vjp_rule(np.multiply.outer)
def _multiply_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(unbroadcast(g * b, left), np.shape(a)), unbroadcast(g * left, b)


@jvp_rule(np.multiply.outer)
def _multiply_outer_jvp(t, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    t_left = np.reshape(t, outer_shape(t, b))
    return t_left * b, left * t


@vjp_rule(np.divide.outer)
def _divide_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(unbroadcast(g / b, left), np.shape(a)), unbroadcast(-g * ans / b, b)


@jvp_rule(np.divide.outer)
def _divide_outer_jvp(t, ans, a, b):
    t_left = np.reshape(t, outer_shape(t, b))
    return t_left / b, -t * ans / b


@vjp_rule(np.power.outer)
def _power_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(unbroadcast(g * b * left ** (b - (b != 0)), left), np.shape(a)), unbroadcast(
        g * ans * np.log(np.where(left == 0, 1, left)), b
    )


@jvp_rule(np.power.outer)
def _power_outer_jvp(t, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    t_left = np.reshape(t, outer_shape(t, b))
    return t_left * b * left ** (b - (b != 0)), t * ans * np.log(np.where(left == 0, 1, left))


@vjp_rule(np.hypot.outer)
def _hypot_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(unbroadcast(g * left / ans, left), np.shape(a)), unbroadcast(g * b / ans, b)


@jvp_rule(np.hypot.outer)
def _hypot_outer_jvp(t, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    t_left = np.reshape(t, outer_shape(t, b))
    return t_left * left / ans, t * b / ans


@vjp_rule(np.arctan2.outer)
def _arctan2_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(unbroadcast(g * b / (left**2 + b**2), left), np.shape(a)), unbroadcast(
        -g * left / (left**2 + b**2), b
    )


@jvp_rule(np.arctan2.outer)
def _arctan2_outer_jvp(t, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    t_left = np.reshape(t, outer_shape(t, b))
    return t_left * b / (left**2 + b**2), -t * left / (left**2 + b**2)


@vjp_rule(np.logaddexp.outer)
def _logaddexp_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(unbroadcast(g * np.exp(left - ans), left), np.shape(a)), unbroadcast(
        g * np.exp(b - ans), b
    )


@jvp_rule(np.logaddexp.outer)
def _logaddexp_outer_jvp(t, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    t_left = np.reshape(t, outer_shape(t, b))
    return t_left * np.exp(left - ans), t * np.exp(b - ans)


@vjp_rule(np.logaddexp2.outer)
def _logaddexp2_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(unbroadcast(g * np.exp2(left - ans), left), np.shape(a)), unbroadcast(
        g * np.exp2(b - ans), b
    )


@jvp_rule(np.logaddexp2.outer)
def _logaddexp2_outer_jvp(t, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    t_left = np.reshape(t, outer_shape(t, b))
    return t_left * np.exp2(left - ans), t * np.exp2(b - ans)


# The element equal to the result gets the cotangent: half each at a tie of two
# differentiated arguments, all of it to a constant one (as for np.maximum).
@vjp_rule(np.maximum.outer, np.minimum.outer, np.fmax.outer, np.fmin.outer)
def _select_outer(g, ans, a, b, *, differentiated=(True, True)):
    left = np.reshape(a, outer_shape(a, b))
    if differentiated == (True, False):
        from_a = np.reshape(unbroadcast(g * ((left == ans) & (left != b)), left), np.shape(a))
        from_b = None
    elif differentiated == (False, True):
        from_a = None
        from_b = unbroadcast(g * ((b == ans) & (left != b)), b)
    else:
        from_a_outer = unbroadcast(np.where(left == b, 0.5 * g, g * (left == ans)), left)
        from_a = np.reshape(from_a_outer, np.shape(a))
        from_b = unbroadcast(np.where(left == b, 0.5 * g, g * (b == ans)), b)
    return from_a, from_b


@jvp_rule(np.maximum.outer, np.minimum.outer, np.fmax.outer, np.fmin.outer)
def _select_outer_jvp(t, ans, a, b, *, differentiated=(True, True)):
    left = np.reshape(a, outer_shape(a, b))
    t_left = np.reshape(t, outer_shape(t, b))
    if differentiated == (True, True):  # noqa: SIM108 (a rule body: statements)
        share = 0.5
    else:
        share = 0.0
    return (
        np.where(left == b, share * t_left, t_left * (left == ans)),
        np.where(left == b, share * t, t * (b == ans)),
    )


@vjp_rule(np.float_power.outer)
def _float_power_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(
        cast_like(unbroadcast(g * b * np.float_power(left, b - 1), left), left), np.shape(a)
    ), cast_like(unbroadcast(g * ans * np.log(np.where(left == 0, 1, left)), b), b)


@jvp_rule(np.float_power.outer)
def _float_power_outer_jvp(t, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    t_left = np.reshape(t, outer_shape(t, b))
    return t_left * b * np.float_power(left, b - 1), t * ans * np.log(np.where(left == 0, 1, left))


@vjp_rule(np.remainder.outer)
def _remainder_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(unbroadcast(g, left), np.shape(a)), unbroadcast(
        -g * np.floor_divide(left, b), b
    )


@jvp_rule(np.remainder.outer)
def _remainder_outer_jvp(t, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    t_left = np.reshape(t, outer_shape(t, b))
    return np.broadcast_to(t_left, np.shape(ans)), -t * np.floor_divide(left, b)


@vjp_rule(np.fmod.outer)
def _fmod_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(unbroadcast(g, left), np.shape(a)), unbroadcast(-g * np.trunc(left / b), b)


@jvp_rule(np.fmod.outer)
def _fmod_outer_jvp(t, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    t_left = np.reshape(t, outer_shape(t, b))
    return np.broadcast_to(t_left, np.shape(ans)), -t * np.trunc(left / b)


@vjp_rule(np.ldexp.outer)
def _ldexp_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(unbroadcast(np.ldexp(g, b), left), np.shape(a)), None


@jvp_rule(np.ldexp.outer)
def _ldexp_outer_jvp(t, ans, a, b):
    t_left = np.reshape(t, outer_shape(t, b))
    return np.ldexp(t_left, b), None


@vjp_rule(np.nextafter.outer)
def _nextafter_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return np.reshape(unbroadcast(g, left), np.shape(a)), None


@jvp_rule(np.nextafter.outer)
def _nextafter_outer_jvp(t, ans, a, b):
    t_left = np.reshape(t, outer_shape(t, b))
    return np.broadcast_to(t_left, np.shape(ans)), None


@vjp_rule(np.heaviside.outer)
def _heaviside_outer(g, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return None, unbroadcast(g * (left == 0), b)


@jvp_rule(np.heaviside.outer)
def _heaviside_outer_jvp(t, ans, a, b):
    left = np.reshape(a, outer_shape(a, b))
    return None, np.broadcast_to(t * (left == 0), np.shape(ans))


zero_by_design(np.heaviside.outer, 0)  # as np.heaviside and np.nextafter
zero_by_design(np.nextafter.outer, 1)
