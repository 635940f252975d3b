"""Batching rules: each NumPy operation applied to a whole batch, as it applies to one example.

A rule receives the NumPy function and its arguments bound to the function's own
parameters (:class:`Bound`, with defaults filled in), rewrites what refers to an
example's axes (``axis``, shapes, subscripts) into the batch array's, and calls the
function once. Rules raise :class:`NotBatchable` for the cases they cannot map exactly.

Example::

    b = BatchedValue(np.ones((4, 2, 3)))  # four examples of shape (2, 3)
    np.sum(b, axis=0).shape               # (3,): axis 0 of each example
"""

from __future__ import annotations

import functools
import inspect
import string
from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad import numpy_signatures
from s2sgrad.batching.values import (
    BatchedValue,
    NotBatchable,
    batch_size,
    check_plain,
    example_axes,
    example_axis,
    is_batched,
    lift,
    materialize,
    rank,
    use_batching_rules,
    wrap,
)

__all__ = ["apply_ufunc", "apply_function", "FUNCTION_RULES", "batching_rule"]

FUNCTION_RULES: dict[Any, Callable] = {}


def batching_rule(*functions: Any) -> Callable[[Callable], Callable]:
    """Register ``rule(function, bound)`` as the batching rule of each of ``functions``.

    Example::

        @batching_rule(np.fliplr)
        def _fliplr(function, bound): ...
    """

    def register(rule: Callable) -> Callable:
        for function in functions:
            if function is not None:  # a NumPy function this NumPy version lacks
                FUNCTION_RULES[function] = rule
        return rule

    return register


def apply_function(function: Any, args: tuple, kwargs: dict) -> Any:
    """Apply a NumPy function to arguments some of which are batched (``__array_function__``).

    Example::

        apply_function(np.sum, (BatchedValue(np.ones((4, 3))),), {})  # four sums
    """
    rule = FUNCTION_RULES.get(function)
    if rule is None:
        name = getattr(function, "__name__", repr(function))
        raise NotBatchable(f"np.{name} has no batching rule")
    return rule(function, Bound(function, args, kwargs))


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


# the parameters of NumPy's callables, read on every batched call
_parameters = functools.cache(numpy_signatures.parameters)


class Bound:
    """A call's arguments bound to the function's parameters, defaults filled in (like
    ``inspect.BoundArguments`` after ``apply_defaults``, several times quicker).

    Rules read and replace ``arguments``; ``args`` and ``kwargs`` call the function again.

    Example::

        Bound(np.sum, (a,), {"axis": 0}).arguments  # {'a': a, 'axis': 0, 'dtype': None, ...}
    """

    __slots__ = ("parameters", "arguments")

    def __init__(self, function: Any, args: tuple, kwargs: dict) -> None:
        self.parameters = _parameters(function)
        self.arguments: dict[str, Any] = {}
        given = len(args)
        used = 0
        for p in self.parameters:
            if p.kind in _POSITIONAL and used < given:
                self.arguments[p.name] = args[used]
                used += 1
            elif p.kind is p.VAR_POSITIONAL:
                self.arguments[p.name] = tuple(args[used:])
                used = given
            elif p.kind is p.VAR_KEYWORD:
                named = {q.name for q in self.parameters}
                self.arguments[p.name] = {k: v for k, v in kwargs.items() if k not in named}
            elif p.name in kwargs:
                self.arguments[p.name] = kwargs[p.name]
            elif p.default is not p.empty:
                self.arguments[p.name] = p.default
            else:
                raise TypeError(f"missing a required argument: {p.name!r}")
        if used < given:
            raise TypeError("too many positional arguments")

    @property
    def args(self) -> tuple:
        values: list = []
        for p in self.parameters:
            if p.kind in _POSITIONAL:
                values.append(self.arguments[p.name])
            elif p.kind is p.VAR_POSITIONAL:
                values.extend(self.arguments[p.name])
        return tuple(values)

    @property
    def kwargs(self) -> dict:
        values: dict = {}
        for p in self.parameters:
            if p.kind is p.KEYWORD_ONLY and self.arguments[p.name] is not p.default:
                values[p.name] = self.arguments[p.name]
            elif p.kind is p.VAR_KEYWORD:
                values.update(self.arguments[p.name])
        return values


