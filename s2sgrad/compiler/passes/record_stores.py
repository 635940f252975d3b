"""Attribute stores on record objects the function makes, as new objects.

``p = Pair(a, b); p.first = v; y = p.mix(0.3)`` changes ``p`` in place, which no sweep
follows (the stored-state checks refuse it). Where ``p`` is a record object
(``runtime/records.py``: its class only stores what it is given, and no method changes or
hands on the object) that no other name, container or nested function can hold, a copy
with the attribute replaced is the same to every later reader::

    p = Pair(a, b)                     p = Pair(a, b)
    p.first = v              →         p = with_attribute(p, 'first', v)
    y = p.mix(0.3)                     y = p.mix(0.3)

and ``with_attribute`` has a derivative: the stored attribute's cotangent goes to ``v``,
the others' to the object before. A name qualifies when every binding of it is a call of a
record class (not a named tuple, whose attributes cannot be stored, nor a frozen
dataclass), it is read only as ``p.name`` or called (``p(x)``, ``p.method(x)``), no nested
function or class mentions it, and each stored attribute is stored plainly (no property's
setter).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gast

from s2sgrad import runtime
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import call, constant, load, located, parameter_names, store
from s2sgrad.runtime.attribute_stores import stores_plainly
from s2sgrad.runtime.records import record_fields

__all__ = ["rebind_record_stores"]

_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)


def rebind_record_stores(node: gast.FunctionDef, names: NameGenerator, resolve) -> dict[str, Any]:
    """Rewrite in place the attribute stores of ``node``'s body on record objects it makes
    (see the module's example); returns the helper the new code calls, by name.

    Example::

        rebind_record_stores(function, names, parsed.resolve)  # {'with_attribute': ...}
    """
    stores = _record_stores(node, resolve)
    if not stores:
        return {}
    helper = names.claim("with_attribute")
    for holder, field, index, statement in stores:
        target = statement.targets[0]
        rebound = gast.Assign(
            targets=[store(target.value.id)],
            value=call(
                load(helper), [load(target.value.id), constant(target.attr), statement.value]
            ),
            type_comment=None,
        )
        getattr(holder, field)[index] = located(rebound, statement)
    return {helper: runtime.with_attribute}


def _record_stores(node: gast.FunctionDef, resolve) -> list[tuple[Any, str, int, gast.Assign]]:
    """Each store ``p.name = v`` to rewrite, with the block holding it and its place."""
    classes: dict[str, list[type]] = {}  # the names bound to new record objects
    others: set[str] = set(parameter_names(node))  # bound otherwise, or seen where unsafe
    stores: list[tuple[Any, str, int, gast.Assign]] = []
    made: set[int] = set()  # the Name nodes of those bindings
    dotted: set[int] = set()  # Name nodes read as the base of an attribute or called
    for part, holder, field, index in _statements(node.body, node):
        if isinstance(part, gast.Assign) and len(part.targets) == 1:
            target = part.targets[0]
            if isinstance(target, gast.Name) and isinstance(part.value, gast.Call):
                cls = resolve(part.value.func)
                if _storable_record(cls):
                    classes.setdefault(target.id, []).append(cls)
                    made.add(id(target))
            if isinstance(target, gast.Attribute) and isinstance(target.value, gast.Name):
                stores.append((holder, field, index, part))
                dotted.add(id(target.value))
    if not stores or not classes:
        return []
    for part in gast.walk(node):
        if part is node:
            continue
        if isinstance(part, _SCOPES):
            others |= {n.id for n in gast.walk(part) if isinstance(n, gast.Name)}
        elif isinstance(part, gast.Attribute) and isinstance(part.value, gast.Name):
            dotted.add(id(part.value))
        elif isinstance(part, gast.Call) and isinstance(part.func, gast.Name):
            dotted.add(id(part.func))
        elif isinstance(part, (gast.Global, gast.Nonlocal)):
            others |= set(part.names)
    for part in gast.walk(node):
        if isinstance(part, gast.Name) and part.id in classes:
            if isinstance(part.ctx, gast.Load) and id(part) not in dotted:
                others.add(part.id)  # q = p, f(p), [p], return p: another holder
            elif not isinstance(part.ctx, gast.Load) and id(part) not in made:
                others.add(part.id)  # for p in ..., del p, p, q = ...
    kept = []
    for holder, field, index, statement in stores:
        target = statement.targets[0]
        base, attribute = target.value.id, target.attr
        if base in others or base not in classes:
            continue
        if all(stores_plainly(cls, attribute) for cls in classes[base]):
            kept.append((holder, field, index, statement))
    return kept


def _storable_record(cls: Any) -> bool:
    """A record class whose objects take attribute stores as plain values."""
    if not isinstance(cls, type) or record_fields(cls) is None:
        return False
    if issubclass(cls, tuple):
        return False  # a named tuple: a store raises, as it should
    params = getattr(cls, "__dataclass_params__", None)
    return not (dataclasses.is_dataclass(cls) and params is not None and params.frozen)


def _statements(body: list[gast.stmt], holder: Any, field: str = "body"):
    """Every statement of ``body`` and of the blocks inside it (not of nested functions or
    classes), with the block holding it: ``(statement, holder, field, index)``."""
    for index, statement in enumerate(body):
        yield statement, holder, field, index
        if isinstance(statement, _SCOPES):
            continue
        for inner in ("body", "orelse", "finalbody"):
            block = getattr(statement, inner, None)
            if isinstance(block, list):
                yield from _statements(block, statement, inner)
        for handler in getattr(statement, "handlers", ()) or ():
            yield from _statements(handler.body, handler, "body")
