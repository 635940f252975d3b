"""Batched twins of generated functions, and batching rules for the runtime helpers they call.

Generated code calls NumPy, which dispatches batched values to their rules by itself, and
the helpers of :mod:`s2sgrad.runtime`, which are plain Python functions. A *batched twin*
of a generated function runs the same code object with its helpers replaced:

* helpers with a batching rule here (``as_gradient``, ``owned``, ``index_cotangent`` …)
  run the rule when an argument is batched (``@batching_rule`` records it on the helper's
  ``Rule``, where the twin reads it);
* helpers made only of NumPy calls with batching rules, which never look at the type of
  a batched argument, run unchanged (declared beside the helper: ``batches_as_is``);
* every other runtime helper raises :class:`NotBatchable` when it meets a batched value
  (custom derivatives, dynamic dispatch, the tape …);
* generated callees (``helper_vjp.backward``, ``helper_jvp``) get batched twins in turn.

Example::

    twin = batched_twin(layer_vjp.backward)
    twin(saved, BatchedValue(seeds))  # every cotangent in one backward pass
"""

from __future__ import annotations

import math
import types
import weakref
from typing import Any

import numpy as np

from s2sgrad import runtime
from s2sgrad.batching.values import (
    BatchedValue,
    NotBatchable,
    batch_size,
    batched_index,
    contains_batched,
    is_batched,
    lift,
    materialize,
)
from s2sgrad.rules.registry import AS_IS, declare_batching, get_rule
from s2sgrad.runtime import shapes as runtime_shapes
from s2sgrad.runtime.core import rebuild_sequence

__all__ = ["batched_twin", "batching_rule_of", "is_generated"]


def is_generated(function: Any) -> bool:
    """Whether ``function`` was compiled from generated derivative code.

    Example::

        is_generated(np.sin)  # False
    """
    globals_ = getattr(function, "__globals__", None)
    return isinstance(function, types.FunctionType) and (
        globals_ is not None and globals_.get("__name__") == "s2sgrad.generated"
    )


# Rules for helpers --------------------------------------------------------------------------


def _rule_for(*helpers: Any):
    """Declare the decorated function the batching rule of ``helpers`` (on their ``Rule``)."""

    def register(rule):
        for helper in helpers:
            declare_batching(helper, rule)
        return rule

    return register


def batching_rule_of(helper: Any) -> Any:
    """The batching rule declared for a runtime helper, or None.

    Example::

        batching_rule_of(runtime.as_gradient)(values, like)
    """
    facts = get_rule(helper)
    how = None if facts is None else facts.batching
    return how if callable(how) else _CALLING_RULES.get(helper)


@_rule_for(runtime.owned, runtime.owned_argument, runtime.snapshot)
def _private_copy(value: Any) -> Any:
    """``owned`` and ``snapshot``: a private copy of every example."""
    if isinstance(value, list):
        return list(value)
    if is_batched(value):
        return BatchedValue(value.array.copy())
    raise NotBatchable("a copy of a container holding batched values")


@_rule_for(runtime.shape_only)
def _shape_only(value: Any) -> Any:
    """``shape_only``: a batched value is kept whole (its stand-in would hide the batch)."""
    return value


@_rule_for(runtime.unbroadcast)
def _unbroadcast(g: Any, x: Any) -> Any:
    """``unbroadcast``: every example summed down to ``x``'s shape, in one ``np.sum``."""
    shape = np.shape(x)
    if not is_batched(g) or is_batched(x) or g.ndim < len(shape):
        return runtime.unbroadcast(g, x)  # made of NumPy calls with batching rules
    if g.shape == shape:
        return g
    extra = g.ndim - len(shape)
    stretched = [i for i, n in enumerate(shape, extra + 1) if n == 1 and g.array.shape[i] != 1]
    axes = (*range(1, extra + 1), *stretched)
    summed = np.sum(g.array, axis=axes) if axes else g.array
    return BatchedValue(summed.reshape((g.batch_size, *shape)))


@_rule_for(runtime.zero_if_integer)
def _zero_if_integer(g: Any, ans: Any) -> Any:
    """``zero_if_integer``: the answer's dtype is one for every example."""
    if contains_batched(ans):
        raise NotBatchable("zero_if_integer of a batched answer")
    return g if np.issubdtype(np.result_type(ans), np.inexact) else np.zeros_like(g)


