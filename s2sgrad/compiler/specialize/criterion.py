"""When code may be specialised to the argument shapes, and the signature it is kept under.

A function is only specialised when its shapes cannot depend on values: no branch or
loop test that reads array values unless every shape is the same on each path
(``path_shapes.py``: ``while np.linalg.norm(b) < 1000: b = b * 2``), no subscript by a
computed index (boolean masks), and none of the functions whose output size depends on
values (``np.nonzero`` …).
An index whose values are integers sets the shape of what it picks by its own shape,
whatever those values: ``logp[np.arange(n), y]`` may be specialised when ``y`` is a
parameter, whose dtype the probe checks (``index_parameters``; the signature keeps it).

Example::

    shapes_follow_arguments(node.body, parsed.resolve)  # False for ``x[x > 0]``
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.plain_values import writes_nothing
from s2sgrad.compiler.specialize.path_shapes import (
    assigned_values,
    fixed_shapes,
    names_assigned_in,
)
from s2sgrad.compiler.syntax import names_read, walk
from s2sgrad.pytrees import registered_node

__all__ = ["index_parameters", "integer_index", "shapes_follow_arguments", "signature"]

_VALUE_SIZED = {
    np.nonzero,
    np.flatnonzero,
    np.argwhere,
    np.unique,
    np.extract,
    np.compress,
    np.trim_zeros,
    np.where,
}
_VALUE_SIZED_IDS = frozenset(map(id, _VALUE_SIZED))  # the set keeps each alive: ids hold


_SHAPE_QUERIES = {"len", "range", "int", "min", "max", "abs", "shape", "ndim", "size"}


def signature(args: tuple, kwargs: dict) -> tuple:
    """A hashable description of argument shapes, dtypes and structure: the key of the code
    a call runs (compiler/cache.py). An array argument is ``(shape, dtype, class)``, which
    a transform's call reads with one ``attrgetter`` per argument.

    Example::

        signature((np.ones((2, 3)), 1.0), {})  # (((2, 3), dtype('float64'), ndarray), float)
    """
    parts = tuple(
        [(a.shape, a.dtype, _NDARRAY) if type(a) is np.ndarray else _describe(a) for a in args]
    )
    if kwargs:
        parts += tuple((k, _describe(v)) for k, v in sorted(kwargs.items()))
    return parts


def _describe(value: Any):
    if type(value) is np.ndarray:
        if value.ndim == 0 and value.dtype.kind in "iub":
            return ((), value.dtype, value.item())  # an integer may set a shape
        return (value.shape, value.dtype)
    if isinstance(value, (bool, int, np.integer, str)) or value is None:
        return (type(value), value)  # integers may set shapes, so their values count
    if isinstance(value, dict):
        return ("dict", tuple((k, _describe(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_describe(v) for v in value))
    if isinstance(value, np.generic):
        return ((), value.dtype, "scalar")
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):  # a duck array (a Dask array): its shape sets the code's
        return (shape, getattr(value, "dtype", None), type(value))
    node = registered_node(value)  # a dataclass, a registered class: its arrays' shapes too
    if node is not None:
        return (type(value), tuple(_describe(child) for child in node[0]))
    kind = type(value)
    if kind is types.FunctionType:  # fn(x) of a function given: the shape of its result is
        return (kind, value.__code__)  # its code's (a lambda made anew each call: one code)
    if kind in _LIBRARY_FUNCTIONS:  # np.sort or np.linalg.norm, np.sin or np.add: by identity
        return (kind, value)
    if kind is types.MethodType:  # model.loss given: its function's and its object's
        return (kind, _describe(value.__func__), _describe(value.__self__))
    if kind is functools.partial:  # partial(np.sum, axis=0): its function's and arguments'
        keywords = tuple((k, _describe(v)) for k, v in value.keywords.items())
        return (kind, _describe(value.func), tuple(map(_describe, value.args)), keywords)
    arrays = _array_attributes(value, 3)
    return (kind, arrays) if arrays else kind


def _array_attributes(value: Any, depth: int) -> tuple:
    """The shapes and dtypes of the arrays an object holds as attributes, in lists, tuples
    and dicts of arrays there, and in the objects it holds (``depth`` deep): a layer's code
    computes with shapes that follow them. Numbers are left out: a counter the object
    keeps would make each call a new signature."""
    attributes = getattr(value, "__dict__", None)
    if depth == 0 or type(attributes) is not dict or isinstance(value, _NOT_OBJECTS):
        return ()
    found: list[tuple] = []
    for name, item in attributes.items():
        kind = type(item)
        if kind is np.ndarray:
            found.append((name, item.shape, item.dtype))
        elif kind is list or kind is tuple or kind is dict:
            items = item.values() if kind is dict else item
            if len(item) <= 64 and all(type(a) is np.ndarray for a in items):
                found.append((name, tuple((a.shape, a.dtype) for a in items)))
            elif len(item) <= 64 and kind is not dict:
                inner = tuple(_array_attributes(a, depth - 1) for a in item)
                if any(inner):
                    found.append((name, inner))
        else:
            inner = _array_attributes(item, depth - 1)
            if inner:
                found.append((name, inner))
    return tuple(found)


_NOT_OBJECTS = (type, types.ModuleType, types.FunctionType, types.MethodType, functools.partial)


_LIBRARY_FUNCTIONS = frozenset((type(np.sort), np.ufunc, types.BuiltinFunctionType))


_NDARRAY = np.ndarray


# static criterion ------------------------------------------------------------------------
def shapes_follow_arguments(
    body: list[gast.stmt],
    resolve: Callable[[gast.expr], Any],
    parameters: frozenset[str] | set[str] = frozenset(),
) -> bool:
    """Whether every intermediate shape of ``body`` is fixed by the argument shapes.

    ``body`` is in A-normal form; ``resolve`` maps a function reference to its object;
    ``parameters`` may index arrays when the probe finds them integers
    (:func:`integer_index`).
    """
    outline = _Outline.of_body(body)
    shape_only, on_values = _shape_only_names(outline), set[str]()
    assigned_in: dict[int, frozenset[str]] = {}
    while True:  # a name a branch on values assigns holds what the path gave it
        regions = [n for n in outline.regions if not _is_shape_only(n.test, shape_only)]
        tainted = {name for region in regions for name in names_assigned_in(region, assigned_in)}
        if tainted <= on_values:
            break
        on_values |= tainted
        shape_only = _shape_only_names(outline) - on_values
    indices = shape_only | _integer_index_names(outline, shape_only, resolve, parameters)
    indices -= on_values
    everywhere = None
    for region in outline.regions:
        if _is_shape_only(region.test, shape_only):
            continue
        if everywhere is None:  # one walk, not one each
            everywhere = assigned_values(walk(gast.Module(body=list(body), type_ignores=[]))[1:])
        if not fixed_shapes(region, body, resolve, everywhere):
            return False
    for loop in outline.loops:
        if not _is_shape_only(loop.iter, shape_only):
            return False
    for subscript in outline.subscripts:
        if not names_read(subscript.slice) <= indices:
            return False
    for call in outline.calls:
        try:
            target = resolve(call.func)
        except Exception:
            target = None
        if id(target) in _VALUE_SIZED_IDS and not _selects(target, call):
            return False
    return True


@dataclass
class _Outline:
    """The nodes of a body the criterion reads, sorted by kind in one pass over them."""

    named: list[gast.Assign] = field(default_factory=list)  # ``name = value``
    unpacked: list[gast.Assign] = field(default_factory=list)  # ``a, b = value`` …
    loops: list[gast.For] = field(default_factory=list)
    regions: list[gast.If | gast.While] = field(default_factory=list)
    subscripts: list[gast.Subscript] = field(default_factory=list)
    calls: list[gast.Call] = field(default_factory=list)
    stored: list[gast.Name] = field(default_factory=list)  # names in a context but Load

    @classmethod
    def of_body(cls, body: list[gast.stmt]) -> _Outline:
        """The outline of ``body``'s nodes: :meth:`of` its walk, but that ``name = value``
        with a plain value (``plain_values.writes_nothing``: no subscript, no block, no
        call but the value itself) is sorted without a walk."""
        outline = cls()
        others = []
        for statement in body:
            if type(statement) is gast.Assign and len(statement.targets) == 1:
                target, value = statement.targets[0], statement.value
                plain = type(target) is gast.Name and target.annotation is None
                if plain and writes_nothing(value):
                    outline.named.append(statement)
                    if type(target.ctx) is not gast.Load:
                        outline.stored.append(target)
                    if type(value) is gast.Call:
                        outline.calls.append(value)
                    continue
            others.append(statement)
        if others:
            cls.of(walk(gast.Module(body=others, type_ignores=[]))[1:], outline)
        return outline

    @classmethod
    def of(cls, nodes: list[gast.AST], outline: _Outline | None = None) -> _Outline:
        """The outline of ``nodes``, added to ``outline`` when given."""
        outline = cls() if outline is None else outline
        name, load = gast.Name, gast.Load
        for node in nodes:
            kind = type(node)
            if kind is name:
                if type(node.ctx) is not load:
                    outline.stored.append(node)
            elif kind is gast.Call:
                outline.calls.append(node)
            elif kind is gast.Assign:
                if type(node.targets[0]) is name:
                    outline.named.append(node)
                else:
                    outline.unpacked.append(node)
            elif kind is gast.Subscript:
                outline.subscripts.append(node)
            elif kind is gast.If or kind is gast.While:
                outline.regions.append(node)
            elif kind is gast.For:
                outline.loops.append(node)
        return outline


# integer-valued, shaped by their arguments: as an index, their values never set a shape
_INTEGER_VALUED = (np.arange, np.argmax, np.argmin, np.argsort)
_INTEGER_VALUED_IDS = frozenset(map(id, _INTEGER_VALUED))


def _integer_index_names(outline: _Outline, shape_only: set[str], resolve, parameters) -> set[str]:
    """Names that hold integers whatever the values (``np.arange(n)``, ``np.argmax(x,
    axis=1)``), and the parameters (checked by the probe), never written in the body."""
    values: dict[str, list[gast.expr | None]] = {}  # None: written some other way
    assigned: set[int] = set()
    for node in outline.named:
        values.setdefault(node.targets[0].id, []).append(node.value)
        assigned.add(id(node.targets[0]))
    for name in outline.stored:
        if id(name) not in assigned:
            values.setdefault(name.id, []).append(None)
    names = {name for name in parameters if name not in values}
    for name, written in values.items():
        for value in written:  # all(...), without a generator per name
            if type(value) is not gast.Call or not _integer_valued(value, shape_only, resolve):
                break
        else:
            names.add(name)
    return names


def _integer_valued(value, shape_only: set[str], resolve) -> bool:
    """``np.arange(n)``, ``np.argmax(x, axis=1)``: integers whose number is set by shapes
    (arguments after the first, and keywords, shape-only)."""
    if not isinstance(value, gast.Call) or not value.args:
        return False
    try:
        target = resolve(value.func)
    except Exception:
        return False
    if id(target) not in _INTEGER_VALUED_IDS:
        return False
    settings = [*value.args[1:], *(k.value for k in value.keywords)]
    if target is np.arange:
        settings.append(value.args[0])
    return all(_is_shape_only(s, shape_only) for s in settings)


def index_parameters(
    function: gast.FunctionDef, subscripts: list[gast.Subscript] | None = None
) -> set[str]:
    """The parameters of ``function`` that index an array (``x[y]``): specialised code is
    only right for them where :func:`integer_index` holds. ``subscripts``, when given,
    are all the subscripts in ``function`` (found by a walk already made)."""
    parameters = {a.id for a in function.args.args + function.args.kwonlyargs}
    if subscripts is None:
        subscripts = [node for node in walk(function) if isinstance(node, gast.Subscript)]
    used = set()
    for node in subscripts:
        used |= names_read(node.slice) & parameters
    return used


def integer_index(value: Any) -> bool:
    """Whether ``value``, as an index, picks a number of elements its shape sets: an
    integer, an integer array, or a list or tuple of integers (not booleans, which mask).

    Example::

        integer_index(np.array([0, 2]))        # True
        integer_index(np.array([True, False])) # False: a mask's size is its values'
    """
    if type(value) is np.ndarray:
        return value.dtype.kind in "iu"
    if isinstance(value, (list, tuple)):
        return all(type(v) is int or isinstance(v, np.integer) for v in value)
    return type(value) is int or isinstance(value, np.integer)


def _selects(target: Any, call: gast.Call) -> bool:
    """``np.where(condition, a, b)`` picks elements; only ``np.where(condition)`` has a
    value-dependent size."""
    return target is np.where and len(call.args) == 3


def _shape_only_names(outline: _Outline) -> set[str]:
    """Names whose values depend only on shapes and constants (never on array values),
    given the outline of a function body."""
    candidates: dict[str, list[gast.expr]] = {}
    loop_targets: dict[str, list[gast.expr]] = {}  # a name's every loop, in no set order
    for node in outline.named:
        candidates.setdefault(node.targets[0].id, []).append(node.value)
    for node in outline.unpacked:
        for target in walk(node.targets[0]):
            if isinstance(target, gast.Name) and isinstance(target.ctx, gast.Store):
                candidates.setdefault(target.id, []).append(gast.Constant(value=None, kind=None))
                candidates[target.id].append(node.value)
    for node in outline.loops:
        if isinstance(node.target, gast.Name):
            loop_targets.setdefault(node.target.id, []).append(node.iter)
    known: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in candidates.items():
            if name in known:
                continue
            for value in values:  # all(...), without a generator per name
                if not _is_shape_only(value, known):
                    break
            else:
                known.add(name)
                changed = True
        for name, iterables in loop_targets.items():
            if (
                name not in known
                and name not in candidates
                and all(_is_shape_only(iterable, known) for iterable in iterables)
            ):
                known.add(name)
                changed = True
    return known


def _is_shape_only(node: gast.expr, known: set[str]) -> bool:
    kind = type(node)  # the commonest kinds by their type (no node class has subclasses)
    if kind is gast.Name:
        return node.id in known
    if kind is gast.Constant:
        return True
    if kind is gast.BinOp:
        left, right = node.left, node.right
        if type(left) is gast.Name:  # a name: looked up here, without a call
            if left.id not in known:
                return False
        elif not _is_shape_only(left, known):
            return False
        if type(right) is gast.Name:
            return right.id in known
        return _is_shape_only(right, known)
    if kind is gast.Call:
        func = node.func
        name = func.attr if type(func) is gast.Attribute else getattr(func, "id", "")
        if name in ("len", "shape", "ndim", "size"):
            return True
        return name in _SHAPE_QUERIES and all(_is_shape_only(a, known) for a in node.args)
    if isinstance(node, gast.Attribute):
        return node.attr in ("shape", "ndim", "size") or _is_shape_only(node.value, known)
    if isinstance(node, gast.UnaryOp):
        return _is_shape_only(node.operand, known)
    if isinstance(node, gast.Compare):
        return all(_is_shape_only(n, known) for n in [node.left, *node.comparators])
    if isinstance(node, gast.BoolOp):
        return all(_is_shape_only(v, known) for v in node.values)
    if isinstance(node, (gast.Tuple, gast.List)):
        return all(_is_shape_only(e, known) for e in node.elts)
    if isinstance(node, gast.Subscript):
        return _is_shape_only(node.value, known) and _is_shape_only(node.slice, known)
    if isinstance(node, gast.Slice):
        return all(
            p is None or _is_shape_only(p, known) for p in (node.lower, node.upper, node.step)
        )
    return False
