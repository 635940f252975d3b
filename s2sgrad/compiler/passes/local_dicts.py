"""Dicts used only as named slots become variables: ``cache["z"] = x @ w`` → ``cache_z = x @ w``.

Model code written from scratch keeps intermediate values in a dict (``cache = {}``,
``cache["z1"] = ...``, ``np.tanh(cache["z1"])``). A dict the function makes itself, at the
top of its body, whose every use is an entry with a literal string key, is nothing but a
set of variables: each entry becomes one, which the transformer differentiates like any
other (writing entries of a dict is otherwise refused by source transformation). So does a
dict of literal keys never written after it is made and passed on as ``f(**kw)``: the
call gets one keyword per key (``f(w=kw_w, shift=kw_shift)``). A dict
used in any other way (passed to a call, returned, iterated, aliased, read with a computed
key, used by a nested function) is left as it is.

Example::

    scalarize_local_dicts(node, names)
    # cache = {}; cache["z"] = x * 2; return np.sum(cache["z"])
    #   -> cache_z = x * 2; return np.sum(cache_z)
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.passes.names import NameGenerator

__all__ = ["scalarize_local_dicts"]


def scalarize_local_dicts(node: gast.FunctionDef, names: NameGenerator) -> None:
    """Replace, in place, each dict of ``node`` that is used only through entries with
    literal string keys by one variable per key (see the module docstring)."""
    for statement in list(node.body):
        name = _dict_made_here(statement)
        if name is None or not _only_entries_used(node, name, statement):
            continue
        variables: dict[str, str] = {}

        def variable(key: str, name: str = name, variables: dict = variables) -> str:
            if key not in variables:
                stem = f"{name}_{key}" if key.isidentifier() else f"{name}_entry"
                variables[key] = names.claim(stem)
            return variables[key]

        for sub in gast.walk(node):
            if isinstance(sub, gast.Call):
                sub.keywords = _spread_out(sub.keywords, name, statement.value.keys, variable)
            for field, value in gast.iter_fields(sub):
                if isinstance(value, list):
                    value[:] = [_replaced(item, name, variable) for item in value]
                else:
                    setattr(sub, field, _replaced(value, name, variable))
        index = node.body.index(statement)
        node.body[index : index + 1] = [
            gast.copy_location(
                gast.Assign(
                    targets=[gast.Name(variable(k.value), gast.Store(), None, None)],
                    value=v,
                    type_comment=None,
                ),
                statement,
            )
            for k, v in zip(statement.value.keys, statement.value.values)
        ]
    node.body = node.body or [gast.Pass()]


def _dict_made_here(statement: gast.stmt) -> str | None:
    """``name`` for ``name = {...}`` with literal string keys (or ``{}``), else None."""
    if not (
        isinstance(statement, gast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], gast.Name)
        and isinstance(statement.value, gast.Dict)
    ):
        return None
    if not all(_literal_key(key) for key in statement.value.keys):
        return None
    return statement.targets[0].id


def _literal_key(key: gast.expr | None) -> bool:
    return isinstance(key, gast.Constant) and isinstance(key.value, str)


def _only_entries_used(node: gast.FunctionDef, name: str, made: gast.stmt) -> bool:
    """Whether every other appearance of ``name`` in ``node`` (nested functions included) is
    the value of an entry ``name["key"]``, and ``made`` binds it once."""
    entries = set()
    keys = {k.value for k in made.value.keys}
    written = False
    for sub in gast.walk(node):
        if isinstance(sub, gast.Subscript) and _is_entry(sub, name):
            entries.add(id(sub.value))
            written = written or not isinstance(sub.ctx, gast.Load)
    for sub in gast.walk(node):  # f(**name): every key is known where name is made
        if isinstance(sub, gast.Call) and not written and _spreads(sub, name, keys):
            entries.update(id(k.value) for k in sub.keywords if k.arg is None)
    for sub in gast.walk(node):
        if isinstance(sub, (gast.Global, gast.Nonlocal)) and name in sub.names:
            return False
        if isinstance(sub, gast.arguments) and name in {a.id for a in _parameters(sub)}:
            return False
        if not isinstance(sub, gast.Name) or sub.id != name:
            continue
        if sub is made.targets[0]:
            continue
        if id(sub) not in entries:
            return False
    return True


def _spreads(call: gast.Call, name: str, keys: set[str]) -> bool:
    """``f(..., **name)`` where every key is a keyword name the call does not also pass."""
    spread = [k for k in call.keywords if k.arg is None]
    if not (len(spread) == 1 and isinstance(spread[0].value, gast.Name)):
        return False
    named = {k.arg for k in call.keywords if k.arg is not None}
    return (
        spread[0].value.id == name and all(key.isidentifier() for key in keys) and not keys & named
    )


def _parameters(arguments: gast.arguments) -> list:
    found = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    found += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return [a for a in found if isinstance(a, gast.Name)]


def _is_entry(node: gast.Subscript, name: str) -> bool:
    return (
        isinstance(node.value, gast.Name)
        and node.value.id == name
        and isinstance(node.slice, gast.Constant)
        and isinstance(node.slice.value, str)
    )


def _spread_out(keywords: list, name: str, keys: list, variable) -> list:
    """The keywords of a call, ``**name`` replaced by one keyword per key, in order."""
    result = []
    for keyword in keywords:
        spread = keyword.arg is None and isinstance(keyword.value, gast.Name)
        if spread and keyword.value.id == name:
            for key in keys:
                value = gast.Name(variable(key.value), gast.Load(), None, None)
                result.append(gast.keyword(arg=key.value, value=value))
        else:
            result.append(keyword)
    return result


def _replaced(value, name: str, variable):
    """``value`` with an entry ``name["key"]`` turned into its variable (same context)."""
    if isinstance(value, gast.Subscript) and _is_entry(value, name):
        replacement = gast.Name(variable(value.slice.value), value.ctx, None, None)
        return gast.copy_location(replacement, value)
    return value
