"""Lists and dicts of the code around a function that the function only writes into: logs.

``history.append(float(loss))`` or ``LOG["last"] = loss`` stores a value being
differentiated in a global list or dict. Source transformation cannot follow a value
through such a container, so a store into one is refused, unless the container is a log:
the function only appends to it or writes its entries, and nothing it calls names it. Then
no value stored in this call is read back in it, and what is stored is the value as the
plain function computes it, which is what the plain function would log. Its callers could
read the log back, so no derivative calls the derivative of a function that logs
(``runtime/logging_callees``).

Example::

    only_logged("history", statements, parsed)  # True for history.append(float(loss))
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from typing import Any

import gast

from s2sgrad.compiler.frontend import ParsedFunction
from s2sgrad.runtime.kept_states import code_names, helper_functions
from s2sgrad.runtime.logging_callees import note_logging

__all__ = ["only_logged"]

_APPENDS = frozenset({"append"})
_LIBRARIES = ("numpy", "scipy", "s2sgrad", "math", "builtins")


def only_logged(base: str, statements: Iterable[gast.stmt], parsed: ParsedFunction) -> bool:
    """Whether ``base`` is written into by ``statements`` (``base.append(v)``,
    ``base[k] = v``) and read nowhere else, and no function of the user's that the
    function can reach names it."""
    for statement in statements:
        if not _only_writes(statement, base):
            return False
    if any(base in code_names(code) for code in _reachable_code(parsed.function)):
        return False
    note_logging(parsed.function, base)  # its callers cannot be seen: no derivative calls it
    return True


def _only_writes(statement: gast.stmt, base: str) -> bool:
    """Whether every use of ``base`` in ``statement`` (its own parts, not the statements of
    its blocks, which come on their own; a nested function whole) is a write into it."""
    writes: set[int] = set()
    if type(statement) is gast.Expr and type(statement.value) is gast.Call:
        func = statement.value.func
        if type(func) is gast.Attribute and func.attr in _APPENDS and _is(func.value, base):
            writes.add(id(func.value))
    if type(statement) is gast.Assign:
        for target in statement.targets:
            if type(target) is gast.Subscript and _is(target.value, base):
                writes.add(id(target.value))
    for part in _own_parts(statement):
        for node in gast.walk(part):
            if type(node) is gast.Name and node.id == base and id(node) not in writes:
                return False
    return True


def _own_parts(statement: gast.stmt) -> list[gast.AST]:
    """``statement`` without the statements of its blocks (an ``if``'s test, a ``for``'s
    target and iterable, a ``with``'s items); a function or class defined in it whole."""
    if isinstance(statement, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
        return [statement]
    if not any(isinstance(getattr(statement, f, None), list) for f in _BLOCKS):
        return [statement]
    parts: list[gast.AST] = []
    for field, value in gast.iter_fields(statement):
        if field in _BLOCKS:
            continue
        values = value if isinstance(value, list) else [value]
        parts.extend(v for v in values if isinstance(v, gast.AST))
    return parts


_BLOCKS = frozenset({"body", "orelse", "finalbody"})  # an except or case: walked whole


def _is(node: gast.expr, base: str) -> bool:
    return type(node) is gast.Name and node.id == base


def _reachable_code(function: Any) -> Iterable[types.CodeType]:
    """The code of the user's functions ``function``'s globals and closure name, and of the
    methods of the user's classes and objects there, two calls deep (not ``function``
    itself, whose statements are read)."""
    own = getattr(function, "__func__", function)
    seen: set[int] = {id(own)}
    pending = list(helper_functions(own)) if isinstance(own, types.FunctionType) else []
    for _ in range(2):
        deeper: list = []
        for each in pending:
            if id(each) in seen or _library(each):
                continue
            seen.add(id(each))
            yield each.__code__
            deeper.extend(helper_functions(each))
        pending = deeper


def _library(function: types.FunctionType) -> bool:
    return (function.__module__ or "").split(".")[0] in _LIBRARIES
