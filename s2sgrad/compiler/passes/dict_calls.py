"""``dict(a=x, b=y)`` becomes the literal ``{'a': x, 'b': y}`` it makes.

The call, a type called with keywords, is dispatched when it runs, given derivatives of
its positional arguments only, so a differentiated value passed by keyword was refused;
the literal is differentiated as any other dict. Only where ``dict`` is the builtin (not a
name this function or its module binds) and the call has keywords alone.
"""

from __future__ import annotations

import builtins

import gast

from s2sgrad.compiler.syntax import constant, located, walk

__all__ = ["keyword_dicts_as_literals"]


def keyword_dicts_as_literals(node: gast.FunctionDef, resolve) -> None:
    """Rewrite, in place, each ``dict(key=value, ...)`` of ``node`` as a dict literal.

    Example::

        keyword_dicts_as_literals(parsed.node, parsed.resolve)  # dict(a=x) -> {'a': x}
    """
    if resolve is None:
        return
    nodes = walk(node)
    if not any(_calls_dict(n) for n in nodes) or any(_binds_dict(n) for n in nodes):
        return
    _Rewriter(resolve).visit(node)


def _calls_dict(node: gast.AST) -> bool:
    return type(node) is gast.Call and type(node.func) is gast.Name and node.func.id == "dict"


class _Rewriter(gast.NodeTransformer):
    def __init__(self, resolve):
        self.resolve = resolve

    def visit_Call(self, node: gast.Call) -> gast.AST:
        self.generic_visit(node)
        if (
            isinstance(node.func, gast.Name)
            and node.func.id == "dict"
            and not node.args
            and node.keywords
            and all(keyword.arg is not None for keyword in node.keywords)
            and self.resolve(node.func) is builtins.dict
        ):
            keys: list[gast.expr | None] = [constant(k.arg) for k in node.keywords]
            literal = gast.Dict(keys=keys, values=[k.value for k in node.keywords])
            return located(literal, node)
        return node


def _binds_dict(node: gast.AST) -> bool:
    """A parameter, assignment or ``del`` of the name ``dict`` (in a nested scope too)."""
    return type(node) is gast.Name and node.id == "dict" and type(node.ctx) is not gast.Load
