"""Checks the shape, indexing and selection rules against finite differences.

Most cases go through ``rulecheck.check_rule``. Primitives it cannot call (the ``.T``
attribute) or whose output is a list (``np.split``, ``split_like``, ``unpack_like``) go
through ``check_structured`` below, which does the same for a function of the primitive.
``test_every_rule_is_tested`` fails for a rule added without a test.
"""

import copy
import inspect
import operator

import numpy as np
import pytest
from oracle import assert_close, inner, numeric_grad, numeric_jvp, numeric_vjp
from rulecheck import (
    assert_arrays_close,
    assert_every_rule_is_tested,
    case,
    check_rule,
    primitive_name,
    random_like,
)

import s2sgrad as sg
import s2sgrad.runtime
from s2sgrad.errors import UnsupportedError
from s2sgrad.rules import get_rule
from s2sgrad.rules.registry import per_argument
from s2sgrad.runtime import (
    added_at,
    as_gradient,
    assigned_cotangent,
    block_of,
    concatenated,
    dict_entry,
    dict_keys,
    for_items,
    index_cotangent,
    items_cotangent,
    join_like,
    only_last_writes,
    owned_items,
    pack_like,
    ravel_positions,
    repeated,
    repeated_sum,
    sequence_part,
    split_like,
    unblock,
    undiagonal,
    undiff,
    unpack_like,
    unpad,
    unrepeat,
    untake,
    untake_along_axis,
    untile,
    unwindow,
    window_axes,
    zero_if_integer,
)
from s2sgrad.runtime.core import CotangentList

RULE_MODULES = ("s2sgrad.rules.shapes", "s2sgrad.runtime.shapes")

_rng = np.random.default_rng(20240607)


def r(*shape):
    """Random float64 values; distinct almost surely (``np.sort`` needs no ties)."""
    return _rng.standard_normal(shape)


def _pad_takes_a_dict() -> bool:
    try:
        np.pad(np.zeros(1), {0: 1})
    except TypeError:
        return False
    return True


needs_pad_dict = pytest.mark.skipif(
    not _pad_takes_a_dict(), reason="np.pad takes pad_width as a dict from NumPy 2.4 on"
)


def _needs_keyword(function, name):
    present = name in inspect.signature(function).parameters
    reason = f"np.{function.__name__} takes {name}= from NumPy 2.1 on"
    return pytest.mark.skipif(not present, reason=reason)


x234 = r(2, 3, 4)

