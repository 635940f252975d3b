"""The shape and dtype of the values of code specialised to its arguments, where they
follow from the arguments' by NumPy's own rules.

A parameter holds its argument (the code is specialised to the arguments' types): an
array of exactly ``np.ndarray``, a NumPy scalar or a Python number. Arithmetic,
comparisons, ufuncs, basic indexing, ``.T`` and reductions of such values make such values
again, of a shape and dtype that NumPy's broadcasting and type resolution
(``ufunc.resolve_dtypes``) tell without running anything. A name has a
type when every assignment to it gives it that same type, given the types of the names
it reads (an invariant: true of the first assignment that runs, kept by every later
one). Anything else (a call of another function, a container, a value whose type
depends on values) has no type: ``None``.

Example::

    types = ValueTypes(function, namespace, (x,), {})
    types.of(parse_expression("x[1:] - x[:-1] ** 2"))  # ValueType(shape=(9999,), dtype=float64)
"""

from __future__ import annotations

import builtins
import functools
import math
from typing import Any, NamedTuple

import gast
import numpy as np

from s2sgrad.compiler.specialize.broadcasts import resolve
from s2sgrad.compiler.syntax import nested_statements, parameter_names, walk

__all__ = ["REDUCTIONS", "ValueType", "ValueTypes", "type_of_value"]


class ValueType(NamedTuple):
    """A value's shape and dtype: a NumPy dtype, or the Python type of a Python number
    (which NumPy casts to the other operand's dtype: a *weak* scalar, shape ``()``)."""

    shape: tuple
    dtype: Any

    @property
    def nbytes(self) -> int:
        """The bytes of an array of this type (of one item for a scalar)."""
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize

    @property
    def is_array(self) -> bool:
        """Whether NumPy makes an ``np.ndarray`` of it (not a scalar): at least one axis."""
        return bool(self.shape) and isinstance(self.dtype, np.dtype)


_PYTHON_NUMBERS = (int, float, complex)
_ELEMENTWISE = {
    gast.Add: np.add,
    gast.Sub: np.subtract,
    gast.Mult: np.multiply,
    gast.Div: np.true_divide,
    gast.Pow: np.power,
}
_COMPARISONS = {
    gast.Lt: np.less,
    gast.LtE: np.less_equal,
    gast.Gt: np.greater,
    gast.GtE: np.greater_equal,
    gast.Eq: np.equal,
    gast.NotEq: np.not_equal,
}
REDUCTIONS = frozenset({"sum", "max", "min", "mean"})
_UNKNOWN = None


def type_of_value(value: Any) -> ValueType | None:
    """The type of an argument: None unless it is an ``np.ndarray`` (not of objects), a
    NumPy scalar or a Python number."""
    if type(value) is np.ndarray:
        return None if value.dtype == object else ValueType(value.shape, value.dtype)
    if isinstance(value, np.generic):
        return None if value.dtype == object else ValueType((), value.dtype)
    if type(value) in _PYTHON_NUMBERS:
        return ValueType((), type(value))
    return None


