"""Derivative rules for NumPy 2's array-API names: thin variants of functions with rules.

They exist only on NumPy 2.x (some only on 2.1 or 2.2): each is registered where the
installed NumPy has it. Their semantics differ from their older twins' in small ways, which
the rules follow:

* ``np.linalg.matmul``, ``np.linalg.outer`` (1-D only), ``np.linalg.tensordot`` and
  ``np.row_stack`` compute what ``np.matmul``, ``np.outer``, ``np.tensordot`` and
  ``np.vstack`` do, and share their rules;
* ``np.linalg.trace`` and ``np.linalg.diagonal`` work on the *last* two axes;
  ``np.linalg.matrix_transpose`` and ``np.matrix_transpose`` swap them;
* ``np.linalg.vecdot`` and ``np.vecdot`` (``axis``) conjugate their first argument, and
  ``np.vecmat`` its vector: their rules are for real values (complex values are refused);
  ``np.matvec`` conjugates nothing;
* ``np.linalg.cross`` is ``np.cross`` of 3-vectors along ``axis``;
* ``np.linalg.matrix_norm`` (``ord``, ``keepdims``) is ``np.linalg.norm`` over the last two
  axes, and ``np.linalg.vector_norm`` (``ord``, ``axis``, ``keepdims``) a vector norm over
  every axis it is given (all of them by default, whatever the number of dimensions);
* ``np.linalg.svdvals`` is ``np.linalg.svd(x, compute_uv=False)`` (distinct singular values);
* ``np.unstack`` splits along ``axis``, removing it;
* ``np.cumulative_sum`` and ``np.cumulative_prod`` are ``np.cumsum`` and ``np.cumprod`` with
  ``include_initial`` (a leading 0 or 1, constants).
"""

from __future__ import annotations

import numpy as np

from s2sgrad.rules import linalg as _products  # noqa: F401  (the twins' rules, registered first)
from s2sgrad.rules import shapes as _shapes  # noqa: F401
from s2sgrad.rules.registry import complex_ready, get_rule, jvp_rule, vjp_rule
from s2sgrad.runtime import (
    exclusive_cumprod,
    group_axes,
    join_like,
    linear_recurrence,
    nonzero_norm,
    norm_direction,
    shift_along,
    unbroadcast,
    undiagonal,
    ungroup_axes,
    zero_if_integer,
)


def _present(module, name: str):
    """``module.<name>`` where the installed NumPy has it (a NumPy 2 name), else None."""
    return getattr(module, name, None)


def _share_rules(twin, *names) -> None:
    """Register the rules of ``twin`` for each ``(module, name)`` NumPy has (the same
    computation under a NumPy 2 name); complex-ready, as the twin's are (rules/complex.py)."""
    rule = get_rule(twin)
    if rule is None or rule.vjp is None or rule.jvp is None:
        raise LookupError(f"{twin!r} has no rule to share")
    for module, name in names:
        function = _present(module, name)
        if function is None or function is twin:  # NumPy 1.x: row_stack is vstack itself
            continue
        vjp_rule(function, inline=rule.inline_vjp)(rule.vjp)
        jvp_rule(function, inline=rule.inline_jvp)(rule.jvp)
        complex_ready(function)


_share_rules(np.matmul, (np.linalg, "matmul"))
_share_rules(np.outer, (np.linalg, "outer"))
_share_rules(np.tensordot, (np.linalg, "tensordot"))
_share_rules(np.vstack, (np, "row_stack"))


def _register(name: str, vjp, jvp, module=np, complex_=False) -> None:
    function = _present(module, name)
    if function is None:
        return
    vjp_rule(function)(vjp)
    jvp_rule(function)(jvp)
    if complex_:
        complex_ready(function)


# ---------------------------------------------------------------------------------------
# The last two axes: trace, diagonal, transpose


def _trace(cotangent, ans, x, offset=0, dtype=None):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    shape = np.shape(x)
    diagonal = np.eye(shape[-2], shape[-1], offset, dtype=np.result_type(ans))
    return np.expand_dims(g, (-2, -1)) * diagonal


def _trace_jvp(tangent, ans, x, offset=0, dtype=None):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    return np.trace(t, offset, -2, -1)


def _diagonal(g, ans, x, offset=0):
    return undiagonal(g, x, offset, -2, -1)