def _call(function: Any, bound: Bound) -> Any:
    return function(*bound.args, **bound.kwargs)


def _no_out(arguments: dict) -> None:
    if arguments.get("out") is not None:
        raise NotBatchable("out= writes into a plain array")


# Ufuncs ----------------------------------------------------------------------------------


def apply_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """Apply a ufunc (or one of its methods) to inputs some of which are batched.

    Example::

        apply_ufunc(np.add, "__call__", (BatchedValue(np.ones((4, 3))), np.ones(3)), {})
    """
    for value in inputs:
        check_plain(value)
    if "out" in kwargs:
        raise NotBatchable("out= writes into a plain array")
    if method == "__call__":
        if ufunc is np.matmul:
            return _matmul(*inputs, **kwargs)
        if ufunc.signature is not None:
            raise NotBatchable(f"the generalized ufunc np.{ufunc.__name__}")
        return broadcasting(ufunc, inputs, kwargs)
    if method == "reduce":
        return _ufunc_reduce(ufunc, *inputs, **kwargs)
    if method == "accumulate":
        return _ufunc_accumulate(ufunc, *inputs, **kwargs)
    if method == "outer":
        return _ufunc_outer(ufunc, *inputs, **kwargs)
    raise NotBatchable(f"np.{ufunc.__name__}.{method}")


def _is_numeric(value: Any) -> bool:
    return is_batched(value) or isinstance(value, (np.ndarray, np.generic, int, float, complex))


def broadcasting(function: Any, args: Any, kwargs: dict) -> Any:
    """Call an element-wise ``function`` with every batched argument lifted to the largest
    example rank among the arguments, so examples broadcast as one example would.

    Example::

        broadcasting(np.add, (BatchedValue(np.ones(4)), np.ones(3)), {})  # 4 examples of (3,)
    """
    target = 0
    for value in (*args, *kwargs.values()) if kwargs else args:
        if _is_numeric(value):
            target = max(target, rank(value))
    lifted = [lift(a, target) for a in args]
    if kwargs:
        kwargs = {k: lift(v, target) for k, v in kwargs.items()}
    return wrap(function(*lifted, **kwargs))


def _ufunc_reduce(ufunc, a, axis=0, dtype=None, out=None, keepdims=False, **kwargs):
    size = batch_size([a, *kwargs.values()])
    example_rank = rank(a)
    where = kwargs.get("where")
    if is_batched(where):
        kwargs["where"] = lift(where, example_rank)
    axes = example_axes(axis, example_rank)
    array = materialize(a, size)
    return wrap(ufunc.reduce(array, axis=axes, dtype=dtype, keepdims=keepdims, **kwargs))


def _ufunc_accumulate(ufunc, a, axis=0, dtype=None, out=None):
    if not is_batched(a):
        raise NotBatchable("accumulate over a plain array")
    return wrap(ufunc.accumulate(a.array, axis=example_axis(axis, rank(a)), dtype=dtype))


def _ufunc_outer(ufunc, a, b, **kwargs):
    rank_a, rank_b = rank(a), rank(b)
    if is_batched(a):
        a = a.array.reshape(a.array.shape + (1,) * rank_b)
    else:
        a = np.reshape(a, np.shape(a) + (1,) * rank_b)
    if is_batched(b):
        b = b.array.reshape(b.array.shape[:1] + (1,) * rank_a + b.array.shape[1:])
    return wrap(ufunc(a, b, **kwargs))


def _matmul(a, b, **kwargs):
    """``a @ b`` per example: 1-D operands become matrices (and lose that axis again), and
    a batched operand gets length-1 axes so that its batch axis is never a stack axis of
    the other operand."""
    if "axes" in kwargs or "axis" in kwargs:
        raise NotBatchable("np.matmul with axes=")
    rank_a, rank_b = rank(a), rank(b)
    if rank_a == 0 or rank_b == 0:
        raise NotBatchable("np.matmul of a scalar")
    a = _as_matrix(a, row=True) if rank_a == 1 else a
    b = _as_matrix(b, row=False) if rank_b == 1 else b
    target = max(rank(a), rank(b))
    product = _stacked_matmul(lift(a, target), lift(b, target), **kwargs)
    if rank_a == 1 and rank_b == 1:
        return BatchedValue(product[..., 0, 0])
    if rank_a == 1:
        return BatchedValue(product[..., 0, :])
    if rank_b == 1:
        return BatchedValue(product[..., 0])
    return BatchedValue(product)