class ValueTypes:
    """The types of one function's names, and of expressions over them (:meth:`of`).

    Functions defined inside, ``global``, ``nonlocal`` and imports bind names this does not
    follow: such a function's names have no type; nor have globals, nor any name before
    NumPy 2 (whose promotion looked at scalars' values).
    """

    def __init__(self, function: gast.FunctionDef, namespace: dict, args: tuple, kwargs: dict):
        self.namespace = namespace
        self.names: dict[str, ValueType | None] = {}
        bindings = _bindings(function, namespace) if _WEAK_SCALARS else None
        arguments = _given_arguments(function, args, kwargs)
        parameters = parameter_names(function)
        self.local = parameters | {name for name, _ in bindings or ()}
        if bindings is None:
            self.names = dict.fromkeys(self.local, _UNKNOWN)
            return
        for name in parameters:
            self.names[name] = type_of_value(arguments[name]) if name in arguments else None
        self.read_before_bound = True
        while self.read_before_bound:  # types only go from absent to known to unknown
            self.read_before_bound = False  # set by ``of`` (or a type found unknown below)
            # each expression's type is found once per pass over the bindings (kept with its
            # node, which stays alive, and with it its id); the last pass's are final
            self.settled: dict[int, tuple[Any, ValueType | None]] = {}
            for name, value in bindings:
                found = _INTEGER_TYPE if value is _INTEGER else self.of(value)
                known = self.names.get(name, _ABSENT)
                if known is _ABSENT:
                    self.names[name] = found
                elif known is not None and known != found:
                    self.names[name] = _UNKNOWN
                    self.read_before_bound = True  # what read it so far read another type

    def of(self, node) -> ValueType | None:
        """The type of expression ``node`` (None: not known)."""
        settled = self.__dict__.get("settled")
        if settled is None:  # the names have no types (another scope binds them)
            return self._of(node)
        entry = settled.get(id(node))
        if entry is None or entry[0] is not node:
            entry = settled[id(node)] = (node, self._of(node))
        return entry[1]

    def _of(self, node) -> ValueType | None:
        kind = type(node)
        if kind is gast.Name:  # a global's value is not followed: the user may rebind it
            if node.id not in self.local:
                return None
            found = self.names.get(node.id, _ABSENT)
            if found is _ABSENT:  # a later binding's (a loop's): its type is not known yet
                self.read_before_bound = True
                return None
            return found
        if kind is gast.Constant:
            if type(node.value) in _PYTHON_NUMBERS:
                return ValueType((), type(node.value))
            return None
        if kind is gast.BinOp:
            return self._binary(node)
        if kind is gast.UnaryOp and type(node.op) in (gast.USub, gast.UAdd):
            operand = self.of(node.operand)
            if operand is not None and not isinstance(operand.dtype, np.dtype):
                return operand  # a Python number's sign
            ufunc = np.negative if type(node.op) is gast.USub else np.positive
            return _elementwise(ufunc, [operand])
        if kind is gast.Compare and len(node.ops) == 1 and type(node.ops[0]) in _COMPARISONS:
            operands = [self.of(node.left), self.of(node.comparators[0])]
            return _elementwise(_COMPARISONS[type(node.ops[0])], operands)
        if kind is gast.Subscript:
            return self._indexed(node)
        if kind is gast.Attribute and node.attr == "T":
            value = self.of(node.value)
            if value is None or not isinstance(value.dtype, np.dtype):
                return None
            return ValueType(value.shape[::-1], value.dtype)
        if kind is gast.Call:
            return self._called(node)
        return None

    def _binary(self, node: gast.BinOp) -> ValueType | None:
        left, right = self.of(node.left), self.of(node.right)
        if left is None or right is None:
            return None
        if not (isinstance(left.dtype, np.dtype) or isinstance(right.dtype, np.dtype)):
            return None  # Python numbers: Python's arithmetic, not NumPy's
        op = type(node.op)
        if op is gast.MatMult:
            return _matmul(left, right)
        ufunc = _ELEMENTWISE.get(op)
        if ufunc is None:
            return None
        if ufunc is np.power and not (isinstance(left.dtype, np.dtype) and left.dtype.kind in "fc"):
            return None  # integer powers: negative exponents raise, Python's differ
        return _elementwise(ufunc, [left, right])

    def _indexed(self, node: gast.Subscript) -> ValueType | None:
        value = self.of(node.value)
        if value is None or not value.is_array:
            return None
        index = self._index(node.slice)
        if index is None:
            return None
        try:  # a view of a zero-strided stand-in: its shape, without any memory
            shape = np.broadcast_to(np.empty((), dtype=bool), value.shape)[index].shape
        except (IndexError, TypeError, ValueError):
            return None
        return ValueType(shape, value.dtype)

    def _index(self, node):
        """A basic index of constants (a loop's integer as 0), or None."""
        kind = type(node)
        if kind is gast.Tuple:
            parts = [self._index(e) for e in node.elts]
            return None if any(p is _NOT_AN_INDEX for p in parts) else tuple(parts)
        if kind is gast.Slice:  # of literal bounds only: a name's value sets the length
            parts = [_literal_int(p) for p in (node.lower, node.upper, node.step)]
            if any(p is _NOT_AN_INDEX for p in parts):
                return _NOT_AN_INDEX
            return slice(*parts)
        if kind is gast.Constant and (
            node.value is None or node.value is Ellipsis or type(node.value) is int
        ):
            return node.value
        if kind is gast.UnaryOp and type(node.op) is gast.USub:
            inner = self._index(node.operand)
            return -inner if type(inner) is int else _NOT_AN_INDEX
        if self.of(node) == _INTEGER_TYPE:
            return 0  # any integer selects one item: the same shape, or an IndexError
        return _NOT_AN_INDEX

    def _called(self, node: gast.Call) -> ValueType | None:
        if any(type(a) is gast.Starred for a in node.args):
            return None
        func = node.func
        if type(func) is gast.Attribute and func.attr in REDUCTIONS:
            value = self.of(func.value)
            if value is not None and value.is_array and not node.args:
                return _reduced(value, func.attr, node.keywords)
        function = self._function(func)
        if isinstance(function, np.ufunc) and not node.keywords and function.nout == 1:
            return _elementwise(function, [self.of(a) for a in node.args])
        if any(function is f for f in _FILLED) and len(node.args) == 1 and not node.keywords:
            shape = _constant_axes(node.args[0])  # a literal shape: float64 zeros, say
            return None if shape is None else ValueType(shape, np.dtype(np.float64))
        if any(function is f for f in _LIKE) and len(node.args) == 1 and not node.keywords:
            model = self.of(node.args[0])  # an array like another: its shape and dtype
            return model if model is not None and model.is_array else None
        return None

    def _function(self, func):
        """The object ``func`` names, unless a name of the function's own hides it."""
        base = func
        while type(base) is gast.Attribute:
            base = base.value
        if type(base) is not gast.Name or base.id in self.local:
            return None
        return resolve(func, self.namespace)


