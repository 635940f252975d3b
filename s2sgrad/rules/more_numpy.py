"""Derivative rules for NumPy functions that rebuild arrays from others, and two ufuncs:
``np.diagflat``, ``np.ediff1d``, ``np.resize``, ``np.delete``, ``np.insert``, ``np.geomspace``,
``np.logspace``, ``np.linalg.multi_dot``, ``np.copysign``, ``np.modf`` and ``np.divmod``
(with Python's ``divmod``).

* ``diagflat(v, k)`` puts the flattened ``v`` on a diagonal; ``resize`` repeats the
  flattened input cyclically (the cotangents of the copies add up); ``delete`` takes the
  entries it keeps (``np.take`` of the kept positions) and ``insert`` adds ``values``
  (broadcast as NumPy does), both differentiated; ``ediff1d`` is the differences of
  the flattened input between ``to_begin`` and ``to_end``, all three differentiated.
* ``geomspace(a, b)[i] = a * (b / a) ** w[i]`` and ``logspace(a, b)[i] = base ** (a + (b - a)
  * w[i])`` with ``w = np.linspace(0, 1, num, endpoint)``, in ``start``, ``stop`` and
  ``logspace``'s ``base``; an integer ``dtype`` makes them piecewise constant.
* ``copysign(x1, x2)`` is ``|x1|`` with the sign of ``x2``: its derivative in ``x1`` is
  ``sign(x1)`` times that sign (0 at ``x1 == 0``, as ``np.abs``'s), and it does not change
  with ``x2`` except where ``x2``'s sign flips (a zero by design).
* ``modf(x)`` gives ``(x - trunc(x), trunc(x))``: derivative 1 in the first, 0 in the
  second (between integers).
* ``divmod(x1, x2)`` gives ``(q, x1 - q * x2)`` with ``q = floor(x1 / x2)``: the quotient is
  piecewise constant (derivative 0), the remainder's derivative is 1 in ``x1`` and ``-q`` in
  ``x2`` (as ``np.mod``'s).
"""

from __future__ import annotations

import numpy as np

from s2sgrad.rules.registry import (
    complex_ready,
    jvp_rule,
    nondifferentiable,
    vjp_rule,
    zero_by_design,
)
from s2sgrad.rules.shapes import linspace_weights, real_valued
from s2sgrad.runtime import unbroadcast, untake

# ---------------------------------------------------------------------------------------
# Diagonals, repeats, deletions, differences


@vjp_rule(np.diagflat)
def _diagflat(g, ans, v, k=0):
    return np.reshape(np.diagonal(g, k), np.shape(v))


@jvp_rule(np.diagflat)
def _diagflat_jvp(t, ans, v, k=0):
    return np.diagflat(t, k)


@vjp_rule(np.resize, inline=False)
def _resize(g, ans, a, new_shape):
    count = np.size(a)
    if count == 0 or np.size(g) == 0:  # nothing repeated, or nothing made
        return np.zeros(np.shape(a), dtype=np.result_type(g))
    padded = np.pad(np.ravel(g), (0, (-np.size(g)) % count))
    return np.reshape(np.sum(np.reshape(padded, (-1, count)), axis=0), np.shape(a))


@jvp_rule(np.resize)
def _resize_jvp(t, ans, a, new_shape):
    return np.resize(t, new_shape)


@vjp_rule(np.delete)
def _delete(g, ans, arr, obj, axis=None):
    if axis is None:
        kept = np.delete(np.arange(np.size(arr)), obj)
    else:
        kept = np.delete(np.arange(np.shape(arr)[axis]), obj)
    return untake(g, arr, kept, axis)


@jvp_rule(np.delete)
def _delete_jvp(t, ans, arr, obj, axis=None):
    return np.delete(t, obj, axis=axis)


# np.insert: each entry of the result is an entry of arr or of values (broadcast as NumPy
# does); inserting the entries' own positions, with the same call, says which.


def insert_sources(arr, obj, values, axis=None) -> tuple:
    """For ``np.insert(arr, obj, values, axis)``: two integer arrays shaped like its result,
    the position in ``np.ravel(arr)`` and in ``np.ravel(values)`` each entry comes from
    (``-1`` where it comes from the other).

    Example::

        insert_sources(np.zeros(3), 1, 5.0)  # (array([0, -1, 1, 2]), array([-1, 0, -1, -1]))
    """
    shape_of_values = np.shape(values)
    from_arr = np.reshape(np.arange(np.size(arr)), np.shape(arr))
    from_values = np.reshape(np.arange(int(np.prod(shape_of_values))), shape_of_values)
    return (
        np.insert(from_arr, obj, np.full(shape_of_values, -1), axis),
        np.insert(np.full(np.shape(arr), -1), obj, from_values, axis),
    )


nondifferentiable(insert_sources)