def _diagonal_jvp(t, ans, x, offset=0):
    return np.diagonal(t, offset, -2, -1)


def _matrix_transpose(g, ans, x):
    return np.swapaxes(g, -1, -2)


def _matrix_transpose_jvp(t, ans, x):
    return np.swapaxes(t, -1, -2)


_register("trace", _trace, _trace_jvp, np.linalg, complex_=True)
_register("diagonal", _diagonal, _diagonal_jvp, np.linalg, complex_=True)
_register("matrix_transpose", _matrix_transpose, _matrix_transpose_jvp, np.linalg, True)
_register("matrix_transpose", _matrix_transpose, _matrix_transpose_jvp, np, complex_=True)


# ---------------------------------------------------------------------------------------
# Products of vectors: vecdot (along axis), matvec, vecmat, cross


def _vecdot(g, ans, x1, x2, axis=-1):
    g_kept = np.expand_dims(g, axis)
    return unbroadcast(g_kept * x2, x1), unbroadcast(g_kept * x1, x2)


def _vecdot_jvp(t, ans, x1, x2, axis=-1):
    return np.sum(t * x2, axis=axis), np.sum(x1 * t, axis=axis)


def _matvec(g, ans, x1, x2):
    g_column = np.expand_dims(g, -1)
    return (
        unbroadcast(g_column * np.expand_dims(x2, -2), x1),
        unbroadcast(np.sum(x1 * g_column, axis=-2), x2),
    )


def _matvec_jvp(t, ans, x1, x2):
    return np.matvec(t, x2), np.matvec(x1, t)


def _vecmat(g, ans, x1, x2):
    g_row = np.expand_dims(g, -2)
    return (
        unbroadcast(np.sum(x2 * g_row, axis=-1), x1),
        unbroadcast(np.expand_dims(x1, -1) * g_row, x2),
    )


def _vecmat_jvp(t, ans, x1, x2):
    return np.vecmat(t, x2), np.vecmat(x1, t)


def _cross(g, ans, x1, x2, axis=-1):  # <g, dx1 x x2> = <dx1, x2 x g>
    return (
        unbroadcast(np.cross(x2, g, axis=axis), x1),
        unbroadcast(np.cross(g, x1, axis=axis), x2),
    )


def _cross_jvp(t, ans, x1, x2, axis=-1):
    return np.cross(t, x2, axis=axis), np.cross(x1, t, axis=axis)


_register("vecdot", _vecdot, _vecdot_jvp, np.linalg)
_register("vecdot", _vecdot, _vecdot_jvp, np)
_register("matvec", _matvec, _matvec_jvp, np, complex_=True)
_register("vecmat", _vecmat, _vecmat_jvp, np)
_register("cross", _cross, _cross_jvp, np.linalg)


# ---------------------------------------------------------------------------------------
# Norms and singular values


def _matrix_norm(g, ans, x, keepdims=False, ord="fro"):
    g_kept = g
    norm = ans
    if not keepdims:
        g_kept = np.expand_dims(g, (-2, -1))
        norm = np.expand_dims(ans, (-2, -1))
    direction = np.conj(x) / nonzero_norm(norm)
    if ord != "fro":
        direction = norm_direction(x, norm, ord, (-2, -1))
    return np.real(g_kept) * direction


def _matrix_norm_jvp(t, ans, x, keepdims=False, ord="fro"):
    norm = ans
    if not keepdims:
        norm = np.expand_dims(ans, (-2, -1))
    direction = np.conj(x) / nonzero_norm(norm)
    if ord != "fro":
        direction = norm_direction(x, norm, ord, (-2, -1))
    return np.real(np.sum(t * direction, axis=(-2, -1), keepdims=keepdims))


# a vector norm over the axes grouped into one, last axis (every axis by default)


def _vector_norm(g, ans, x, axis=None, keepdims=False, ord=2):
    grouped = group_axes(x, axis)
    norm = np.reshape(ans, np.shape(grouped)[:-1] + (1,))
    direction = np.conj(grouped) / nonzero_norm(norm)
    if ord != 2:
        direction = norm_direction(grouped, norm, ord, -1)
    g_kept = np.reshape(np.real(g), np.shape(norm))
    return ungroup_axes(g_kept * direction, x, axis)


