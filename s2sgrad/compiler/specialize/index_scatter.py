"""Index cotangents of integer-array indices, written as a person would.

``index_cotangent(g, x, index)`` makes zeros of ``x``'s shape, then adds ``g`` in at
``index`` with ``np.add.at`` (an element picked twice gets both contributions). Once the
probe saw the shapes and dtypes, the specialised code needs neither the helper nor ``x``
(only its shape, now a constant); and where the index provably picks each element once
(one of its arrays is a fresh ``np.arange(n)`` that broadcasting does not repeat, so each
position has its own first coordinate), plain assignment does what ``np.add.at`` does::

    dlogp = index_cotangent(np.broadcast_to(-0.0078125, (128,)), shifted - np.log(t6),
                            (np.arange(X.shape[0]), y))
    →   dlogp = np.zeros((128, 10))
        dlogp[np.arange(X.shape[0]), y] = -0.0078125

and else ``np.add.at(d, index, g)`` into the zeros. The index's arrays must all be
integers (a boolean mask stays with the helper).

Example::

    note_array_index(call_node, args, result)   # the specialiser, on what the probe saw
    changed = write_array_scatters(function, "np", namespace, is_pure)   # after optimising
"""

from __future__ import annotations

from collections.abc import Callable

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.annotations import ARRAY_INDEX, annotate, annotation
from s2sgrad.compiler.specialize.broadcasts import resolve
from s2sgrad.compiler.specialize.seen import Seen
from s2sgrad.compiler.syntax import (
    attribute,
    call,
    call_bound_to_a_name,
    constant,
    load,
    names_read,
    store,
    walk,
)

__all__ = ["note_array_index", "write_array_scatters"]

_INTEGERS = frozenset(np.typecodes["AllInteger"])
_DTYPES = {  # the cotangent's dtype, as the code names it (None: np.zeros' own float64)
    "e": "float16",
    "f": "float32",
    "d": None,
    "g": "longdouble",
    "F": "complex64",
    "D": "complex128",
    "G": "clongdouble",
}


def note_array_index(node: gast.Call, args: tuple[Seen, ...], result: Seen) -> None:
    """Leave on ``index_cotangent``'s ``node`` what a rewrite needs (the result's shape and
    dtype, the index's parts), when its index holds integer arrays and nothing else
    advanced; the probe saw ``args`` and ``result``."""
    _, x, index = args
    if x.kind != "array" or result.kind != "array" or result.dtype not in _DTYPES:
        return
    if index.kind == "array":
        parts: tuple = (("array", index.shape, index.dtype),)
    elif index.kind == "array index":
        parts = index.value
    else:
        return
    arrays = [p for p in parts if type(p) is tuple and p[0] == "array"]
    if all(dtype in _INTEGERS for _, _, dtype in arrays):
        annotate(node, ARRAY_INDEX, (result.shape, result.dtype, parts))