def _stacked_matmul(a: Any, b: Any, **kwargs: Any) -> np.ndarray:
    """``np.matmul(a, b)`` where one operand is a stack of matrices (the batch): a plain
    matrix on the other side makes it one large product instead of one per matrix."""
    a_stacked, b_stacked = np.ndim(a) > 2, np.ndim(b) > 2
    if kwargs or a_stacked == b_stacked:
        return np.matmul(a, b, **kwargs)
    if a_stacked and np.ndim(b) == 2:  # rows of every matrix of a, times b
        rows = a.reshape(-1, a.shape[-1])
        return np.matmul(rows, b).reshape(a.shape[:-1] + b.shape[-1:])
    if b_stacked and np.ndim(a) == 2:  # a @ m == (m.T @ a.T).T for every matrix m of b
        columns = np.swapaxes(b, -1, -2)
        product = np.matmul(columns.reshape(-1, columns.shape[-1]), np.transpose(a))
        return np.swapaxes(product.reshape(columns.shape[:-1] + a.shape[:1]), -1, -2)
    return np.matmul(a, b)


def _as_matrix(vector: Any, row: bool) -> Any:
    """A 1-D example as NumPy's matmul promotes it: a row (1, n) on the left, a column (n, 1)
    on the right."""
    if is_batched(vector):
        array = vector.array
        return BatchedValue(array[:, None, :] if row else array[:, :, None])
    vector = np.asarray(vector)
    return vector[None, :] if row else vector[:, None]


# What an example looks like ---------------------------------------------------------------


@batching_rule(np.shape)
def _shape(function, bound):
    return bound.arguments["a"].shape


@batching_rule(np.ndim)
def _ndim(function, bound):
    return rank(bound.arguments["a"])


@batching_rule(np.size)
def _size(function, bound):
    a, axis = bound.arguments["a"], bound.arguments["axis"]
    return a.size if axis is None else a.shape[axis]


@batching_rule(np.result_type, np.iscomplexobj, np.isrealobj)
def _by_dtype(function, bound):
    # The batch arrays have the examples' dtypes; NEP 50 promotion ignores their values.
    args = [v.array if is_batched(v) else v for v in bound.args]
    return function(*args)


# Element-wise functions ------------------------------------------------------------------


@batching_rule(np.clip, np.round, np.around, np.real, np.imag, np.nan_to_num, np.isclose)
@batching_rule(np.sinc, np.fix, np.angle, np.real_if_close)
def _elementwise(function, bound):
    arguments = bound.arguments
    _no_out(arguments)
    if function is np.real_if_close:
        raise NotBatchable("np.real_if_close decides its dtype from the values")
    target = max(rank(v) for v in arguments.values() if _is_numeric(v))
    for name, value in arguments.items():
        if is_batched(value):
            arguments[name] = lift(value, target)
    return wrap(_call(function, bound))


@batching_rule(np.where)
def _where(function, bound):
    condition, x, y = bound.args
    if x is None and y is None:
        raise NotBatchable("np.where(condition) lists positions, which differ between examples")
    return broadcasting(np.where, (condition, x, y), {})


# Reductions ------------------------------------------------------------------------------

_REDUCTIONS = (
    np.sum,
    np.prod,
    np.mean,
    np.std,
    np.var,
    np.max,
    np.min,
    np.amax,
    np.amin,
    np.nansum,
    np.nanprod,
    np.nanmean,
    np.nanstd,
    np.nanvar,
    np.nanmax,
    np.nanmin,
    np.all,
    np.any,
    np.ptp,
    np.median,
    np.count_nonzero,
)


@batching_rule(*_REDUCTIONS)
def _reduction(function, bound):
    arguments = bound.arguments
    _no_out(arguments)
    a = arguments["a"]
    example_rank = rank(a)
    size = batch_size(arguments.values())
    for name, value in arguments.items():
        if name != "a" and is_batched(value):  # where=, mean=: broadcast against the example
            arguments[name] = lift(value, example_rank)
    arguments["a"] = materialize(a, size)
    arguments["axis"] = example_axes(arguments["axis"], example_rank)
    return wrap(_call(function, bound))