@_rule_for(runtime.seed_cotangent)
def _seed_cotangent(out: Any) -> Any:
    """``seed_cotangent``: the cotangent 1 of each example's single-element output."""
    if not is_batched(out):
        return runtime.seed_cotangent(out)
    if math.prod(out.shape) != 1:
        raise NotBatchable("grad of an output with more than one element per example")
    dtype = np.promote_types(out.array.dtype, np.float32)
    return BatchedValue(np.ones_like(out.array, dtype=dtype))


@_rule_for(runtime.as_gradient)
def _as_gradient(g: Any, x: Any) -> Any:
    """``as_gradient``: each example shaped and typed like ``x`` (not copied: the batched
    value is taken apart by its caller)."""
    if is_batched(x):  # a mapped argument (vmap of grad): the gradient of each example
        return _as_batched_gradient(g, x)
    if contains_batched(x):
        raise NotBatchable("as_gradient of a container holding batched primals")
    if isinstance(x, dict):
        return {k: _as_gradient(g.get(k) if isinstance(g, dict) else None, v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        parts = g if isinstance(g, (list, tuple)) else [None] * len(x)
        return rebuild_sequence(x, [_as_gradient(u, v) for u, v in zip(parts, x)])
    if not is_batched(g):  # the same for every example
        return runtime.as_gradient(g, x)
    dtype = _float(np.result_type(x))
    shape = np.shape(x)
    if g.shape != shape:
        g = _unbroadcast(g, x) if g.ndim >= len(shape) else np.broadcast_to(g, shape)
    array = g.array
    if array.dtype.kind == "c" and dtype.kind != "c":
        array = np.real(array)  # the gradient wrt a real value is real (docs/complex.md)
    # No copy: the Jacobian is assembled from these arrays by copying them once.
    return BatchedValue(np.asarray(array, dtype=dtype))


def _as_batched_gradient(g: Any, x: BatchedValue) -> BatchedValue:
    """Each example's gradient shaped and typed like that example of ``x``."""
    dtype = _float(x.array.dtype)
    if g is None:
        return BatchedValue(np.zeros(x.array.shape, dtype=dtype))
    if not is_batched(g):  # the same for every example
        g = BatchedValue(np.broadcast_to(g, (x.array.shape[0], *np.shape(g))))
    if g.shape != x.shape:
        g = (
            _unbroadcast(g, x)
            if g.ndim >= x.ndim
            else BatchedValue(
                np.broadcast_to(
                    g.array.reshape(g.array.shape[:1] + (1,) * (x.ndim - g.ndim) + g.shape),
                    x.array.shape,
                )
            )
        )
    array = g.array
    if array.dtype.kind == "c" and dtype.kind != "c":
        array = np.real(array)
    return BatchedValue(np.array(array, dtype=dtype))


@_rule_for(runtime.index_cotangent)
def _index_cotangent(g: Any, x: Any, index: Any) -> Any:
    """``index_cotangent``: scatter every example's cotangent into zeros shaped like ``x``."""
    if contains_batched(x) or contains_batched(index):
        raise NotBatchable("index_cotangent of a batched primal or index")
    if isinstance(x, (dict, list, tuple)) or not is_batched(g):
        return runtime.index_cotangent(g, x, index)  # containers only move g around
    where = batched_index(index, np.ndim(x))
    cotangent = np.zeros((g.batch_size, *np.shape(x)), dtype=_float(g.dtype))
    values = lift(g, cotangent[where].ndim - 1)
    if any(isinstance(p, np.ndarray) and p.dtype.kind in "iu" for p in where):
        np.add.at(cotangent, where, values)  # an element picked twice gets both
    else:
        cotangent[where] = values
    return BatchedValue(cotangent)


@_rule_for(runtime.assigned_cotangent)
def _assigned_cotangent(g: Any, index: Any) -> Any:
    """``assigned_cotangent``: every example's ``g[index]``, copied, kept at the last writes."""
    if contains_batched(index):
        raise NotBatchable("assigned_cotangent of a batched index")
    if not is_batched(g):
        return runtime.assigned_cotangent(g, index)
    part = g.array[batched_index(index, g.ndim)].copy()
    return BatchedValue(runtime.only_last_writes(part, g.shape, index))


@_rule_for(runtime.only_last_writes)
def _only_last_writes(part: Any, shape: Any, index: Any) -> Any:
    """``only_last_writes``: one mask, the same for every example (the trailing axes)."""
    if contains_batched(shape) or contains_batched(index):
        raise NotBatchable("only_last_writes of a batched index")
    if not is_batched(part):
        return runtime.only_last_writes(part, shape, index)
    return BatchedValue(runtime.only_last_writes(part.array, shape, index))


@_rule_for(runtime.split_like)
def _split_like(g: Any, parts: Any, axis: Any = 0) -> Any:
    """``split_like``: cut every example into the pieces of ``parts``."""
    if not is_batched(g) or contains_batched(parts):
        raise NotBatchable("split_like of batched parts")
    if axis is None:
        g, axis = np.ravel(g), 0
    extents = runtime_shapes._extents(g.shape, parts, axis)
    pieces = np.split(g, np.cumsum(extents)[:-1], axis=axis)
    pieces = [np.reshape(piece, np.shape(part)) for piece, part in zip(pieces, parts)]
    if isinstance(parts, np.ndarray):
        return np.stack(pieces)
    return pieces


@_rule_for(runtime.unpack_like)
def _unpack_like(g: Any, obj: Any) -> Any:
    """``unpack_like``: every example split back into the nested lists ``np.array`` read."""
    if contains_batched(obj):
        raise NotBatchable("unpack_like of a batched list")
    if not isinstance(obj, (list, tuple)):
        return np.reshape(g, np.shape(obj))
    extra = g.ndim - runtime_shapes._nested_ndim(obj)
    if extra > 0:
        g = np.reshape(g, g.shape[extra:])
    pieces = [_unpack_like(g[i], item) for i, item in enumerate(obj)]
    return tuple(pieces) if isinstance(obj, tuple) else pieces


@_rule_for(runtime.pack_like)
def _pack_like(pieces: Any, whole: Any, obj: Any) -> Any:
    """``pack_like``: every example's pieces assembled into one array shaped like ``whole``."""
    if contains_batched(whole) or contains_batched(obj):
        raise NotBatchable("pack_like into a batched array")
    shape = np.shape(whole)
    if not isinstance(obj, (list, tuple)):
        return np.reshape(pieces, shape)
    leaves = runtime_shapes._leaves(pieces)
    dtype = runtime_shapes._cotangent_dtype(*leaves)
    packed = BatchedValue(np.zeros((batch_size(leaves), *shape), dtype=dtype))
    inner = np.reshape(packed, shape[len(shape) - runtime_shapes._nested_ndim(obj) :])
    runtime_shapes._fill(inner, (), pieces, obj)
    return packed


@_rule_for(runtime.unrepeat)
def _unrepeat(g: Any, x: Any, repeats: Any, axis: Any = None) -> Any:
    """``unrepeat``: sum the copies ``np.repeat`` made, in every example."""
    if not is_batched(g) or contains_batched((x, repeats)):
        raise NotBatchable("unrepeat of a batched primal")
    shape = np.shape(x)
    if axis is None:
        return np.reshape(_unrepeat(g, np.ravel(x), repeats, 0), shape)
    axis = axis % len(shape)
    if np.size(repeats) == 1:  # every element repeated equally: sum a new axis
        copies = int(np.ravel(repeats)[0])
        split = g.shape[:axis] + (shape[axis], copies) + g.shape[axis + 1 :]
        return np.sum(np.reshape(g, split), axis=axis + 1)
    owners = np.repeat(np.arange(shape[axis]), repeats)
    cotangent = np.zeros((g.batch_size, *shape), dtype=_float(g.dtype))
    np.add.at(cotangent, (slice(None),) * (axis + 1) + (owners,), g.array)
    return BatchedValue(cotangent)


@_rule_for(runtime.untake)
def _untake(g: Any, x: Any, indices: Any, axis: Any = None, mode: str = "raise") -> Any:
    """``untake``: scatter every example's cotangent back to the elements ``np.take`` took."""
    if not is_batched(g) or contains_batched((x, indices)):
        raise NotBatchable("untake of a batched primal or index")
    shape = np.shape(x)
    if axis is None:
        return np.reshape(_untake(g, np.ravel(x), indices, 0, mode), shape)
    axis, indices = runtime_shapes._taken_positions(shape, indices, axis, mode)
    cotangent = np.zeros((g.batch_size, *shape), dtype=_float(g.dtype))
    np.add.at(cotangent, (slice(None),) * (axis + 1) + (indices,), g.array)
    return BatchedValue(cotangent)


@_rule_for(runtime.undiagonal)
def _undiagonal(g: Any, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """``undiagonal``: every example's cotangent laid on the diagonal of zeros like ``x``."""
    if not is_batched(g) or contains_batched(x):
        raise NotBatchable("undiagonal of a batched primal")
    ndim = np.ndim(x)
    cotangent = np.zeros((g.batch_size, *np.shape(x)), dtype=_float(g.dtype))
    length = g.shape[-1]
    rows = np.arange(length) + max(-offset, 0)
    columns = np.arange(length) + max(offset, 0)
    moved = np.moveaxis(cotangent, (axis1 % ndim + 1, axis2 % ndim + 1), (-2, -1))
    moved[..., rows, columns] = g.array
    return BatchedValue(cotangent)


@_rule_for(runtime.unpad)
def _unpad(g: Any, x: Any, pad_width: Any, mode: str = "constant", reflect_type: str = "even"):
    """``unpad``: every example's border cut off, or added back onto what it copied."""
    if not is_batched(g) or contains_batched((x, pad_width)):
        raise NotBatchable("unpad of a batched primal")
    shape = np.shape(x)
    pairs = runtime_shapes._pad_pairs(pad_width, len(shape))
    if mode == "constant":
        return g[tuple(slice(before, before + n) for (before, _), n in zip(pairs, shape))]
    if mode not in ("edge", "wrap", "reflect", "symmetric") or reflect_type != "even":
        raise NotBatchable(f"np.pad with mode={mode!r}")  # one at a time explains the error
    positions: Any = np.reshape(np.arange(math.prod(shape)), shape)
    sources = np.pad(positions, pairs, mode=mode)  # type: ignore[call-overload]  # checked
    cotangent = np.zeros((g.batch_size, math.prod(shape)), dtype=_float(g.dtype))
    index: Any = (slice(None), np.ravel(sources))
    np.add.at(cotangent, index, g.array.reshape(g.batch_size, -1))
    return BatchedValue(cotangent.reshape((g.batch_size, *shape)))


def _float(dtype: np.dtype) -> np.dtype:
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


# Rules called (not inlined) through vjp_call / jvp_call / jvp_entry whose code only passes
# the cotangent through NumPy functions with batching rules.
_CALLED_RULES = frozenset(
    {np.einsum, np.tensordot, np.inner, np.kron, np.average, np.ndarray.transpose}
)


def _called_rule(helper: Any, leading: int):
    """A rule for ``helper(primitive, ..., *primal_args)``: the primitive's own rule runs on
    the batch when it is known to; ``leading`` arguments precede the primal ones."""

    def rule(primitive: Any, *args: Any, **kwargs: Any) -> Any:
        if _lookup(_CALLED_RULES_TABLE, primitive) is None:
            raise NotBatchable(f"the derivative rule of {primitive!r} has no batching rule")
        if contains_batched(args[leading:]) or contains_batched(kwargs):
            raise NotBatchable("a derivative rule called with batched primal arguments")
        return helper(primitive, *args, **kwargs)

    return rule


_CALLED_RULES_TABLE = dict.fromkeys(_CALLED_RULES, True)
# The helpers that call a rule have no rule of their own to carry theirs.
_CALLING_RULES = {
    runtime.vjp_call: _called_rule(runtime.vjp_call, 2),  # g, ans
    runtime.jvp_call: _called_rule(runtime.jvp_call, 2),  # t, ans
    runtime.jvp_entry: _called_rule(runtime.jvp_entry, 3),  # index, t, ans
}


# np.array and np.asarray do not dispatch to __array_function__; generated code reaches
# them through ``np``, which a batched twin sees as this module.


def _array(obj: Any, dtype: Any = None, *, copy: Any = True, ndmin: int = 0, **options: Any):
    """``np.array`` of (nested lists of) examples: the examples stacked after the batch axis."""
    if not contains_batched(obj):
        return np.array(obj, dtype=dtype, copy=copy, ndmin=ndmin, **options)
    if options.get("order", "K") not in ("K", "A", "C") or options.get("subok"):
        raise NotBatchable("np.array with order='F' or subok=True")
    stacked = _stack_nested(obj)
    if copy is not False or dtype is not None:
        array = stacked.array.astype(stacked.dtype if dtype is None else dtype, copy=True)
        stacked = BatchedValue(array)
    if stacked.ndim < ndmin:
        stacked = BatchedValue(lift(stacked, ndmin))
    return stacked


def _asarray(a: Any, dtype: Any = None, order: Any = None, **options: Any) -> Any:
    """``np.asarray`` that keeps examples batched (no copy when nothing changes)."""
    if not contains_batched(a):
        return np.asarray(a, dtype=dtype, order=order, **options)
    return _array(a, dtype, copy=options.get("copy"), order=order or "K")


def _stack_nested(obj: Any) -> BatchedValue:
    if is_batched(obj):
        return obj
    if not isinstance(obj, (list, tuple)):
        raise NotBatchable(f"np.array of a {type(obj).__name__} holding batched values")
    items = [_stack_nested(item) if contains_batched(item) else np.asarray(item) for item in obj]
    size = batch_size(items)
    return BatchedValue(np.stack([materialize(item, size) for item in items], axis=1))


class _BatchedNumPy(types.ModuleType):
    """The ``numpy`` module as a batched twin sees it: ``np.array`` and ``np.asarray`` stack
    batched values; every other name is NumPy's own."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


_NUMPY = _BatchedNumPy("numpy")
_NUMPY.__dict__.update(np.__dict__)
_NUMPY.__dict__.update(array=_array, asarray=_asarray, asanyarray=_asarray)


_CUSTOM = (runtime.custom_vjp, runtime.custom_jvp_call)


def _runtime_objects() -> dict[int, Any]:
    return {id(getattr(runtime, name)): getattr(runtime, name) for name in runtime.__all__}


# Batched twins ----------------------------------------------------------------------------

_TWINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_REPLACEMENTS: dict[int, tuple[Any, Any]] = {}  # id(helper) → (helper, its replacement)


def batched_twin(function: types.FunctionType) -> types.FunctionType:
    """``function`` (generated code) with its globals replaced for batched arguments.

    Example::

        batched_twin(f_vjp.backward)(saved, BatchedValue(seeds))
    """
    twin = _TWINS.get(function)
    if twin is not None:
        return twin
    namespace: dict[str, Any] = {}
    twin = types.FunctionType(
        function.__code__,
        namespace,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    twin.__kwdefaults__ = function.__kwdefaults__
    _TWINS[function] = twin  # before the globals, so that recursion finds it
    runtime_objects = _runtime_objects()
    namespace.update(
        {name: _replacement(obj, runtime_objects) for name, obj in function.__globals__.items()}
    )
    live = getattr(getattr(function, "__s2sgrad_generated__", None), "live", {})
    for name, entry in live.items():
        if name in namespace:  # the user's data, which the twin reads as it changes too
            entry.mirror(twin)
    return twin


def _replacement(obj: Any, runtime_objects: dict[int, Any]) -> Any:
    if obj is np:
        return _NUMPY
    if isinstance(obj, (types.ModuleType, type, str, int, float)) or not callable(obj):
        return obj
    if is_generated(obj):
        return _GeneratedVjp(obj) if hasattr(obj, "backward") else batched_twin(obj)
    known = _REPLACEMENTS.get(id(obj))
    if known is not None and known[0] is obj:
        return known[1]
    facts = get_rule(obj)
    how = None if facts is None else facts.batching
    if how is None:
        how = _lookup(_CALLING_RULES, obj)
    if callable(how):
        replacement = _with_rule(obj, how)
    elif how == AS_IS:
        replacement = obj
    elif id(obj) in runtime_objects or isinstance(obj, _CUSTOM):
        replacement = _Guarded(obj)  # runtime helpers without a rule; custom derivatives
    else:
        # The user's own objects (generated code passes them around, e.g. as the key of
        # vjp_call, so they keep their identity), and NumPy's, which dispatch to the rules.
        return obj
    _REPLACEMENTS[id(obj)] = (obj, replacement)
    return replacement


def _lookup(table: dict, obj: Any) -> Any:
    try:
        return table.get(obj)
    except TypeError:  # an unhashable callable
        return None


def _with_rule(helper: Any, rule: Any) -> Any:
    def batched(*args: Any, **kwargs: Any) -> Any:
        if contains_batched(args) or contains_batched(kwargs):
            return rule(*args, **kwargs)
        return helper(*args, **kwargs)

    batched.__name__ = batched.__qualname__ = getattr(helper, "__name__", "helper")
    batched.__dict__["__wrapped__"] = helper
    return batched


class _GeneratedVjp:
    """A generated VJP whose ``backward`` is a batched twin (the forward runs unchanged)."""

    __slots__ = ("function", "backward")

    def __init__(self, function: Any) -> None:
        self.function = function
        self.backward = batched_twin(function.backward)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


class _Guarded:
    """A callable (and its ``backward``) that refuses batched arguments."""

    __slots__ = ("target",)

    def __init__(self, target: Any) -> None:
        self.target = target

    def _check(self, args: tuple, kwargs: dict) -> None:
        if contains_batched(args) or contains_batched(kwargs):
            name = getattr(self.target, "__name__", type(self.target).__name__)
            raise NotBatchable(f"{name} has no batching rule")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._check(args, kwargs)
        return self.target(*args, **kwargs)

    def backward(self, *args: Any, **kwargs: Any) -> Any:
        self._check(args, kwargs)
        return self.target.backward(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)