def write_array_scatters(
    function: gast.FunctionDef, npn: str, namespace: dict, is_pure: Callable[[gast.Call], bool]
) -> bool:
    """Rewrite each ``d = index_cotangent(g, x, index)`` that :func:`note_array_index`
    annotated into zeros and an assignment or ``np.add.at`` (NumPy named ``npn``); say
    whether any was."""
    uses = _IndexUses(function, namespace)
    changed = False

    def rewrite(statements: list) -> list:
        nonlocal changed
        result = []
        for statement in statements:
            for field in ("body", "orelse"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                    setattr(statement, field, rewrite(inner))
            lines = _scatter(statement, npn, namespace, is_pure, uses)
            if lines is None:
                result.append(statement)
            else:
                result.extend(lines)
                changed = True
        return result

    function.body = rewrite(function.body)
    return changed


def _scatter(statement, npn: str, namespace: dict, is_pure, uses: _IndexUses):
    node = call_bound_to_a_name(statement)
    if node is None:
        return None
    facts = annotation(node, ARRAY_INDEX)
    if facts is None or len(node.args) != 3 or node.keywords:
        return None
    if resolve(node.func, namespace) is not runtime.index_cotangent:
        return None
    g, x, index = node.args
    target = statement.targets[0].id
    if target in names_read(g) | names_read(index) or not _droppable(x, is_pure):
        return None
    shape, dtype, parts = facts
    elements = _index_elements(index)
    distinct = elements is not None and _distinct(elements, parts, uses)
    zeros_arguments = [gast.Tuple(elts=[constant(n) for n in shape], ctx=gast.Load())]
    dtype_name = _DTYPES[dtype]
    if dtype_name is not None:
        zeros_arguments.append(attribute(load(npn), dtype_name))
    lines: list[gast.stmt] = [
        gast.Assign(
            targets=[store(target)],
            value=call(attribute(load(npn), "zeros"), zeros_arguments),
            type_comment=None,
        )
    ]
    if distinct:
        place = gast.Subscript(value=load(target), slice=_subscript(index), ctx=gast.Store())
        value = _broadcast_number(g, namespace)
        lines.append(gast.Assign(targets=[place], value=value, type_comment=None))
    else:
        add_at = attribute(attribute(load(npn), "add"), "at")
        lines.append(gast.Expr(value=call(add_at, [load(target), index, g])))
    for line in lines:
        gast.copy_location(line, statement)
    return lines


def _droppable(node: gast.expr, is_pure) -> bool:
    """Whether leaving ``node`` unevaluated changes nothing: names, numbers, operators and
    pure calls (it was evaluated only for its shape)."""
    for part in walk(node):
        kind = type(part)
        if kind is gast.Call:
            if not is_pure(part):
                return False
        elif kind not in _HARMLESS and not isinstance(
            part, (gast.operator, gast.unaryop, gast.cmpop, gast.expr_context)
        ):
            return False
    return True


_HARMLESS = frozenset(
    [
        gast.Name,
        gast.Constant,
        gast.BinOp,
        gast.UnaryOp,
        gast.Compare,
        gast.Attribute,
        gast.Subscript,
        gast.Tuple,
        gast.Slice,
        gast.keyword,
    ]
)


def _index_elements(index: gast.expr) -> list | None:
    """The parts of an index as written: ``(a, y)``, ``np.s_[:, a, y]``, or one array."""
    if _is_s_(index):
        index = index.slice
    if type(index) is gast.Tuple:
        return list(index.elts)
    if type(index) in (gast.Name, gast.Call):
        return [index]
    return None


def _subscript(index: gast.expr) -> gast.expr:
    """``np.s_[1:, a]`` back to the subscript ``1:, a`` it was written as."""
    return index.slice if _is_s_(index) else index


def _is_s_(index: gast.expr) -> bool:
    return (
        type(index) is gast.Subscript
        and type(index.value) is gast.Attribute
        and index.value.attr == "s_"
    )


def _distinct(elements: list, parts: tuple, uses: _IndexUses) -> bool:
    """Whether the index picks each element once: an ``np.arange(n)`` among its arrays
    (made afresh, never changed) whose shape broadcasting with the other arrays and
    integers keeps (a slice, ``None`` or ``...`` never repeats an element)."""
    if len(elements) != len(parts):
        return False
    advanced = []
    ranges = []
    for element, part in zip(elements, parts):
        if type(part) is tuple and part[0] == "array":
            advanced.append(part[1])
            if uses.fresh_range(element):
                ranges.append(part[1])
        elif type(part) is int:
            advanced.append(())
    if not ranges:
        return False
    try:
        shape = np.broadcast_shapes(*advanced)
    except ValueError:
        return False
    return any(len(own) == 1 and own == shape for own in ranges)


def _broadcast_number(g: gast.expr, namespace: dict) -> gast.expr:
    """``np.broadcast_to(c, s)`` of a number ``c`` is ``c`` when assigned into the place it
    was shaped for (assignment broadcasts it the same way)."""
    if (
        type(g) is gast.Call
        and len(g.args) == 2
        and not g.keywords
        and resolve(g.func, namespace) is np.broadcast_to
        and _is_number(g.args[0])
    ):
        return g.args[0]
    return g


def _is_number(node: gast.expr) -> bool:
    if type(node) is gast.UnaryOp and isinstance(node.op, (gast.USub, gast.UAdd)):
        node = node.operand
    return type(node) is gast.Constant and type(node.value) in (int, float)


class _IndexUses:
    """Which names hold a fresh ``np.arange(n)`` that nothing can change: bound once, by
    that call, and read only as (a part of) an index."""

    def __init__(self, function: gast.FunctionDef, namespace: dict):
        self._function = function
        self._namespace = namespace
        self._ranges: dict[str, bool] | None = None

    def fresh_range(self, element: gast.expr) -> bool:
        if type(element) is gast.Call:
            return self._is_range(element)
        if type(element) is not gast.Name:
            return False
        if self._ranges is None:
            self._ranges = self._find_ranges()
        return self._ranges.get(element.id, False)

    def _is_range(self, node: gast.Call) -> bool:
        return (
            len(node.args) == 1
            and not node.keywords
            and type(node.args[0]) is not gast.Starred
            and resolve(node.func, self._namespace) is np.arange
        )

    def _find_ranges(self) -> dict[str, bool]:
        bindings: dict[str, int] = {}
        ranges: dict[str, bool] = {}
        index_reads: set[int] = set()
        reads: list[gast.Name] = []
        for node in gast.walk(self._function):
            kind = type(node)
            if kind is gast.Name:
                if type(node.ctx) is gast.Load:
                    reads.append(node)
                else:
                    bindings[node.id] = bindings.get(node.id, 0) + 1
            elif kind is gast.Subscript:
                inner = node.slice
                for part in inner.elts if type(inner) is gast.Tuple else [inner]:
                    index_reads.add(id(part))
            elif kind in (gast.Global, gast.Nonlocal):
                for name in node.names:
                    bindings[name] = bindings.get(name, 0) + 2
            elif (
                kind is gast.Assign
                and len(node.targets) == 1
                and type(node.targets[0]) is gast.Name
                and type(node.value) is gast.Call
                and self._is_range(node.value)
            ):
                ranges[node.targets[0].id] = True
            elif (
                kind is gast.Call
                and len(node.args) == 3
                and _takes_index(resolve(node.func, self._namespace))
            ):
                index = node.args[2]
                parts = index.elts if type(index) is gast.Tuple else [index]
                index_reads.update(id(part) for part in parts)
        for name in list(ranges):
            if bindings.get(name) != 1:
                del ranges[name]
        for read in reads:
            if read.id in ranges and id(read) not in index_reads:
                del ranges[read.id]
        return ranges


def _takes_index(function) -> bool:
    """``index_cotangent`` and ``np.add.at`` read their third argument as an index and
    change nothing in it."""
    if function is runtime.index_cotangent:
        return True
    return getattr(function, "__self__", None) is np.add and function.__name__ == "at"
