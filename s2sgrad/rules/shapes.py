"""Derivative rules for shape, joining, indexing and selection functions.

These functions move, copy or pick elements without changing their values, so each one
is linear in its array arguments. The JVP applies the same function to the tangent; the
VJP applies its adjoint: the inverse movement for a permutation (transpose, flip, roll),
a reshape back for a change of shape, a sum for a copy (tile, repeat, broadcast_to) and a
scatter into zeros for a selection (indexing, take, diagonal). The scatters and sums NumPy
has no single function for live in :mod:`s2sgrad.runtime.shapes`.
"""

from __future__ import annotations

import copy
import operator

import numpy as np

from s2sgrad.errors import UnsupportedError
from s2sgrad.rules.gradient_coordinates import coordinate_cotangent, coordinate_tangent
from s2sgrad.rules.pad_statistics import pad_by_statistic_tangent, unpad_by_statistic
from s2sgrad.rules.registry import jvp_rule, nondifferentiable, vjp_rule, zero_by_design
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import (
    as_gradient,
    block_of,
    cast_like,
    clip_regions,
    index_cotangent,
    item_mask,
    join_like,
    ravel_positions,
    rollaxis_destination,
    sequence_part,
    split_like,
    strided_positions,
    unblock,
    unbroadcast,
    undiagonal,
    undiff,
    unpack_cotangent,
    unpack_like,
    unpad,
    unrepeat,
    untake,
    untake_along_axis,
    untile,
    unwindow,
    zero_if_integer,
)

# ---------------------------------------------------------------------------------------
# Reshaping: the cotangent is reshaped back to the input's shape.


@vjp_rule(np.reshape)
def _reshape(g, ans, a, shape, order="C", *, copy=None):
    if order == "C":
        return np.reshape(g, np.shape(a))
    return np.reshape(g, np.shape(a), order=order)


@jvp_rule(np.reshape)
def _reshape_jvp(t, ans, a, shape, order="C", *, copy=None):
    if order == "C":
        return np.reshape(t, shape)
    return np.reshape(t, shape, order=order)


@vjp_rule(np.ndarray.reshape)
def _reshape_method(g, ans, self, *shape, order="C", copy=None):
    if order == "C":
        return np.reshape(g, np.shape(self))
    return np.reshape(g, np.shape(self), order=order)


@jvp_rule(np.ndarray.reshape)
def _reshape_method_jvp(t, ans, self, *shape, order="C", copy=None):
    if order == "C":
        return np.reshape(t, np.shape(ans))
    return np.reshape(t, np.shape(ans), order=order)


@vjp_rule(np.expand_dims)
def _expand_dims(g, ans, a, axis):
    return np.reshape(g, np.shape(a))


@jvp_rule(np.expand_dims)
def _expand_dims_jvp(t, ans, a, axis):
    return np.expand_dims(t, axis)


@vjp_rule(np.squeeze)
def _squeeze(g, ans, a, axis=None):
    return np.reshape(g, np.shape(a))


@jvp_rule(np.squeeze)
def _squeeze_jvp(t, ans, a, axis=None):
    return np.squeeze(t, axis)


@vjp_rule(np.ndarray.squeeze)
def _squeeze_method(g, ans, self, axis=None):
    return np.reshape(g, np.shape(self))


@jvp_rule(np.ndarray.squeeze)
def _squeeze_method_jvp(t, ans, self, axis=None):
    return np.squeeze(t, axis)


@vjp_rule(np.atleast_1d, np.atleast_2d, np.atleast_3d)
def _atleast_nd(g, ans, ary):
    return np.reshape(g, np.shape(ary))


@jvp_rule(np.atleast_1d)
def _atleast_1d_jvp(t, ans, ary):
    return np.atleast_1d(t)


@jvp_rule(np.atleast_2d)
def _atleast_2d_jvp(t, ans, ary):
    return np.atleast_2d(t)


@jvp_rule(np.atleast_3d)
def _atleast_3d_jvp(t, ans, ary):
    return np.atleast_3d(t)


# Orders "A" and "K" follow the input's memory layout, which the tangent or cotangent
# need not share, so they go through the positions of the raveled elements.


@vjp_rule(np.ravel)
def _ravel(g, ans, a, order="C"):
    if order == "C":
        return np.reshape(g, np.shape(a))
    if order == "F":
        return np.reshape(g, np.shape(a), order="F")
    return np.reshape(g[np.argsort(ravel_positions(a, order))], np.shape(a))


@jvp_rule(np.ravel)
def _ravel_jvp(t, ans, a, order="C"):
    if order == "C":
        return np.ravel(t)
    if order == "F":
        return np.ravel(t, order="F")
    return np.ravel(t)[ravel_positions(a, order)]


@vjp_rule(np.ndarray.ravel, np.ndarray.flatten)
def _ravel_method(g, ans, self, order="C"):
    if order == "C":
        return np.reshape(g, np.shape(self))
    if order == "F":
        return np.reshape(g, np.shape(self), order="F")
    return np.reshape(g[np.argsort(ravel_positions(self, order))], np.shape(self))


@jvp_rule(np.ndarray.ravel, np.ndarray.flatten)
def _ravel_method_jvp(t, ans, self, order="C"):
    if order == "C":
        return np.ravel(t)
    if order == "F":
        return np.ravel(t, order="F")
    return np.ravel(t)[ravel_positions(self, order)]


# ---------------------------------------------------------------------------------------
# Permuting axes: the cotangent goes through the inverse permutation.


@vjp_rule(np.transpose)
def _transpose(g, ans, a, axes=None):
    if axes is None:
        return np.transpose(g)
    return np.transpose(g, np.argsort(np.mod(axes, np.ndim(a))))


@jvp_rule(np.transpose)
def _transpose_jvp(t, ans, a, axes=None):
    return np.transpose(t, axes)


def _method_axes(axes):
    """The ``axes`` of ``x.transpose()``, ``x.transpose((1, 0))`` or ``x.transpose(1, 0)``."""
    if len(axes) == 0 or (len(axes) == 1 and axes[0] is None):
        return None
    return axes[0] if len(axes) == 1 else axes


@vjp_rule(np.ndarray.transpose, inline=False)
def _transpose_method(g, ans, self, *axes):
    return _transpose(g, ans, self, _method_axes(axes))


@jvp_rule(np.ndarray.transpose, inline=False)
def _transpose_method_jvp(t, ans, self, *axes):
    return np.transpose(t, _method_axes(axes))


@vjp_rule(np.ndarray.T)
def _T(g, ans, self):
    return np.transpose(g)


