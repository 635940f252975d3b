"""Batched values: many cotangents (or tangents) of one shape, carried as one array.

A :class:`BatchedValue` holds an ndarray whose axis 0 is the batch; every other axis is
an axis of one *example*. It behaves like a single example: ``.shape``, ``np.shape`` and
``len`` report the example's shape, ``np.sum(b, axis=0)`` sums the example's first axis,
``b[1:]`` slices every example. Generated derivative code written for one cotangent
therefore runs unchanged on a whole batch of them.

The contract is *correct or refuse*. Each operation has a rule that does, for the whole
batch at once, exactly what NumPy does to one example (:mod:`s2sgrad.batching.rules`).
An operation without a rule, and any conversion that would silently drop the batch axis
(``np.asarray``, ``float()``, ``bool()``, writing into a plain array, ``out=``), raises
:class:`NotBatchable`; the Jacobian drivers then compute one example at a time instead.

A plain (unbatched) value next to a batched one stands for the same value in every
example, so ``b * w`` multiplies each example by ``w``.

Example::

    b = BatchedValue(np.eye(3))     # three examples of shape (3,)
    b.shape                         # (3,)
    np.sum(b * 2.0).array           # array([2., 2., 2.]): one sum per example
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, NoReturn

import numpy as np

__all__ = [
    "BatchedValue",
    "NotBatchable",
    "is_batched",
    "contains_batched",
    "rank",
    "lift",
    "materialize",
    "batch_size",
    "wrap",
    "example_axis",
    "example_axes",
    "batched_index",
    "use_batching_rules",
]

# NumPy's functions return what a batched value's __array_function__ makes (a batched
# value), which NumPy's type stubs, written for ndarrays, cannot say
_numpy: Any = np


class NotBatchable(Exception):
    """An operation cannot be applied to a whole batch at once with the same result as
    applying it to each example; the caller computes one example at a time instead.

    Deliberately not a ``TypeError`` or ``AttributeError``: code that catches those to
    choose another path must not swallow it.

    Example::

        float(BatchedValue(np.ones(2)))  # raises NotBatchable
    """


# What NumPy's override protocols hand a batch to: the batching rules, which build on this
# module (s2sgrad.batching.rules) and register themselves when imported (by s2sgrad.batching).
_RULES = SimpleNamespace(apply_ufunc=None, apply_function=None)


def use_batching_rules(apply_ufunc: Callable, apply_function: Callable) -> None:
    """Register the functions that apply a ufunc or an array function to batched values.

    Example::

        use_batching_rules(apply_ufunc, apply_function)  # in s2sgrad.batching.rules
    """
    _RULES.apply_ufunc, _RULES.apply_function = apply_ufunc, apply_function


# Types that may meet a batched value in an operation: plain NumPy values and numbers.
_PLAIN = (np.ndarray, np.generic, float, int, complex, bool)


class BatchedValue:
    """A batch of examples of one shape; behaves like one example (see the module docstring).

    ``array`` has the batch on axis 0. Arithmetic, NumPy functions and ufuncs, indexing and
    the array methods apply to every example.

    Example::

        b = BatchedValue(np.arange(6.0).reshape(2, 3))  # two examples of shape (3,)
        (b[1:] @ np.ones(2)).array                       # array([3., 9.])
    """

    __slots__ = ("array",)
    __hash__ = None  # type: ignore[assignment]  # ``==`` is element-wise, as for ndarrays

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    # What one example looks like ------------------------------------------------------

    @property
    def shape(self) -> tuple:
        return self.array.shape[1:]

    @property
    def ndim(self) -> int:
        return self.array.ndim - 1

    @property
    def size(self) -> int:
        return math.prod(self.array.shape[1:])

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def itemsize(self) -> int:
        return self.array.itemsize

    @property
    def batch_size(self) -> int:
        """How many examples the batch holds."""
        return self.array.shape[0]

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.array.shape[1]

    def __iter__(self):
        for i in range(len(self)):
            yield BatchedValue(self.array[:, i])

    def __repr__(self) -> str:
        return f"BatchedValue({self.batch_size} examples of shape {self.shape}, {self.dtype})"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # NumPy and Python probe for protocols this way
            raise AttributeError(name)
        raise NotBatchable(f"the attribute .{name} has no batching rule")

    # Conversions that would drop the batch axis -------------------------------------------

    def _refuse(self, what: str) -> NoReturn:
        raise NotBatchable(f"{what} of a batched value would drop its batch axis")

    def __array__(self, dtype: Any = None, copy: Any = None):
        self._refuse("np.asarray() / np.array()")

    def __bool__(self) -> bool:
        self._refuse("bool()")

    def __float__(self) -> float:
        self._refuse("float()")

    def __int__(self) -> int:
        self._refuse("int()")

    def __complex__(self) -> complex:
        self._refuse("complex()")

    def __index__(self) -> int:
        self._refuse("an index")

    def __contains__(self, item: Any) -> bool:
        self._refuse("`in`")

    def __copy__(self) -> BatchedValue:
        return BatchedValue(self.array.copy())  # as copy.copy of an ndarray copies its data

    def __deepcopy__(self, memo: dict) -> BatchedValue:
        return BatchedValue(self.array.copy())

    def item(self, *args: Any) -> Any:
        self._refuse(".item()")

    def tolist(self) -> Any:
        self._refuse(".tolist()")

    # NumPy's override protocols ------------------------------------------------------------

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _RULES.apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: tuple, args: tuple, kwargs: dict) -> Any:
        for t in types:
            if not (t is BatchedValue or t is np.ndarray):
                raise NotBatchable(f"{t.__name__} values cannot be mixed with batched ones")
        return _RULES.apply_function(func, args, kwargs)

    # Indexing ---------------------------------------------------------------------------------

    def __getitem__(self, index: Any) -> BatchedValue:
        return BatchedValue(self.array[batched_index(index, self.ndim)])

    def __setitem__(self, index: Any, value: Any) -> None:
        if self.ndim == 0:  # the example may be an immutable NumPy scalar
            self._refuse("assigning into a scalar")
        where = batched_index(index, self.ndim)
        target_rank = self.array[where].ndim - 1
        self.array[where] = lift(value, target_rank)

    # Attributes and methods -------------------------------------------------------------------

    @property
    def T(self) -> BatchedValue:
        return _numpy.transpose(self)

    @property
    def mT(self) -> BatchedValue:
        return _numpy.swapaxes(self, -1, -2)

    @property
    def real(self) -> BatchedValue:
        return _numpy.real(self)

    @property
    def imag(self) -> BatchedValue:
        return _numpy.imag(self)

    def reshape(self, *shape: Any, order: str = "C", copy: Any = None) -> BatchedValue:
        """Like ``ndarray.reshape``, per example."""
        if len(shape) == 1:
            shape = shape[0]
        keywords = {} if copy is None else {"copy": copy}  # np.reshape takes copy= from 2.1
        return _numpy.reshape(self, shape, order=order, **keywords)

    def transpose(self, *axes: Any) -> BatchedValue:
        """Like ``ndarray.transpose``, per example."""
        if len(axes) == 1:
            axes = axes[0]
        return _numpy.transpose(self, axes or None)

    def flatten(self, order: str = "C") -> BatchedValue:
        """Like ``ndarray.flatten``: a flat copy of each example."""
        return _numpy.ravel(self, order=order).copy()

    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe", copy: bool = True):
        """Like ``ndarray.astype``."""
        return BatchedValue(
            _numpy.asarray(self.array).astype(dtype, order=order, casting=casting, copy=copy)
        )

    def copy(self, order: str = "C") -> BatchedValue:
        """A copy of every example, like ``ndarray.copy``."""
        if order not in ("C", "K", "A"):
            raise NotBatchable(f"copy(order={order!r})")
        return BatchedValue(self.array.copy())

    def dot(self, other: Any) -> Any:
        """Like ``ndarray.dot``."""
        return np.dot(self, other)

    # In-place operators change every example in place, as they would change an ndarray;
    # a scalar example is taken to be a NumPy scalar, which ``+=`` replaces instead.

    def _in_place(self, ufunc: np.ufunc, other: Any) -> Any:
        if self.ndim == 0:
            return NotImplemented  # Python falls back to ``self = self + other``
        result = ufunc(self, other)
        self[...] = result
        return self

    def __iadd__(self, other):
        return self._in_place(np.add, other)

    def __isub__(self, other):
        return self._in_place(np.subtract, other)

    def __imul__(self, other):
        return self._in_place(np.multiply, other)

    def __itruediv__(self, other):
        return self._in_place(np.true_divide, other)


# Array methods that are the NumPy function of the same name with ``self`` first.
_FUNCTION_METHODS = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "std": np.std,
    "var": np.var,
    "all": np.all,
    "any": np.any,
    "cumsum": np.cumsum,
    "cumprod": np.cumprod,
    "argmax": np.argmax,
    "argmin": np.argmin,
    "swapaxes": np.swapaxes,
    "squeeze": np.squeeze,
    "ravel": np.ravel,
    "clip": np.clip,
    "take": np.take,
    "diagonal": np.diagonal,
    "trace": np.trace,
    "repeat": np.repeat,
    "round": np.round,
    "conj": np.conjugate,
    "conjugate": np.conjugate,
}


def _function_method(name: str, function: Any):
    def method(self, *args, **kwargs):
        return function(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Like ``ndarray.{name}``, per example."
    return method


for _name, _function in _FUNCTION_METHODS.items():
    setattr(BatchedValue, _name, _function_method(_name, _function))


# Python operators are the matching ufuncs, which dispatch to ``__array_ufunc__``.
_OPERATORS = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "truediv": np.true_divide,
    "floordiv": np.floor_divide,
    "mod": np.remainder,
    "pow": np.power,
    "matmul": np.matmul,
    "and": np.logical_and,
    "or": np.logical_or,
    "xor": np.logical_xor,
}


def _unary(ufunc: np.ufunc):
    return lambda self: ufunc(self)


def _operator(ufunc: np.ufunc, reflected: bool):
    if reflected:
        return lambda self, other: ufunc(other, self)
    return lambda self, other: ufunc(self, other)


for _name, _ufunc in _OPERATORS.items():
    setattr(BatchedValue, f"__{_name}__", _operator(_ufunc, False))
    setattr(BatchedValue, f"__r{_name}__", _operator(_ufunc, True))
# ``&``, ``|`` and ``^`` on boolean masks are the bitwise ufuncs, as for ndarrays.
for _name, _ufunc in {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}.items():
    setattr(BatchedValue, f"__{_name}__", _operator(_ufunc, False))
    setattr(BatchedValue, f"__r{_name}__", _operator(_ufunc, True))

for _name, _ufunc in {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}.items():
    setattr(BatchedValue, f"__{_name}__", _operator(_ufunc, False))

for _name, _ufunc in {
    "neg": np.negative,
    "pos": np.positive,
    "abs": np.absolute,
    "invert": np.invert,
}.items():
    setattr(BatchedValue, f"__{_name}__", _unary(_ufunc))
setattr(BatchedValue, "__divmod__", _operator(np.divmod, False))  # noqa: B010
setattr(BatchedValue, "__rdivmod__", _operator(np.divmod, True))  # noqa: B010


# Helpers the rules share ------------------------------------------------------------------

_ACCEPTED = frozenset({BatchedValue, np.ndarray, float, int, bool, complex})


def is_batched(value: Any) -> bool:
    """Whether ``value`` is a batched value.

    Example::

        is_batched(np.ones(2))  # False
    """
    return type(value) is BatchedValue


def contains_batched(value: Any) -> bool:
    """Whether ``value``, or anything in a list, tuple or dict inside it, is batched.

    Example::

        contains_batched([np.ones(2), {"w": BatchedValue(np.ones((3, 2)))}])  # True
    """
    if type(value) is BatchedValue:
        return True
    if isinstance(value, (list, tuple)):
        return any(contains_batched(v) for v in value)
    if isinstance(value, dict):
        return any(contains_batched(v) for v in value.values())
    return False


def rank(value: Any) -> int:
    """The number of axes of one example (of the value itself, when it is plain).

    Example::

        rank(BatchedValue(np.ones((5, 2, 3))))  # 2
    """
    kind = type(value)
    if kind is BatchedValue:
        return value.array.ndim - 1
    if kind is float or kind is int or kind is bool or kind is complex:
        return 0
    return np.ndim(value)


def check_plain(value: Any) -> None:
    """Refuse values of foreign types (tape values, matrices …) next to batched ones."""
    if type(value) in _ACCEPTED or value is None:
        return
    if isinstance(value, _PLAIN) and not (
        isinstance(value, np.ndarray) and type(value) is not np.ndarray
    ):
        return
    raise NotBatchable(f"a {type(value).__name__} cannot meet a batched value")


def lift(value: Any, target_rank: int) -> Any:
    """The array of a batched ``value`` with length-1 axes after the batch axis, so that
    each example has ``target_rank`` axes and broadcasts as that example would; a plain
    value is returned as it is (it broadcasts against the example axes by itself).

    Example::

        lift(BatchedValue(np.ones((5, 3))), 2).shape  # (5, 1, 3)
    """
    if type(value) is not BatchedValue:
        return value
    array = value.array
    missing = target_rank - (array.ndim - 1)
    if missing <= 0:
        return array
    return array.reshape(array.shape[:1] + (1,) * missing + array.shape[1:])


def materialize(value: Any, size: int) -> np.ndarray:
    """The batch array of ``value``: a batched value's own, or a plain one repeated ``size``
    times (a read-only broadcast view).

    Example::

        materialize(np.arange(2.0), 3).shape  # (3, 2)
    """
    if type(value) is BatchedValue:
        return value.array
    value = np.asarray(value)
    return np.broadcast_to(value, (size,) + value.shape)


def batch_size(values: Any) -> int:
    """The batch size of the first batched value among ``values`` (searched recursively).

    Example::

        batch_size([np.ones(2), BatchedValue(np.ones((4, 2)))])  # 4
    """
    for value in values:
        if type(value) is BatchedValue:
            return value.array.shape[0]
        if isinstance(value, (list, tuple)) and contains_batched(value):
            return batch_size(value)
        if isinstance(value, dict) and contains_batched(value):
            return batch_size(value.values())
    raise NotBatchable("no batched value among the arguments")


def wrap(result: Any) -> Any:
    """Batched values for the arrays of a result computed on batch arrays (tuples and lists
    element by element).

    Example::

        wrap(np.ones((4, 2)))  # BatchedValue(4 examples of shape (2,), float64)
    """
    if isinstance(result, np.ndarray):
        return BatchedValue(result)
    if isinstance(result, (tuple, list)):
        return type(result)(wrap(r) for r in result)
    raise NotBatchable(f"a rule returned a {type(result).__name__} for a batch")


def example_axis(axis: Any, ndim: int) -> int:
    """The batch-array axis of an example's ``axis`` (negative axes counted per example).

    Example::

        example_axis(-1, 2)  # 2
    """
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim + 1


def example_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """The batch-array axes of an example's ``axis`` (``None``: all of the example's axes).

    Example::

        example_axes(None, 2)  # (1, 2)
    """
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(example_axis(a, ndim) for a in axis)
    return (example_axis(axis, ndim),)


def batched_index(index: Any, ndim: int) -> tuple:
    """The index of the batch array that selects ``index`` in every example.

    Advanced (array) indices must sit next to each other: NumPy moves the axes of
    separated ones to the front, where they would land before the batch axis.

    Example::

        batched_index((Ellipsis, 0), 2)  # (slice(None), slice(None), 0)
    """
    parts = index if type(index) is tuple else (index,)
    expanded: list = []
    used = 0
    for part in parts:
        if type(part) is BatchedValue:
            raise NotBatchable("an index that differs between examples")
        if isinstance(part, list):
            part = np.asarray(part)
            if part.size == 0:
                part = part.astype(np.intp)
        if isinstance(part, np.ndarray) and part.dtype == bool:
            if part.ndim == 0:
                raise NotBatchable("a scalar boolean index")
            used += part.ndim
        elif part is not None and part is not Ellipsis:
            used += 1
        expanded.append(part)
    ellipses = [i for i, part in enumerate(expanded) if part is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if ellipses:
        at = ellipses[0]
        expanded[at : at + 1] = [slice(None)] * max(ndim - used, 0)
    _check_advanced_adjacent(expanded)
    return (slice(None), *expanded)


def _check_advanced_adjacent(parts: list) -> None:
    arrays = [isinstance(p, np.ndarray) and p.ndim > 0 for p in parts]
    if not any(arrays):
        return
    # Next to an array index, integers are advanced indices too.
    advanced = [a or not isinstance(p, (slice, type(None))) for p, a in zip(parts, arrays)]
    positions = [i for i, a in enumerate(advanced) if a]
    if positions[-1] - positions[0] + 1 != len(positions):
        raise NotBatchable("advanced indices separated by a slice or np.newaxis")