@vjp_rule(np.insert, inline=False)
def _insert(g, ans, arr, obj, values, axis=None):
    sources = insert_sources(arr, obj, values, axis)
    flat = np.ravel(g)
    of_arr = np.flatnonzero(np.ravel(sources[0]) >= 0)
    of_values = np.flatnonzero(np.ravel(sources[1]) >= 0)
    g_arr = untake(flat[of_arr], np.ravel(arr), np.ravel(sources[0])[of_arr])
    g_values = untake(flat[of_values], np.ravel(values), np.ravel(sources[1])[of_values])
    return np.reshape(g_arr, np.shape(arr)), None, np.reshape(g_values, np.shape(values))


@jvp_rule(np.insert, inline=False)
def _insert_jvp(t, ans, arr, obj, values, axis=None):
    # forward mode calls this once per differentiated argument, with that argument's
    # tangent: an entry is computed only for a tangent of its argument's shape
    from_arr = from_values = None
    if np.shape(t) == np.shape(arr):
        from_arr = np.insert(t, obj, np.zeros(np.shape(values), np.asarray(t).dtype), axis)
    if np.shape(t) == np.shape(values):
        from_values = np.insert(np.zeros(np.shape(arr), np.asarray(t).dtype), obj, t, axis)
    return from_arr, None, from_values


# ediff1d: [*to_begin, *diff(ravel(ary)), *to_end]; d = a[1:] - a[:-1] has the adjoint
# -diff of [0, g_d, 0].


@vjp_rule(np.ediff1d, inline=False)
def _ediff1d(g, ans, ary, to_end=None, to_begin=None):
    begin = 0
    if to_begin is not None:
        begin = np.size(to_begin)
    end = np.size(g)
    if to_end is not None:
        end = np.size(g) - np.size(to_end)
    edge = np.zeros(1, dtype=np.result_type(g))
    g_ary = np.reshape(-np.diff(np.concatenate((edge, g[begin:end], edge))), np.shape(ary))
    g_end = g_begin = None
    if to_end is not None:
        g_end = np.reshape(g[end:], np.shape(to_end))
    if to_begin is not None:
        g_begin = np.reshape(g[:begin], np.shape(to_begin))
    return g_ary, g_end, g_begin


@jvp_rule(np.ediff1d, inline=False)
def _ediff1d_jvp(t, ans, ary, to_end=None, to_begin=None):
    # forward mode calls this once per differentiated argument, with that argument's
    # tangent: each entry puts t where its argument's values are in the result
    before = 0
    if to_begin is not None:
        before = np.size(to_begin)
    after = 0
    if to_end is not None:
        after = np.size(to_end)
    flat = np.ravel(t)
    dtype = np.result_type(ans)
    from_ary = np.concatenate(
        (np.zeros(before, dtype), np.diff(flat).astype(dtype), np.zeros(after, dtype))
    )
    middle = np.size(ans) - before - after
    from_end = np.concatenate((np.zeros(before + middle, dtype), flat.astype(dtype)))
    from_begin = np.concatenate((flat.astype(dtype), np.zeros(middle + after, dtype)))
    return from_ary, from_end, from_begin


complex_ready(np.diagflat, np.resize, np.delete, np.insert, np.ediff1d)


# ---------------------------------------------------------------------------------------
# Geometric and logarithmic grids: each sample moves with the endpoints by the weights of
# np.linspace(0, 1, num, endpoint) along ``axis``


def _along(value, start, stop, axis):
    """``value`` broadcast to the endpoints' shape, with ``axis`` added for the samples."""
    shape = np.broadcast_shapes(np.shape(start), np.shape(stop))
    return np.expand_dims(np.broadcast_to(value, shape), axis)


@vjp_rule(np.geomspace, inline=False)
def _geomspace(g, ans, start, stop, num=50, endpoint=True, dtype=None, axis=0):
    if not real_valued(ans):
        return None, None
    weights = linspace_weights(ans, num, endpoint, axis)
    to_start = np.sum(g * ans * (1.0 - weights), axis=axis) / start
    to_stop = np.sum(g * ans * weights, axis=axis) / stop
    return unbroadcast(to_start, start), unbroadcast(to_stop, stop)


@jvp_rule(np.geomspace, inline=False)
def _geomspace_jvp(t, ans, start, stop, num=50, endpoint=True, dtype=None, axis=0):
    if not real_valued(ans):
        return None, None
    weights = linspace_weights(ans, num, endpoint, axis)
    from_start = _along(t / start, start, stop, axis) * ans * (1.0 - weights)
    from_stop = _along(t / stop, start, stop, axis) * ans * weights
    return from_start, from_stop


def _as_used(base, axis):
    """``base`` shaped as np.logspace uses it: an array gets ``axis`` for the samples."""
    if np.ndim(base) == 0:
        return base
    return np.expand_dims(base, axis)


# d/d base of base ** e is base ** e * e / base, with e the exponents np.linspace(start,
# stop, num, endpoint, axis=axis) that np.logspace raises base to


