"""``d[key] = value`` on a dict this function made, as ``d = with_entry(d, key, value)``:
a new dict with the entry, which the transformer differentiates
(:mod:`s2sgrad.runtime.dict_entries`).

Model code overrides some parameters on a copy (``p = dict(params); p["W"] = W * 2``)
and then hands the dict on (``return loss(p, x)``). Rebinding ``d`` to a new dict instead
of changing it in place is the same program when nothing else holds the dict while its
entries are written. So a dict qualifies when

* it is made once, by a statement of the function's own body (``{...}``, ``dict(...)``,
  a dict comprehension), which makes a new dict;
* its entries are written only by ``d[key] = value`` and ``d.update({key: value}, key=value)``
  (no ``pop``, ``del``, ``update(other)``, ...; ``d[key] += v`` changes an array entry in
  place, which the dict's original shares);
* until the last statement of the body that writes an entry, it is read only for entries
  (``d[key]``); whatever else uses it (passes it on, iterates it, returns it) comes after;
* no function or lambda defined here reads it.

``{**x, key: value}`` is ``with_entry(copied_dict(x), key, value)``.

Other dicts keep their entry writes, which the reverse sweep refuses (mode="auto" then
uses the tape).

Example::

    bindings = dict_entry_writes(node, names)  # {"with_entry": runtime.with_entry} if any
"""

from __future__ import annotations

from typing import Any

import gast

from s2sgrad import runtime
from s2sgrad.compiler.node_kinds import of_kinds
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import (
    SCOPES,
    assign,
    call,
    constant,
    load,
    method_receiver,
    names_used,
    nested_statements,
    walk,
)

__all__ = ["dict_entry_writes", "entry_target"]

_CHANGING_METHODS = frozenset({"update", "pop", "popitem", "setdefault", "clear", "__setitem__"})


def dict_entry_writes(node: gast.FunctionDef, names: NameGenerator, resolve=None) -> dict[str, Any]:
    """Rewrite, in place, the entry writes of ``node``'s dicts that qualify (see the
    module's docstring); returns the helper's name and object when any was rewritten."""
    bindings = _copies_of_dicts(node, names, resolve)
    made = _dicts_made_once(node, resolve, set(bindings))
    if not made:
        return bindings
    bindings.update(_keys_read_whole(node, set(made), names))
    copiers = {n for n, f in bindings.items() if f is runtime.copied_dict}
    written = {name: _writing_statements(node, name) for name in made}
    qualifying = {
        name
        for name, position in made.items()
        if written[name] and _only_entries_read_until_written(node, name, position, copiers)
    }
    if not qualifying:
        return bindings
    helper = next((n for n, f in bindings.items() if f is runtime.with_entry), None)
    helper = helper or names.claim("with_entry")

    def rewrite(block: list[gast.stmt]) -> list[gast.stmt]:
        result: list[gast.stmt] = []
        for statement in block:
            if type(statement) in SCOPES:
                result.append(statement)
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list):
                    setattr(statement, field, rewrite(inner))
            result.append(_as_new_dict(statement, qualifying, helper))
        return result

    node.body = rewrite(node.body)
    return {**bindings, helper: runtime.with_entry}


def _copies_of_dicts(node: gast.FunctionDef, names: NameGenerator, resolve) -> dict[str, Any]:
    """Rewrite each ``dict(x)`` of one dict as ``copied_dict(x)``, a copy with derivatives
    of its own in both modes (of anything else it refuses), and each ``dict(x, key=value)``
    and ``{**x, key: value, ...}`` as ``with_entry(copied_dict(x), key, value)``, nested."""
    helpers: dict[str, Any] = {}

    def helper(function: Any) -> str:
        for name, bound in helpers.items():
            if bound is function:
                return name
        name = names.claim(function.__name__)
        helpers[name] = function
        return name

    def rewritten(value: Any) -> Any:
        if type(value) is gast.Dict and _spread_then_entries(value):
            return _as_entries(value.values[0], zip(value.keys[1:], value.values[1:]), helper)
        if _copy_with_keywords(value, resolve):
            entries = [(constant(k.arg), k.value) for k in value.keywords]
            return _as_entries(value.args[0], entries, helper)
        return value

    nodes = walk(node)
    if not any(_is_copy(sub, resolve) for sub in of_kinds(nodes, _COPIES)):
        return helpers  # a cheap look first: most functions copy no dict
    for sub in nodes:
        for field, value in gast.iter_fields(sub):
            if type(value) is list:
                value[:] = [rewritten(v) for v in value]
            else:
                setattr(sub, field, rewritten(value))
    return helpers


