"""Helpers for the derivatives of products and norms.

The product rules never divide by the input, so zeros are fine. The product of all the
elements of a group but one is the product of those before it times the product of those
after it: two *exclusive* cumulative products. The derivatives of a cumulative product are
first-order linear recurrences ``h[i] = a[i] * h[i - 1] + b[i]``, which
:func:`linear_recurrence` solves in ``log2(n)`` vectorised steps, and the derivatives of a
linear recurrence are linear recurrences again. So every helper here has VJP and JVP rules
written with the others, and generated code that calls them can be differentiated again.

The helpers use plain, non-mutating NumPy calls, so the tape can also trace through them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from s2sgrad.rules.registry import batches_as_is, jvp_rule, nondifferentiable, vjp_rule
from s2sgrad.runtime.core import is_complex, unbroadcast

__all__ = [
    "shift_along",
    "linear_recurrence",
    "exclusive_cumprod",
    "group_axes",
    "ungroup_axes",
    "prod_of_others",
    "norm_direction",
    "nonzero_norm",
    "tie_share",
    "kept_count",
]


# ---------------------------------------------------------------------------------------
# Shifts and linear recurrences along one axis


def shift_along(x: Any, axis: int = -1, reverse: bool = False, fill: float = 0.0) -> Any:
    """``x`` moved one place along ``axis``, with ``fill`` in the place left empty.

    Forward, ``y[i] = x[i - 1]`` and ``y[0] = fill``; with ``reverse``, ``y[i] = x[i + 1]``
    and the last element is ``fill``.

    Example::

        shift_along(np.array([1.0, 2.0, 3.0]))                          # [0., 1., 2.]
        shift_along(np.array([1.0, 2.0, 3.0]), reverse=True, fill=1.0)  # [2., 3., 1.]
    """
    moved = np.moveaxis(x, axis, -1)
    edge = np.full_like(moved[..., :1], fill)
    if reverse:
        shifted = np.concatenate([moved[..., 1:], edge], axis=-1)
    else:
        shifted = np.concatenate([edge, moved[..., :-1]], axis=-1)
    return np.moveaxis(shifted, -1, axis)


batches_as_is(shift_along)  # right on batched values as it is


@vjp_rule(shift_along)
def _shift_along_vjp(g, ans, x, axis=-1, reverse=False, fill=0.0):
    return shift_along(g, axis, not reverse)


@jvp_rule(shift_along)
def _shift_along_jvp(t, ans, x, axis=-1, reverse=False, fill=0.0):
    return shift_along(t, axis, reverse)


def linear_recurrence(a: Any, b: Any, axis: int = -1, reverse: bool = False) -> Any:
    """Solve ``h[i] = a[i] * h[i - 1] + b[i]`` along ``axis``, starting from ``h[-1] = 0``.

    With ``reverse`` the recurrence runs backwards: ``h[i] = a[i] * h[i + 1] + b[i]``.
    ``a`` and ``b`` have the same shape. Composing the affine maps ``h -> a[i] * h + b[i]``
    pairwise takes ``log2(n)`` vectorised steps and no division, so zeros in ``a`` are fine.

    Example::

        linear_recurrence(np.array([1.0, 2.0, 3.0]), np.ones(3))  # [1., 3., 10.]
    """
    scale = np.moveaxis(a, axis, -1)
    total = np.moveaxis(b, axis, -1)
    if reverse:
        scale = np.flip(scale, -1)
        total = np.flip(total, -1)
    step = 1
    while step < np.shape(total)[-1]:
        # After this step, element i composes the maps of elements i - 2 * step + 1 .. i.
        total = np.concatenate(
            [total[..., :step], scale[..., step:] * total[..., :-step] + total[..., step:]],
            axis=-1,
        )
        scale = np.concatenate([scale[..., :step], scale[..., step:] * scale[..., :-step]], -1)
        step *= 2
    if reverse:
        total = np.flip(total, -1)
    return np.moveaxis(total, -1, axis)


batches_as_is(linear_recurrence)  # right on batched values as it is


# h is linear in b, h = M(a) b, and M(a)^T runs the recurrence the other way with the
# coefficients shifted by one; a's tangent enters as an extra b-term ``da * h[i - 1]``.


@vjp_rule(linear_recurrence)
def _linear_recurrence_vjp(g, ans, a, b, axis=-1, reverse=False):
    carried = linear_recurrence(shift_along(a, axis, not reverse), g, axis, not reverse)
    return carried * shift_along(ans, axis, reverse), carried


@jvp_rule(linear_recurrence)
def _linear_recurrence_jvp(t, ans, a, b, axis=-1, reverse=False):
    from_a = linear_recurrence(a, t * shift_along(ans, axis, reverse), axis, reverse)
    return from_a, linear_recurrence(a, t, axis, reverse)


def exclusive_cumprod(x: Any, axis: int = -1, reverse: bool = False) -> Any:
    """The product of the elements before each one along ``axis`` (after it, if ``reverse``).

    Example::

        exclusive_cumprod(np.array([2.0, 3.0, 4.0]))                # [1., 2., 6.]
        exclusive_cumprod(np.array([2.0, 3.0, 4.0]), reverse=True)  # [12., 4., 1.]
    """
    if reverse:
        inclusive = np.flip(np.cumprod(np.flip(x, axis), axis), axis)
    else:
        inclusive = np.cumprod(x, axis)
    return shift_along(inclusive, axis, reverse, fill=1.0)


batches_as_is(exclusive_cumprod)  # right on batched values as it is


@vjp_rule(exclusive_cumprod)
def _exclusive_cumprod_vjp(g, ans, x, axis=-1, reverse=False):
    after = linear_recurrence(
        shift_along(x, axis, not reverse), shift_along(g, axis, not reverse), axis, not reverse
    )
    return after * ans


@jvp_rule(exclusive_cumprod)
def _exclusive_cumprod_jvp(t, ans, x, axis=-1, reverse=False):
    return shift_along(linear_recurrence(x, ans * t, axis, reverse), axis, reverse)


# ---------------------------------------------------------------------------------------
# Products over several axes


def _reduced_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """The sorted, non-negative axes a reduction over ``axis`` (None, int, tuple) removes."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return tuple(sorted(int(a) % ndim if ndim else int(a) for a in axes))


