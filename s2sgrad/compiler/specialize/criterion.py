"""When code may be specialised to the argument shapes, and the signature it is kept under.

A function is only specialised when its shapes cannot depend on values: no branch or
loop test that reads array values, no subscript by a computed index (boolean masks),
and none of the functions whose output size depends on values (``np.nonzero`` …).

Example::

    shapes_follow_arguments(node.body, parsed.resolve)  # False for ``x[x > 0]``
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.syntax import names_read, walk

__all__ = ["shapes_follow_arguments", "signature"]

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
def shapes_follow_arguments(body: list[gast.stmt], resolve: Callable[[gast.expr], Any]) -> bool:
    """Whether every intermediate shape of ``body`` is fixed by the argument shapes.

    ``body`` is in A-normal form; ``resolve`` maps a function reference to its object.
    """
    nodes = [node for statement in body for node in walk(statement)]
    shape_only = _shape_only_names(nodes)
    for node in nodes:
        if isinstance(node, (gast.If, gast.While)):
            if not _is_shape_only(node.test, shape_only):
                return False
        elif isinstance(node, gast.For) and not _is_shape_only(node.iter, shape_only):
            return False
        elif isinstance(node, gast.Subscript):
            index_names = names_read(node.slice)
            if not index_names <= shape_only:
                return False
        elif isinstance(node, gast.Call):
            try:
                target = resolve(node.func)
            except Exception:
                target = None
            if any(target is f for f in _VALUE_SIZED) and not _selects(target, node):
                return False
    return True


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
