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
and more). For an assignment ``d = e1 op e2`` whose operand ``e1`` is such an array, ``d``
is bound to ``e1`` and then updated (``d op= e2``, or ``np.op(e2, d, out=d)`` when the
array is the right operand: the operands keep their order). The same holds again for
``e1``'s own operands: the whole chain of new arrays, down from the assignment, is one.

It is the same computation, element for element, only when:

* the operand is *fresh*: arithmetic or a NumPy ufunc on *plain* values (arrays of
  exactly ``np.ndarray``, NumPy scalars, Python numbers, as the code's names and its
  arguments show), so no name or other array can see its array;
* the probe saw the operation (``in_place.note_sum`` leaves what it saw on the node) with
  that operand an array of the result's shape and dtype, not an object array, so writing
  into it neither broadcasts it nor casts the result; and the other operand a plain value
  (an operand whose broadcasts specialisation may strip is not trusted: its shape changed);
* the operands evaluated after ``d`` is bound do not read ``d``; a left operand evaluated
  after the right one now is plain, so evaluating it later changes nothing.

Example::

    update_fresh_arrays(function, namespace, args, kwargs)  # after the optimiser
"""

from __future__ import annotations

import math

import gast

from s2sgrad.compiler.specialize.rewrites import numpy_name
from s2sgrad.compiler.specialize.value_types import REDUCTIONS, ValueTypes
from s2sgrad.compiler.syntax import attribute, call, load, names_read, nested_statements, store

__all__ = ["SMALL_ARRAY_BYTES", "update_fresh_arrays"]

_UFUNC_NAMES = {gast.Add: "add", gast.Sub: "subtract", gast.Mult: "multiply", gast.Div: "divide"}
_COMMUTATIVE = (gast.Add, gast.Mult)
_MAKING = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow, gast.MatMult)
# Below this size NumPy's allocation costs less than the statement an update adds (each
# runs in about the same time on arrays that small, measured on 1-8 KiB), so they stay.
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
    if not any(_candidate(s) for s in nested_statements(function.body)):
        return False
    rewrite = _Rewrite(ValueTypes(function, namespace, args, kwargs), numpy_name(namespace))
    changed = False
    for block in _blocks(function.body):
        index = 0
        while index < len(block):
            statements = rewrite.updates(block[index]) if _candidate(block[index]) else None
            if statements is None:
                index += 1
                continue
            block[index + 1 : index + 1] = statements
            index += 1 + len(statements)
            changed = True
    return changed


def _candidate(statement) -> bool:
    """``d = <an operation>``."""
    return (
        type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
        and type(statement.value) is gast.BinOp
        and type(statement.value.op) in _UFUNC_NAMES
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