def group_axes(x: Any, axis: Any = None) -> Any:
    """``x`` with the axes a reduction over ``axis`` removes merged into one, last axis.

    ``axis`` is what NumPy's reductions take: ``None`` (every axis), an int or a tuple.
    :func:`ungroup_axes` undoes it.

    Example::

        group_axes(np.zeros((2, 3, 4)), (0, 2)).shape  # (3, 8)
    """
    axes = _reduced_axes(axis, np.ndim(x))
    moved = np.moveaxis(x, axes, tuple(range(-len(axes), 0)))
    return np.reshape(moved, np.shape(moved)[: np.ndim(x) - len(axes)] + (-1,))


batches_as_is(group_axes)  # right on batched values as it is


def ungroup_axes(y: Any, x: Any, axis: Any = None) -> Any:
    """Undo :func:`group_axes`: ``y`` (shaped like ``group_axes(x, axis)``) in ``x``'s shape.

    Example::

        x = np.zeros((2, 3, 4))
        ungroup_axes(group_axes(x, (0, 2)), x, (0, 2)).shape  # (2, 3, 4)
    """
    shape = np.shape(x)
    axes = _reduced_axes(axis, len(shape))
    kept = tuple(n for i, n in enumerate(shape) if i not in axes)
    moved = np.reshape(y, kept + tuple(shape[i] for i in axes))
    return np.moveaxis(moved, tuple(range(-len(axes), 0)), axes)


batches_as_is(ungroup_axes)  # right on batched values as it is


@vjp_rule(group_axes)
def _group_axes_vjp(g, ans, x, axis=None):
    return ungroup_axes(g, x, axis)


@jvp_rule(group_axes)
def _group_axes_jvp(t, ans, x, axis=None):
    return group_axes(t, axis)


@vjp_rule(ungroup_axes)
def _ungroup_axes_vjp(g, ans, y, x, axis=None):
    return group_axes(g, axis), None


@jvp_rule(ungroup_axes)
def _ungroup_axes_jvp(t, ans, y, x, axis=None):
    return ungroup_axes(t, x, axis), None


def prod_of_others(x: Any, axis: Any = None) -> Any:
    """Each element replaced by the product of the *other* elements it is reduced with.

    This is the derivative of ``np.prod(x, axis)`` with respect to each element, computed
    without dividing by ``x``, so it is exact when ``x`` has zeros.

    Example::

        prod_of_others(np.array([2.0, 0.0, 5.0]))  # [0., 10., 0.]
    """
    grouped = group_axes(x, axis)
    others = exclusive_cumprod(grouped) * exclusive_cumprod(grouped, reverse=True)
    return ungroup_axes(others, x, axis)