CASES = [
    # Reshaping
    case(np.reshape, x234, (4, 6)),
    case(np.reshape, x234, (-1,)),
    case(np.reshape, x234, (3, 8), order="F"),
    case(np.reshape, r(6), shape=(2, 3), _marks=_needs_keyword(np.reshape, "shape")),
    case(np.reshape, 1.5, (1, 1)),
    case(np.ndarray.reshape, x234, 3, 8),
    case(np.ndarray.reshape, x234, (6, 4)),
    case(np.ndarray.reshape, x234, -1, order="F"),
    case(np.expand_dims, r(2, 3), 0),
    case(np.expand_dims, r(2, 3), (0, -1)),
    case(np.squeeze, r(1, 3, 1, 2)),
    case(np.squeeze, r(1, 3, 1, 2), 2),
    case(np.squeeze, r(1, 3, 1, 2), axis=(0, 2)),
    case(np.ndarray.squeeze, r(1, 3, 1)),
    case(np.ndarray.squeeze, r(1, 3, 1), axis=0),
    case(np.atleast_1d, np.array(2.0)),
    case(np.atleast_1d, r(3)),
    case(np.atleast_2d, r(3)),
    case(np.atleast_2d, np.array(2.0)),
    case(np.atleast_3d, r(3)),
    case(np.atleast_3d, r(2, 3)),
    case(np.atleast_3d, r(2, 3, 2)),
    case(np.ravel, x234),
    case(np.ravel, x234, "F"),
    case(np.ravel, x234, order="A"),
    case(np.ravel, x234, order="K"),
    case(np.ndarray.ravel, x234),
    case(np.ndarray.ravel, x234, "F"),
    case(np.ndarray.flatten, r(3, 2)),
    case(np.ndarray.flatten, r(3, 2), order="F"),
    # Permuting axes
    case(np.transpose, x234),
    case(np.transpose, x234, (1, 0, 2)),
    case(np.transpose, x234, (-1, 0, 1)),
    case(np.transpose, r(3, 4), axes=(1, 0)),
    case(np.ndarray.transpose, x234),
    case(np.ndarray.transpose, x234, None),
    case(np.ndarray.transpose, x234, 1, 2, 0),
    case(np.ndarray.transpose, x234, (2, 0, 1)),
    case(np.swapaxes, x234, 0, 2),
    case(np.swapaxes, x234, -1, 1),
    case(np.ndarray.swapaxes, x234, 0, 1),
    case(np.moveaxis, x234, 0, -1),
    case(np.moveaxis, x234, (0, 1), (2, 0)),
    # Reordering elements
    case(np.flip, x234),
    case(np.flip, x234, 1),
    case(np.flip, x234, axis=(0, 2)),
    case(np.fliplr, r(3, 4)),
    case(np.fliplr, x234),
    case(np.flipud, r(4)),
    case(np.flipud, r(3, 2)),
    case(np.roll, r(5), 2),
    case(np.roll, x234, 3),
    case(np.roll, x234, (1, -2), axis=(0, 2)),
    case(np.roll, x234, -1, axis=1),
    case(np.rot90, r(3, 4)),
    case(np.rot90, r(3, 4), 2),
    case(np.rot90, r(3, 4), -1),
    case(np.rot90, x234, 3, (1, 2)),
    case(np.sort, r(5)),
    case(np.sort, r(3, 4), 0),
    case(np.sort, x234, axis=-1),
    case(np.sort, x234, axis=1),
    case(np.sort, r(3, 4), axis=None),
    # Copying elements
    case(np.broadcast_to, r(3, 1), (2, 3, 4)),
    case(np.broadcast_to, r(4), (3, 4)),
    case(np.broadcast_to, 1.5, (2, 2)),
    case(np.tile, r(2, 3), 2),
    case(np.tile, r(2, 3), (2, 1, 2)),
    case(np.tile, r(3), (2, 2)),
    case(np.tile, x234, (2,)),
    case(np.tile, 1.5, 3),
    case(np.lib.stride_tricks.sliding_window_view, r(6), 3),
    case(np.lib.stride_tricks.sliding_window_view, r(4, 5), (2, 3)),
    case(np.lib.stride_tricks.sliding_window_view, r(3, 4, 5), (2, 2), axis=(0, 2)),
    case(np.lib.stride_tricks.sliding_window_view, r(4, 5), 2, axis=-1),
    case(np.lib.stride_tricks.sliding_window_view, r(7), (2, 3), axis=(0, 0)),
    case(np.repeat, r(2, 3), 2),
    case(np.repeat, r(2, 3), 2, axis=1),
    case(np.repeat, r(2, 3), np.array([1, 0, 2]), axis=1),
    case(np.repeat, r(2, 3), np.array([2, 1]), 0),
    case(np.repeat, r(2, 3), np.array([1, 0, 2, 3, 1, 1])),
    case(np.repeat, x234, 3, axis=-1),
    case(np.repeat, 1.5, 3),
    case(np.ndarray.repeat, r(2, 3), 2, 0),
    case(np.ndarray.repeat, r(2, 3), np.array([1, 3]), axis=0),
    case(np.copy, r(2, 3)),
    case(np.ndarray.copy, r(2, 3)),
    case(copy.copy, r(2, 3)),
    case(copy.deepcopy, r(3)),
    case(np.ndarray.astype, r(2, 3), np.float64),
    case(np.float64, r(2, 3)),
    case(np.float64, 0.7),
    case(np.ndarray.astype, r(4), "f8"),
    case(np.full, (2, 3), r(3)),
    case(np.full, (2, 3), 1.5),
    case(np.full, 4, r(1)),
    case(np.full_like, np.zeros((2, 3)), r(2, 1), _argnums=[1]),
    case(np.full_like, np.zeros(3), 1.5, _argnums=[1]),
    # casting to an integer dtype is piecewise constant: no derivative flows
    case(np.ndarray.astype, r(2, 3) * 5, int),
    case(np.full, (2, 3), r(3) * 5, dtype=int),
    case(np.full_like, np.zeros(3, int), r(1) * 5, _argnums=[1]),
    # Ranges
    case(np.linspace, r(3), r(3), 5),
    case(np.linspace, r(2, 1), r(3), 4, endpoint=False, axis=1),
    case(np.linspace, 0.3, r(2), 3, axis=-1),
    case(np.linspace, r(2), 1.7, 1),
    case(np.arange, 0.3, 2.9, 0.45, _argnums=[0, 2]),
    case(np.arange, -1.3, 2.0, _argnums=[0]),
    # Joining
    case(np.concatenate, [r(2, 3), r(4, 3)]),
    case(np.concatenate, [r(2, 3), r(2, 1), r(2, 2)], axis=1),
    case(np.concatenate, [r(2, 3), r(2, 2)], -1),
    case(np.concatenate, [r(2, 2), r(3), np.array(1.5)], axis=None),
    case(np.concatenate, r(3, 2, 2), axis=1),
    case(np.block, [[r(2, 2), r(2, 1)], [r(1, 3)]]),
    case(np.block, [r(2), r(), r(3)]),
    case(np.block, [[r(1, 2), r(1)]]),
    case(np.stack, r(3, 2), axis=1),
    case(np.vstack, r(2, 3)),
    case(np.stack, [r(2, 3), r(2, 3)]),
    case(np.stack, [r(2, 3), r(2, 3), r(2, 3)], axis=1),
    case(np.stack, [r(3), r(3)], axis=-1),
    case(np.stack, [1.5, 2.5]),
    case(np.hstack, [r(2), r(3)]),
    case(np.hstack, [r(2, 1), r(2, 3)]),
    case(np.hstack, [np.array(1.5), r(2)]),
    case(np.hstack, [r(2, 2, 1), r(2, 1, 1)]),
    case(np.vstack, [r(3), r(3)]),
    case(np.vstack, [r(2, 3), r(1, 3)]),
    case(np.vstack, [r(3), r(2, 3)]),
    case(np.vstack, [np.array(1.5), r(1)]),
    case(np.dstack, [r(3), r(3)]),
    case(np.dstack, [r(2, 3), r(2, 3)]),
    case(np.dstack, [r(2, 3, 1), r(2, 3, 2)]),
    case(np.array, [r(3), r(3)]),
    case(np.array, [1.5, 2.5, -0.5]),
    case(np.array, [np.array(1.5), 2.5]),
    case(np.array, r(2, 3)),
    case(np.array, r(3), ndmin=3),
    case(np.array, [r(2), r(2)], ndmin=4),
    case(np.array, [r(2), r(2)], np.float64),
    case(np.asarray, [r(2, 2), r(2, 2)]),
    case(np.asarray, r(2, 3)),
    case(np.asarray, r(3), dtype=np.float64),
    case(np.asanyarray, r(2, 3)),
    case(np.asanyarray, [r(2), r(2)]),
    case(np.ascontiguousarray, r(3, 2).T),
    case(np.asfortranarray, r(2, 3), dtype=np.float64),
    # Selecting elements
    case(operator.getitem, r(5), 2),
    case(operator.getitem, r(5), -1),
    case(operator.getitem, r(4, 5), (1, slice(None, None, -2))),
    case(operator.getitem, r(6), slice(4, 0, -1)),
    case(operator.getitem, x234, (Ellipsis, None, 1)),
    case(operator.getitem, x234, (None, Ellipsis, slice(-1, None, -1))),
    case(operator.getitem, x234, Ellipsis),
    case(operator.getitem, r(6), np.array([0, 2, 2, 5, 0, 2])),
    case(operator.getitem, r(3, 4), np.array([[0, 1], [1, 1]])),
    case(operator.getitem, r(6), [1, 1, 0], _argnums=[0]),
    case(operator.getitem, r(3, 4), r(3, 4) > 0),
    case(operator.getitem, r(3, 4), (np.array([True, False, True]), slice(1, 3))),
    case(operator.getitem, x234, (slice(None), np.array([0, 0, 2]), slice(None, None, -1))),
    case(operator.getitem, x234, (np.array([0, 1, 1]), slice(None), np.array([[1], [3]]))),
    case(operator.getitem, x234, (1, np.array([2, 2]), Ellipsis)),
    case(operator.getitem, x234, (np.array([True, False]), np.array([0, 2, 2]))),
    case(operator.getitem, r(3, 4), ()),
    case(np.take, r(3, 4), [0, 5, 5, 11], _argnums=[0]),
    case(np.take, r(3, 4), np.array([2, 0, 2]), axis=1),
    case(np.take, r(3, 4), np.array([[1, 1], [0, 2]]), 0),
    case(np.bincount, np.array([0, 2, 2, 1, 0, 2]), r(6), 5, _argnums=[1]),
    case(np.take, r(3, 4), 2, axis=1),
    case(np.take, r(3, 4), np.array([-1, 4, 5]), axis=1, mode="wrap"),
    case(np.take, r(5), np.array([-3, 1, 9]), mode="clip"),
    case(np.ndarray.take, r(3, 4), [3, 3, 1], _argnums=[0]),
    case(np.ndarray.take, r(3, 4), np.array([1, 0, 1]), axis=0),
    case(np.diag, r(3)),
    case(np.diag, r(3), 1),
    case(np.diag, r(2), k=-2),
    case(np.diag, r(3, 3)),
    case(np.diag, r(3, 4), 1),
    case(np.diag, r(4, 3), k=-1),
    case(np.diagonal, r(3, 4)),
    case(np.diagonal, r(3, 4), 1),
    case(np.diagonal, r(4, 3), -2),
    case(np.diagonal, x234, 1, 1, 2),
    case(np.diagonal, x234, offset=-1, axis1=2, axis2=0),
    case(np.ndarray.diagonal, r(3, 3)),
    case(np.ndarray.diagonal, x234, 0, 2, 1),
    case(np.triu, r(3, 4)),
    case(np.triu, r(3, 4), 1),
    case(np.triu, r(4, 3), k=-1),
    case(np.triu, r(3)),
    case(np.triu, r(2, 3, 3)),
    case(np.tril, r(3, 4)),
    case(np.tril, r(3, 4), -1),
    case(np.tril, r(3), k=1),
    case(np.tril, r(2, 3, 3), 1),
    case(np.pad, r(2, 3), 1),
    case(np.pad, r(3), (1, 2)),
    case(np.pad, r(2, 3), ((1, 0), (2, 1))),
    case(np.pad, r(2, 3), ((2, 1),)),
    case(np.pad, r(2, 3), {1: (1, 2)}, _marks=needs_pad_dict),
    case(np.pad, r(2, 3), 1, constant_values=5.0),
    case(np.pad, r(2, 3), ((1, 2), (2, 0)), "edge"),
    case(np.pad, r(3, 4), ((2, 1), (3, 2)), mode="reflect"),
    case(np.pad, r(3, 4), ((2, 3), (1, 4)), mode="symmetric"),
    case(np.pad, r(2, 3), ((3, 1), (4, 2)), mode="wrap"),
    case(np.where, r(3, 4) > 0, r(3, 4), r(3, 4)),
    case(np.where, r(3, 1) > 0, r(4), 1.5),
    case(np.where, r(2, 1, 3) > 0, r(4, 1), r(3)),
    case(np.where, np.array([True, False, True]), r(2, 3), r(2, 1)),
    # Bounds sit at +-0.5 and values are random normals, far from the kinks at this step.
    case(np.clip, r(3, 4), -0.5, 0.5),
    case(np.clip, r(3, 4), None, 0.3),
    case(np.clip, r(3, 4), -0.3, None),
    case(np.clip, r(3, 4), r(4) - 0.5, r(3, 1) + 0.5),
    case(np.clip, r(3, 4), 0.4, -0.4),
    case(np.clip, r(3, 4), min=-0.5, max=0.5, _marks=_needs_keyword(np.clip, "min")),
    case(np.clip, r(3, 4), a_min=-0.5, a_max=0.5),
    case(np.ndarray.clip, r(3, 4), -0.5, 0.5),
    case(np.ndarray.clip, r(3, 4), None, r(3, 1)),
    case(np.ndarray.clip, r(3, 4), min=r(4)),
    case(np.ndarray.item, r(4), 2),
    case(np.ndarray.item, r(2, 3), 1, -1),
    case(np.ndarray.item, r(2, 2), (1, 0)),
    case(np.ndarray.item, r(1, 1)),
    case(np.gradient, r(6)),
    case(np.gradient, r(6), 0.5),
    case(np.gradient, r(5), edge_order=2),
    case(np.gradient, r(3, 4), axis=1),
    case(np.gradient, r(3, 4), 0.3, axis=-1, edge_order=2),
    case(np.gradient, r(4, 3, 2), 0.7, axis=(1,)),
    case(np.rollaxis, x234, 2),
    case(np.rollaxis, x234, 0, 3),
    case(np.rollaxis, x234, -1, 1),
    case(np.rollaxis, x234, 1, -1),
    case(np.partition, r(7), 3),
    case(np.partition, r(3, 5), (1, 3), axis=1),
    case(np.partition, r(4, 3), 1, 0),
    case(np.partition, r(3, 4), 5, None),
    case(np.column_stack, [r(3), r(3, 2)]),
    case(np.column_stack, [r(2, 1), r(2, 3), r(2)]),
    case(np.append, r(2, 3), r(4)),
    case(np.append, r(2, 3), r(1, 3), axis=0),
    case(np.append, r(2, 3), r(2, 2), 1),
    case(np.append, r(3), 1.5),
    case(np.take_along_axis, r(3, 4), np.array([[0], [2], [1]]), 1),
    case(np.take_along_axis, r(3, 4), np.array([[0, 0, 3]]), -1),
    case(np.take_along_axis, r(1, 4), np.array([[1, 1], [0, 3]]), 1),
    case(np.take_along_axis, r(3, 2), np.array([[2, 0]]), 0),
    case(np.take_along_axis, r(5), np.array([4, 0, 4]), None),
    case(np.compress, [True, False, True], r(3, 2), 0, _argnums=[1]),
    case(np.compress, np.array([False, True]), r(3, 2), axis=1, _argnums=[1]),
    case(np.compress, [1, 0, 1, 1], r(2, 3), _argnums=[1]),
    case(np.extract, np.array([[True, False, True], [False, True, True]]), r(2, 3), _argnums=[1]),
    case(np.unwrap, 4.0 * r(6)),
    case(np.unwrap, 4.0 * r(2, 3), axis=0),
    case(np.unwrap, 3.0 * r(5), period=2.5),
    case(np.ndarray.compress, r(4), [True, False, True, True], _argnums=[0]),
    case(np.ndarray.compress, r(2, 3), [False, True], 0, _argnums=[0]),
    case(np.diff, r(5)),
    case(np.diff, r(3, 5), 2),
    case(np.diff, r(4, 3), 1, 0),
    case(np.diff, r(4), 1, -1, r(1), r(2)),
    case(np.diff, r(3, 4), 2, 0, r(1, 4), 2.0),
    case(np.diff, r(2, 3), 1, 1, 0.5),
    case(np.diff, r(2, 3), 3, 1, append=r(2, 2)),
    case(
        np.select,
        [r(3, 4) > 0.5, r(4) < 0.0],
        [r(3, 4), r(4)],
        r(3, 1),
        _argnums=[1, 2],
    ),
    case(np.select, [r(5) > 0.0], [r(5)], _argnums=[1]),
]
if hasattr(np, "astype"):  # NumPy 2
    CASES += [case(np.astype, r(3), np.float64), case(np.astype, r(2, 2), np.float64, copy=False)]


