"""Shifts that cancel: ``x - np.max(x, axis=k, keepdims=True)`` in a stable softmax.

A numerically stable softmax or log-softmax subtracts each row's maximum ``m`` before
``np.exp``; the result does not depend on ``m`` at all (``exp(x - m) / sum(exp(x - m))`` is
``exp(x) / sum(exp(x))``). The derivative through ``m`` is then exactly zero, and the
backward sweep need not compute it: no comparison of ``x`` with its maximum, no sums of the
hits. This module proves that cancellation on the A-normal-form body, symbolically: each
value computed from ``m`` is tracked as either ``base + a * m`` (*additive*, coefficient
``a``) or ``base * exp(a * m)`` (*multiplicative*), where ``base`` does not depend on ``m``.
A value whose coefficient comes out as 0 is independent of ``m``. When every value built
from ``m`` ends independent of it, ``m`` carries no derivative.

Anything the tracking does not understand (another operation on a value built from ``m``,
a different axis, a use inside a loop or branch, a value returned) leaves ``m``
differentiated as before, so the proof can only make code shorter, never a gradient wrong.

Example::

    t6 = np.max(scores, axis=1, keepdims=True)
    t7 = scores - t6        # additive, a = -1
    e = np.exp(t7)          # multiplicative, a = -1
    t8 = np.sum(e, axis=1, keepdims=True)  # multiplicative, a = -1 (same axis, kept)
    weights = e / t8        # a = 0: independent of t6, so t6 needs no derivative
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.syntax import names_read, nested_statements, walk

__all__ = ["cancelled_shifts"]

_ADDITIVE = "additive"
_MULTIPLICATIVE = "multiplicative"
_MAXIMA = (np.max, np.amax)

# (kind, coefficient): the value is base + a*m, or base * exp(a*m)
_Form = tuple[str, int]


def cancelled_shifts(body: list[gast.stmt], resolve: Callable[[gast.expr], Any]) -> set[int]:
    """The ids of the ``np.max(x, axis=k, keepdims=True)`` calls in ``body`` (an A-normal-form
    function body) whose value provably does not change what the function returns.

    ``resolve(node)`` is the object a function reference names (``np.max`` for ``np.max``).

    Example::

        cancelled_shifts(anf_body_of_softmax, parsed.resolve)  # {id(the np.max call)}
    """
    shifts = [(i, shift) for i, s in enumerate(body) if (shift := _shift(s, resolve)) is not None]
    if not shifts:  # no maximum taken: nothing to look through
        return set()
    writes: Counter = Counter()
    # each statement's targets and reads, by id: found once, asked again for each shift
    targets_of: dict[int, list[str]] = {}
    reads_of: dict[int, set[str]] = {}
    for statement in nested_statements(body):
        targets_of[id(statement)] = _targets(statement)
        writes.update(targets_of[id(statement)])
    top_level = {id(s) for s in body}
    readers: dict[str, list[gast.stmt]] = {}
    for statement in nested_statements(body):
        reads_of[id(statement)] = names_read(statement)
        for name in reads_of[id(statement)]:
            readers.setdefault(name, []).append(statement)
    found = set()
    for index, shift in shifts:
        statement = body[index]
        if writes[statement.targets[0].id] != 1:
            continue
        facts = (writes, readers, top_level, targets_of, reads_of)
        if _cancels(body, index, shift, resolve, facts):
            found.add(id(statement.value))
    return found


class _Shift:
    """``name = np.max(source, axis=axis, keepdims=True)``."""

    def __init__(self, name: str, source: str, axis: int):
        self.name, self.source, self.axis = name, source, axis


def _shift(statement: gast.stmt, resolve) -> _Shift | None:
    if not _simple_assignment(statement):
        return None
    reduction = _reduction(statement.value, resolve, _MAXIMA)
    if reduction is None:
        return None
    source, axis = reduction
    return _Shift(statement.targets[0].id, source, axis)


def _cancels(body, index, shift: _Shift, resolve, facts) -> bool:
    writes, readers, top_level, targets_of, reads_of = facts
    forms: dict[str, _Form] = {shift.name: (_ADDITIVE, 1)}
    if any(shift.source in targets_of[id(s)] for s in nested_statements(body[index + 1 :])):
        return False  # the source rebound: ``source - m`` may no longer have its shape
    for statement in body[index + 1 :]:
        read = reads_of[id(statement)] & forms.keys()
        if not read:
            continue
        if not _simple_assignment(statement) or writes[statement.targets[0].id] != 1:
            return False
        form = _form(statement.value, forms, shift, resolve)
        if form is None:
            return False
        if form[1] != 0:
            forms[statement.targets[0].id] = form
    # every reader of a value built from the maximum must be one of the statements above
    return all(id(reader) in top_level for name in forms for reader in readers.get(name, ()))


def _form(value: gast.expr, forms: dict[str, _Form], shift: _Shift, resolve) -> _Form | None:
    """The form of ``value`` in terms of the maximum, or None where it is not understood."""
    if isinstance(value, gast.BinOp):
        return _binary(value, forms, shift)
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.USub):
        operand = _operand_form(value.operand, forms, shift)
        if operand is None or operand is _CONSTANT:
            return None
        kind, a = operand
        return (kind, -a) if kind == _ADDITIVE else operand
    if not isinstance(value, gast.Call):
        return None
    if len(value.args) == 1 and not value.keywords and isinstance(value.args[0], gast.Name):
        function = resolve(value.func)
        operand = forms.get(value.args[0].id)
        if operand is None:
            return None
        if function is np.exp and operand[0] == _ADDITIVE:
            return (_MULTIPLICATIVE, operand[1])
        if function is np.log and operand[0] == _MULTIPLICATIVE:
            return (_ADDITIVE, operand[1])
        return None
    for functions, kind in (((np.sum,), _MULTIPLICATIVE), (_MAXIMA, _ADDITIVE)):
        reduction = _reduction(value, resolve, functions)
        if reduction is not None:
            source, axis = reduction
            operand = forms.get(source)
            same_axis = axis == shift.axis
            # the maximum is constant along the reduced axis: it factors out of the
            # reduction (a sum of base*exp(a*m), a maximum of base + a*m)
            return operand if operand is not None and operand[0] == kind and same_axis else None
    return None


_CONSTANT = ("constant", 0)


def _operand_form(operand: gast.expr, forms, shift: _Shift) -> _Form | None:
    """An operand's form; ``_CONSTANT`` for a number; ``(additive, 0)`` for the maximum's
    own source (the only array not built from it that keeps the shapes right)."""
    if isinstance(operand, gast.Constant) and type(operand.value) in (int, float):
        return _CONSTANT
    if isinstance(operand, gast.Name):
        if operand.id in forms:
            return forms[operand.id]
        if operand.id == shift.source:
            return (_ADDITIVE, 0)
    return None


def _binary(value: gast.BinOp, forms, shift: _Shift) -> _Form | None:
    left = _operand_form(value.left, forms, shift)
    right = _operand_form(value.right, forms, shift)
    if left is None or right is None:
        return None
    op = type(value.op)
    if left is _CONSTANT or right is _CONSTANT:
        other = right if left is _CONSTANT else left
        # base*exp(a*m) times or over a number keeps its form; so does base + a*m plus or
        # minus one
        if other[0] == _MULTIPLICATIVE and (
            op is gast.Mult or (op is gast.Div and right is _CONSTANT)
        ):
            return other
        if other[0] == _ADDITIVE and op in (gast.Add, gast.Sub):
            return other if (op is gast.Add or right is _CONSTANT) else (_ADDITIVE, -other[1])
        return None
    if left[0] != right[0]:
        return None
    sign = {gast.Add: 1, gast.Sub: -1, gast.Mult: 1, gast.Div: -1}.get(op)
    if sign is None:
        return None
    if left[0] == _ADDITIVE and op in (gast.Add, gast.Sub):
        return (_ADDITIVE, left[1] + sign * right[1])
    if left[0] == _MULTIPLICATIVE and op in (gast.Mult, gast.Div):
        return (_MULTIPLICATIVE, left[1] + sign * right[1])
    return None


def _reduction(value: gast.expr, resolve, functions) -> tuple[str, int] | None:
    """(source, axis) of ``f(source, axis=<number>, keepdims=True)`` with ``f`` one of
    ``functions``."""
    if not isinstance(value, gast.Call) or len(value.args) != 1 or len(value.keywords) != 2:
        return None  # two keywords: axis and keepdims (the commonest call has none)
    if not isinstance(value.args[0], gast.Name):
        return None
    keywords = {k.arg: k.value for k in value.keywords}
    if set(keywords) != {"axis", "keepdims"}:
        return None
    axis, keepdims = _integer(keywords["axis"]), keywords["keepdims"]
    if axis is None or not (isinstance(keepdims, gast.Constant) and keepdims.value is True):
        return None
    function = resolve(value.func)
    if not any(function is f for f in functions):
        return None
    return value.args[0].id, axis


def _integer(node: gast.expr) -> int | None:
    """The integer literal ``node`` is (``1``, ``-1``), or None."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _integer(node.operand)
        return None if inner is None else -inner
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return node.value
    return None


def _simple_assignment(statement: gast.stmt) -> bool:
    return (
        isinstance(statement, gast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], gast.Name)
    )


def _targets(statement: gast.stmt) -> list[str]:
    """The names ``statement`` binds, once for each time (in no particular order)."""
    if isinstance(statement, gast.Assign):
        return [
            n.id
            for t in statement.targets
            for n in walk(t)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
        ]
    if isinstance(statement, (gast.For, gast.AugAssign, gast.AnnAssign)):
        return [n.id for n in walk(statement.target) if isinstance(n, gast.Name)]
    return []