batches_as_is(prod_of_others)  # right on batched values as it is


# The Jacobian of prod_of_others is the Hessian of prod, which is symmetric: one function
# serves as both the VJP and the JVP. It differentiates ``before * after`` (the exclusive
# products on each side) with the JVP of exclusive_cumprod.


@vjp_rule(prod_of_others)
@jvp_rule(prod_of_others)
def _prod_of_others_derivative(v, ans, x, axis=None):
    grouped = group_axes(x, axis)
    direction = group_axes(v, axis)
    before = exclusive_cumprod(grouped)
    after = exclusive_cumprod(grouped, reverse=True)
    d_before = shift_along(linear_recurrence(grouped, before * direction))
    d_after = shift_along(linear_recurrence(grouped, after * direction, reverse=True), reverse=True)
    return ungroup_axes(d_before * after + before * d_after, x, axis)


# ---------------------------------------------------------------------------------------
# Maxima and minima


def tie_share(g: Any, hits: Any, axis: Any, dtype: Any) -> Any:
    """``g`` shared out among the elements that tie for each maximum (or minimum):
    ``g / np.sum(hits, axis, keepdims=True, dtype=dtype)``, where ``hits`` marks the
    elements equal to their extremum along ``axis``. With no ties at all (one count of
    the whole of ``hits`` tells) every share is ``g`` itself, and the slow per-group
    count over short axes is skipped.

    Example::

        tie_share(np.ones((1, 2)), np.array([[True, True], [False, False]]), 0, float)
        # [[1., 1.]]: each of the two columns has one maximum
    """
    if type(hits) is np.ndarray and hits.dtype == bool:
        kept = _kept_shape(hits.shape, axis)
        plain = type(g) is np.ndarray
        if (
            kept is not None
            and (g.shape if plain else np.shape(g)) == kept
            and np.count_nonzero(hits) == math.prod(kept)
        ):  # one hit in each group: no tie anywhere
            if plain and isinstance(dtype, np.dtype) and g.dtype == dtype:  # result_type's
                return g
            kind = np.result_type(g, dtype)
            return g if np.result_type(g) == kind else np.asarray(g, dtype=kind)
    return g / np.sum(hits, axis=axis, keepdims=True, dtype=dtype)


_KEPT_SHAPES: dict[tuple, tuple | None] = {}  # (shape, axis) → _kept_shape's answer


def _kept_shape(shape: tuple, axis: Any) -> tuple | None:
    """``shape`` reduced along ``axis`` with the reduced axes kept (as ones), remembered
    for the shapes and axes of the calls of generated code, which repeat."""
    try:
        return _KEPT_SHAPES[shape, axis]
    except KeyError:
        if len(_KEPT_SHAPES) >= 512:
            _KEPT_SHAPES.clear()
        kept = _KEPT_SHAPES[shape, axis] = _reduced_shape(shape, axis)
        return kept
    except TypeError:  # an axis given as a list
        return _reduced_shape(shape, axis)


def _reduced_shape(shape: tuple, axis: Any) -> tuple | None:
    if axis is None:
        return (1,) * len(shape)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    try:
        reduced = {a % len(shape) for a in axes}
    except (TypeError, ZeroDivisionError):
        return None
    return tuple(1 if d in reduced else n for d, n in enumerate(shape))


batches_as_is(tie_share)  # right on batched values as it is (its type test is a fast path)


# Linear in what it shares out; the counts are whole numbers, exact in the cotangent's
# own dtype, which the derivatives keep.


@vjp_rule(tie_share)
def _tie_share_vjp(g, ans, shared, hits, axis, dtype):
    return unbroadcast(tie_share(g, hits, axis, np.result_type(g)), shared), None


@jvp_rule(tie_share)
def _tie_share_jvp(t, ans, shared, hits, axis, dtype):
    return tie_share(t, hits, axis, np.result_type(t))


# ---------------------------------------------------------------------------------------
# Norms

# Vector norms whose direction is a locally constant sign pattern (as are the matrix 1- and
# inf-norms), so that their second derivative is zero.
_VECTOR_LOCALLY_LINEAR = (0, 1, np.inf, -np.inf)
_SPECTRAL = (2, -2, "nuc")


