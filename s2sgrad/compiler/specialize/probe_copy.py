"""The probe's copy of the raw code: a deep copy (as ``syntax.clone`` makes) in which each
operation and call may be replaced, decided on the original node.

``syntax.clone_rewriting`` hands its rewriter the copy alone; the probe decides which
arithmetic it looks at from facts about the raw code's own nodes (found by one walk
before the copy), so :func:`copy_with_sites` hands over both. Names and literals, most of
the nodes, are copied without a call each. Functions defined inside are copied whole and
not rewritten.

Example::

    copy = copy_with_sites(function, lambda original, new: new)  # a plain deep copy
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast

from s2sgrad.compiler.syntax import SCOPES, clone, node_fields

__all__ = ["copy_with_sites"]

Rewrite = Callable[[Any, Any], Any]


def copy_with_sites(function: gast.FunctionDef, rewrite: Rewrite) -> gast.FunctionDef:
    """A deep copy of ``function`` in which each ``BinOp`` and ``Call`` outside functions
    defined inside is ``rewrite(original, copy)`` (its children copied, and rewritten,
    first)."""
    return _copy_fields(function, rewrite)


def _copy(node: Any, rewrite: Rewrite) -> Any:
    kind = type(node)
    if kind is _NAME or kind is _CONSTANT:
        return _leaf(node, rewrite)
    if kind in SCOPES:
        return clone(node)
    new = _copy_fields(node, rewrite)
    if kind is _BINOP or kind is _CALL:
        return rewrite(node, new)
    return new


def _leaf(node: Any, rewrite: Rewrite) -> Any:
    kind: Any = type(node)
    state = node.__dict__
    if len(state) <= _PLAIN_SIZE[kind] and state.get("annotation") is None:
        new = kind.__new__(kind)
        new.__dict__ = state.copy()  # a name, a context, a literal: shared
        return new
    return _copy_fields(node, rewrite)  # a parameter's annotation, attributes attached


def _copy_fields(node: Any, rewrite: Rewrite) -> Any:
    kind: Any = type(node)
    plan = _PLANS.get(kind)
    if plan is None:
        plain = frozenset(kind._fields) | frozenset(kind._attributes)
        plan = _PLANS[kind] = (node_fields(kind), plain, len(plain))
    fields, plain, size = plan
    new = kind.__new__(kind)
    state = new.__dict__ = node.__dict__.copy()
    for field in fields:
        value = state.get(field)
        if value is None:
            continue
        if type(value) is list:
            state[field] = [
                _copy(item, rewrite) if isinstance(item, _AST) else item for item in value
            ]
        elif isinstance(value, _AST):
            state[field] = _copy(value, rewrite)
    if len(state) > size:  # attributes a pass attached: copied as well
        for key, value in state.items():
            if key not in plain and isinstance(value, (list, _AST)):
                state[key] = clone(value)
    return new


_AST, _NAME, _CONSTANT, _BINOP, _CALL = gast.AST, gast.Name, gast.Constant, gast.BinOp, gast.Call
_PLAIN_SIZE = {kind: len(kind._fields) + len(kind._attributes) for kind in (_NAME, _CONSTANT)}
_PLANS: dict[type, tuple[tuple[str, ...], frozenset, int]] = {}
