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

from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.specialize.path_shapes import (
    assigned_values,
    fixed_shapes,
    names_assigned_in,
)
from s2sgrad.compiler.syntax import names_read, walk

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
    return type(value)


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
    nodes = [node for statement in body for node in walk(statement)]
    shape_only, on_values = _shape_only_names(nodes), set[str]()
    assigned_in: dict[int, frozenset[str]] = {}
    while True:  # a name a branch on values assigns holds what the path gave it
        regions = [n for n in nodes if _tests_values(n, shape_only)]
        tainted = {name for region in regions for name in names_assigned_in(region, assigned_in)}
        if tainted <= on_values:
            break
        on_values |= tainted
        shape_only = _shape_only_names(nodes) - on_values
    indices = shape_only | _integer_index_names(nodes, shape_only, resolve, parameters)
    indices -= on_values
    everywhere = None
    for node in nodes:
        if isinstance(node, (gast.If, gast.While)):
            if _is_shape_only(node.test, shape_only):
                continue
            everywhere = assigned_values(nodes) if everywhere is None else everywhere
            if not fixed_shapes(node, body, resolve, everywhere):
                return False
        elif isinstance(node, gast.For) and not _is_shape_only(node.iter, shape_only):
            return False
        elif isinstance(node, gast.Subscript):
            if not names_read(node.slice) <= indices:
                return False
        elif isinstance(node, gast.Call):
            try:
                target = resolve(node.func)
            except Exception:
                target = None
            if any(target is f for f in _VALUE_SIZED) and not _selects(target, node):
                return False
    return True


def _tests_values(node: gast.AST, shape_only: set[str]) -> bool:
    return isinstance(node, (gast.If, gast.While)) and not _is_shape_only(node.test, shape_only)


# integer-valued, shaped by their arguments: as an index, their values never set a shape
_INTEGER_VALUED = (np.arange, np.argmax, np.argmin, np.argsort)


def _integer_index_names(
    nodes: list[gast.AST], shape_only: set[str], resolve, parameters
) -> set[str]:
    """Names that hold integers whatever the values (``np.arange(n)``, ``np.argmax(x,
    axis=1)``), and the parameters (checked by the probe), never written in ``nodes``."""
    values: dict[str, list[gast.expr | None]] = {}  # None: written some other way
    assigned: set[int] = set()
    for node in nodes:
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            values.setdefault(node.targets[0].id, []).append(node.value)
            assigned.add(id(node.targets[0]))
    for node in nodes:
        if type(node) is gast.Name and type(node.ctx) is not gast.Load and id(node) not in assigned:
            values.setdefault(node.id, []).append(None)
    names = {name for name in parameters if name not in values}
    for name, written in values.items():
        if all(_integer_valued(v, shape_only, resolve) for v in written):
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
    if not any(target is f for f in _INTEGER_VALUED):
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


def _shape_only_names(nodes: list[gast.AST]) -> set[str]:
    """Names whose values depend only on shapes and constants (never on array values),
    given every node of a function body."""
    candidates: dict[str, list[gast.expr]] = {}
    loop_targets: dict[str, gast.expr] = {}
    for node in nodes:
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            candidates.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, gast.Assign):
            for target in walk(node.targets[0]):
                if isinstance(target, gast.Name) and isinstance(target.ctx, gast.Store):
                    candidates.setdefault(target.id, []).append(
                        gast.Constant(value=None, kind=None)
                    )
                    candidates[target.id].append(node.value)
        elif isinstance(node, gast.For) and isinstance(node.target, gast.Name):
            loop_targets[node.target.id] = node.iter
    known: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in candidates.items():
            if name not in known and all(_is_shape_only(v, known) for v in values):
                known.add(name)
                changed = True
        for name, iterable in loop_targets.items():
            if name not in known and name not in candidates and _is_shape_only(iterable, known):
                known.add(name)
                changed = True
    return known


def _is_shape_only(node: gast.expr, known: set[str]) -> bool:
    if isinstance(node, gast.Constant):
        return True
    if isinstance(node, gast.Name):
        return node.id in known
    if isinstance(node, gast.Attribute):
        return node.attr in ("shape", "ndim", "size") or _is_shape_only(node.value, known)
    if isinstance(node, (gast.BinOp,)):
        return _is_shape_only(node.left, known) and _is_shape_only(node.right, known)
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
    if isinstance(node, gast.Call):
        func = node.func
        name = func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", "")
        if name in ("len", "shape", "ndim", "size"):
            return True
        return name in _SHAPE_QUERIES and all(_is_shape_only(a, known) for a in node.args)
    return False