@batching_rule(np.average)
def _average(function, bound):
    arguments = bound.arguments
    weights, a = arguments["weights"], arguments["a"]
    if weights is None:
        return _reduction(function, bound)
    if is_batched(weights) or not is_batched(a):
        raise NotBatchable("np.average with batched weights")
    weights = np.asarray(weights)
    if weights.shape != a.shape:  # 1-D weights along the one axis of the average
        if not isinstance(arguments["axis"], (int, np.integer)) or weights.ndim != 1:
            raise NotBatchable("np.average with weights of another shape and no single axis")
        shape = [1] * a.ndim
        shape[arguments["axis"]] = weights.size
        weights = weights.reshape(shape)
    arguments["weights"] = np.broadcast_to(weights, a.array.shape)
    arguments["a"] = a.array
    arguments["axis"] = example_axes(arguments["axis"], a.ndim)
    return wrap(_call(function, bound))


_FLAT_WHEN_NO_AXIS = (
    np.cumsum,
    np.cumprod,
    np.nancumsum,
    np.nancumprod,
    np.argmax,
    np.argmin,
    np.nanargmax,
    np.nanargmin,
    np.sort,
    np.argsort,
    np.take,
    np.repeat,
)


@batching_rule(*_FLAT_WHEN_NO_AXIS)
def _along_one_axis(function, bound):
    """Functions of one axis, which flatten the example when ``axis`` is None."""
    arguments = bound.arguments
    _no_out(arguments)
    name = next(iter(arguments))  # the array parameter: a, or arr
    a = arguments[name]
    for other, value in arguments.items():
        if other != name and is_batched(value):
            raise NotBatchable(f"a batched {other}= of np.{function.__name__}")
    array = a.array
    example_rank = rank(a)
    if arguments["axis"] is not None:
        arguments[name] = array
        arguments["axis"] = example_axis(arguments["axis"], example_rank)
        return wrap(_call(function, bound))
    arguments[name] = array.reshape(array.shape[0], -1)
    arguments["axis"] = 1
    result = _call(function, bound)
    if arguments.get("keepdims") is True:
        result = result.reshape(result.shape[:1] + (1,) * example_rank)
    return wrap(result)


# Shapes ----------------------------------------------------------------------------------


def _only_batched(bound, name: str) -> BatchedValue:
    value = bound.arguments[name]
    for other, v in bound.arguments.items():
        if other != name and is_batched(v):
            raise NotBatchable(f"a batched {other}=")
    return value


@batching_rule(np.reshape)
def _reshape(function, bound):
    a = _only_batched(bound, "a")
    arguments = bound.arguments
    shape = arguments["shape"] if "shape" in arguments else arguments["newshape"]
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    array = _reshaped(a, shape, arguments["order"])
    if arguments.get("copy") and np.shares_memory(array, a.array):
        array = array.copy()
    return BatchedValue(array)


@batching_rule(np.ravel)
def _ravel(function, bound):
    a = _only_batched(bound, "a")
    return BatchedValue(_reshaped(a, (-1,), bound.arguments["order"]))


def _reshaped(a: BatchedValue, shape: tuple, order: str) -> np.ndarray:
    """Every example reshaped; in Fortran order, that is the C-order reshape of the examples
    with their axes reversed, reversed back."""
    if order == "C":
        return np.reshape(a.array, (a.batch_size, *shape))
    if order != "F":
        raise NotBatchable(f"reshape with order={order!r}, which depends on the memory layout")
    reversed_axes = (0, *range(a.ndim, 0, -1))
    flipped = np.reshape(np.transpose(a.array, reversed_axes), (a.batch_size, *shape[::-1]))
    return np.transpose(flipped, (0, *range(len(shape), 0, -1)))


@batching_rule(np.transpose)
def _transpose(function, bound):
    a = _only_batched(bound, "a")
    axes = bound.arguments["axes"]
    if axes is None:
        order = tuple(range(a.ndim, 0, -1))
    else:
        order = tuple(example_axis(axis, a.ndim) for axis in axes)
    return BatchedValue(np.transpose(a.array, (0, *order)))


@batching_rule(getattr(np, "matrix_transpose", None))
def _matrix_transpose(function, bound):
    x = _only_batched(bound, "x")
    if x.ndim < 2:
        raise NotBatchable("np.matrix_transpose of fewer than two axes")
    return BatchedValue(np.swapaxes(x.array, -1, -2))


