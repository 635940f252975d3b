"""Rewrite sugar into the few statement forms the transformer knows.

* ``x op= v`` becomes ``x = x op v`` (refused where another name shares ``x``'s array:
  see :mod:`s2sgrad.passes.aliases`);
* ``a < b < c`` becomes ``a < b and b < c``;
* ``a, b = b, a`` becomes assignments through temporaries;
* ``a = b = v`` becomes ``b = v; a = b``;
* ``items.pop()`` becomes ``popped = items.pop()``;
* docstrings and ``pass`` disappear.
"""

from __future__ import annotations

import gast

from s2sgrad.errors import UnsupportedError
from s2sgrad.passes.aliases import shared_in_place_updates
from s2sgrad.passes.names import NameGenerator
from s2sgrad.syntax import call, clone, constant, load, nested_statements, store, walk

__all__ = ["desugar"]


def desugar(
    node: gast.FunctionDef, names: NameGenerator, locate=lambda node: "<source>", resolve=None
) -> gast.FunctionDef:
    """Desugar ``node``'s body in place and return it.

    Example::

        desugar(parse("def f(x):\\n    x += 1\\n    return x"))  # body: x = x + 1; return x
    """
    _refuse_hidden_assignments(node, locate)
    shared = shared_in_place_updates(node, locate, resolve)
    for statement in nested_statements(node.body):
        if id(statement) in shared and _is_item_update(statement):  # x[i] = v, x[i] += v
            error = UnsupportedError(shared[id(statement)])
            error.tape_cannot_either = True  # the tape would be as wrong
            raise error
    if shared:  # the name of the run-time check (runtime.refuse_if_array) for x op= v
        node.s2s_refusal = names.claim("refuse_if_array")
    body = node.body
    if body and _is_docstring(body[0]):
        body = body[1:]
    node.body = _block(body, names, shared, getattr(node, "s2s_refusal", None)) or [gast.Pass()]
    return node


def _is_item_update(statement: gast.stmt) -> bool:
    if type(statement) is gast.AugAssign:
        return type(statement.target) is gast.Subscript
    return type(statement) is gast.Assign


def _refuse_hidden_assignments(node: gast.FunctionDef, locate) -> None:
    """Assignments the transformer would not see: ``:=`` and starred unpacking."""
    for child in walk(node):
        if isinstance(child, gast.NamedExpr):
            construct = "an assignment expression (:=)"
        elif isinstance(child, gast.Starred) and isinstance(child.ctx, gast.Store):
            construct = "starred unpacking (a, *rest = ...)"
        else:
            continue
        raise UnsupportedError(
            f"{locate(child)}: {construct} cannot be transformed; assign with a plain "
            "statement, or use mode='tape'"
        )


def _in_place_guard(target: gast.Name, message: str, refusal: str, like: gast.stmt) -> gast.Expr:
    """``refuse_if_array(x, message)``: ``x += v`` must not change an array in place here."""
    return _located(
        gast.Expr(value=call(load(refusal), [load(target.id), constant(message)])), like
    )


def _is_docstring(statement: gast.stmt) -> bool:
    return (
        isinstance(statement, gast.Expr)
        and isinstance(statement.value, gast.Constant)
        and isinstance(statement.value.value, str)
    )


def _block(statements: list[gast.stmt], names: NameGenerator, shared: dict, refusal=None):
    result = []
    for statement in statements:
        result.extend(_statement(statement, names, shared, refusal))
    return result


def _statement(statement: gast.stmt, names: NameGenerator, shared: dict, refusal=None):
    if any(type(n) is gast.Compare and len(n.ops) > 1 for n in walk(statement)):
        _ChainedComparisons().visit(statement)
    if isinstance(statement, gast.Pass):
        return []
    if isinstance(statement, gast.AugAssign):
        target_load = _as_load(statement.target)
        value = gast.BinOp(left=target_load, op=statement.op, right=statement.value)
        assign = gast.Assign(targets=[statement.target], value=value, type_comment=None)
        if id(statement) in shared:  # in place, where other names see it, if an array
            guard = _in_place_guard(statement.target, shared[id(statement)], refusal, statement)
            return [guard, _located(assign, statement)]
        return [_located(assign, statement)]
    if isinstance(statement, gast.AnnAssign):
        if statement.value is None:
            return []
        assign = gast.Assign(targets=[statement.target], value=statement.value, type_comment=None)
        return _statement(_located(assign, statement), names, shared, refusal)
    if isinstance(statement, gast.Assign):
        return _assign(statement, names)
    if (
        isinstance(statement, gast.Expr)
        and isinstance(statement.value, gast.Call)
        and isinstance(statement.value.func, gast.Attribute)
        and statement.value.func.attr == "pop"
        and not statement.value.args
    ):  # items.pop() → popped = items.pop(): the reverse sweep puts the value back
        popped = gast.Assign(
            targets=[store(names.fresh("popped"))], value=statement.value, type_comment=None
        )
        return [_located(popped, statement)]
    for field in ("body", "orelse", "finalbody"):
        if isinstance(getattr(statement, field, None), list):
            setattr(statement, field, _block(getattr(statement, field), names, shared, refusal))
    return [statement]


def _assign(statement: gast.Assign, names: NameGenerator) -> list[gast.stmt]:
    if len(statement.targets) > 1:
        *outer, last = statement.targets
        first = _located(
            gast.Assign(targets=[last], value=statement.value, type_comment=None), statement
        )
        rest = [
            _located(gast.Assign(targets=[t], value=_as_load(last), type_comment=None), statement)
            for t in outer
        ]
        return [s for part in [first, *rest] for s in _assign(part, names)]
    target = statement.targets[0]
    if isinstance(target, (gast.Tuple, gast.List)) and isinstance(
        statement.value, (gast.Tuple, gast.List)
    ):
        if len(target.elts) != len(statement.value.elts) or any(
            isinstance(e, gast.Starred) for e in target.elts
        ):
            return [statement]
        temps = [names.fresh("t") for _ in target.elts]
        first = [
            _located(gast.Assign(targets=[store(t)], value=value, type_comment=None), statement)
            for t, value in zip(temps, statement.value.elts)
        ]
        second = [
            _located(gast.Assign(targets=[elt], value=load(t), type_comment=None), statement)
            for t, elt in zip(temps, target.elts)
        ]
        return [s for part in first + second for s in _assign(part, names)]
    return [statement]


class _ChainedComparisons(gast.NodeTransformer):
    def visit_Compare(self, node: gast.Compare) -> gast.AST:
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        operands = [node.left, *node.comparators]
        parts = [
            gast.Compare(left=left, ops=[op], comparators=[right])
            for left, op, right in zip(operands, node.ops, operands[1:])
        ]
        return gast.copy_location(gast.BoolOp(op=gast.And(), values=parts), node)

    def visit_FunctionDef(self, node):  # nested functions keep their own sugar
        return node


def _as_load(target: gast.expr) -> gast.expr:
    copy = clone(target)
    for node in walk(copy):
        if isinstance(getattr(node, "ctx", None), gast.Store):
            node.ctx = gast.Load()
    return copy


def _located(new: gast.AST, old: gast.AST) -> gast.AST:
    return gast.copy_location(new, old)