@jvp_rule(np.ndarray.T)
def _T_jvp(t, ans, self):
    return np.transpose(t)


@vjp_rule(np.swapaxes)
def _swapaxes(g, ans, a, axis1, axis2):
    return np.swapaxes(g, axis1, axis2)


@jvp_rule(np.swapaxes)
def _swapaxes_jvp(t, ans, a, axis1, axis2):
    return np.swapaxes(t, axis1, axis2)


@vjp_rule(np.ndarray.swapaxes)
def _swapaxes_method(g, ans, self, axis1, axis2):
    return np.swapaxes(g, axis1, axis2)


@jvp_rule(np.ndarray.swapaxes)
def _swapaxes_method_jvp(t, ans, self, axis1, axis2):
    return np.swapaxes(t, axis1, axis2)


@vjp_rule(np.moveaxis)
def _moveaxis(g, ans, a, source, destination):
    return np.moveaxis(g, destination, source)


@jvp_rule(np.moveaxis)
def _moveaxis_jvp(t, ans, a, source, destination):
    return np.moveaxis(t, source, destination)


@vjp_rule(np.rollaxis)
def _rollaxis(g, ans, a, axis, start=0):
    return np.moveaxis(g, rollaxis_destination(np.ndim(a), axis, start), axis)


@jvp_rule(np.rollaxis)
def _rollaxis_jvp(t, ans, a, axis, start=0):
    return np.rollaxis(t, axis, start)


# ---------------------------------------------------------------------------------------
# Reordering elements: flips, rolls and rotations are undone by their inverses.


@vjp_rule(np.flip)
def _flip(g, ans, m, axis=None):
    if axis is None:
        return np.flip(g)
    return np.flip(g, axis)


@jvp_rule(np.flip)
def _flip_jvp(t, ans, m, axis=None):
    if axis is None:
        return np.flip(t)
    return np.flip(t, axis)


@vjp_rule(np.fliplr)
def _fliplr(g, ans, m):
    return np.fliplr(g)


@jvp_rule(np.fliplr)
def _fliplr_jvp(t, ans, m):
    return np.fliplr(t)


@vjp_rule(np.flipud)
def _flipud(g, ans, m):
    return np.flipud(g)


@jvp_rule(np.flipud)
def _flipud_jvp(t, ans, m):
    return np.flipud(t)


@vjp_rule(np.roll)
def _roll(g, ans, a, shift, axis=None):
    return np.roll(g, np.negative(shift), axis=axis)


@jvp_rule(np.roll)
def _roll_jvp(t, ans, a, shift, axis=None):
    return np.roll(t, shift, axis=axis)


@vjp_rule(np.rot90)
def _rot90(g, ans, m, k=1, axes=(0, 1)):
    return np.rot90(g, -k, axes)


@jvp_rule(np.rot90)
def _rot90_jvp(t, ans, m, k=1, axes=(0, 1)):
    return np.rot90(t, k, axes)


@vjp_rule(np.sort)
def _sort(g, ans, a, axis=-1, kind=None, order=None, *, stable=None):
    # ranks[i] is where a[i] ended up in the sorted output.
    if axis is None:
        ranks = np.argsort(np.argsort(a, axis=None))
        return np.reshape(g[ranks], np.shape(a))
    ranks = np.argsort(np.argsort(a, axis=axis), axis=axis)
    return np.take_along_axis(g, ranks, axis=axis)


@jvp_rule(np.sort)
def _sort_jvp(t, ans, a, axis=-1, kind=None, order=None, *, stable=None):
    if axis is None:
        return np.ravel(t)[np.argsort(a, axis=None)]
    return np.take_along_axis(t, np.argsort(a, axis=axis), axis=axis)


# ``np.partition`` moves each element where ``np.argpartition`` says (which settles ties the
# same way): the cotangent goes back through that permutation.


@vjp_rule(np.partition)
def _partition(g, ans, a, kth, axis=-1, kind="introselect", order=None):
    return untake_along_axis(g, a, np.argpartition(a, kth, axis=axis), axis)


@jvp_rule(np.partition)
def _partition_jvp(t, ans, a, kth, axis=-1, kind="introselect", order=None):
    return np.take_along_axis(t, np.argpartition(a, kth, axis=axis), axis=axis)


# ---------------------------------------------------------------------------------------
# Copying elements: the copies' cotangents are summed.


@vjp_rule(np.broadcast_to)
def _broadcast_to(g, ans, array, shape, subok=False):
    return unbroadcast(g, array)


@jvp_rule(np.broadcast_to)
def _broadcast_to_jvp(t, ans, array, shape, subok=False):
    return np.broadcast_to(t, shape)


@vjp_rule(np.tile)
def _tile(g, ans, A, reps):
    return untile(g, A, reps)


@jvp_rule(np.tile)
def _tile_jvp(t, ans, A, reps):
    return np.tile(t, reps)


@vjp_rule(np.block)
def _block(g, ans, arrays):
    return unblock(g, arrays)


@jvp_rule(np.block)
def _block_jvp(t, ans, arrays):
    return block_of(t, arrays)


@vjp_rule(np.lib.stride_tricks.sliding_window_view)
def _sliding_window_view(g, ans, x, window_shape, axis=None, *, subok=False, writeable=False):
    return unwindow(g, x, window_shape, axis)


@jvp_rule(np.lib.stride_tricks.sliding_window_view)
def _sliding_window_view_jvp(t, ans, x, window_shape, axis=None, *, subok=False, writeable=False):
    return np.lib.stride_tricks.sliding_window_view(t, window_shape, axis)


@vjp_rule(np.lib.stride_tricks.as_strided)
def _as_strided(g, ans, x, shape=None, strides=None, subok=False, writeable=True):
    return untake(g, x, strided_positions(x, shape, strides))


@jvp_rule(np.lib.stride_tricks.as_strided)
def _as_strided_jvp(t, ans, x, shape=None, strides=None, subok=False, writeable=True):
    return np.take(t, strided_positions(x, shape, strides))


@vjp_rule(np.repeat)
def _repeat(g, ans, a, repeats, axis=None):
    return unrepeat(g, a, repeats, axis)


@jvp_rule(np.repeat)
def _repeat_jvp(t, ans, a, repeats, axis=None):
    return np.repeat(t, repeats, axis=axis)


@vjp_rule(np.ndarray.repeat)
def _repeat_method(g, ans, self, repeats, axis=None):
    return unrepeat(g, self, repeats, axis)


@jvp_rule(np.ndarray.repeat)
def _repeat_method_jvp(t, ans, self, repeats, axis=None):
    return np.repeat(t, repeats, axis=axis)