@batching_rule(np.swapaxes)
def _swapaxes(function, bound):
    a = _only_batched(bound, "a")
    first = example_axis(bound.arguments["axis1"], a.ndim)
    second = example_axis(bound.arguments["axis2"], a.ndim)
    return BatchedValue(np.swapaxes(a.array, first, second))


@batching_rule(np.moveaxis)
def _moveaxis(function, bound):
    a = _only_batched(bound, "a")
    source = example_axes(bound.arguments["source"], a.ndim)
    destination = example_axes(bound.arguments["destination"], a.ndim)
    return BatchedValue(np.moveaxis(a.array, source, destination))


@batching_rule(np.expand_dims)
def _expand_dims(function, bound):
    a = _only_batched(bound, "a")
    axis = bound.arguments["axis"]
    count = len(axis) if isinstance(axis, (tuple, list)) else 1
    return BatchedValue(np.expand_dims(a.array, example_axes(axis, a.ndim + count)))


@batching_rule(np.squeeze)
def _squeeze(function, bound):
    a = _only_batched(bound, "a")
    axis = bound.arguments["axis"]
    if axis is None:
        axes = tuple(i + 1 for i, n in enumerate(a.shape) if n == 1)
    else:
        axes = example_axes(axis, a.ndim)
    return BatchedValue(np.squeeze(a.array, axis=axes))


@batching_rule(np.broadcast_to)
def _broadcast_to(function, bound):
    array = _only_batched(bound, "array")
    shape = bound.arguments["shape"]
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    lifted = lift(array, len(shape))
    return BatchedValue(np.broadcast_to(lifted, (array.batch_size, *shape)))


_AT_LEAST = {np.atleast_1d: 1, np.atleast_2d: 2, np.atleast_3d: 3}


@batching_rule(*_AT_LEAST)
def _atleast(function, bound):
    (arrays,) = bound.arguments.values()
    if len(arrays) != 1:
        raise NotBatchable(f"np.{function.__name__} of several arrays")
    return _at_least(arrays[0], _AT_LEAST[function])


def _at_least(value: Any, ndim: int) -> Any:
    """``np.atleast_1d``, ``np.atleast_2d`` or ``np.atleast_3d`` (``ndim``) of one example."""
    if not is_batched(value):
        return {1: np.atleast_1d, 2: np.atleast_2d, 3: np.atleast_3d}[ndim](value)
    array = value.array
    if value.ndim >= ndim:
        return value
    if value.ndim == 0:
        return BatchedValue(array.reshape(array.shape[:1] + (1,) * ndim))
    if value.ndim == 1:  # a row (1, n), or (1, n, 1) in 3-D
        row = array[:, None, :]
        return BatchedValue(row if ndim == 2 else row[..., None])
    return BatchedValue(array[..., None])  # (m, n) becomes (m, n, 1)


def _join(function: Any, arrays: Any, axis: Any, keywords: dict, new_axis: bool) -> Any:
    """``np.concatenate`` (or ``np.stack`` with ``new_axis``) of examples and plain arrays."""
    if not isinstance(arrays, (list, tuple)):
        raise NotBatchable(f"np.{function.__name__} of the rows of one array")
    size = batch_size(arrays)
    example_rank = max(rank(a) for a in arrays)
    if axis is None:
        flat = [materialize(a, size).reshape(size, -1) for a in arrays]
        return BatchedValue(function(flat, axis=1, **keywords))
    joined_rank = example_rank + 1 if new_axis else example_rank
    pieces = [materialize(a, size) for a in arrays]
    return BatchedValue(function(pieces, axis=example_axis(axis, joined_rank), **keywords))


@batching_rule(np.concatenate, np.stack)
def _concatenate(function, bound):
    arguments = dict(bound.arguments)
    _no_out(arguments)
    arrays, axis = arguments.pop("arrays"), arguments.pop("axis")
    arguments.pop("out")
    return _join(function, arrays, axis, arguments, new_axis=function is np.stack)