_OTHER_SCOPES = (
    gast.FunctionDef,
    gast.AsyncFunctionDef,
    gast.Lambda,
    gast.ClassDef,
    gast.Global,
    gast.Nonlocal,
    gast.Import,
    gast.ImportFrom,
)
_FILLED = (np.empty, np.zeros, np.ones)
# NumPy 2 promotes by types alone (NEP 50: a Python number takes the array's dtype); before,
# a scalar's value could change a result's dtype (int8 array + 300 was int16): no types then
_WEAK_SCALARS = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
_LIKE = (np.empty_like, np.zeros_like, np.ones_like)
_INTEGER = object()  # a binding to an integer of ``range``: a loop's target
_INTEGER_TYPE = ValueType((), int)
_NOT_AN_INDEX = object()
_ABSENT: Any = object()


def _elementwise(ufunc: np.ufunc, operands: list) -> ValueType | None:
    if len(operands) != ufunc.nin or any(o is None for o in operands):
        return None
    if not any(isinstance(o.dtype, np.dtype) for o in operands):
        return None
    return _resolved(ufunc, tuple(operands))


@functools.lru_cache(maxsize=4096)
def _resolved(ufunc: np.ufunc, operands: tuple) -> ValueType | None:
    """What ``ufunc`` makes of operands of these types (asked of NumPy once per types)."""
    try:
        shape = np.broadcast_shapes(*(o.shape for o in operands))
        dtypes = ufunc.resolve_dtypes((*(o.dtype for o in operands), None))
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return None
    if dtypes[-1].kind == "O":
        return None
    return ValueType(shape, dtypes[-1])


def _matmul(left: ValueType, right: ValueType) -> ValueType | None:
    if not (left.is_array and right.is_array):
        return None
    a, b = left.shape, right.shape
    if len(a) < 2 or len(b) < 2:
        return None  # vectors: the axes matmul adds and removes, not followed
    if a[-1] != b[-2]:
        return None
    try:
        batch = np.broadcast_shapes(a[:-2], b[:-2])
        dtype = np.matmul.resolve_dtypes((left.dtype, right.dtype, None))[-1]
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return None
    return ValueType((*batch, a[-2], b[-1]), dtype)