@pytest.mark.parametrize(("primitive", "args", "kwargs", "argnums", "jvp"), CASES)
def test_rule(primitive, args, kwargs, argnums, jvp):
    check_rule(primitive, *args, argnums=argnums, kwargs=kwargs, jvp=jvp)


# Helpers of s2sgrad.runtime.shapes are linear in their first argument; the others only
# give shapes and positions.
HELPER_CASES = [
    case(added_at, r(4), np.array([0, 2, 0]), r(3)),
    case(added_at, r(2, 3), (np.array([1, 1]), np.array([0, 2])), r(1)),
    case(added_at, r(3, 2), np.s_[1:], r(2)),
    case(zero_if_integer, r(3), r(3), _argnums=[0]),
    case(zero_if_integer, r(3), np.arange(3), _argnums=[0]),
    case(index_cotangent, r(3), r(6), np.array([0, 2, 2])),
    case(index_cotangent, r(2, 2), r(3, 4), (slice(1, None), slice(None, None, -2))),
    case(index_cotangent, r(2, 4), r(3, 4), np.array([True, False, True])),
    case(assigned_cotangent, r(5), np.array([0, 2, 2, -5])),
    case(assigned_cotangent, r(3, 4), (slice(None), [1, 1])),
    case(assigned_cotangent, r(3, 4), (slice(1, None), 2)),
    case(only_last_writes, r(4), (5,), [0, 2, 2, -5]),
    case(only_last_writes, r(2, 3), (3, 4), ([[0], [0]], [1, 1, 3])),
    case(join_like, [r(2, 3), r(1, 3)], np.zeros((3, 3)), [np.zeros((2, 3)), np.zeros((1, 3))]),
    case(join_like, [r(2), r(1, 2)], np.zeros(4), [np.zeros(2), np.zeros((1, 2))], None),
    case(join_like, [r(3), r(3)], np.zeros((3, 2)), [np.zeros(3), np.zeros(3)], -1),
    case(pack_like, [r(2), r(2)], np.zeros((2, 2)), [np.zeros(2), np.zeros(2)]),
    case(pack_like, [r(), r()], np.zeros((1, 2)), [1.0, 2.0]),
    case(pack_like, r(2, 3), np.zeros((2, 3)), np.zeros((2, 3))),
    case(untile, r(4, 6), np.zeros((2, 3)), (2, 2)),
    case(untile, r(2, 6), np.zeros(3), (2, 2)),
    case(unrepeat, r(6), np.zeros(3), 2),
    case(unwindow, r(4, 2), np.zeros(5), 2),
    case(block_of, [[r(2, 2), r(2, 1)], [r(1, 3)]], [[r(2, 2), r(2, 1)], [r(1, 3)]]),
    case(block_of, [r(2), r(), r(3)], [np.zeros(2), 0.0, np.zeros(3)]),
    case(unwindow, r(3, 3, 2, 3), np.zeros((4, 5)), (2, 3)),
    case(unwindow, r(2, 4, 4, 2, 2), np.zeros((3, 4, 5)), (2, 2), (0, 2)),
    case(unwindow, r(4, 2, 3), np.zeros(7), (2, 3), (0, 0)),
    case(unrepeat, r(2, 4), np.zeros((2, 3)), [2, 0, 2], 1),
    case(undiagonal, r(3), np.zeros((3, 4))),
    case(undiagonal, r(2, 3), np.zeros((2, 4, 3)), 1, 2, 1),
    case(untake, r(3), np.zeros(4), [1, 1, 3]),
    case(untake, r(3, 2), np.zeros((3, 4)), [-1, 6], 1, "wrap"),
    case(unpad, r(4, 5), np.zeros((2, 3)), 1),
    case(unpad, r(4, 5), np.zeros((2, 3)), ((1, 1), (2, 0)), "edge"),
    case(unpad, r(5, 6), np.zeros((3, 4)), 1, "reflect"),
    case(untake_along_axis, r(3, 2), np.zeros((3, 4)), np.array([[0, 0], [3, 1], [2, 2]]), 1),
    case(untake_along_axis, r(3), np.zeros(5), np.array([4, 0, 4]), None),
    case(untake_along_axis, r(2, 2), np.zeros((1, 4)), np.array([[1, 1], [0, 3]]), 1),
    case(undiff, r(4)),
    case(undiff, r(3, 2), 2, 0),
]