@vjp_rule(np.copy)
def _copy(g, ans, a, order="K", subok=False):
    return g


@jvp_rule(np.copy)
def _copy_jvp(t, ans, a, order="K", subok=False):
    return np.copy(t)  # a copy as the value is: a view's tangent changes with its base's


@vjp_rule(np.ndarray.copy)
def _copy_method(g, ans, self, order="C"):
    return g


@jvp_rule(np.ndarray.copy)
def _copy_method_jvp(t, ans, self, order="C"):
    # a copy as the value is (a view's tangent changes with its base's); d.copy() of a
    # dict or list, whose .copy() is named as an array's, copies its tangent the same way
    return np.copy(t) if isinstance(self, np.ndarray) else t.copy()


# copy.copy and copy.deepcopy of anything differentiated (an array, a list, a dict, a
# dataclass): the same values in a new container, so the cotangent passes through as it is;
# the tangent is copied as the value is. (Their library source is not transformed.)


@vjp_rule(copy.copy)
def _copy_copy(g, ans, x):
    return (g,)


@jvp_rule(copy.copy)
def _copy_copy_jvp(t, ans, x):
    return (copy.copy(t),)


@vjp_rule(copy.deepcopy)
def _copy_deepcopy(g, ans, x, memo=None, _nil=None):
    return (g, None, None)


@jvp_rule(copy.deepcopy)
def _copy_deepcopy_jvp(t, ans, x, memo=None, _nil=None):
    return (copy.deepcopy(t), None, None)