@batching_rule(np.hstack, np.vstack, np.dstack)
def _hstack(function, bound):
    arguments = dict(bound.arguments)
    arrays = arguments.pop("tup")
    if not isinstance(arrays, (list, tuple)):
        raise NotBatchable(f"np.{function.__name__} of the rows of one array")
    if function is np.vstack:
        pieces = [_at_least(a, 2) for a in arrays]
        return _join(np.concatenate, pieces, 0, arguments, new_axis=False)
    if function is np.dstack:
        pieces = [_at_least(a, 3) for a in arrays]
        return _join(np.concatenate, pieces, 2, arguments, new_axis=False)
    pieces = [_at_least(a, 1) for a in arrays]
    axis = 0 if rank(pieces[0]) == 1 else 1
    return _join(np.concatenate, pieces, axis, arguments, new_axis=False)


@batching_rule(np.split, np.array_split)
def _split(function, bound):
    ary = _only_batched(bound, "ary")
    axis = example_axis(bound.arguments["axis"], ary.ndim)
    return wrap(function(ary.array, bound.arguments["indices_or_sections"], axis=axis))


@batching_rule(np.flip)
def _flip(function, bound):
    m = _only_batched(bound, "m")
    return BatchedValue(np.flip(m.array, example_axes(bound.arguments["axis"], m.ndim)))


@batching_rule(np.fliplr, np.flipud)
def _flip_lr_ud(function, bound):
    m = _only_batched(bound, "m")
    axis = 1 if function is np.fliplr else 0
    if m.ndim <= axis:
        raise NotBatchable(f"np.{function.__name__} of an array with {m.ndim} axes")
    return BatchedValue(np.flip(m.array, axis + 1))


@batching_rule(np.rot90)
def _rot90(function, bound):
    m = _only_batched(bound, "m")
    axes = tuple(example_axis(axis, m.ndim) for axis in bound.arguments["axes"])
    return BatchedValue(np.rot90(m.array, bound.arguments["k"], axes=axes))


@batching_rule(np.roll)
def _roll(function, bound):
    a = _only_batched(bound, "a")
    shift, axis = bound.arguments["shift"], bound.arguments["axis"]
    if axis is None:
        flat = a.array.reshape(a.batch_size, -1)
        return BatchedValue(np.roll(flat, shift, axis=1).reshape(a.array.shape))
    axes = example_axes(axis, a.ndim)
    return BatchedValue(np.roll(a.array, shift, axis=axes if np.ndim(axis) else axes[0]))


@batching_rule(np.take_along_axis)
def _take_along_axis(function, bound):
    arr, indices, axis = bound.arguments["arr"], bound.arguments["indices"], bound.arguments["axis"]
    example_rank = rank(arr)
    if axis is None:
        if is_batched(indices):
            raise NotBatchable("np.take_along_axis with batched indices and axis=None")
        flat = arr.array.reshape(arr.batch_size, -1)
        return BatchedValue(np.take_along_axis(flat, np.asarray(indices)[None], axis=1))
    arr = arr.array if is_batched(arr) else np.asarray(arr)[None]
    indices = indices.array if is_batched(indices) else np.asarray(indices)[None]
    return BatchedValue(np.take_along_axis(arr, indices, axis=example_axis(axis, example_rank)))


@batching_rule(np.diagonal, np.trace)
def _diagonal(function, bound):
    arguments = bound.arguments
    _no_out(arguments)
    a = _only_batched(bound, "a")
    arguments["a"] = a.array
    arguments["axis1"] = example_axis(arguments["axis1"], a.ndim)
    arguments["axis2"] = example_axis(arguments["axis2"], a.ndim)
    return wrap(_call(function, bound))


@batching_rule(np.diag)
def _diag(function, bound):
    v, k = _only_batched(bound, "v"), bound.arguments["k"]
    if v.ndim == 2:
        return BatchedValue(np.diagonal(v.array, k, 1, 2))
    if v.ndim != 1:
        raise NotBatchable("np.diag of an array that is neither 1-D nor 2-D")
    n = v.shape[0]
    size = n + abs(k)
    matrix = np.zeros((v.batch_size, size, size), dtype=v.dtype)
    rows, columns = np.arange(n) + max(-k, 0), np.arange(n) + max(k, 0)
    matrix[:, rows, columns] = v.array
    return BatchedValue(matrix)


@batching_rule(np.tril, np.triu)
def _triangle(function, bound):
    m = _only_batched(bound, "m")
    if m.ndim < 2:
        raise NotBatchable(f"np.{function.__name__} of a 1-D array")
    return BatchedValue(function(m.array, bound.arguments["k"]))