def _reduced(value: ValueType, method: str, keywords: list) -> ValueType | None:
    """``value.sum(axis=..., keepdims=...)`` and the like, on floating-point arrays (whose
    reductions keep the dtype)."""
    if value.dtype.kind not in "fc":
        return None
    axis: Any = None
    keepdims = False
    for keyword in keywords:
        if type(keyword.value) is gast.Constant and keyword.arg == "keepdims":
            keepdims = keyword.value.value
            if type(keepdims) is not bool:
                return None
        elif keyword.arg == "axis":
            axis = _constant_axes(keyword.value)
            if axis is None:
                return None
        else:
            return None
    ndim = len(value.shape)
    given = range(ndim) if axis is None else axis
    if not given:
        return None  # no axis: a copy, or the array itself, not followed
    if any(not -ndim <= a < ndim for a in given):
        return None
    axes = {a % ndim for a in given}
    if len(axes) != len(given):
        return None  # an axis twice: NumPy refuses
    shape = tuple(
        1 if i in axes else n for i, n in enumerate(value.shape) if keepdims or i not in axes
    )
    return ValueType(shape, value.dtype)


def _literal_int(node):
    """The int or None a slice bound spells (``-1`` included), or ``_NOT_AN_INDEX``."""
    if node is None:
        return None
    sign = 1
    if type(node) is gast.UnaryOp and type(node.op) is gast.USub:
        node, sign = node.operand, -1
    if type(node) is gast.Constant and type(node.value) is int:
        return sign * node.value
    return _NOT_AN_INDEX


def _constant_axes(node) -> tuple | None:
    if type(node) is gast.Constant and type(node.value) is int:
        return (node.value,)
    if type(node) is gast.Tuple and all(
        type(e) is gast.Constant and type(e.value) is int for e in node.elts
    ):
        return tuple(e.value for e in node.elts)
    return None


def _bindings(function, namespace) -> list[tuple[str, Any]] | None:
    """Each assignment to a name in ``function``, in order, as (name, value): ``_INTEGER``
    for a loop over a ``range``, None for a binding not looked into; None if a function or
    class inside, ``global``, ``nonlocal`` or an import binds names too."""
    bindings = []
    plain_targets = set()
    for statement in nested_statements(function.body):
        kind = type(statement)
        if kind is gast.Assign and len(statement.targets) == 1:
            target = statement.targets[0]
            if type(target) is gast.Name:
                bindings.append((target.id, statement.value))
                plain_targets.add(id(target))
        elif (
            kind is gast.For
            and type(statement.target) is gast.Name
            and _counts(statement.iter, namespace)
        ):
            bindings.append((statement.target.id, _INTEGER))
            plain_targets.add(id(statement.target))
    for node in walk(function):
        kind = type(node)
        if kind is gast.Name:
            if type(node.ctx) in (gast.Store, gast.Del) and id(node) not in plain_targets:
                bindings.append((node.id, None))
        elif kind is gast.Attribute:
            if type(node.value) is gast.Name and (
                type(node.ctx) is not gast.Load or node.attr == "resize"
            ):
                bindings.append((node.value.id, None))  # x.shape = ..., x.resize(...)
        elif kind in _OTHER_SCOPES and node is not function:
            return None
    return bindings


def _counts(node, namespace: dict) -> bool:
    """``range(...)`` or ``reversed(range(...))`` of the builtins: integers."""
    if _builtin(node, "reversed", namespace) and len(node.args) == 1:
        node = node.args[0]
    return _builtin(node, "range", namespace)


def _builtin(node, name: str, namespace: dict) -> bool:
    original = getattr(builtins, name)
    return (
        type(node) is gast.Call
        and type(node.func) is gast.Name
        and node.func.id == name
        and namespace.get(name, original) is original
    )


def _given_arguments(function: gast.FunctionDef, args: tuple, kwargs: dict) -> dict:
    """The parameters of ``function`` the call's arguments fill, by name."""
    arguments = function.args
    positional = [a.id for a in (*arguments.posonlyargs, *arguments.args)]
    given = dict(zip(positional, args))
    keywords = {a.id for a in (*arguments.args, *arguments.kwonlyargs)}
    given.update((k, v) for k, v in kwargs.items() if k in keywords)
    return given