@pytest.mark.parametrize(("primitive", "args", "kwargs", "argnums", "jvp"), HELPER_CASES)
def test_helper_rule(primitive, args, kwargs, argnums, jvp):
    check_rule(primitive, *args, argnums=[0], kwargs=kwargs, jvp=jvp)


# ---------------------------------------------------------------------------------------
# Primitives whose output is a list, and attributes: checked through a function of them.


def _leaves(tree):
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [tree]


def _flat(tree):
    return np.concatenate([np.ravel(np.asarray(leaf, dtype=np.float64)) for leaf in _leaves(tree)])


def _random_tree(tree, rng, none_at=()):
    """Random values shaped like ``tree``; the top-level entries in ``none_at`` are None."""
    if isinstance(tree, (list, tuple)):
        items = [_random_tree(item, rng) for item in tree]
        return [None if i in none_at else item for i, item in enumerate(items)]
    return rng.standard_normal(np.shape(tree))


def _zero_filled(tree, like):
    if isinstance(like, (list, tuple)):
        tree = tree if tree is not None else [None] * len(like)
        return [_zero_filled(t, item) for t, item in zip(tree, like)]
    return np.zeros(np.shape(like)) if tree is None else tree


def check_structured(key, function, *args, argnums, none_at=(), seed=0):
    """``check_rule`` for the primitive ``key`` whose call is ``function(*args)``.

    The output may be a (nested) list of arrays; its cotangent is a list of the same
    structure whose top-level entries in ``none_at`` are None (an output nobody used).
    """
    rng = np.random.default_rng(seed)
    rule = get_rule(key)
    ans = function(*args)
    g = _random_tree(ans, rng, none_at) if isinstance(ans, (list, tuple)) else r(*np.shape(ans))
    g_flat = _flat(_zero_filled(g, ans))
    cotangents = per_argument(rule.vjp(g, ans, *args), len(args))
    flat_function = lambda *a: _flat(function(*a))  # noqa: E731
    for i in argnums:
        expected = numeric_vjp(flat_function, args, i, g_flat)
        assert_arrays_close(cotangents[i], expected, 1e-5, 1e-6, f"VJP of {key} wrt {i}")
        t = random_like(args[i], rng)
        tangent = per_argument(rule.jvp(t, ans, *args), len(args))[i]
        expected = numeric_jvp(flat_function, args, i, t)
        assert_arrays_close(_flat(tangent), expected, 1e-5, 1e-6, f"JVP of {key} wrt {i}")
        args32 = list(args)
        args32[i] = np.asarray(args[i], dtype=np.float32)
        ans32 = function(*args32)
        g32 = _random_tree(ans32, rng, none_at) if isinstance(ans32, list) else g
        g32 = _as32(g32)
        cotangent32 = per_argument(rule.vjp(g32, ans32, *args32), len(args))[i]
        assert {np.result_type(leaf) for leaf in _leaves(cotangent32)} == {np.dtype(np.float32)}


