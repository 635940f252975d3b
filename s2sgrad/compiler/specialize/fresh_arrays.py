"""Arithmetic on an array just made writes its result into that array, as a careful person
writes it::

    dt2 = dshifted @ W2.T * (h > 0.0)     ─►    dt2 = dshifted @ W2.T
                                                dt2 *= h > 0.0
    dt4 = 200.0 * (x[1:] - t2 ** 2)       ─►    dt4 = t2 ** 2
                                                np.subtract(x[1:], dt4, out=dt4)
                                                dt4 *= 200.0

``a @ b * m`` allocates a new array for the product although ``a @ b``, made just before,
is dropped right after: writing the product into it saves the allocation and a pass over
memory the cache does not hold yet (NumPy does so by itself only for arrays of 256 KiB
and more). For an assignment ``d = e1 op e2`` whose operand ``e1`` is such a new array,
``d`` is bound to ``e1`` and then updated (``d op= e2``); when the new array is the right
operand, ``d = e2`` and ``np.op(e1, d, out=d)`` keep the operands in their order. The same
holds again for that operand's own operands: the chain of new arrays down from the
assignment is one array. An item assignment ``d[index] = e1 op e2`` whose item is a view
of the result's type makes the result there, ``np.op(e1, e2, out=d[index])``, instead of
apart and then copied.

It is the same computation, element for element, where the types of the code
(``value_types.py``: shapes and dtypes from the arguments', by NumPy's rules) show that:

* the array written into is *new*: made by arithmetic or a ufunc of values that are
  arrays of exactly ``np.ndarray``, NumPy scalars or Python numbers, so no name or other
  array sees it;
* it has the result's shape and dtype, so writing into it neither broadcasts it nor casts
  the result (the item written into likewise);
* the operands evaluated after ``d`` is bound do not read ``d`` (nor, for an item, the
  array ``d``); all operands have types, so nothing they run is the user's code, and a left
  operand evaluated after the right one now gives what it gave before.

Arrays under ``SMALL_ARRAY_BYTES`` stay as they are: there, the gain is small next to the
statements an update adds. Nor is code typed whose arguments' arrays hold less than that
in all: it rarely makes larger ones, and typing a long function costs a few milliseconds.

Example::

    update_fresh_arrays(function, namespace, args, kwargs)  # after the optimiser
"""

from __future__ import annotations

import math

import gast
import numpy as np

from s2sgrad.compiler.specialize.rewrites import numpy_name
from s2sgrad.compiler.specialize.value_types import REDUCTIONS, ValueTypes
from s2sgrad.compiler.syntax import attribute, call, load, names_read, nested_statements, store

__all__ = ["SMALL_ARRAY_BYTES", "update_fresh_arrays"]

_UFUNC_NAMES = {gast.Add: "add", gast.Sub: "subtract", gast.Mult: "multiply", gast.Div: "divide"}
_COMMUTATIVE = (gast.Add, gast.Mult)
_MAKING = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow, gast.MatMult)
# Below this size an operation's cost is mostly NumPy's call, not memory: writing in place
# saved about 6 % of a three-operation chain on 8-32 KiB, 14 % on 128 KiB; small arrays
# keep their one statement (a 4 x 8 MLP's chain would take four).
SMALL_ARRAY_BYTES = 32 * 1024


def update_fresh_arrays(
    function: gast.FunctionDef, namespace: dict, args: tuple, kwargs: dict
) -> bool:
    """Rewrite, in place, each assignment of ``function`` (not of functions inside it) as
    the module describes; ``args`` and ``kwargs`` are the call's, which give the
    parameters' types. True if any changed.

    Example::

        update_fresh_arrays(function, namespace, (x,), {})  # dt4 = t2 ** 2; dt4 *= 200.0
    """
    if _array_bytes(args, kwargs) < SMALL_ARRAY_BYTES:
        return False  # arrays this large are then rare: not worth typing the code
    if not any(_candidate(s) for s in nested_statements(function.body)):
        return False
    types = ValueTypes(function, namespace, args, kwargs)
    npn = numpy_name(namespace)
    if npn in types.local:
        return False  # the name NumPy goes by is the function's own
    rewrite = _Rewrite(types, npn)
    changed = False
    for block in list(_blocks(function.body)):
        index = 0
        while index < len(block):
            statement = block[index]
            if not _candidate(statement):
                index += 1
            elif type(statement.targets[0]) is gast.Subscript:
                written = rewrite.written_into_item(statement)
                if written is not None:
                    block[index] = written
                    changed = True
                index += 1
            else:
                statements = rewrite.updates(statement)
                if statements is None:
                    index += 1
                    continue
                block[index + 1 : index + 1] = statements
                index += 1 + len(statements)
                changed = True
    return changed


