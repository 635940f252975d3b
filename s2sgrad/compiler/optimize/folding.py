"""Constant folding: ``2 - 1`` → ``1``, ``x ** 1`` → ``x``, ``x * 1`` → ``x``, ``a + -b`` →
``a - b``, ``(a, b)[0]`` → ``a``, ``3 > 0`` → ``True``, bottom-up and in place.

A new fold here needs its condition in :mod:`s2sgrad.compiler.optimize.facts`
(``_binop_folds`` and its neighbours), which tells the optimiser which statements the
folder can leave alone.

Example::

    fold_constants(parse("y = x * 1.0 * 2.0").body)  # y = x * 2.0
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import gast

from s2sgrad.compiler.optimize.facts import FactsCache
from s2sgrad.compiler.optimize.foldable import literal_number
from s2sgrad.compiler.syntax import BINARY_OPERATORS, node_fields, walk

__all__ = ["fold_constants", "ConstantFolder"]


def fold_constants(body: list[gast.stmt]) -> None:
    """Fold constant arithmetic in ``body``, in place (after a rewrite that exposed some).

    Example::

        fold_constants(parse("y = x * 1.0 * 2.0").body)  # y = x * 2.0
    """
    folder = ConstantFolder(FactsCache(enabled=False))
    for statement in body:
        folder.visit(statement)


class ConstantFolder:
    """Simplifies constant arithmetic bottom-up, in place, like a ``gast.NodeTransformer``.

    ``visit(node)`` returns the node to use instead of ``node``; ``changed`` tells whether
    anything changed. Statements it changes are forgotten by ``facts``; a statement whose
    facts say it was folded with nothing to do (and not changed since) is skipped.
    """

    def __init__(self, facts: FactsCache):
        self.facts = facts
        self.changed = False
        self.edits = 0

    def visit(self, node):
        kind = type(node)
        handler = _FOLD_HANDLERS.get(kind)
        if handler is None:
            handler = _FOLD_HANDLERS[kind] = _handler_for(kind)
        result = handler(self, node)
        if result is not node:
            self.changed = True
            self.edits += 1
        return result

    def visit_children(self, node):
        state = node.__dict__
        kind = type(node)
        plan = _FOLD_PLANS.get(kind)
        if plan is None:
            plan = _FOLD_PLANS[kind] = node_fields(kind)
        visit = self.visit
        for field in plan:
            value = state.get(field)
            kind = type(value)
            if kind is list:
                for position, item in enumerate(value):
                    if _needs_visit(item):
                        new = visit(item)
                        if new is not item:
                            value[position] = new
            # as _needs_visit(value), written out: most children are names or literals
            elif (
                value.annotation is not None
                if kind is gast.Name
                else kind is not gast.Constant and value is not None and isinstance(value, gast.AST)
            ):
                new = visit(value)
                if new is not value:
                    setattr(node, field, new)
        return node

    def visit_statement(self, node):
        known = self.facts.known(node)
        if known is not None and known.folded:
            return node
        edits = self.edits
        self.visit_children(node)
        if self.edits != edits:
            self.facts.forget(node)
        return node

    def visit_Name(self, node):
        return node if node.annotation is None else self.visit_children(node)

    def visit_Call(self, node):
        self.visit_children(node)
        func = node.func
        if (
            isinstance(func, gast.Attribute)
            and func.attr == "sum"
            and isinstance(func.value, gast.UnaryOp)
            and isinstance(func.value.op, gast.USub)
        ):  # (-e).sum(...) → -e.sum(...): negate the smaller array
            func.value = func.value.operand
            return gast.UnaryOp(op=gast.USub(), operand=node)
        return node

    def visit_UnaryOp(self, node):
        self.visit_children(node)
        if isinstance(node.op, gast.USub):
            simpler = _negated(node.operand)
            if simpler is not None:
                return simpler
            operand = node.operand
            if (
                isinstance(operand, gast.BinOp)
                and isinstance(operand.op, (gast.Mult, gast.Div))
                and _number(operand.left) is not None
            ):  # -(2 * e) → -2 * e
                return gast.BinOp(
                    left=_number_node(-_number(operand.left)), op=operand.op, right=operand.right
                )
        return node

    def visit_BinOp(self, node):
        self.visit_children(node)
        left, right = _number(node.left), _number(node.right)
        op = type(node.op)
        if op in _FOLDABLE and (left is not None or right is not None):
            folded = _folded_with_truth(node, op)  # 2 - (2 != 0), once the test is folded
            if folded is not None:
                return folded
        if left is not None and right is not None and op in _FOLDABLE:
            try:
                value = _FOLDABLE[op](left, right)
            except (ZeroDivisionError, OverflowError):
                return node
            if isinstance(value, (int, float)) and abs(value) < 1e15:
                return _number_node(value)
        if op in (gast.Mult, gast.Div):
            # move a negation into a constant factor: (-a) * 2 → a * -2
            if (
                right is not None
                and isinstance(node.left, gast.UnaryOp)
                and isinstance(node.left.op, gast.USub)
            ):
                return gast.BinOp(left=node.left.operand, op=node.op, right=_number_node(-right))
            if left is not None and op is gast.Mult:
                negated = _negated(node.right)
                if negated is not None:
                    return gast.BinOp(left=_number_node(-left), op=node.op, right=negated)
        if op is gast.Add:
            doubled = _doubled(node.left)  # 0.5 * x + 0.5 * x → 1.0 * x
            if doubled is not None and _same(node.left, node.right):
                return doubled
            negated = _negated(node.right)
            if negated is not None:  # a + -b → a - b
                return gast.BinOp(left=node.left, op=gast.Sub(), right=negated)
        if op is gast.Sub:
            negated = _negated(node.right)
            if negated is not None:  # a - -b → a + b
                return gast.BinOp(left=node.left, op=gast.Add(), right=negated)
        if op is gast.Pow and right == 1 and type(right) is int:
            return node.left
        if op is gast.Mult and right == 1 and type(right) is int:
            return node.left
        if op is gast.Mult and left == 1 and type(left) is int:
            return node.right
        return node

    def visit_Subscript(self, node):
        self.visit_children(node)
        index = node.slice
        if (
            isinstance(node.value, gast.Tuple)
            and isinstance(index, gast.Constant)
            and type(index.value) is int
            and -len(node.value.elts) <= index.value < len(node.value.elts)
            and isinstance(node.ctx, gast.Load)
        ):
            return node.value.elts[index.value]
        return node

    def visit_Compare(self, node):
        self.visit_children(node)
        if (
            len(node.ops) == 1
            and isinstance(node.ops[0], (gast.Is, gast.IsNot))
            and isinstance(node.left, gast.Constant)
            and isinstance(node.comparators[0], gast.Constant)
            and node.comparators[0].value is None
        ):
            same = node.left.value is None
            return gast.Constant(
                value=same if isinstance(node.ops[0], gast.Is) else not same, kind=None
            )
        values = [node.left, *node.comparators]
        if all(type(v) is gast.Constant and type(v.value) in (int, float) for v in values) and all(
            type(op) in _ORDER_TESTS for op in node.ops
        ):  # 3 > 0, once ndim is known
            numbers = [v.value for v in values]
            holds = all(
                _ORDER_TESTS[type(op)](a, b) for op, a, b in zip(node.ops, numbers, numbers[1:])
            )
            return gast.Constant(value=holds, kind=None)
        return node


_FOLDABLE = {  # arithmetic on two numbers that folds to a number
    kind: BINARY_OPERATORS[kind]
    for kind in (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow)
}


def _folded_with_truth(node: gast.BinOp, op: type) -> gast.expr | None:
    """A number and a literal ``True``/``False`` combined as Python does (``2 - True`` is
    ``1``), or None. The rule of ``x ** n`` lowers the exponent by ``(n != 0)``."""
    values: list[bool | int | float] = []
    for side in (node.left, node.right):
        if type(side) is gast.Constant and type(side.value) is bool:
            values.append(side.value)
        else:
            number = _number(side)
            if number is None:
                return None
            values.append(number)
    if not any(type(v) is bool for v in values) or op in (gast.Div, gast.FloorDiv, gast.Mod):
        return None
    value = _FOLDABLE[op](*values)
    return _number_node(value) if type(value) in (int, float) else None


def _doubled(term: gast.expr) -> gast.expr | None:
    """``c * x + c * x`` as ``(2 * c) * x`` for a float ``c`` and a call-free ``x``.

    Exact in floating point (doubling is), and the float keeps the types as they were; with
    no float in it, ``x + x`` of boolean arrays would be ``or``, not ``2 * x``.
    """
    if not (
        type(term) is gast.BinOp
        and type(term.op) is gast.Mult
        and type(_number(term.left)) is float
        and not any(type(n) is gast.Call for n in walk(term.right))
    ):
        return None
    factor = _number(term.left)
    if factor is None:
        return None
    return gast.BinOp(left=_number_node(2 * factor), op=gast.Mult(), right=term.right)


def _same(a: gast.expr, b: gast.expr) -> bool:
    return type(a) is type(b) and gast.dump(a) == gast.dump(b)


_number = literal_number


def _number_node(value):
    node = gast.Constant(value=abs(value), kind=None)
    if value < 0:
        return gast.UnaryOp(op=gast.USub(), operand=node)
    return node


def _negated(node):
    """The expression ``-node`` without a double negation, or None if that is not simpler."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return node.operand
    if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Mult, gast.Div)):
        left = _negated(node.left)
        if left is not None:
            return gast.BinOp(left=left, op=node.op, right=node.right)
    return None


_ORDER_TESTS = {
    gast.Lt: operator.lt,
    gast.LtE: operator.le,
    gast.Gt: operator.gt,
    gast.GtE: operator.ge,
    gast.Eq: operator.eq,
    gast.NotEq: operator.ne,
}


def _needs_visit(node) -> bool:
    """Whether folding could change ``node`` (names and literals stay as they are)."""
    kind = type(node)
    if kind is gast.Name:
        return node.annotation is not None
    return kind is not gast.Constant and isinstance(node, gast.AST)


def _handler_for(kind: type):
    if issubclass(kind, gast.stmt):
        return ConstantFolder.visit_statement
    return getattr(ConstantFolder, f"visit_{kind.__name__}", ConstantFolder.visit_children)


_FOLD_HANDLERS: dict[type, Callable] = {}


_FOLD_PLANS: dict[type, tuple[str, ...]] = {}  # node_fields, kept here as well (faster)