def _as32(tree):
    if isinstance(tree, list):
        return [_as32(item) for item in tree]
    return None if tree is None else np.asarray(tree, dtype=np.float32)


STRUCTURED_CASES = [
    pytest.param(list, list, (r(3, 2),), (), id="list-of-rows"),
    pytest.param(tuple, tuple, (r(2, 3),), (), id="tuple-of-rows"),
    pytest.param(np.ndarray.T, lambda x: x.T, (x234,), (), id="ndarray.T"),
    pytest.param(np.ndarray.T, lambda x: x.T, (r(3),), (), id="ndarray.T-1d"),
    pytest.param(np.split, np.split, (r(6, 2), 3), (), id="split-sections"),
    pytest.param(np.split, np.split, (r(2, 5), [1, 3], 1), (1,), id="split-indices"),
    pytest.param(np.split, np.split, (r(3, 4), [2, 2], -1), (0, 2), id="split-empty-piece"),
    pytest.param(np.array_split, np.array_split, (r(7), 3), (), id="array_split-uneven"),
    pytest.param(np.gradient, np.gradient, (r(3, 4),), (1,), id="gradient-2d"),
    pytest.param(np.gradient, np.gradient, (r(3, 4), 0.5, 2.0), (), id="gradient-spacings"),
    pytest.param(np.hsplit, np.hsplit, (r(2, 6), 3), (), id="hsplit"),
    pytest.param(np.hsplit, np.hsplit, (r(6), [2]), (1,), id="hsplit-1d"),
    pytest.param(np.vsplit, np.vsplit, (r(4, 3), 2), (0,), id="vsplit"),
    pytest.param(np.dsplit, np.dsplit, (r(1, 3, 4), [1, 3]), (), id="dsplit"),
    pytest.param(np.array_split, np.array_split, (r(2, 5), 3, 1), (2,), id="array_split-axis"),
    pytest.param(split_like, split_like, (r(5), [np.zeros(2), np.zeros(3)]), (0,), id="split_like"),
    pytest.param(
        split_like,
        split_like,
        (r(3, 2), [np.zeros(3), np.zeros((3, 1))], 1),
        (),
        id="split_like-reshape",
    ),
    pytest.param(
        split_like, split_like, (r(5), [np.zeros((2, 1)), 1.0, np.zeros(2)], None), (), id="flat"
    ),
    pytest.param(unpack_like, unpack_like, (r(2, 3), [r(3), r(3)]), (), id="unpack_like"),
    pytest.param(
        unpack_like, unpack_like, (r(2, 2), [[1.0, r()], (r(), 2.0)]), (1,), id="unpack-nested"
    ),
    pytest.param(unpack_like, unpack_like, (r(1, 1, 2), [1.0, 2.0]), (), id="unpack-ndmin"),
    pytest.param(owned_items, owned_items, (r(3, 2),), (), id="owned_items-rows"),
    pytest.param(owned_items, owned_items, (r(3),), (), id="owned_items-numbers"),
    pytest.param(np.meshgrid, np.meshgrid, (r(3), r(2)), (), id="meshgrid"),
    pytest.param(np.ix_, np.ix_, (r(3), r(2)), (), id="ix_"),
    pytest.param(np.ix_, np.ix_, (r(2), r(1), r(3)), (), id="ix_-three"),
    pytest.param(unblock, unblock, (r(3, 3), [[r(2, 2), r(2, 1)], [r(1, 3)]]), (), id="unblock"),
    pytest.param(unblock, unblock, (r(6), [r(2), 1.0, r(3)]), (), id="unblock-number"),
    pytest.param(
        np.broadcast_arrays, np.broadcast_arrays, (r(3, 1), r(2)), (), id="broadcast_arrays"
    ),
    pytest.param(
        np.broadcast_arrays,
        np.broadcast_arrays,
        (r(2, 1, 3), r(4, 1), r()),
        (1,),
        id="broadcast_arrays-unused",
    ),
    pytest.param(np.r_, lambda *items: np.r_[items], (r(3), r(2), 1.5), (), id="r_"),
    pytest.param(np.r_, lambda *items: np.r_[items], (r(2, 3), r(1, 3)), (), id="r_-2d"),
    pytest.param(np.r_, lambda *items: np.r_[items], (r(2), slice(0, 3)), (), id="r_-range"),
    pytest.param(np.c_, lambda *items: np.c_[items], (r(3), r(3)), (), id="c_"),
    pytest.param(np.c_, lambda *items: np.c_[items], (r(2, 2), r(2)), (), id="c_-2d"),
]


@pytest.mark.parametrize(
    ("args", "options"),
    [
        ((r(3), r(2)), {}),
        ((r(3), r(2), r(4)), {"indexing": "ij"}),
        ((r(3), r(2, 2), r(2)), {"sparse": True}),
        ((r(3), r(2), r(4)), {"indexing": "xy"}),
        ((r(4),), {}),
    ],
)
def test_meshgrid_rules_for_every_input(args, options):
    rule = get_rule(np.meshgrid)
    ans = np.meshgrid(*args, **options)
    g = [r(*np.shape(a)) for a in ans]
    g[-1] = None  # an output nobody used

    def flat(*xi):
        grids = np.meshgrid(*xi, **options)
        return np.concatenate([np.ravel(grids[k]) for k in range(len(grids) - 1)])

    g_flat = np.concatenate([np.ravel(piece) for piece in g[:-1]]) if len(g) > 1 else 0.0
    cotangents = per_argument(rule.vjp(g, ans, *args, **options), len(args))
    for i, x in enumerate(args):
        expected = numeric_vjp(flat, args, i, g_flat) if len(g) > 1 else 0 * x
        got = cotangents[i] if cotangents[i] is not None else 0 * x
        assert_arrays_close(got, expected, 1e-5, 1e-6, i)
        t = r(*np.shape(x))
        tangents = rule.jvp(t, ans, *args, **options)[i]
        grids = numeric_jvp(lambda *xi: np.meshgrid(*xi, **options), args, i, t)
        for k, change in enumerate(grids):
            assert_arrays_close(tangents[k], change, 1e-5, 1e-6, (i, k))