_COPIES = frozenset({gast.Dict, gast.Call})  # the only nodes _is_copy says yes of


def _is_copy(value: Any, resolve) -> bool:
    """Whether :func:`_copies_of_dicts` rewrites ``value``, a node of the function."""
    kind = type(value)
    if kind is gast.Dict:
        return _spread_then_entries(value)
    return kind is gast.Call and _copy_with_keywords(value, resolve)


def _keys_read_whole(node: gast.FunctionDef, dicts: set[str], names: NameGenerator) -> dict:
    """``list(d.keys())`` (``sorted``, ``tuple``, ``set``) of a dict made here as
    ``list(dict_keys(d))``: the keys in a list at once, which carry no derivative (a
    ``.keys()`` view kept is refused: it would see later changes)."""
    helper = None
    for sub in walk(node):
        if not (
            type(sub) is gast.Call
            and type(sub.func) is gast.Name
            and sub.func.id in ("list", "sorted", "tuple", "set")
            and len(sub.args) == 1
        ):
            continue
        view = sub.args[0]
        if method_receiver(view, "keys") in dicts and not view.args and not view.keywords:
            helper = helper or names.claim("dict_keys")
            sub.args[0] = call(load(helper), [view.func.value])
    return {helper: runtime.dict_keys} if helper else {}


def _copy_with_keywords(value: Any, resolve) -> bool:
    """``dict(x)`` or ``dict(x, key=value, ...)`` of a dict or a list of pairs ``x``."""
    return (
        type(value) is gast.Call
        and len(value.args) == 1
        and all(k.arg is not None for k in value.keywords)
        and type(value.args[0]) is not gast.Starred
        and _is_dict_call(value, resolve)
        and not _read_once(value.args[0])
    )


def _spread_then_entries(display: gast.Dict) -> bool:
    """``{**x, key: value, ...}``: one spread first, then entries of literal keys."""
    keys = display.keys
    return bool(keys) and keys[0] is None and all(type(k) is gast.Constant for k in keys[1:])


def _as_entries(mapping: gast.expr, entries, helper) -> gast.expr:
    """``with_entry(with_entry(copied_dict(mapping), k1, v1), k2, v2)``."""
    value = call(load(helper(runtime.copied_dict)), [mapping])
    for key, entry in entries:
        value = call(load(helper(runtime.with_entry)), [value, key, entry])
    return value


def _is_dict_call(value: gast.Call, resolve) -> bool:
    if type(value.func) is not gast.Name:
        return False
    if resolve is not None:
        return resolve(value.func) is dict
    return value.func.id == "dict"


def _read_once(argument: gast.expr) -> bool:
    """``dict(zip(...))``, ``dict(pairs for ...)``: pairs an iterator hands out once (the
    backward could not read them again), which other passes make lists."""
    if type(argument) is gast.GeneratorExp:
        return True
    return (
        type(argument) is gast.Call
        and type(argument.func) is gast.Name
        and argument.func.id in ("zip", "enumerate", "map", "iter", "reversed", "filter")
    )


def _dicts_made_once(node: gast.FunctionDef, resolve, copies: set[str]) -> dict[str, int]:
    """The names bound once, by a statement of the body that makes a new dict: each with
    that statement's position in the body."""
    candidates = [
        (statement.targets[0].id, position)
        for position, statement in enumerate(node.body)
        if type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
        and _makes_dict(statement.value, resolve, copies)
    ]
    if not candidates:  # the walk below only counts their bindings
        return {}
    stores: dict[str, int] = {}
    for sub in walk(node):
        if type(sub) is gast.Name and type(sub.ctx) is not gast.Load:
            stores[sub.id] = stores.get(sub.id, 0) + 1
    made: dict[str, int] = {}
    for name, position in candidates:
        if stores.get(name) == 1:
            made[name] = position
    parameters = {a.id for a in node.args.args + node.args.kwonlyargs}
    return {name: p for name, p in made.items() if name not in parameters}


def _makes_dict(value: gast.expr, resolve, copies: set[str]) -> bool:
    if type(value) in (gast.Dict, gast.DictComp):
        return True
    if type(value) is not gast.Call or type(value.func) is not gast.Name:
        return False
    return _is_dict_call(value, resolve) or value.func.id in copies