@batching_rule(np.tile)
def _tile(function, bound):
    a = _only_batched(bound, "A")
    reps = tuple(int(r) for r in np.atleast_1d(bound.arguments["reps"]))
    ndim = max(len(reps), a.ndim)
    reps = (1,) * (ndim - len(reps) + 1) + reps
    return BatchedValue(np.tile(lift(a, ndim), reps))


@batching_rule(np.pad)
def _pad(function, bound):
    array = _only_batched(bound, "array")
    arguments = bound.arguments
    mode, options = arguments["mode"], arguments["kwargs"]
    if callable(mode) or isinstance(arguments["pad_width"], dict):
        raise NotBatchable("np.pad with a padding function or a dict of widths")
    if any(np.ndim(value) != 0 for value in options.values()):
        raise NotBatchable("np.pad with per-axis constant_values, end_values or stat_length")
    widths = np.broadcast_to(np.asarray(arguments["pad_width"]), (array.ndim, 2))
    pairs = [(0, 0)] + [(int(before), int(after)) for before, after in widths]
    return BatchedValue(np.pad(array.array, pairs, mode, **options))


# New arrays ---------------------------------------------------------------------------------


@batching_rule(np.copy)
def _copy(function, bound):
    return BatchedValue(_only_batched(bound, "a").array.copy())


@batching_rule(getattr(np, "astype", None))
def _astype(function, bound):
    x = _only_batched(bound, "x")
    return BatchedValue(x.array.astype(bound.arguments["dtype"], copy=bound.arguments["copy"]))


@batching_rule(np.zeros_like, np.ones_like, np.empty_like, np.full_like)
def _like(function, bound):
    arguments = bound.arguments
    prototype = arguments.get("a", arguments.get("prototype"))
    fill = arguments.get("fill_value", 1 if function is np.ones_like else 0)
    if is_batched(prototype):
        size, shape = prototype.batch_size, prototype.shape
    else:
        size, shape = batch_size([fill]), np.shape(prototype)
    if arguments["shape"] is not None:
        shape = arguments["shape"]
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    dtype = arguments["dtype"]
    if dtype is None:
        dtype = np.result_type(prototype.array if is_batched(prototype) else prototype)
    result = np.zeros((size, *shape), dtype=dtype)
    if function is not np.zeros_like and function is not np.empty_like:
        result[...] = lift(fill, len(shape))
    return BatchedValue(result)


# Products --------------------------------------------------------------------------------


def _only_one_batched(a: Any, b: Any, name: str) -> None:
    if is_batched(a) and is_batched(b):
        raise NotBatchable(f"np.{name} of two batched values")


@batching_rule(np.dot)
def _dot(function, bound):
    a, b = bound.arguments["a"], bound.arguments["b"]
    _no_out(bound.arguments)
    _only_one_batched(a, b, "dot")
    rank_a, rank_b = rank(a), rank(b)
    if rank_a == 0 or rank_b == 0:
        return broadcasting(np.multiply, (a, b), {})
    if is_batched(a):
        return BatchedValue(np.dot(a.array, b))
    # Contract a's last axis with b's (second-to-)last per example; the batch axis is kept.
    contracted = 1 if rank_b == 1 else rank_b - 1
    product = np.tensordot(a, b.array, axes=([rank_a - 1], [contracted]))
    return BatchedValue(np.moveaxis(product, rank_a - 1, 0))


@batching_rule(np.inner)
def _inner(function, bound):
    a, b = bound.args
    _only_one_batched(a, b, "inner")
    rank_a = rank(a)
    if rank_a == 0 or rank(b) == 0:
        return broadcasting(np.multiply, (a, b), {})
    if is_batched(a):
        return BatchedValue(np.inner(a.array, b))
    return BatchedValue(np.moveaxis(np.inner(a, b.array), rank_a - 1, 0))


@batching_rule(np.vdot)
def _vdot(function, bound):
    a, b = bound.args
    _only_one_batched(a, b, "vdot")
    if is_batched(a):
        return BatchedValue(np.conjugate(a.array.reshape(a.batch_size, -1)) @ np.ravel(b))
    return BatchedValue(b.array.reshape(b.batch_size, -1) @ np.conjugate(np.ravel(a)))