@pytest.mark.parametrize(("key", "function", "args", "none_at"), STRUCTURED_CASES)
def test_structured_rule(key, function, args, none_at):
    check_structured(key, function, *args, argnums=[0], none_at=none_at)


def test_split_cotangent_of_unused_pieces_is_zero():
    pieces = np.split(np.arange(6.0), 3)
    g = [None, np.ones(2, np.float32), None]
    cotangent = get_rule(np.split).vjp(g, pieces, np.arange(6.0), 3)
    np.testing.assert_array_equal(cotangent, [0, 0, 1, 1, 0, 0])
    assert cotangent.dtype == np.float32


def test_split_jvp_gives_one_tangent_per_piece():
    tangents = get_rule(np.split).jvp(np.arange(4.0), None, np.zeros(4), 2)
    assert isinstance(tangents, tuple) and len(tangents) == 3
    np.testing.assert_array_equal(tangents[0][1], [2.0, 3.0])


# ---------------------------------------------------------------------------------------
# Structure of cotangents


def test_nested_array_list_cotangent_mirrors_the_list():
    g = r(2, 2, 3)
    cotangent = get_rule(np.array).vjp(g, None, [[r(3), np.ones(3)], (r(3), r(3))])[0]
    assert isinstance(cotangent, list) and isinstance(cotangent[1], tuple)
    np.testing.assert_array_equal(cotangent[0][1], g[0, 1])
    np.testing.assert_array_equal(cotangent[1][0], g[1, 0])
    scalars = get_rule(np.array).vjp(g[0], None, [[1.0, 2.0, 3.0], [r(), r(), 4.0]])[0]
    assert np.shape(scalars[1][0]) == () and scalars[1][0] == g[0, 1, 0]


def test_array_of_a_tuple_gives_a_tuple_cotangent_for_the_first_argument():
    entries = per_argument(get_rule(np.array).vjp(np.ones(2), None, (1.0, 2.0)), 2)
    assert isinstance(entries[0], tuple) and entries[1] is None


def test_getitem_of_dict_gives_sparse_dict_meaning_zeros_elsewhere():
    params = {"w": r(2, 3), "b": r(3), "scale": 2.0}
    g = r(3).astype(np.float32)
    cotangent = get_rule(operator.getitem).vjp(g, params["b"], params, "b")[0]
    assert set(cotangent) == {"b"} and cotangent["b"] is g
    full = s2sgrad.runtime.as_gradient(cotangent, params)
    assert set(full) == set(params)
    np.testing.assert_array_equal(full["w"], np.zeros((2, 3)))
    assert full["scale"] == 0.0
    tangent = get_rule(operator.getitem).jvp({"w": 0, "b": g, "scale": 0}, None, params, "b")[0]
    assert tangent is g


def test_getitem_of_list_and_tuple_give_their_type_back():
    layers = [r(2), {"w": r(2, 2)}, r(3)]
    g = {"w": r(2, 2)}
    cotangent = index_cotangent(g, layers, 1)
    assert isinstance(cotangent, list) and cotangent[1] is g
    np.testing.assert_array_equal(cotangent[0], np.zeros(2))
    assert cotangent[2].shape == (3,)
    pair = (r(2), r(3), r(1))
    cotangent = index_cotangent([np.ones(3), np.ones(1)], pair, slice(1, None))
    assert len(cotangent) == 3
    assert isinstance(as_gradient(cotangent, pair), tuple)
    np.testing.assert_array_equal(cotangent[0], np.zeros(2))
    np.testing.assert_array_equal(cotangent[2], np.ones(1))
    reversed_ = index_cotangent([np.ones(1), 2 * np.ones(3)], pair, slice(None, 0, -1))
    np.testing.assert_array_equal(reversed_[1], 2 * np.ones(3))


def test_repeated_integer_indices_accumulate():
    x = np.zeros(4, dtype=np.float32)
    g = np.ones(5, dtype=np.float32)
    cotangent = get_rule(operator.getitem).vjp(g, None, x, np.array([3, 3, 0, 3, -1]))[0]
    np.testing.assert_array_equal(cotangent, [1, 0, 0, 4])
    assert cotangent.dtype == np.float32


def test_clip_with_crossed_bounds_sends_everything_to_a_max():
    x = r(5)
    _, below, above = per_argument(get_rule(np.clip).vjp(np.ones(5), None, x, 1.0, -1.0), 3)
    assert below == 0.0 and above == 5.0


def test_astype_cotangent_has_the_input_dtype():
    x = r(3).astype(np.float32)
    cotangent = get_rule(np.ndarray.astype).vjp(np.ones(3), x.astype(np.float64), x, np.float64)
    assert cotangent.dtype == np.float32


def test_float32_transpose_method():
    x = r(2, 3).astype(np.float32)
    cotangent = get_rule(np.ndarray.transpose).vjp(np.ones((3, 2), np.float32), x.T, x, 1, 0)
    assert cotangent.dtype == np.float32 and cotangent.shape == (2, 3)


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize(
    "view",
    [
        lambda a: a,
        lambda a: a.T,
        lambda a: a[:, ::-1],
        lambda a: a[::-1, :, ::2],
        lambda a: a.transpose(1, 0, 2),
        lambda a: np.asfortranarray(a),
        lambda a: np.asfortranarray(a)[:, 1:],
    ],
    ids=["c", "T", "reversed", "strided", "permuted", "fortran", "fortran-slice"],
)
def test_ravel_follows_the_memory_layout(view, order):
    # ravel is linear: <g, ravel(x)> = <vjp(g), x> for every x with the same layout.
    x = view(r(2, 3, 4))
    g = r(x.size)
    for primitive in (np.ravel, np.ndarray.ravel, np.ndarray.flatten):
        rule = get_rule(primitive)
        cotangent = rule.vjp(g, None, x, order)
        assert cotangent.shape == x.shape
        np.testing.assert_allclose(np.sum(cotangent * x), g @ np.ravel(x, order))
        tangent = rule.jvp(np.ascontiguousarray(x), None, x, order)
        np.testing.assert_array_equal(tangent, np.ravel(x, order))