def entry_target(statement: gast.AST, name: str) -> gast.Subscript | None:
    """The ``d[key]`` that ``statement`` writes (``d[key] = v``, one target, not a slice).

    Example::

        entry_target(parse("d['k'] = v").body[0], "d")  # the Subscript d['k']
    """
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return None
    target = statement.targets[0]
    if (
        type(target) is gast.Subscript
        and type(target.value) is gast.Name
        and target.value.id == name
        and type(target.slice) is not gast.Slice
    ):
        return target
    return None


def _updated_entries(statement: gast.stmt, name: str) -> list[tuple] | None:
    """``[(key, value), ...]`` of ``d.update({key: value, ...}, key=value, ...)``: literal
    entries only (no ``**more``, no dict computed elsewhere)."""
    if type(statement) is not gast.Expr or method_receiver(statement.value, "update") != name:
        return None
    update = statement.value
    if len(update.args) > 1 or any(k.arg is None for k in update.keywords):
        return None
    entries: list[tuple] = []
    if update.args:
        given = update.args[0]
        if type(given) is not gast.Dict or any(key is None for key in given.keys):
            return None
        entries += list(zip(given.keys, given.values))
    entries += [(gast.Constant(value=k.arg, kind=None), k.value) for k in update.keywords]
    return entries or None


def _writes(statement: gast.stmt, name: str) -> bool:
    return (
        entry_target(statement, name) is not None or _updated_entries(statement, name) is not None
    )


def _writing_statements(node: gast.FunctionDef, name: str) -> list[gast.stmt]:
    return [s for s in nested_statements(node.body) if _writes(s, name)]


def _only_entries_read_until_written(
    node: gast.FunctionDef,
    name: str,
    made_at: int,
    copiers: frozenset[str] | set[str] = frozenset(),
) -> bool:
    """Whether ``name``'s dict is read only for entries (``d[key]``, or all of them by a
    copy, ``copied_dict(d)`` of ``dict(d)``, one of ``copiers``) up to the last top-level
    statement writing an entry, and changed in no other way anywhere."""
    last_write = made_at
    for position, statement in enumerate(node.body):
        if any(_writes(s, name) for s in nested_statements([statement])):
            last_write = position
    for position, statement in enumerate(node.body):
        if position == made_at:
            continue
        entry_values = {  # d.update({...}) writes entries too
            id(s.value.func.value)
            for s in nested_statements([statement])
            if _updated_entries(s, name) is not None
        }
        for sub in walk(statement):
            kind = type(sub)
            if kind in SCOPES and name in names_used(sub):
                return False  # a function defined here may run at any time
            if kind is gast.Subscript and type(sub.value) is gast.Name:
                entry_values.add(id(sub.value))
            elif _copy_of(sub, copiers):  # old = dict(d): a new dict of d's entries now
                entry_values.add(id(sub.args[0]))
            elif (
                kind is gast.Delete
                and any(name in names_used(t) for t in sub.targets)
                or (
                    kind is gast.Call
                    and type(sub.func) is gast.Attribute
                    and type(sub.func.value) is gast.Name
                    and sub.func.value.id == name
                    and sub.func.attr in _CHANGING_METHODS
                    and id(sub.func.value) not in entry_values
                )
            ):
                return False
        if position <= last_write and any(
            type(sub) is gast.Name and sub.id == name and id(sub) not in entry_values
            for sub in walk(statement)
        ):
            return False
    return True


def _copy_of(node: gast.AST, copiers: frozenset[str] | set[str]) -> bool:
    """``copied_dict(d)``, the copy :func:`_copies_of_dicts` made of ``dict(d)``."""
    return (
        type(node) is gast.Call
        and type(node.func) is gast.Name
        and node.func.id in copiers
        and len(node.args) == 1
        and not node.keywords
        and type(node.args[0]) is gast.Name
    )


def _as_new_dict(statement: gast.stmt, qualifying: set[str], helper: str) -> gast.stmt:
    """``d = with_entry(d, key, value)`` for an entry write of a qualifying dict, and
    ``d = with_entry(with_entry(d, k1, v1), k2, v2)`` for ``d.update(...)`` (every value
    is computed before ``d`` is bound to the new dict, as ``update`` computes them)."""
    for name in qualifying:
        target = entry_target(statement, name)
        if target is not None:
            rebuilt = call(load(helper), [load(name), target.slice, statement.value])
            return assign(name, rebuilt, like=statement)
        entries = _updated_entries(statement, name)
        if entries is not None:
            value: gast.expr = load(name)
            for key, entry in entries:
                value = call(load(helper), [value, key, entry])
            return assign(name, value, like=statement)
    return statement