@batching_rule(np.outer)
def _outer(function, bound):
    a, b = bound.arguments["a"], bound.arguments["b"]
    _no_out(bound.arguments)
    size = batch_size([a, b])
    left = materialize(a, size).reshape(size, -1, 1)
    right = materialize(b, size).reshape(size, 1, -1)
    return BatchedValue(np.multiply(left, right))


@batching_rule(np.kron)
def _kron(function, bound):
    """``np.kron`` per example: the outer product with each pair of axes merged."""
    a, b = bound.arguments["a"], bound.arguments["b"]
    _only_one_batched(a, b, "kron")
    joint = max(rank(a), rank(b))
    size = batch_size([a, b])
    left = _kron_operand(a, joint, size, first=True)
    right = _kron_operand(b, joint, size, first=False)
    product = np.multiply(left, right)
    merged = [product.shape[1 + 2 * i] * product.shape[2 + 2 * i] for i in range(joint)]
    return BatchedValue(product.reshape(product.shape[0], *merged))


def _kron_operand(value: Any, joint: int, size: int, first: bool) -> np.ndarray:
    """``value``'s batch array (1 for a plain value), padded to ``joint`` axes, with a
    length-1 axis after (``first``) or before each of its axes."""
    array = value.array if is_batched(value) else np.asarray(value)[None]
    shape = (1,) * (joint - (array.ndim - 1)) + array.shape[1:]
    pairs = [(n, 1) if first else (1, n) for n in shape]
    return array.reshape(array.shape[0], *[n for pair in pairs for n in pair])


@batching_rule(np.tensordot)
def _tensordot(function, bound):
    a, b, axes = bound.arguments["a"], bound.arguments["b"], bound.arguments["axes"]
    _only_one_batched(a, b, "tensordot")
    rank_a = rank(a)
    if isinstance(axes, (int, np.integer)):
        axes_a, axes_b = list(range(rank_a - axes, rank_a)), list(range(axes))
    else:
        axes_a, axes_b = axes
        axes_a = list(axes_a) if isinstance(axes_a, (list, tuple)) else [axes_a]
        axes_b = list(axes_b) if isinstance(axes_b, (list, tuple)) else [axes_b]
    if is_batched(a):
        shifted = [example_axis(axis, rank_a) for axis in axes_a]
        return BatchedValue(np.tensordot(a.array, b, axes=(shifted, axes_b)))
    shifted = [example_axis(axis, rank(b)) for axis in axes_b]
    product = np.tensordot(a, b.array, axes=(axes_a, shifted))
    return BatchedValue(np.moveaxis(product, rank_a - len(axes_a), 0))


@batching_rule(np.einsum)
def _einsum(function, bound):
    arguments = bound.arguments
    _no_out(arguments)
    operands = arguments["operands"]
    if not operands or not isinstance(operands[0], str):
        raise NotBatchable("np.einsum without a subscripts string")
    subscripts = operands[0].replace(" ", "")
    if "..." in subscripts:
        raise NotBatchable("np.einsum with an ellipsis")
    inputs, _, output = subscripts.partition("->")
    terms = inputs.split(",")
    if "->" not in subscripts:  # implicit output: the letters used once, in order
        letters = "".join(terms)
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    batch = next(c for c in string.ascii_letters if c not in subscripts)
    values = operands[1:]
    terms = [batch + t if is_batched(v) else t for t, v in zip(terms, values)]
    arrays = [v.array if is_batched(v) else v for v in values]
    extra = {"optimize": arguments["optimize"], **arguments["kwargs"]}
    return BatchedValue(np.einsum(f"{','.join(terms)}->{batch}{output}", *arrays, **extra))


@batching_rule(np.linalg.solve)
def _solve(function, bound):
    a, b = bound.arguments["a"], bound.arguments["b"]
    if is_batched(a):
        raise NotBatchable("np.linalg.solve with a batched matrix")
    rank_a = np.ndim(a)
    if b.ndim == 1:  # a vector per example: solve for a column, then drop that axis
        column = b.array[:, :, None]
        column = column.reshape(column.shape[:1] + (1,) * (rank_a - 2) + column.shape[1:])
        return BatchedValue(np.linalg.solve(a, column)[..., 0])
    return BatchedValue(np.linalg.solve(a, lift(b, rank_a)))


use_batching_rules(apply_ufunc, apply_function)