def test_window_axes_read_as_numpy_reads_them():
    assert window_axes(np.zeros((4, 5)), 2, axis=1) == ((2,), (1,))
    assert window_axes(np.zeros((4, 5)), (2, 3)) == ((2, 3), (0, 1))
    assert window_axes(np.zeros((4, 5)), (2, 2), axis=(-1, 0)) == ((2, 2), (1, 0))
    with pytest.raises(ValueError, match="same number"):
        window_axes(np.zeros((4, 5)), (2, 2), axis=0)


def test_sliding_window_convolution_to_second_order_in_every_mode():
    def conv(image, kernel):
        windows = np.lib.stride_tricks.sliding_window_view(image, kernel.shape)
        return np.sum(np.einsum("ijkl,kl->ij", windows, kernel) ** 2)

    image, kernel = r(5, 6), r(2, 3)
    for mode in ("s2s", "auto", "tape"):
        sg.check_grads(conv, image, kernel, order=2, mode=mode)


def _windows_of(x):
    """Overlapping pairs of rows, as ``as_strided`` reads them from ``x``'s own strides."""
    s0, s1 = x.strides
    return np.lib.stride_tricks.as_strided(x, (x.shape[0] - 1, 2, x.shape[1]), (s0, s0, s1))


@pytest.mark.parametrize(
    "layout",
    [
        lambda x: x,
        lambda x: x.T.copy().T,  # columns contiguous
        lambda x: x[:, ::2],  # every other column
        lambda x: x.astype(np.float32),
    ],
)
def test_as_strided_rules(layout):
    """check_rule would copy the arguments; byte strides are read from the array itself."""
    x = layout(r(4, 6))

    def pairs(x):
        return _windows_of(x) * np.arange(1.0, 3.0)[:, None]

    rtol = 1e-3 if x.dtype == np.float32 else 1e-6
    g = _rng.standard_normal(pairs(x).shape)
    pullback = sg.vjp(pairs, x, mode="s2s")[1]
    expected = numeric_vjp(pairs, [x.astype(np.float64)], 0, g)
    np.testing.assert_allclose(pullback(g)[0], expected, rtol=rtol, atol=rtol)
    t = _rng.standard_normal(x.shape)
    tangent = sg.jvp(pairs, (x,), (t,), mode="s2s")[1]
    np.testing.assert_allclose(tangent, numeric_jvp(pairs, [x], 0, t), rtol=rtol, atol=rtol)
    sg.check_grads(lambda x: np.sum(pairs(x) ** 3), x.astype(np.float64), order=2, mode="tape")


def test_strided_convolution_to_second_order_in_every_mode():
    def conv(image, kernel):
        rows, cols = image.shape
        h, w = kernel.shape
        s0, s1 = image.strides
        shape = (rows - h + 1, cols - w + 1, h, w)
        windows = np.lib.stride_tricks.as_strided(image, shape=shape, strides=(s0, s1, s0, s1))
        return np.sum(np.tensordot(windows, kernel, axes=([2, 3], [0, 1])) ** 2)

    image, kernel = r(5, 6), r(2, 3)
    for mode in ("s2s", "auto", "tape"):
        sg.check_grads(conv, image, kernel, order=2, mode=mode)


@pytest.mark.parametrize(
    "shape, strides, refusal",
    [((4, 2), (8, 8), "reads memory outside"), ((2,), (-8,), "non-negative multiples")],
)
def test_as_strided_outside_the_array_is_refused(shape, strides, refusal):
    def reads(x):
        return np.sum(np.lib.stride_tricks.as_strided(x[1:], shape, strides) ** 2)

    for mode in ("s2s", "tape"):
        with pytest.raises(UnsupportedError, match=refusal):
            sg.grad(reads, mode=mode)(r(4))


def test_ravel_positions():
    np.testing.assert_array_equal(ravel_positions(np.zeros((2, 2)), "F"), [0, 2, 1, 3])
    np.testing.assert_array_equal(ravel_positions(np.zeros((2, 2)).T, "K"), [0, 2, 1, 3])


def test_gradient_with_coordinates_differentiates_them():
    x = np.cumsum(np.abs(r(5))) + 0.1
    f, g = r(5), r(5)
    to_f, to_x = get_rule(np.gradient).vjp(g, np.gradient(f, x), f, x)
    assert_close(to_f, numeric_vjp(np.gradient, [f, x], 0, g))
    assert_close(to_x, numeric_vjp(np.gradient, [f, x], 1, g))


@pytest.mark.parametrize(("mode", "options"), [("empty", {}), ("reflect", {"reflect_type": "odd"})])
def test_pad_modes_without_a_rule_raise(mode, options):
    with pytest.raises(UnsupportedError, match=mode):
        get_rule(np.pad).vjp(np.ones(5), None, np.ones(3), 1, mode, **options)


NONDIFFERENTIABLE = [
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
    np.ndarray.shape,
    np.ndarray.ndim,
    np.ndarray.size,
    np.ndarray.dtype,
    np.ndarray.nonzero,
    np.result_type,
    np.issubdtype,
    ravel_positions,
]


@pytest.mark.parametrize("primitive", NONDIFFERENTIABLE, ids=primitive_name)
def test_declared_nondifferentiable(primitive):
    rule = get_rule(primitive)
    assert rule is not None and not rule.differentiable and rule.vjp is None


def test_in_place_sort_method_has_no_rule():
    assert get_rule(np.ndarray.sort) is None


def test_cotangents_of_containers_add_entry_by_entry():
    """``+`` on the cotangents of a tuple or dict read twice adds, it does not concatenate."""
    pair = (r(2), r(3))
    first, second = index_cotangent(r(2), pair, 0), index_cotangent(r(3), pair, 1)
    total = first + second
    assert len(total) == 2
    np.testing.assert_array_equal(total[0], first[0])
    np.testing.assert_array_equal(total[1], second[1])
    params = {"w": r(2), "b": r(3)}
    total = index_cotangent(r(2), params, "w") + index_cotangent(r(3), params, "b")
    assert set(total) == {"w", "b"}
    total["w"] += r(2)  # an in-place update of an entry
    missing = index_cotangent(r(2), params, "w")
    missing["b"] += np.ones(3)  # an entry nothing flowed into is zero
    np.testing.assert_array_equal(missing["b"], np.ones(3))


def test_dict_entry_rules():
    rng = np.random.default_rng(5)
    g = {"a": rng.standard_normal(3), "b": rng.standard_normal(2)}
    value = np.zeros(3)
    np.testing.assert_array_equal(dict_entry(g, "a", value), g["a"])
    np.testing.assert_array_equal(dict_entry({"b": g["b"]}, "a", value), np.zeros(3))
    rule = get_rule(dict_entry)
    h = rng.standard_normal(3)
    cotangent = rule.vjp(h, g["a"], g, "a", value)[0]  # linear: <h, entry(g)> = <vjp(h), g>
    assert np.sum(h * dict_entry(g, "a", value)) == pytest.approx(
        sum(np.sum(cotangent.get(k, 0.0) * g[k]) for k in g)
    )
    t = {"a": rng.standard_normal(3)}
    np.testing.assert_array_equal(rule.jvp(t, g["a"], g, "a", value)[0], t["a"])


