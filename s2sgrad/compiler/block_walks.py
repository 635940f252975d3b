"""Walks of statements that leave their blocks out, so that passes asking something of
every statement of nested blocks walk each node once rather than once per statement
around it (quadratic in the nesting depth: 90 nested ``if``s).

Example::

    statements = list(nested_statements(function.body))
    names_written_by_all(statements)  # as set().union(*map(names_written, statements))
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.syntax import (
    _LEAVES,
    _NODE_FIELDS,
    _OPERATOR_FREE,
    SCOPES,
    _node_fields,
    _nodes,
    names_read,
    names_written,
)

__all__ = [
    "header_nodes",
    "header_writes",
    "names_read_by_all",
    "names_read_kept",
    "names_written_by_all",
    "statement_blocks",
]


def statement_blocks(statement: gast.stmt) -> list[list[gast.stmt]]:
    """The blocks of ``statement`` that :func:`header_nodes` leaves out (none for function
    and class definitions and ``match``)."""
    if type(statement) in SCOPES or type(statement) is gast.Match:
        return []
    state = statement.__dict__
    return [state[f] for f in _BLOCKS if type(state.get(f)) is list]


def header_nodes(statement: gast.stmt) -> list[gast.AST]:
    """The nodes of ``statement`` outside its blocks (``body``, ``orelse``, ``finalbody``):
    an ``if``'s test, a loop's target and iterable, a ``try``'s handlers. All of a function
    or class definition, and of a ``match``. Walking each statement of
    :func:`nested_statements` this way visits every node once, where :func:`walk` of each
    visits a block once per statement around it.

    Example::

        header_nodes(parse_statement("if a > 0:\n    b = 1"))  # the If, a > 0 and its parts
    """
    return _header(statement, True, False)


def header_writes(statement: gast.stmt) -> set[str]:
    """Names a compound statement binds outside its blocks (a loop target, ``as`` names, a
    walrus in a test; the statements of its blocks come on their own); an ``except``
    clause counts whole.

    Example::

        header_writes(parse_statement("for i in range(3): y = i"))  # {'i'}
    """
    found: set[str] = set()
    for field, value in gast.iter_fields(statement):
        if field in ("body", "orelse", "finalbody"):
            continue
        for part in value if isinstance(value, list) else [value]:
            if isinstance(part, gast.AST):
                found |= names_written(part)
    return found


def names_read_by_all(statements: list[gast.stmt]) -> set[str]:
    """``set().union(*map(names_read, statements))`` for the statements of
    :func:`nested_statements`, in one walk of each node."""
    return {
        n.id
        for statement in statements
        for n in _header(statement, True, True)
        if type(n) is gast.Name and type(n.ctx) is gast.Load
    }


def names_read_kept(statement: gast.stmt, kept: dict) -> set[str]:
    """``names_read(statement)``, the reads of a statement with blocks kept in ``kept``
    (by id) and reused for it and for the statements around it: asked of each statement
    of nested blocks in turn, the blocks are walked once, not once per level. Only for
    statements that do not change while ``kept`` is in use.

    Example::

        kept: dict = {}
        reads = names_read_kept(if_statement, kept)  # later: names_read_kept(outer, kept)
    """
    blocks = statement_blocks(statement)
    if not blocks:
        return names_read(statement)
    known = kept.get(id(statement))
    if known is not None and known[0] is statement:
        return known[1]
    reads = {
        n.id
        for n in _header(statement, True, True)
        if type(n) is gast.Name and type(n.ctx) is gast.Load
    }
    for block in blocks:
        for inner in block:
            reads |= names_read_kept(inner, kept)
    kept[id(statement)] = (statement, reads)
    return reads


def names_written_by_all(statements: list[gast.stmt]) -> set[str]:
    """``set().union(*map(names_written, statements))`` for the statements of
    :func:`nested_statements`, in one walk of each node."""
    found = set()
    for statement in statements:
        for current in _header(statement, False, True):
            kind = type(current)
            if kind is gast.Name:
                if type(current.ctx) is gast.Store:
                    found.add(current.id)
            elif kind in (gast.FunctionDef, gast.ClassDef):
                found.add(current.name)
    return found


def _header(statement: gast.stmt, into_functions: bool, skip_operators: bool) -> list[gast.AST]:
    kind = type(statement)
    if kind in SCOPES or kind is gast.Match:
        return _nodes(statement, into_functions, skip_operators)
    found: list[gast.AST] = [statement]
    fields = (_OPERATOR_FREE if skip_operators else _NODE_FIELDS).get(kind)
    if fields is None:
        fields = _node_fields(kind, skip_operators)
    state = statement.__dict__
    for field in fields:
        if field in _BLOCKS:
            continue
        value = state.get(field)
        for item in value if type(value) is list else (value,):
            if item is None or type(item) in _LEAVES:
                continue
            if not into_functions and type(item) in SCOPES:
                found.append(item)  # as _nodes: a nested scope, not what is inside it
            else:
                found += _nodes(item, into_functions, skip_operators)
    return found


_BLOCKS = ("body", "orelse", "finalbody")