@vjp_rule(np.ndarray.astype)
def _astype(g, ans, self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    return as_gradient(zero_if_integer(g, ans), self)


@jvp_rule(np.ndarray.astype)
def _astype_jvp(t, ans, self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    return as_gradient(zero_if_integer(t, ans), ans)


if hasattr(np, "astype"):  # NumPy 2

    @vjp_rule(np.astype)
    def _astype_function(g, ans, x, dtype, *, copy=True, device=None):
        return as_gradient(zero_if_integer(g, ans), x)

    @jvp_rule(np.astype)
    def _astype_function_jvp(t, ans, x, dtype, *, copy=True, device=None):
        return as_gradient(zero_if_integer(t, ans), ans)


# A float type called on a value (``np.float64(x)``, ``np.float32(x)``) casts it, as
# ``astype`` does: the derivative is the identity, cast back to the argument's dtype.


@vjp_rule(np.float64, np.float32, np.float16)
def _float_cast(g, ans, x=0.0):
    return as_gradient(g, x)


@jvp_rule(np.float64, np.float32, np.float16)
def _float_cast_jvp(t, ans, x=0.0):
    return as_gradient(t, ans)


# ``np.full(shape, x)`` broadcasts ``x`` to ``shape``; the derivative wrt ``x`` is real.


@vjp_rule(np.full)
def _full(g, ans, shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    g_fill = g
    if dtype is not None:
        g_fill = zero_if_integer(g, ans)
    return None, unbroadcast(g_fill, fill_value)


@jvp_rule(np.full)
def _full_jvp(t, ans, shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    t_fill = t
    if dtype is not None:
        t_fill = zero_if_integer(t, ans)
    return None, np.broadcast_to(t_fill, np.shape(ans))


@vjp_rule(np.full_like)
def _full_like(
    g, ans, a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None
):
    return None, unbroadcast(zero_if_integer(g, ans), fill_value)


@jvp_rule(np.full_like)
def _full_like_jvp(
    t, ans, a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None
):
    return None, np.broadcast_to(zero_if_integer(t, ans), np.shape(ans))


zero_by_design(np.full_like, 0)  # only the shape and dtype of ``a`` count
zero_by_design(np.arange, 1)  # ``stop`` sets the length, not the values


# ---------------------------------------------------------------------------------------
# Joining and splitting. A list argument's cotangent is a list, one entry per element.


@vjp_rule(np.concatenate)
def _concatenate(g, ans, arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    return split_like(g, arrays, axis)


@jvp_rule(np.concatenate)
def _concatenate_jvp(t, ans, arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    return np.concatenate(t, axis=axis)


@vjp_rule(np.stack)
def _stack(g, ans, arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    return split_like(g, arrays, axis)


@jvp_rule(np.stack)
def _stack_jvp(t, ans, arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    return np.stack(t, axis=axis)


@vjp_rule(np.hstack)
def _hstack(g, ans, tup, *, dtype=None, casting="same_kind"):
    # 1-D (and 0-D) inputs are joined along axis 0, everything else along axis 1.
    axis = 1
    if np.ndim(ans) == 1:
        axis = 0
    return split_like(g, tup, axis)


@jvp_rule(np.hstack)
def _hstack_jvp(t, ans, tup, *, dtype=None, casting="same_kind"):
    return np.hstack(t)


@vjp_rule(np.vstack)
def _vstack(g, ans, tup, *, dtype=None, casting="same_kind"):
    return split_like(g, tup, 0)


@jvp_rule(np.vstack)
def _vstack_jvp(t, ans, tup, *, dtype=None, casting="same_kind"):
    return np.vstack(t)


@vjp_rule(np.dstack)
def _dstack(g, ans, tup):
    return split_like(g, tup, 2)


@jvp_rule(np.dstack)
def _dstack_jvp(t, ans, tup):
    return np.dstack(t)


# ``np.column_stack`` joins along axis 1, a 1-D input as one column.


@vjp_rule(np.column_stack)
def _column_stack(g, ans, tup):
    return split_like(g, tup, 1)


@jvp_rule(np.column_stack)
def _column_stack_jvp(t, ans, tup):
    return np.column_stack(t)


# ``np.append(arr, values)`` joins the two flattened; with an axis, along that axis.


@vjp_rule(np.append)
def _append(g, ans, arr, values, axis=None):
    if axis is None:
        head = np.reshape(g[: np.size(arr)], np.shape(arr))
        return head, np.reshape(g[np.size(arr) :], np.shape(values))
    pieces = np.split(g, [np.shape(arr)[axis]], axis=axis)
    return pieces[0], pieces[1]


@jvp_rule(np.append)
def _append_jvp(t, ans, arr, values, axis=None):
    # entry i is asked for only when t is the tangent of argument i, so has its shape
    from_arr = np.append(t, np.zeros_like(values, dtype=np.asarray(t).dtype), axis=axis)
    from_values = np.append(np.zeros_like(arr, dtype=np.asarray(t).dtype), t, axis=axis)
    return from_arr, from_values


# ``np.r_[a, b]`` joins its items along the first axis, ``np.c_[a, b]`` along the last (as
# columns); a slice item (``np.r_[0:3, a]``) is a range of constants. The cotangent is cut
# into one piece per item, each as long as the item is along that axis.


def _index_extents(concatenator, items, axis):
    """How far each item of ``concatenator[items]`` reaches along ``axis``."""
    extents = []
    for item in items:
        alone = item if isinstance(item, slice) else np.zeros(np.shape(item))
        extents.append(np.shape(concatenator[alone])[axis])
    return extents


def _index_join_vjp(g, concatenator, items, axis):
    extents = _index_extents(concatenator, items, axis)
    pieces = np.split(g, np.cumsum(extents)[:-1], axis=axis)
    return tuple(
        None if isinstance(item, slice) else np.reshape(piece, np.shape(item))
        for item, piece in zip(items, pieces)
    )


def _index_join_jvp(t, concatenator, items):
    entries = []
    for index, item in enumerate(items):
        if isinstance(item, slice) or np.shape(item) != np.shape(t):
            entries.append(None)  # an entry for an argument of another shape is not asked for
            continue
        moved = [
            np.zeros_like(concatenator[other], dtype=np.asarray(t).dtype)
            if isinstance(other, slice)
            else (t if k == index else np.zeros_like(t, shape=np.shape(other)))
            for k, other in enumerate(items)
        ]
        entries.append(concatenator[tuple(moved)])
    return tuple(entries)


@vjp_rule(np.r_, inline=False)
def _r_(g, ans, *items):
    return _index_join_vjp(g, np.r_, items, 0)


@jvp_rule(np.r_, inline=False)
def _r_jvp(t, ans, *items):
    return _index_join_jvp(t, np.r_, items)


@vjp_rule(np.c_, inline=False)
def _c_(g, ans, *items):
    return _index_join_vjp(g, np.c_, items, -1)


@jvp_rule(np.c_, inline=False)
def _c_jvp(t, ans, *items):
    return _index_join_jvp(t, np.c_, items)


# ``np.split`` has one output per piece: ``g`` is the list of their cotangents (``None``
# for a piece nobody used), and the JVP's entry for ``ary`` is the list of their tangents.


@vjp_rule(np.split)
def _split(g, ans, ary, indices_or_sections, axis=0):
    return join_like(g, ary, ans, axis)


@jvp_rule(np.split)
def _split_jvp(t, ans, ary, indices_or_sections, axis=0):
    return np.split(t, indices_or_sections, axis=axis), None, None


@vjp_rule(np.array_split)
def _array_split(g, ans, ary, indices_or_sections, axis=0):
    return join_like(g, ary, ans, axis)


@jvp_rule(np.array_split)
def _array_split_jvp(t, ans, ary, indices_or_sections, axis=0):
    return np.array_split(t, indices_or_sections, axis=axis), None, None


@vjp_rule(np.hsplit)
def _hsplit(g, ans, ary, indices_or_sections):
    # a 1-D array is split along axis 0, anything else along axis 1
    axis = 1
    if np.ndim(ary) == 1:
        axis = 0
    return join_like(g, ary, ans, axis)


@jvp_rule(np.hsplit)
def _hsplit_jvp(t, ans, ary, indices_or_sections):
    return np.hsplit(t, indices_or_sections), None


@vjp_rule(np.vsplit)
def _vsplit(g, ans, ary, indices_or_sections):
    return join_like(g, ary, ans, 0)


@jvp_rule(np.vsplit)
def _vsplit_jvp(t, ans, ary, indices_or_sections):
    return np.vsplit(t, indices_or_sections), None


@vjp_rule(np.dsplit)
def _dsplit(g, ans, ary, indices_or_sections):
    return join_like(g, ary, ans, 2)


@jvp_rule(np.dsplit)
def _dsplit_jvp(t, ans, ary, indices_or_sections):
    return np.dsplit(t, indices_or_sections), None


# ``np.array([x, y])`` joins a nested list; its cotangent is a list mirroring the input.


@vjp_rule(np.array)
def _array(
    g, ans, object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, ndmax=0, like=None
):
    g_real = g
    if dtype is not None:  # an integer dtype makes it piecewise constant
        g_real = zero_if_integer(g, ans)
    return unpack_like(g_real, object), None


@jvp_rule(np.array)
def _array_jvp(
    t, ans, object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, ndmax=0, like=None
):
    t_out = np.array(t, dtype=dtype, ndmin=ndmin)
    if dtype is not None:  # an integer dtype makes it piecewise constant
        t_out = zero_if_integer(t_out, ans)
    return t_out, None


@vjp_rule(np.asarray)
def _asarray(g, ans, a, dtype=None, order=None, *, device=None, copy=None, like=None):
    g_real = g
    if dtype is not None:
        g_real = zero_if_integer(g, ans)
    return unpack_like(g_real, a), None


@jvp_rule(np.asarray)
def _asarray_jvp(t, ans, a, dtype=None, order=None, *, device=None, copy=None, like=None):
    t_out = np.asarray(t, dtype=dtype)
    if dtype is not None:
        t_out = zero_if_integer(t_out, ans)
    return t_out, None


# np.asanyarray, np.ascontiguousarray and np.asfortranarray: np.asarray's values (the last
# two at least 1-d, which unpack_like reshapes back), laid out otherwise


@vjp_rule(np.asanyarray)
def _asanyarray(g, ans, a, dtype=None, order=None, *, device=None, copy=None, like=None):
    g_real = g
    if dtype is not None:
        g_real = zero_if_integer(g, ans)
    return unpack_like(g_real, a), None


@jvp_rule(np.asanyarray)
def _asanyarray_jvp(t, ans, a, dtype=None, order=None, *, device=None, copy=None, like=None):
    t_out = np.asarray(t, dtype=dtype)
    if dtype is not None:
        t_out = zero_if_integer(t_out, ans)
    return t_out, None


@vjp_rule(np.ascontiguousarray, np.asfortranarray)
def _as_laid_out(g, ans, a, dtype=None, *, like=None):
    g_real = g
    if dtype is not None:
        g_real = zero_if_integer(g, ans)
    return unpack_like(g_real, a), None


@jvp_rule(np.ascontiguousarray, np.asfortranarray)
def _as_laid_out_jvp(t, ans, a, dtype=None, *, like=None):
    t_out = np.reshape(np.asarray(t, dtype=dtype), np.shape(ans))
    if dtype is not None:
        t_out = zero_if_integer(t_out, ans)
    return t_out, None


# ``list(x)`` and ``tuple(x)`` read the entries of x (rows of an array) into a sequence.


@vjp_rule(list, tuple)
def _sequence(g, ans, x):
    return unpack_cotangent(tuple(g), x)


@jvp_rule(list, tuple)
def _sequence_jvp(t, ans, x):
    return sequence_part(t, 0, len(ans))


# ---------------------------------------------------------------------------------------
# Selecting elements: the cotangent is scattered back into zeros. An index is never a
# float (NumPy refuses one; a dict's key, a loop over its keys, picks discretely).

zero_by_design(operator.getitem, 1)


@vjp_rule(operator.getitem)
def _getitem(g, ans, x, index):
    return index_cotangent(g, x, index), None


@jvp_rule(operator.getitem)
def _getitem_jvp(t, ans, x, index):
    return t[index], None


@vjp_rule(np.take)
def _take(g, ans, a, indices, axis=None, out=None, mode="raise"):
    return untake(g, a, indices, axis, mode), None


@jvp_rule(np.take)
def _take_jvp(t, ans, a, indices, axis=None, out=None, mode="raise"):
    return np.take(t, indices, axis=axis, mode=mode), None


# np.bincount(x, weights=w)[k] sums the weights of the positions where x is k: each weight's
# cotangent is that of its bin, g[x]. Without weights the counts are integers (no derivative).


@vjp_rule(np.bincount)
def _bincount(g, ans, x, weights=None, minlength=0):
    return None, cast_like(np.take(g, x), weights)


@jvp_rule(np.bincount)
def _bincount_jvp(t, ans, x, weights=None, minlength=0):
    return None, np.bincount(x, weights=t, minlength=np.size(ans))


@vjp_rule(np.ndarray.take)
def _take_method(g, ans, self, indices, axis=None, out=None, mode="raise"):
    return untake(g, self, indices, axis, mode), None


@jvp_rule(np.ndarray.take)
def _take_method_jvp(t, ans, self, indices, axis=None, out=None, mode="raise"):
    return np.take(t, indices, axis=axis, mode=mode), None


# ``x.item(*args)`` is one element of ``x`` as a Python number.


@vjp_rule(np.ndarray.item)
def _item(g, ans, self, *args):
    return np.where(item_mask(self, args), g, np.zeros_like(self))


@jvp_rule(np.ndarray.item)
def _item_jvp(t, ans, self, *args):
    return np.sum(np.where(item_mask(self, args), t, np.zeros_like(t)))


@vjp_rule(np.take_along_axis)
def _take_along_axis(g, ans, arr, indices, axis=-1):
    return untake_along_axis(g, arr, indices, axis), None


@jvp_rule(np.take_along_axis)
def _take_along_axis_jvp(t, ans, arr, indices, axis=-1):
    return np.take_along_axis(t, indices, axis=axis), None


# ``compress(condition, a, axis)`` takes the positions where ``condition`` holds (a shorter
# condition leaves the rest out).


@vjp_rule(np.compress)
def _compress(g, ans, condition, a, axis=None, out=None):
    return None, untake(g, a, np.flatnonzero(condition), axis)


@jvp_rule(np.compress)
def _compress_jvp(t, ans, condition, a, axis=None, out=None):
    return None, np.compress(condition, t, axis=axis)


@vjp_rule(np.ndarray.compress)
def _compress_method(g, ans, self, condition, axis=None, out=None):
    return untake(g, self, np.flatnonzero(condition), axis)


@jvp_rule(np.ndarray.compress)
def _compress_method_jvp(t, ans, self, condition, axis=None, out=None):
    return np.compress(condition, t, axis=axis)


# ``extract(condition, arr)`` takes the elements of ``arr`` (flattened) where ``condition``
# (flattened) holds.


@vjp_rule(np.extract)
def _extract(g, ans, condition, arr):
    return None, untake(g, arr, np.flatnonzero(condition), None)


@jvp_rule(np.extract)
def _extract_jvp(t, ans, condition, arr):
    return None, np.extract(condition, t)


# ``unwrap(p)`` adds to ``p`` whole periods chosen by rounding its jumps: a correction that
# is constant where it is differentiable, so the derivative is the identity's.


@vjp_rule(np.unwrap)
def _unwrap(g, ans, p, discont=None, axis=-1, *, period=2 * np.pi):
    return g


@jvp_rule(np.unwrap)
def _unwrap_jvp(t, ans, p, discont=None, axis=-1, *, period=2 * np.pi):
    return t


# ``np.diff`` is linear in the array it differences: ``a`` with ``prepend`` and ``append``
# joined to it along ``axis`` (a scalar one broadcast to a slice of ``a``).


@vjp_rule(np.diff)
def _diff(g, ans, a, n=1, axis=-1, prepend=None, append=None):
    joined = undiff(g, n, axis)
    if prepend is None and append is None:
        return joined
    before = 0
    if prepend is not None:
        before = 1  # a scalar stands for one slice
        if np.ndim(prepend) > 0:
            before = np.shape(prepend)[axis]
    pieces = np.split(joined, [before, before + np.shape(a)[axis]], axis=axis)
    to_prepend = None
    to_append = None
    if prepend is not None:
        to_prepend = unbroadcast(pieces[0], prepend)
    if append is not None:
        to_append = unbroadcast(pieces[2], append)
    return pieces[1], None, None, to_prepend, to_append


@jvp_rule(np.diff, inline=False)
def _diff_jvp(t, ans, a, n=1, axis=-1, prepend=None, append=None):
    # entry i is asked for only when t is the tangent of argument i (so has its shape)
    ends = {"prepend": prepend, "append": append}
    given = {k: v for k, v in ends.items() if v is not None}
    ends = {k: np.zeros_like(v, dtype=np.asarray(t).dtype) for k, v in given.items()}
    entries = [None] * 5
    if np.shape(t) == np.shape(a):
        entries[0] = np.diff(t, n, axis, **ends)
    for position, name in ((3, "prepend"), (4, "append")):
        if name in ends and np.shape(t) == np.shape(given[name]):
            moved = dict(ends)
            moved[name] = t
            zeros = np.zeros_like(a, dtype=np.asarray(t).dtype)
            entries[position] = np.diff(zeros, n, axis, **moved)
    return tuple(entries)


# ``np.gradient(f, h0, h1, ..., axis=..., edge_order=...)`` is, along each axis k, a matrix
# D_k / h_k applied to f, with D_k = np.gradient(I, axis=0) for unit spacing: the cotangent
# of f is the sum of D_k^T g_k / h_k and that of a scalar spacing h_k is -<g_k, out_k> / h_k.
# A spacing given as a coordinate array x_k makes D_k = np.gradient(I, x_k, axis=0); the
# cotangent of x_k is in rules/gradient_coordinates.py.


@vjp_rule(np.gradient, inline=False)
def _gradient(g, ans, f, *varargs, axis=None, edge_order=1):
    axes = _gradient_axes(np.ndim(f), axis)
    spacings = _gradient_spacings(varargs, len(axes))
    pieces = list(g) if len(axes) > 1 else [g]
    outputs = list(ans) if len(axes) > 1 else [ans]
    to_f = np.zeros_like(f)
    to_spacings = []
    for along, spacing, piece, out in zip(axes, spacings, pieces, outputs):
        if piece is None:
            to_spacings.append(None)
            continue
        if np.ndim(spacing) > 0:  # coordinates
            matrix = _coordinate_gradient_matrix(f, along, spacing, edge_order)
            to_spacing = coordinate_cotangent(piece, f, spacing, along, edge_order, out)
        else:
            matrix = _unit_gradient_matrix(f, along, edge_order) / spacing
            to_spacing = -np.sum(piece * out) / spacing
        to_f = to_f + np.moveaxis(np.tensordot(piece, matrix, axes=([along], [0])), -1, along)
        to_spacings.append(to_spacing)
    return tuple([to_f] + _per_spacing_argument(to_spacings, varargs))


@jvp_rule(np.gradient, inline=False)
def _gradient_jvp(t, ans, f, *varargs, axis=None, edge_order=1):
    axes = _gradient_axes(np.ndim(f), axis)
    spacings = _gradient_spacings(varargs, len(axes))
    outputs = tuple(ans) if len(axes) > 1 else (ans,)
    entries = [None] * (1 + len(varargs))
    if np.shape(t) == np.shape(f):
        entries[0] = np.gradient(t, *varargs, axis=axis, edge_order=edge_order)
    if varargs and np.ndim(t) <= 1:  # a spacing's tangent (a number, or coordinates')
        shares = [
            _spacing_share(t, f, along, spacing, edge_order, out)
            for along, out, spacing in zip(axes, outputs, spacings)
        ]
        if len(varargs) == 1:  # one spacing for every axis
            entries[1] = tuple(shares) if len(axes) > 1 else shares[0]
        else:
            for k in range(len(varargs)):
                moved = [
                    shares[j] if j == k else np.zeros_like(out) for j, out in enumerate(outputs)
                ]
                entries[1 + k] = tuple(moved) if len(axes) > 1 else moved[0]
    return tuple(entries)


def _gradient_axes(ndim, axis):
    """The axes ``np.gradient`` differentiates along, of an ``ndim``-dimensional array."""
    if axis is None:
        return list(range(ndim))
    return [a % ndim for a in (axis if isinstance(axis, (tuple, list)) else [axis])]


def _gradient_spacings(varargs, count):
    """The spacing along each of the ``count`` axes ``np.gradient`` differentiates along."""
    # one entry per axis, by a comprehension: the transformer's derivative of a list
    # repeated by ``*`` ([h] * 2) is wrong (it scales the cotangent), so none is used here
    if len(varargs) > 1:
        spacings = list(varargs)
    elif varargs:
        spacings = [varargs[0] for _ in range(count)]
    else:
        spacings = [1.0 for _ in range(count)]
    return spacings


def _spacing_share(t, f, axis, spacing, edge_order, out):
    """The change of np.gradient's output along ``axis`` when its spacing there (a number
    or coordinates) moves by ``t``; zeros when ``t`` cannot be that spacing's tangent."""
    if np.ndim(spacing) == 0 and np.ndim(t) == 0:
        return -t * out / spacing
    if np.ndim(spacing) == 1 and np.shape(t) == np.shape(spacing):
        return coordinate_tangent(t, f, spacing, axis, edge_order, out)
    return np.zeros_like(out)


def _unit_gradient_matrix(f, axis, edge_order):
    """D with ``np.gradient(f, axis=axis)`` equal to D applied along ``axis`` of ``f``."""
    size = np.shape(f)[axis]
    return np.gradient(np.eye(size, dtype=np.result_type(f, 1.0)), axis=0, edge_order=edge_order)


def _coordinate_gradient_matrix(f, axis, coordinates, edge_order):
    """D with ``np.gradient(f, coordinates, axis=axis)`` equal to D applied along ``axis``."""
    unit = np.eye(np.shape(f)[axis], dtype=np.result_type(f, 1.0))
    return np.gradient(unit, coordinates, axis=0, edge_order=edge_order)


def _per_spacing_argument(to_spacings, varargs):
    if len(varargs) == 1:  # one spacing shared by every axis
        used = [c for c in to_spacings if c is not None]
        return [sum(used[1:], used[0]) if used else None]
    return to_spacings[: len(varargs)]


# ``np.select`` gives each element the first choice whose condition holds, else the default.


@vjp_rule(np.select)
def _select(g, ans, condlist, choicelist, default=0):
    chosen = np.select(condlist, np.arange(len(choicelist)), len(choicelist))
    to_choices = [unbroadcast(np.where(chosen == k, g, 0), c) for k, c in enumerate(choicelist)]
    return None, to_choices, unbroadcast(np.where(chosen == len(choicelist), g, 0), default)


@jvp_rule(np.select, inline=False)
def _select_jvp(t, ans, condlist, choicelist, default=0):
    chosen = np.select(condlist, np.arange(len(choicelist)), len(choicelist))
    if isinstance(t, (list, tuple)):  # the tangents of the choices
        zero = np.zeros_like(ans)
        return None, np.select(condlist, [zero + tk for tk in t], zero), None
    return None, None, np.where(chosen == len(choicelist), t, 0)


@vjp_rule(np.diag)
def _diag(g, ans, v, k=0):
    # A vector goes onto a diagonal; a matrix gives up its diagonal.
    return np.diag(g, k) if np.ndim(v) == 1 else undiagonal(g, v, k)


@jvp_rule(np.diag)
def _diag_jvp(t, ans, v, k=0):
    return np.diag(t, k)


@vjp_rule(np.diagonal)
def _diagonal(g, ans, a, offset=0, axis1=0, axis2=1):
    return undiagonal(g, a, offset, axis1, axis2)


@jvp_rule(np.diagonal)
def _diagonal_jvp(t, ans, a, offset=0, axis1=0, axis2=1):
    return np.diagonal(t, offset, axis1, axis2)


@vjp_rule(np.ndarray.diagonal)
def _diagonal_method(g, ans, self, offset=0, axis1=0, axis2=1):
    return undiagonal(g, self, offset, axis1, axis2)


@jvp_rule(np.ndarray.diagonal)
def _diagonal_method_jvp(t, ans, self, offset=0, axis1=0, axis2=1):
    return np.diagonal(t, offset, axis1, axis2)


# A 1-D input to triu/tril is broadcast to the rows of a square matrix.


@vjp_rule(np.triu)
def _triu(g, ans, m, k=0):
    return unbroadcast(np.triu(g, k), m)


@jvp_rule(np.triu)
def _triu_jvp(t, ans, m, k=0):
    return np.triu(t, k)


@vjp_rule(np.tril)
def _tril(g, ans, m, k=0):
    return unbroadcast(np.tril(g, k), m)


@jvp_rule(np.tril)
def _tril_jvp(t, ans, m, k=0):
    return np.tril(t, k)


# Padding with a constant embeds the array in a border that does not depend on it;
# edge, wrap, reflect and symmetric padding copy elements of the array into the border;
# the statistical modes fill it with weighted sums of its elements (rules/pad_statistics.py).


@vjp_rule(np.pad)
def _pad(
    g,
    ans,
    array,
    pad_width,
    mode="constant",
    stat_length=None,
    constant_values=0,
    end_values=0,
    reflect_type="even",
):
    if mode == "constant":
        inner = unpad(g, array, pad_width)
    elif mode == "maximum" or mode == "minimum" or mode == "mean" or mode == "median":
        inner = unpad_by_statistic(g, array, pad_width, mode, stat_length)
    else:
        inner = unpad(g, array, pad_width, mode, reflect_type)
    border = 1.0 - np.pad(np.ones(np.shape(array)), pad_width)
    return (
        inner,
        None,
        None,
        None,
        np.sum(g * border) if np.ndim(constant_values) == 0 else refuse(_PAD_ONLY_SCALAR),
    )


_PAD_ONLY_SCALAR = (
    "np.pad is differentiated in constant_values only when it is one number; build a border "
    "of several values yourself (np.concatenate) to differentiate them"
)


@jvp_rule(np.pad)
def _pad_jvp(
    t,
    ans,
    array,
    pad_width,
    mode="constant",
    stat_length=None,
    constant_values=0,
    end_values=0,
    reflect_type="even",
):
    if mode == "constant":
        moved = np.pad(t, pad_width)
    elif mode == "edge" or mode == "wrap":
        moved = np.pad(t, pad_width, mode=mode)
    elif mode == "reflect" or mode == "symmetric":
        moved = np.pad(t, pad_width, mode=mode, reflect_type=reflect_type)
    elif mode == "maximum" or mode == "minimum" or mode == "mean" or mode == "median":
        moved = pad_by_statistic_tangent(t, array, pad_width, mode, stat_length)
    else:  # ramps, 'empty', a function: not copies of the array's elements
        error = UnsupportedError(
            f"s2sgrad cannot differentiate np.pad with mode={mode!r}; use mode 'constant', "
            "'edge', 'wrap', 'reflect', 'symmetric', 'maximum', 'minimum', 'mean' or 'median'"
        )
        error.tape_cannot_either = True  # the tape applies the same rule
        raise error
    border = 1.0 - np.pad(np.ones(np.shape(array)), pad_width)
    return (
        moved,
        None,
        None,
        None,
        np.sum(t) * border if np.ndim(constant_values) == 0 else refuse(_PAD_ONLY_SCALAR),
    )


# ``np.where(condition)`` alone returns integer indices, which carry no derivative.


@vjp_rule(np.where)
def _where(g, ans, condition, x=None, y=None):
    return (
        None,
        unbroadcast(np.where(condition, g, 0), x),
        unbroadcast(np.where(condition, 0, g), y),
    )


@jvp_rule(np.where)
def _where_jvp(t, ans, condition, x=None, y=None):
    return None, np.where(condition, t, 0), np.where(condition, 0, t)


# ``np.clip`` passes ``a`` through inside the bounds and a bound's value outside them;
# each element's cotangent goes to whichever of the three it came from.


@vjp_rule(np.clip)
def _clip(g, ans, a, a_min=None, a_max=None, out=None, *, min=None, max=None):
    if min is not None:
        a_min = min
    if max is not None:
        a_max = max
    inside, below, above = clip_regions(a, a_min, a_max)
    return (
        unbroadcast(np.where(inside, g, 0), a),
        unbroadcast(np.where(below, g, 0), a_min),
        unbroadcast(np.where(above, g, 0), a_max),
    )


@jvp_rule(np.clip)
def _clip_jvp(t, ans, a, a_min=None, a_max=None, out=None, *, min=None, max=None):
    if min is not None:
        a_min = min
    if max is not None:
        a_max = max
    inside, below, above = clip_regions(a, a_min, a_max)
    return np.where(inside, t, 0), np.where(below, t, 0), np.where(above, t, 0)


@vjp_rule(np.ndarray.clip)
def _clip_method(g, ans, self, min=None, max=None, out=None):
    inside, below, above = clip_regions(self, min, max)
    return (
        unbroadcast(np.where(inside, g, 0), self),
        unbroadcast(np.where(below, g, 0), min),
        unbroadcast(np.where(above, g, 0), max),
    )


@jvp_rule(np.ndarray.clip)
def _clip_method_jvp(t, ans, self, min=None, max=None, out=None):
    inside, below, above = clip_regions(self, min, max)
    return np.where(inside, t, 0), np.where(below, t, 0), np.where(above, t, 0)


# ---------------------------------------------------------------------------------------
# Ranges and grids. ``np.linspace(a, b, n)[i] = a + (b - a) * w[i]`` with the weights
# ``w = np.linspace(0, 1, n)``; ``np.arange(a, b, s)[i] = a + i * s`` (its length, set by
# ``b``, is piecewise constant); ``np.meshgrid`` copies each input along the other axes.
# An integer dtype makes any of them piecewise constant: no derivative.


def real_valued(ans) -> bool:
    return np.issubdtype(np.result_type(ans), np.inexact)


def linspace_weights(samples, num, endpoint, axis):
    """``w`` shaped to broadcast against the samples: ``num`` along ``axis``, 1 elsewhere."""
    shape = [1] * np.ndim(samples)
    shape[axis] = num
    weights = np.linspace(0.0, 1.0, num, endpoint=endpoint, dtype=np.result_type(samples))
    return np.reshape(weights, shape)


@vjp_rule(np.linspace, inline=False)
def _linspace(
    g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None
):
    g_samples, g_step = g if retstep else (g, None)
    samples = ans[0] if retstep else ans
    if not real_valued(samples):
        return None, None
    to_start = to_stop = 0.0
    if g_samples is not None:
        weights = linspace_weights(samples, num, endpoint, axis)
        to_start = np.sum(g_samples * (1.0 - weights), axis=axis)
        to_stop = np.sum(g_samples * weights, axis=axis)
    divisor = num - 1 if endpoint else num
    if g_step is not None and divisor > 0:
        to_start = to_start - g_step / divisor
        to_stop = to_stop + g_step / divisor
    return unbroadcast(to_start, start), unbroadcast(to_stop, stop)


@jvp_rule(np.linspace, inline=False)
def _linspace_jvp(
    t, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None
):
    samples = ans[0] if retstep else ans
    if not real_valued(samples):
        return None, None
    weights = linspace_weights(samples, num, endpoint, axis)
    divisor = num - 1 if endpoint else num
    # the tangent of one endpoint, spread over the samples along ``axis``
    t_along = np.expand_dims(
        np.broadcast_to(t, np.broadcast_shapes(np.shape(start), np.shape(stop))), axis
    )
    from_start = t_along * (1.0 - weights)
    from_stop = t_along * weights
    if retstep:
        step_share = 1.0 / divisor if divisor > 0 else np.nan
        return (from_start, -t * step_share), (from_stop, t * step_share)
    return from_start, from_stop


@vjp_rule(np.arange, inline=False)
def _arange(g, ans, start, stop=None, step=None, dtype=None, *, device=None, like=None):
    if stop is None or not real_valued(ans):  # np.arange(stop) counts 0, 1, 2, ...
        return None
    positions = np.arange(np.size(ans), dtype=np.result_type(ans))
    to_step = None if step is None else np.sum(g * positions)
    return np.sum(g), None, to_step


@jvp_rule(np.arange, inline=False)
def _arange_jvp(t, ans, start, stop=None, step=None, dtype=None, *, device=None, like=None):
    if stop is None or not real_valued(ans):
        return None
    positions = np.arange(np.size(ans), dtype=np.result_type(ans))
    from_step = None if step is None else t * positions
    return t * np.ones_like(ans), None, from_step


def _grid_axis(index, count, ndim, indexing):
    """The axis of meshgrid's outputs along which input ``index`` varies."""
    if indexing == "xy" and count > 1 and index < 2:
        return 1 - index
    return index if ndim > 1 or count > 1 else 0


@vjp_rule(np.meshgrid, inline=False)
def _meshgrid(g, ans, *xi, copy=True, sparse=False, indexing="xy"):
    cotangents = []
    for index, x in enumerate(xi):
        piece = g[index]
        if piece is None or not real_valued(ans[index]):
            cotangents.append(None)
            continue
        keep = _grid_axis(index, len(xi), np.ndim(piece), indexing)
        others = tuple(a for a in range(np.ndim(piece)) if a != keep)
        cotangents.append(np.reshape(np.sum(piece, axis=others), np.shape(x)))
    return tuple(cotangents)


@jvp_rule(np.meshgrid, inline=False)
def _meshgrid_jvp(t, ans, *xi, copy=True, sparse=False, indexing="xy"):
    # entry i: the tangents of every output when input i moves by t (t has input i's shape;
    # an entry for an input of another shape is not asked for)
    entries = []
    for index, x in enumerate(xi):
        if np.shape(x) != np.shape(t):
            entries.append(None)
            continue
        inputs = [t if k == index else np.zeros_like(other) for k, other in enumerate(xi)]
        tangents = np.meshgrid(*inputs, copy=True, sparse=sparse, indexing=indexing)
        entries.append(list(tangents))
    return tuple(entries)


# ``np.ix_(a, b)`` gives each 1-D input reshaped to lie along its own axis (``a[:, None]``,
# ``b[None, :]``): an outer product's operands or an index grid. A boolean input becomes the
# integer positions of its True entries, and an integer one stays integer: no derivative.


@vjp_rule(np.ix_, inline=False)
def _ix(g, ans, *args):
    cotangents = []
    for index, x in enumerate(args):
        piece = g[index]
        if piece is None or not real_valued(ans[index]):
            cotangents.append(None)
            continue
        cotangents.append(np.reshape(piece, np.shape(x)))
    return tuple(cotangents)


@jvp_rule(np.ix_, inline=False)
def _ix_jvp(t, ans, *args):
    # entry i: the tangents of every output when input i moves by t (see meshgrid's)
    entries = []
    for index, x in enumerate(args):
        if np.shape(x) != np.shape(t) or not real_valued(ans[index]):
            entries.append(None)
            continue
        entries.append(
            [
                np.reshape(t, np.shape(out)) if k == index else np.zeros(np.shape(out))
                for k, out in enumerate(ans)
            ]
        )
    return tuple(entries)


# ``np.broadcast_arrays`` gives each input broadcast to the shape they share: each output's
# cotangent is summed back to its own input's shape, and an input's tangent broadcast.


@vjp_rule(np.broadcast_arrays, inline=False)
def _broadcast_arrays(g, ans, *args, subok=False):
    cotangents = []
    for index, x in enumerate(args):
        piece = g[index]
        cotangents.append(None if piece is None else unbroadcast(piece, x))
    return tuple(cotangents)


@jvp_rule(np.broadcast_arrays, inline=False)
def _broadcast_arrays_jvp(t, ans, *args, subok=False):
    # entry i: the tangents of every output when input i moves by t (see meshgrid's)
    entries = []
    for index, x in enumerate(args):
        if np.shape(x) != np.shape(t):
            entries.append(None)
            continue
        entries.append(
            [
                np.broadcast_to(t, np.shape(out)) if k == index else np.zeros_like(out)
                for k, out in enumerate(ans)
            ]
        )
    return tuple(entries)


# ---------------------------------------------------------------------------------------
# Functions whose outputs do not depend on their inputs' values.

nondifferentiable(
    np.einsum_path,  # the contraction order einsum takes: chosen from the shapes alone
    np.shape,
    np.ndim,
    np.size,
    len,
    np.zeros,
    np.ones,
    np.empty,
    np.eye,
    np.identity,
    np.zeros_like,
    np.ones_like,
    np.empty_like,
    np.nonzero,
    np.flatnonzero,
    np.argwhere,
    np.indices,
    np.tri,
    range,
    isinstance,
    type,  # a value's class (forward mode followed type(x) as a call to differentiate)
    hasattr,
    callable,
    np.ndarray.shape,
    np.ndarray.ndim,
    np.ndarray.size,
    np.ndarray.dtype,
    np.ndarray.strides,
    np.ndarray.itemsize,
    np.ndarray.nonzero,
    np.result_type,
    np.issubdtype,
)