def norm_direction(x: Any, norm: Any, ord: Any, axis: Any = None) -> Any:
    """The derivative of ``np.linalg.norm(x, ord, axis)`` with respect to ``x``.

    ``norm`` is that norm with the reduced axes kept (length 1). The reduction is over one
    axis (a vector norm) or two (a matrix norm), as NumPy decides: ``axis=None`` means every
    axis of ``x``, which must then be 1-D or 2-D. At a tie (two largest entries in an
    ``inf``-norm, two largest columns in a matrix 1-norm) the derivative is split equally
    among them. Matrix ``ord=2``, ``-2`` and ``"nuc"`` use the singular vectors and assume
    distinct singular values.

    Example::

        x = np.array([3.0, -4.0])
        norm_direction(x, np.linalg.norm(x, 1), 1)            # [ 1., -1.]
        norm_direction(x, np.linalg.norm(x, np.inf), np.inf)  # [ 0., -1.]
    """
    from s2sgrad.errors import UnsupportedError

    if is_complex(x):
        raise UnsupportedError(
            f"np.linalg.norm(..., ord={ord!r}) of complex values has no derivative rule: only "
            "the 2-norm and the Frobenius norm do (ord=None); write the norm with np.abs"
        )
    axes = _norm_axes(axis, np.ndim(x))
    if len(axes) == 2 and ord in _SPECTRAL:
        return _spectral_direction(x, ord, axes)
    power = _smooth_power(ord, axes)
    if power is not None:  # a zero vector's norm is 0: its direction is 0, not 0/0
        return np.sign(x) * (np.abs(x) / np.where(norm == 0, 1.0, norm)) ** (power - 1)
    if len(axes) == 1:
        return _vector_norm_direction(x, ord, axes[0])
    return _matrix_norm_direction(x, ord, axes)


batches_as_is(norm_direction)  # right on batched values as it is


def _norm_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """The non-negative axes of a norm, in order: (rows, columns) for a matrix norm."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return tuple(int(a) % ndim for a in axes)


def _smooth_power(ord: Any, axes: tuple[int, ...]) -> Any:
    """The p of a smooth p-norm (2 for Frobenius), or None for a locally linear norm."""
    if ord is None or ord == "fro":
        return 2
    if len(axes) == 1 and ord not in _VECTOR_LOCALLY_LINEAR:
        return ord
    return None


def _vector_norm_direction(x: Any, ord: Any, axis: int) -> Any:
    if ord == 0:  # the number of non-zero elements
        return np.zeros_like(x)
    if ord == 1:
        return np.sign(x)
    size = np.abs(x)
    return np.sign(x) * _tie_weights(np.equal(size, _extreme(size, axis, ord)), axis, x)


def _matrix_norm_direction(x: Any, ord: Any, axes: tuple[int, ...]) -> Any:
    rows, columns = axes
    # ord=±1 picks a column by its sum over the rows; ord=±inf a row by its sum over columns.
    summed, picked = (rows, columns) if ord in (1, -1) else (columns, rows)
    sums = np.sum(np.abs(x), summed, keepdims=True)
    return np.sign(x) * _tie_weights(np.equal(sums, _extreme(sums, picked, ord)), picked, x)


def _spectral_direction(x: Any, ord: Any, axes: tuple[int, ...]) -> Any:
    matrices = np.moveaxis(x, axes, (-2, -1))
    u, s, vt = np.linalg.svd(matrices, full_matrices=False)
    # a zero singular value contributes as abs does at 0: nothing (its vectors' signs are
    # arbitrary, and the norm has no derivative there)
    cutoff = max(np.shape(matrices)[-2:]) * np.finfo(s.dtype).eps * s[..., :1]
    u = u * np.expand_dims(s > cutoff, -2)
    if ord == "nuc":
        direction = np.matmul(u, vt)
    elif ord == 2:
        direction = np.matmul(u[..., :, :1], vt[..., :1, :])
    else:
        direction = np.matmul(u[..., :, -1:], vt[..., -1:, :])
    return np.moveaxis(direction, (-2, -1), axes)


def _extreme(values: Any, axis: int, ord: Any) -> Any:
    """The largest of ``values`` along ``axis`` for a positive ``ord``, else the smallest."""
    if ord > 0:
        return np.max(values, axis, keepdims=True)
    return np.min(values, axis, keepdims=True)


def _tie_weights(hits: Any, axis: Any, like: Any) -> Any:
    """The boolean mask ``hits`` over its number of hits along ``axis``, in ``like``'s dtype."""
    count = np.sum(hits, axis, keepdims=True, dtype=np.result_type(like, 1.0))
    return hits / count