def _array_bytes(args: tuple, kwargs: dict) -> int:
    """The bytes of the arrays among the arguments (not inside containers)."""
    values = [*args, *kwargs.values()]
    return sum(v.nbytes for v in values if type(v) is np.ndarray)


def _candidate(statement) -> bool:
    """``d = <an operation>`` or ``d[index] = <an operation>``."""
    if not (
        type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.value) is gast.BinOp
        and type(statement.value.op) in _UFUNC_NAMES
    ):
        return False
    target = statement.targets[0]
    return type(target) is gast.Name or (
        type(target) is gast.Subscript and type(target.value) is gast.Name
    )


def _blocks(body: list[gast.stmt]):
    """``body`` and the statement lists nested in it (not those of functions inside)."""
    yield body
    for statement in nested_statements(body):
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if type(inner) is list:
                yield inner


class _Rewrite:
    def __init__(self, types: ValueTypes, numpy: str):
        self.types = types
        self.numpy = numpy

    def updates(self, statement: gast.Assign) -> list[gast.stmt] | None:
        """The updates to follow ``statement``, made ``d = <the fresh array>``, or None."""
        name = statement.targets[0].id
        updates = []
        node = statement.value
        while type(node) is gast.BinOp and type(node.op) in _UFUNC_NAMES:
            side = self._fresh_side(node, name)
            if side is None:
                break
            updates.append(gast.copy_location(self._update(node, side, name), statement))
            node = getattr(node, side)
        if not updates:
            return None
        statement.value = node
        return updates[::-1]

    def written_into_item(self, statement: gast.Assign) -> gast.stmt | None:
        """``np.op(a, b, out=d[index])`` for ``d[index] = a op b`` where ``d[index]`` is a
        view (a basic index of an array) of the result's type that ``a`` and ``b`` do not
        read: the result is made where the assignment would copy it to, not apart."""
        target, value = statement.targets[0], statement.value
        result = self.types.of(value)
        if result is None or not result.is_array or result.nbytes < SMALL_ARRAY_BYTES:
            return None
        if self.types.of(target) != result or target.value.id in names_read(value):
            return None
        view = gast.Subscript(value=load(target.value.id), slice=target.slice, ctx=gast.Load())
        ufunc = attribute(load(self.numpy), _UFUNC_NAMES[type(value.op)])
        written = call(ufunc, [value.left, value.right], {"out": view})
        return gast.copy_location(gast.Expr(value=written), statement)

    def _fresh_side(self, node: gast.BinOp, name: str) -> str | None:
        """The operand ``node`` may write its result into, if any."""
        result = self.types.of(node)
        if result is None or not result.is_array or result.nbytes < SMALL_ARRAY_BYTES:
            return None
        for side, other in (("left", node.right), ("right", node.left)):
            operand = getattr(node, side)
            if (
                _makes_array(operand)
                and self.types.of(operand) == result
                and name not in names_read(other)
            ):
                return side
        return None

    def _update(self, node: gast.BinOp, side: str, name: str) -> gast.stmt:
        """``d op= other`` when the array is the left operand (or a number the right one of
        ``+``/``*``), else ``np.op(left, d, out=d)``."""
        if side == "left":
            return gast.AugAssign(target=store(name), op=node.op, value=node.right)
        if type(node.op) in _COMMUTATIVE and _number(node.left):
            return gast.AugAssign(target=store(name), op=node.op, value=node.left)
        ufunc = attribute(load(self.numpy), _UFUNC_NAMES[type(node.op)])
        return gast.Expr(value=call(ufunc, [node.left, load(name)], {"out": load(name)}))


def _makes_array(node) -> bool:
    """Whether ``node``, of plain operands (it has a type), makes a new array: arithmetic,
    a ufunc (``ValueTypes`` types no other call that could return an operand)."""
    kind = type(node)
    if kind is gast.BinOp:
        return type(node.op) in _MAKING
    if kind is gast.UnaryOp:
        return type(node.op) in (gast.USub, gast.UAdd)
    return kind is gast.Call and not _is_reduction(node)


def _is_reduction(node: gast.Call) -> bool:
    return type(node.func) is gast.Attribute and node.func.attr in REDUCTIONS


def _number(node) -> bool:
    """A literal int or float other than NaN (``-2`` included)."""
    if type(node) is gast.UnaryOp and type(node.op) is gast.USub:
        node = node.operand
    return (
        type(node) is gast.Constant
        and type(node.value) in (int, float)
        and not math.isnan(node.value)
    )
