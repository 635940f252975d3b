"""The probe's copy of the raw code: a deep copy (as ``syntax.clone`` makes), made by the
same walk that finds the facts the probe decides its sites from.

The probe decides which operations and calls it looks at from facts about the whole raw
code (``broadcasts.raw_facts``); :func:`copy_with_facts` finds them on the copy as it
makes it, and lists the copy's operations and calls in the order their sites are
numbered (each after its operands), for the probe to rewrite in place. Names and
literals, most of the nodes, are copied without a call each. Functions defined inside
are copied whole, their facts found by a walk of their own, and not listed.

Example::

    copy, facts, operations = copy_with_facts(function)  # facts == raw_facts(function)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast

from s2sgrad.compiler.specialize.broadcasts import ARITHMETIC, RawFacts, gather_facts, note_facts
from s2sgrad.compiler.specialize.interpreted import FRAME_READERS
from s2sgrad.compiler.syntax import SCOPES, clone, node_fields

__all__ = ["copy_with_facts"]


def copy_with_facts(function: gast.FunctionDef) -> tuple[gast.FunctionDef, RawFacts, list]:
    """A deep copy of ``function``, what ``broadcasts.raw_facts`` finds in it (the same
    facts, of the copy's nodes, in another order), and the copy's ``BinOp`` and ``Call``
    nodes outside functions defined inside, each after those inside it."""
    facts = RawFacts([], [], [], [], set(), [], set())
    operations: list = []
    listed = operations.append
    kinds, calls, arithmetic = facts.kinds, facts.calls, facts.arithmetic

    def plain(node: Any) -> Any:  # what ``raw_facts`` does not walk, or walks itself
        kind = type(node)
        if kind is _NAME or kind is _CONSTANT:
            return _leaf(node, kind, plain)
        if kind in SCOPES:
            return clone(node)
        new = _copy_fields(node, kind, plain)
        if kind is _BINOP or kind is _CALL:
            listed(new)
        return new

    def noted(node: Any) -> Any:
        kind = type(node)
        if kind is _NAME or kind is _CONSTANT:  # not walked by ``raw_facts``
            return _leaf(node, kind, plain)
        if kind in SCOPES:
            new = clone(node)
            gather_facts(facts, [new])
            return new
        if kind is _ARGUMENTS:  # its names are walked, with their annotations
            new = _copy_fields(node, kind, plain)
            gather_facts(facts, [new])
            return new
        new = _copy_fields(node, kind, noted)
        if kind is _BINOP:  # the most frequent kinds first (``note_facts`` for the others)
            kinds.add(kind)
            if type(new.op) in ARITHMETIC:
                arithmetic.append(new)
            listed(new)
        elif kind is _CALL:
            kinds.add(kind)
            calls.append(new)
            func = new.func
            if type(func) is _NAME and func.id in FRAME_READERS:
                facts.checked.append(new)
            listed(new)
        else:
            note_facts(facts, new, kind)
        return new

    kind = type(function)  # a scope, entered: its own definition
    copy = _copy_fields(function, kind, noted)
    note_facts(facts, copy, kind)
    # the two walkers call themselves through their cells: emptied, the copy is not held in
    # a cycle (freed when dropped, not left to a collection of the whole tree)
    plain = noted = None  # type: ignore[assignment]  # noqa: F811
    return copy, facts, operations


def _leaf(node: Any, kind: Any, copy: Callable) -> Any:
    state = node.__dict__
    if len(state) <= _PLAIN_SIZE[kind] and state.get("annotation") is None:
        return node  # a plain name or literal: shared
    return _copy_fields(node, kind, copy)  # a parameter's annotation, attributes attached


def _copy_fields(node: Any, kind: Any, copy: Callable) -> Any:
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
            items: list = []
            state[field] = items
            listed = items.append
            for item in value:
                item_kind = type(item)
                if item_kind is _NAME or item_kind is _CONSTANT:
                    leaf_state = item.__dict__
                    if (
                        len(leaf_state) <= _PLAIN_SIZE[item_kind]
                        and leaf_state.get("annotation") is None
                    ):
                        listed(item)  # a plain name or literal: shared
                        continue
                listed(copy(item) if isinstance(item, _AST) else item)
        elif type(value) is _NAME or type(value) is _CONSTANT:  # ``_leaf``, without a call
            leaf_state = value.__dict__
            if (
                len(leaf_state) > _PLAIN_SIZE[type(value)]
                or leaf_state.get("annotation") is not None
            ):
                state[field] = copy(value)  # else a plain name or literal: shared
        elif isinstance(value, _AST):
            state[field] = copy(value)
    if len(state) > size:  # attributes a pass attached: copied as well
        for key, value in state.items():
            if key not in plain and isinstance(value, (list, _AST)):
                state[key] = clone(value)
    return new


_AST, _NAME, _CONSTANT, _BINOP, _CALL = gast.AST, gast.Name, gast.Constant, gast.BinOp, gast.Call
_ARGUMENTS = gast.arguments
_PLAIN_SIZE = {kind: len(kind._fields) + len(kind._attributes) for kind in (_NAME, _CONSTANT)}
_PLANS: dict[type, tuple[tuple[str, ...], frozenset, int]] = {}