def nonzero_norm(norm: Any) -> Any:
    """``norm`` with its zeros replaced by 1: what a norm's derivative ``x / norm`` divides
    by, so that a zero vector's direction is 0. Its own derivative (a norm's second
    derivative) refuses a zero norm, where the norm has none: ``norm(x)**2`` there would get
    0 or NaN in place of its ``2 I``.

    Example::

        nonzero_norm(np.array([0.0, 2.0]))  # [1., 2.]
    """
    return np.where(norm == 0, 1.0, norm)


def _refuse_zero_norm(norm: Any) -> None:
    from s2sgrad.errors import NonDifferentiableError

    if np.any(np.asarray(norm) == 0):
        raise NonDifferentiableError(
            "np.linalg.norm has no second derivative at a zero vector (its first derivative "
            "jumps there), so a second derivative through it is undefined there, even where "
            "the function has one (np.linalg.norm(x)**2 at x = 0); write a squared norm as "
            "np.sum(x**2) (np.sum(np.abs(x)**2) if complex)"
        )


@vjp_rule(nonzero_norm, inline=False)
def _nonzero_norm_vjp(g, ans, norm):
    _refuse_zero_norm(norm)
    return g


@jvp_rule(nonzero_norm, inline=False)
def _nonzero_norm_jvp(t, ans, norm):
    _refuse_zero_norm(norm)
    return t


batches_as_is(nonzero_norm)


def _second_order_power(ord: Any, axis: Any, x: Any, norm: Any) -> Any:
    """:func:`_smooth_power` for the rules of :func:`norm_direction`."""
    from s2sgrad.errors import UnsupportedError

    _refuse_zero_norm(norm)
    if is_complex(x):
        raise UnsupportedError(
            f"np.linalg.norm(..., ord={ord!r}) of complex values has no derivative rule: only "
            "the 2-norm and the Frobenius norm do (ord=None); write the norm with np.abs"
        )
    axes = _norm_axes(axis, np.ndim(x))
    if len(axes) == 2 and ord in _SPECTRAL:
        raise UnsupportedError(
            f"np.linalg.norm(..., ord={ord!r}) of a matrix has a first derivative but no "
            "second; use ord='fro', or build the norm from np.linalg.svd"
        )
    return _smooth_power(ord, axes)


# direction = sign(x) * (|x| / norm) ** (p - 1) for a p-norm, so
#   d direction / dx    = (p - 1) * (|x| / norm) ** (p - 2) / norm   (element-wise)
#   d direction / dnorm = -(p - 1) * direction / norm.
# The locally linear norms (1, inf, matrix 1 and inf, ...) have a locally constant
# direction, whose derivative is zero.


@vjp_rule(norm_direction, inline=False)
def _norm_direction_vjp(g, ans, x, norm, ord, axis=None):
    power = _second_order_power(ord, axis, x, norm)
    if power is None:
        return np.zeros_like(g), None
    dx = g * ((power - 1) * (np.abs(x) / norm) ** (power - 2) / norm)
    dnorm = unbroadcast(g * ans * ((1 - power) / norm), norm)
    return dx, dnorm


@jvp_rule(norm_direction, inline=False)
def _norm_direction_jvp(t, ans, x, norm, ord, axis=None):
    power = _second_order_power(ord, axis, x, norm)
    if power is None:
        return np.zeros_like(ans), None
    from_x = t * ((power - 1) * (np.abs(x) / norm) ** (power - 2) / norm)
    return from_x, t * ans * ((1 - power) / norm)


def kept_count(where: Any, a: Any, axis: Any = None) -> Any:
    """How many entries of ``a`` a ``where=`` mask keeps in each group reduced over ``axis``,
    with the reduced axes kept as length 1 (a group with none kept counts 1: its entries
    get no cotangent anyway, and the count is never divided by 0).

    Example::

        kept_count(np.array([[True, False], [True, True]]), np.ones((2, 2)), 1)  # [[1.], [2.]]
    """
    kept = np.broadcast_to(where, np.shape(a))
    count = np.sum(kept, axis=axis, keepdims=True, dtype=np.result_type(a, np.float32))
    return np.where(count == 0, 1.0, count)


nondifferentiable(kept_count)