@vjp_rule(np.logspace, inline=False)
def _logspace(g, ans, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    if not real_valued(ans):
        return None, None, None, None, None
    weights = linspace_weights(ans, num, endpoint, axis)
    used = _as_used(base, axis)
    rate = g * ans * np.log(used)
    to_start = np.sum(rate * (1.0 - weights), axis=axis)
    to_stop = np.sum(rate * weights, axis=axis)
    exponents = np.linspace(start, stop, num, endpoint=endpoint, axis=axis)
    to_base = np.reshape(unbroadcast(g * ans * exponents / used, used), np.shape(base))
    return unbroadcast(to_start, start), unbroadcast(to_stop, stop), None, None, to_base


@jvp_rule(np.logspace, inline=False)
def _logspace_jvp(t, ans, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    # forward mode calls this once per differentiated argument, with that argument's
    # tangent: an entry is computed only for a tangent of its argument's shape
    if not real_valued(ans):
        return None, None, None, None, None
    weights = linspace_weights(ans, num, endpoint, axis)
    used = _as_used(base, axis)
    from_start = from_stop = from_base = None
    if np.shape(t) == np.shape(start) or np.shape(t) == np.shape(stop):
        rate = _along(t, start, stop, axis) * ans * np.log(used)
        from_start = rate * (1.0 - weights)
        from_stop = rate * weights
    if np.shape(t) == np.shape(base):
        exponents = np.linspace(start, stop, num, endpoint=endpoint, axis=axis)
        from_base = _as_used(t, axis) * ans * exponents / used
    return from_start, from_stop, None, None, from_base


# ---------------------------------------------------------------------------------------
# np.linalg.multi_dot: a chain of matrix products (a 1-D first factor is a row, a 1-D last
# one a column). Factor i's cotangent is (the product before it)^T g (the product after)^T.


def _chain(factors):
    if len(factors) == 1:
        return factors[0]
    return np.linalg.multi_dot(factors)


def _as_matrices(arrays):
    count = len(arrays)
    return [
        np.reshape(a, (1, -1))
        if i == 0 and np.ndim(a) == 1
        else (np.reshape(a, (-1, 1)) if i == count - 1 and np.ndim(a) == 1 else a)
        for i, a in enumerate(arrays)
    ]


def _factor_cotangent(g, factors, index):
    cotangent = g
    if index + 1 < len(factors):
        cotangent = np.matmul(cotangent, np.swapaxes(_chain(factors[index + 1 :]), 0, 1))
    if index > 0:
        cotangent = np.matmul(np.swapaxes(_chain(factors[:index]), 0, 1), cotangent)
    return cotangent


@vjp_rule(np.linalg.multi_dot, inline=False)
def _multi_dot(g, ans, arrays, *, out=None):
    factors = _as_matrices(arrays)
    square = np.reshape(g, (np.shape(factors[0])[0], np.shape(factors[-1])[1]))
    return [  # one cotangent for the list of factors: a list
        np.reshape(_factor_cotangent(square, factors, i), np.shape(arrays[i]))
        for i in range(len(arrays))
    ]


@jvp_rule(np.linalg.multi_dot, inline=False)
def _multi_dot_jvp(t, ans, arrays, *, out=None):
    terms = [
        np.linalg.multi_dot(list(arrays[:i]) + [t[i]] + list(arrays[i + 1 :]))
        for i in range(len(arrays))
    ]
    return sum(terms)


complex_ready(np.linalg.multi_dot)


# ---------------------------------------------------------------------------------------
# copysign and modf


@vjp_rule(np.copysign)
def _copysign(g, ans, x1, x2):
    return unbroadcast(g * np.sign(x1) * np.copysign(1.0, x2), x1), None


@jvp_rule(np.copysign)
def _copysign_jvp(t, ans, x1, x2):
    return t * np.sign(x1) * np.copysign(1.0, x2), None


zero_by_design(np.copysign, 1)  # only the sign of x2 counts


@vjp_rule(np.modf)
def _modf(g, ans, x):
    g_x = np.zeros_like(x)
    if g[0] is not None:  # the integer part, g[1], has derivative 0
        g_x = g[0]
    return g_x


@jvp_rule(np.modf)
def _modf_jvp(t, ans, x):
    return ((t, np.zeros_like(ans[1])),)


@vjp_rule(np.divmod, divmod)
def _divmod(g, ans, x1, x2):
    g_remainder = np.zeros_like(ans[1]) if g[1] is None else g[1]  # the quotient's is 0
    return unbroadcast(g_remainder, x1), unbroadcast(-g_remainder * ans[0], x2)


@jvp_rule(np.divmod, divmod)
def _divmod_jvp(t, ans, x1, x2):
    zero = np.zeros_like(ans[0])
    return (zero, np.broadcast_to(t, np.shape(ans[1]))), (zero, -t * ans[0])


from s2sgrad.rules import numpy_pieces as _numpy_pieces  # noqa: E402, F401  (its rules)