def _vector_norm_jvp(t, ans, x, axis=None, keepdims=False, ord=2):
    grouped = group_axes(x, axis)
    norm = np.reshape(ans, np.shape(grouped)[:-1] + (1,))
    direction = np.conj(grouped) / nonzero_norm(norm)
    if ord != 2:
        direction = norm_direction(grouped, norm, ord, -1)
    # [()]: one number is a NumPy scalar, as the norm itself is
    return np.reshape(np.real(np.sum(group_axes(t, axis) * direction, axis=-1)), np.shape(ans))[()]


# s_i = u_i^T x v_i: ds_i = u_i^T dx v_i, so dx = U diag(g) V^T


def _svdvals(g, ans, x):
    factors = np.linalg.svd(x, full_matrices=False)
    return np.matmul(factors[0] * np.expand_dims(g, -2), factors[2])


def _svdvals_jvp(t, ans, x):
    factors = np.linalg.svd(x, full_matrices=False)
    return np.sum(factors[0] * np.matmul(t, np.swapaxes(factors[2], -1, -2)), axis=-2)


_register("matrix_norm", _matrix_norm, _matrix_norm_jvp, np.linalg, complex_=True)
_register("vector_norm", _vector_norm, _vector_norm_jvp, np.linalg, complex_=True)
_register("svdvals", _svdvals, _svdvals_jvp, np.linalg)


# ---------------------------------------------------------------------------------------
# Unstacking and cumulative sums and products


def _unstack(g, ans, x, axis=0):
    return join_like(g, x, ans, axis)


def _unstack_jvp(t, ans, x, axis=0):
    return np.unstack(t, axis=axis)


_register("unstack", _unstack, _unstack_jvp, np, complex_=True)


# With include_initial the result starts with a constant (0 or 1): its cotangent is dropped.
# axis=None is for 1-D input only, so it is axis 0.


def _cumulative_sum(cotangent, ans, x, axis=None, dtype=None, out=None, include_initial=False):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    if axis is None:
        later_sums = np.flip(np.cumsum(np.flip(g)))
    else:
        later_sums = np.flip(np.cumsum(np.flip(g, axis), axis), axis)
    gx = later_sums
    if include_initial and axis is None:
        gx = later_sums[1:]
    if include_initial and axis is not None:
        gx = np.take(later_sums, np.arange(1, np.shape(g)[axis]), axis=axis)
    return gx


def _cumulative_sum_jvp(tangent, ans, x, axis=None, dtype=None, out=None, include_initial=False):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    return np.cumulative_sum(t, axis=axis, include_initial=include_initial)


def _cumulative_prod(cotangent, ans, x, axis=None, dtype=None, out=None, include_initial=False):
    g = cotangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        g = zero_if_integer(cotangent, ans)
    g_body = g
    if include_initial and axis is None:
        g_body = g[1:]
    if include_initial and axis is not None:
        g_body = np.take(g, np.arange(1, np.shape(g)[axis]), axis=axis)
    if axis is None:
        after = linear_recurrence(shift_along(x, 0, True), g_body, 0, True)
        gx = after * exclusive_cumprod(x, 0)
    else:
        after = linear_recurrence(shift_along(x, axis, True), g_body, axis, True)
        gx = after * exclusive_cumprod(x, axis)
    return gx


def _cumulative_prod_jvp(tangent, ans, x, axis=None, dtype=None, out=None, include_initial=False):
    t = tangent
    if dtype is not None:  # an integer dtype makes the result piecewise constant
        t = zero_if_integer(tangent, ans)
    if axis is None:
        body = linear_recurrence(x, exclusive_cumprod(x, 0) * t, 0)
    else:
        body = linear_recurrence(x, exclusive_cumprod(x, axis) * t, axis)
    tx = body
    if include_initial and axis is None:
        tx = np.concatenate((np.zeros_like(body[:1]), body))
    if include_initial and axis is not None:
        first = np.zeros_like(np.take(body, np.arange(1), axis=axis))
        tx = np.concatenate((first, body), axis=axis)
    return tx


_register("cumulative_sum", _cumulative_sum, _cumulative_sum_jvp, np, complex_=True)
_register("cumulative_prod", _cumulative_prod, _cumulative_prod_jvp, np, complex_=True)