def _rng_pairs(rng, count):
    return [(rng.standard_normal(3), rng.standard_normal(2)) for _ in range(count)]


def test_concatenation_rules_are_adjoint():
    """concatenated(a, b) joins; its VJP splits g at len(a), its JVP joins tangents."""
    rng = np.random.default_rng(6)
    a, b = tuple(_rng_pairs(rng, 2)), tuple(_rng_pairs(rng, 1))
    assert concatenated(a, b) == a + b
    rule = get_rule(concatenated)
    h = CotangentList(_rng_pairs(rng, 3))
    da, db = rule.vjp(h, a + b, a, b)
    ta, tb = CotangentList(_rng_pairs(rng, 2)), CotangentList(_rng_pairs(rng, 1))
    # <h, d(a + b)> = <da, ta> + <db, tb>, and the JVP entries add up to the joined tangent
    assert inner(h, concatenated(ta, tb)) == pytest.approx(inner(da, ta) + inner(db, tb))
    entry_a, entry_b = rule.jvp(ta, a + b, a, b)[0], rule.jvp(tb, a + b, a, b)[1]
    joined = entry_a + entry_b  # CotangentLists: added entry by entry
    assert inner(h, joined) == pytest.approx(inner(h, concatenated(ta, tb)))


def test_sequence_part_rules_are_adjoint():
    rng = np.random.default_rng(7)
    g = CotangentList(_rng_pairs(rng, 4))
    part = sequence_part(g, 1, 3)
    assert isinstance(part, CotangentList) and len(part) == 2
    rule = get_rule(sequence_part)
    h = CotangentList(_rng_pairs(rng, 2))
    (adjoint, _, _) = rule.vjp(h, part, g, 1, 3)
    assert inner(h, sequence_part(g, 1, 3)) == pytest.approx(inner(adjoint, g))
    t = CotangentList(_rng_pairs(rng, 4))
    assert inner(h, rule.jvp(t, part, g, 1, 3)[0]) == pytest.approx(inner(h, t[1:3]))


def test_repetition_rules_are_adjoint():
    """repeated(a, n) repeats; its VJP sums the copies (repeated_sum), its JVP repeats the
    tangent; repeated_sum's rules are repeated's, so second order works."""
    rng = np.random.default_rng(9)
    a = tuple(_rng_pairs(rng, 2))
    assert repeated(a, 3) == a * 3 and repeated(list(a), 0) == []
    rule = get_rule(repeated)
    h = CotangentList(_rng_pairs(rng, 6))
    (da, _) = rule.vjp(h, a * 3, a, 3)
    t = CotangentList(_rng_pairs(rng, 2))
    # <h, d(a * 3)> = <da, ta>
    assert inner(h, rule.jvp(t, a * 3, a, 3)[0]) == pytest.approx(inner(da, t))
    summed = get_rule(repeated_sum)
    k = CotangentList(_rng_pairs(rng, 2))
    (dh, _, _) = summed.vjp(k, da, h, a, 3)
    assert inner(k, repeated_sum(h, a, 3)) == pytest.approx(inner(dh, h))
    assert inner(k, summed.jvp(h, da, h, a, 3)[0]) == pytest.approx(inner(k, da))
    with pytest.raises(sg.UnsupportedError, match="repetition of a list"):
        repeated(np.ones(2), 2)


def test_loop_item_rules():
    """for_items passes sequences and arrays through; a dict's keys carry no derivative."""
    rng = np.random.default_rng(8)
    x, g = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    d = {"w": rng.standard_normal(2), "b": 1.0}
    assert for_items(x) is x and for_items(d) == ["w", "b"]
    for helper in (for_items, items_cotangent):
        rule = get_rule(helper)
        extra = () if helper is for_items else (x,)
        np.testing.assert_array_equal(per_argument(rule.vjp(g, x, x, *extra), 1)[0], g)
        np.testing.assert_array_equal(per_argument(rule.jvp(g, x, x, *extra), 1)[0], g)
    zero = items_cotangent(CotangentList([0.0, 0.0]), d)
    assert inner(zero, d) == 0.0 and set(zero) == set(d)
    assert get_rule(dict_keys).differentiable is False  # keys are labels, not values


def test_every_rule_is_tested():
    tested = [p.values[0] for p in CASES + HELPER_CASES + STRUCTURED_CASES]
    tested.append(dict_entry)  # test_dict_entry_rules: its argument is a dict
    tested += [concatenated, sequence_part]  # test_concatenation_rules_are_adjoint, …
    tested += [repeated, repeated_sum]  # test_repetition_rules_are_adjoint
    tested += [for_items, items_cotangent]  # test_loop_item_rules
    tested.append(np.lib.stride_tricks.as_strided)  # test_as_strided_rules: strides in bytes
    tested += [np.float32, np.float16]  # test_float_type_casts.py: too coarse for differences
    if hasattr(np, "row_stack"):  # vstack's rules (rules/array_api.py), in test_coverage.py
        tested.append(np.row_stack)
    assert_every_rule_is_tested(RULE_MODULES, tested)


def padded_with(c, x):
    return np.sum(np.pad(x, ((1, 0), (2, 1)), constant_values=c) ** 2 * np.arange(1.0, 7.0))


def test_pad_differentiates_its_constant_values():
    """The border of a constant pad is the constant: its derivative is the border's sum."""
    x = np.random.default_rng(11).normal(size=(2, 3))
    for mode in ("s2s", "auto"):
        gradient = sg.grad(padded_with, mode=mode)
        for c in (0.7, -1.3):  # the first call, then the specialised code
            expected = numeric_grad(padded_with, (c, x), 0)
            assert gradient(c, x) == pytest.approx(expected, rel=1e-6)
            _, tangent = sg.jvp(padded_with, (c, x), (1.0, np.zeros_like(x)), mode=mode)
            assert tangent == pytest.approx(expected, rel=1e-6)


def padded_per_side(c, x):
    return np.sum(np.pad(x, 1, constant_values=((c, 0.0), (0.0, c))))


def test_pad_refuses_several_differentiated_constant_values():
    with pytest.raises(sg.NonDifferentiableError, match="constant_values only when it is one"):
        sg.grad(padded_per_side, mode="s2s")(0.5, np.ones((2, 2)))
