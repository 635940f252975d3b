"""Saves read only for their shapes: the forward sweep pushes a stand-in of the value's
shape and dtype (``shape_only``) instead of the value.

``out = out + t`` in a loop overwrites ``out``; its backward ``unbroadcast(g, out)`` needs
the earlier ``out`` only for its shape, so saving the whole array every iteration would
keep every intermediate alive. Reads before the first restore see the value itself and
may read it in any way.

Example::

    names = read_for_shape_only(backward, "unbroadcast", restored)  # {"out"}
"""

from __future__ import annotations

from collections.abc import Callable

import gast

from s2sgrad.compiler.syntax import names_read, walk

__all__ = ["read_for_shape_only", "read_only_for_shape"]

_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "dtype"})


def read_for_shape_only(
    statements: list[gast.stmt], unbroadcast: str, restored: Callable[[gast.stmt], str | None]
) -> set[str]:
    """The names ``restored`` (the variable a statement restores, else None) restores in
    ``statements`` whose restored values are read only for their shape or dtype: as the
    second argument of ``unbroadcast`` (the helper's name in this code) or through
    ``.shape``, ``.ndim`` or ``.dtype``."""
    flat = list(_with_loops(statements, ()))
    restoring_loops: dict[str, set[int]] = {}
    for statement, loops in flat:
        name = restored(statement)
        if name is not None:
            restoring_loops.setdefault(name, set()).update(map(id, loops))
    candidates = set(restoring_loops)
    read_anywhere = set().union(*(names_read(s) for s in statements))
    popped: set[str] = set()
    for statement, loops in flat:
        name = restored(statement)
        if name is not None:
            popped.add(name)
            continue
        if _unread_copy(statement, read_anywhere):
            continue
        for read in _value_reads(statement, unbroadcast) & candidates:
            if read in popped or any(id(loop) in restoring_loops[read] for loop in loops):
                candidates.discard(read)
    return candidates


def read_only_for_shape(statements: list[gast.stmt], unbroadcast: str) -> set[str]:
    """The names every read of which in ``statements`` is for the shape or dtype alone
    (what a VJP may save as ``shape_only(name)``).

    Example::

        read_only_for_shape(backward, "unbroadcast")  # {"t14"}: dt14 = unbroadcast(g, t14)
    """
    read_anywhere = set().union(*(names_read(s) for s in statements))
    shape_only = set(read_anywhere)
    for statement, _ in _with_loops(statements, ()):
        if not _unread_copy(statement, read_anywhere):
            shape_only -= _value_reads(statement, unbroadcast)
    return shape_only


def _unread_copy(statement, read_anywhere: set[str]) -> bool:
    """``a = v`` where nothing reads ``a`` (the value after a statement, kept in case a
    rule reads it)."""
    return (
        type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
        and type(statement.value) is gast.Name
        and statement.targets[0].id not in read_anywhere
    )


def _with_loops(statements, loops):
    """Each statement of ``statements`` and of the blocks in it (not entering functions),
    in order, with the loops around it. A stack of iterators, not nested generators: each
    statement is handed up once, not once per block around it."""
    stack = [(iter(statements), loops)]
    while stack:
        statements_left, around = stack[-1]
        for statement in statements_left:
            yield statement, around
            if type(statement) is gast.FunctionDef:
                continue
            inner_loops = (
                around + (statement,) if type(statement) in (gast.For, gast.While) else around
            )
            blocks = [getattr(statement, field, None) for field in ("body", "orelse")]
            blocks = [block for block in blocks if isinstance(block, list)]
            if blocks:
                stack.extend((iter(block), inner_loops) for block in reversed(blocks))
                break
        else:
            stack.pop()


def _value_reads(statement, unbroadcast: str) -> set[str]:
    """Names ``statement`` itself (not the statements in its blocks) reads other than for
    their shape."""
    if type(statement) in (gast.If, gast.While):
        parts = [statement.test]
    elif type(statement) is gast.For:
        parts = [statement.iter]
    else:
        parts = [statement]
    shape_reads: set[int] = set()
    reads: list[gast.Name] = []
    for part in parts:
        for node in walk(part):
            kind = type(node)
            if kind is gast.Name and type(node.ctx) is gast.Load:
                reads.append(node)
            elif kind is gast.Call and _shape_argument(node, unbroadcast):
                shape_reads.add(id(node.args[1]))
            elif (
                kind is gast.Attribute
                and node.attr in _SHAPE_ATTRIBUTES
                and type(node.value) is gast.Name
            ):
                shape_reads.add(id(node.value))
    return {n.id for n in reads if id(n) not in shape_reads}


def _shape_argument(node: gast.Call, unbroadcast: str) -> bool:
    return (
        type(node.func) is gast.Name
        and node.func.id == unbroadcast
        and len(node.args) == 2
        and not node.keywords
        and type(node.args[1]) is gast.Name
    )
