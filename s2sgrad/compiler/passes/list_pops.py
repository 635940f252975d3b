"""``value = items.pop(i)`` of a list only this function holds, as ``value = items[i]``
and ``items = without_entry(items, i)``: reading an entry and making the rest a new list,
which the transformer differentiates (``items.pop()`` without an index is kept: the
reverse sweep puts the value back). A list another name may hold stays refused, since
``pop`` changes what that name sees.

Example::

    pops = indexed_pops(node, names)  # {"without_entry": runtime.without_entry} if any
"""

from __future__ import annotations

from typing import Any

import gast

from s2sgrad import runtime
from s2sgrad.compiler.passes.aliases import private_lists
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import assign, call, clone, load, nested_statements

__all__ = ["indexed_pops"]


def indexed_pops(node: gast.FunctionDef, names: NameGenerator) -> dict[str, Any]:
    """Rewrite ``node``'s ``v = items.pop(i)`` and ``items.pop(i)`` statements of private
    lists (see the module docstring) in place; returns the helper's name and object when
    any was rewritten."""
    statements = list(nested_statements(node.body))
    if not any(_popped(s) for s in statements):
        return {}
    private = private_lists(node, statements)
    helper: list[str] = []

    def rewrite(block: list[gast.stmt]) -> list[gast.stmt]:
        result: list[gast.stmt] = []
        for statement in block:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                    setattr(statement, field, rewrite(inner))
            popped = _popped(statement)
            if popped is None or popped[0].id not in private:
                result.append(statement)
                continue
            if not helper:
                helper.append(names.claim("without_entry"))
            result.extend(_read_and_remove(statement, *popped, helper[0], names))
        return result

    node.body = rewrite(node.body)
    return {helper[0]: runtime.without_entry} if helper else {}


def _popped(statement: gast.stmt) -> tuple[gast.Name, gast.expr] | None:
    """``(items, index)`` of ``v = items.pop(index)`` or ``items.pop(index)``."""
    single = type(statement) is gast.Assign and len(statement.targets) == 1
    if not (single or type(statement) is gast.Expr):
        return None
    value = statement.value
    if not (
        type(value) is gast.Call
        and type(value.func) is gast.Attribute
        and value.func.attr == "pop"
        and type(value.func.value) is gast.Name
        and len(value.args) == 1
        and not value.keywords
        and type(value.args[0]) is not gast.Starred
    ):
        return None
    items = value.func.value
    if type(statement) is gast.Assign and items.id in _target_names(statement.targets[0]):
        return None
    return items, value.args[0]


def _target_names(target: gast.expr) -> set[str]:
    return {n.id for n in gast.walk(target) if type(n) is gast.Name}


def _read_and_remove(statement, items: gast.Name, index: gast.expr, helper: str, names):
    block: list[gast.stmt] = []
    if type(index) not in (gast.Name, gast.Constant):  # computed once, as pop computes it
        position = names.fresh("position")
        block.append(assign(position, index, like=statement))
        index = load(position)
    if type(statement) is gast.Assign:
        entry = gast.Subscript(value=load(items.id), slice=clone(index), ctx=gast.Load())
        block.append(assign(statement.targets[0], entry, like=statement))
    rest = call(load(helper), [load(items.id), clone(index)])
    block.append(assign(items.id, rest, like=statement))
    return block
