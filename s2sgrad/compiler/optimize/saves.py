"""Saves nobody reads: stack pushes and pops of values no statement reads once restored.

The reverse sweep saves a value when backward code reads it; after specialisation some of
those reads (shape queries) are gone, and so are the saves they needed.

Example::

    body = drop_unneeded_saves(body)  # x_stack.append(x) … x = x_stack.pop(), x unread: gone
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.annotations import REPLAY, SAVE_INIT, STACK, annotation
from s2sgrad.compiler.optimize.statements import (
    drop_orphan_comments,
    is_comment,
    is_shape_stand_in,
    only_passes,
    own_nodes,
)
from s2sgrad.compiler.syntax import method_receiver, names_read, names_written, walk

__all__ = [
    "drop_unneeded_saves",
    "empty_replay",
    "popped_name",
    "pushed_name",
    "read_after_restore",
    "walk_with_loops",
    "without_saves",
]


def drop_unneeded_saves(body: list[gast.stmt]) -> list[gast.stmt]:
    """Remove stack pushes and pops of variables that nothing reads once restored.

    The reverse transformer saves a value when backward code reads it; after
    specialisation some of those reads (shape queries) are gone.
    """
    stacks = _stacks(body)
    if not stacks:  # straight-line code pushes nothing: no walk
        return body
    statements = list(walk_with_loops(body, ()))
    stacks -= _escaping(statements)
    if not stacks:
        return body
    removable = set()
    for stack in stacks:
        saved = {pushed_name(s, stack) for s, _ in statements if pushed_name(s, stack) is not None}
        for name in saved:
            if not read_after_restore(statements, stack, name):
                removable.add((stack, name))
    if not removable:
        return body
    body = without_saves(body, removable)
    still_pushed = {pushed_name(s, stack) for s, _ in walk_with_loops(body, ()) for stack in stacks}
    return [
        s
        for s in body
        if not (annotation(s, SAVE_INIT, False) and s.targets[0].id not in still_pushed)
    ]


def _stacks(body) -> set[str]:
    """The stacks the reverse transformer created (marked where they are made)."""
    return {
        s.targets[0].id for s in body if isinstance(s, gast.Assign) and annotation(s, STACK, False)
    }


def _escaping(statements) -> set[str]:
    """Names read other than to push or pop (a VJP's stack, returned for its backward
    function, whose pops this body does not see)."""
    reads: dict[str, int] = {}
    stack_uses: dict[str, int] = {}
    for statement, _ in statements:
        for node in own_nodes(statement):
            if type(node) is gast.Name and type(node.ctx) is gast.Load:
                reads[node.id] = reads.get(node.id, 0) + 1
            elif type(node) is gast.Call:
                for method in ("append", "pop"):
                    receiver = method_receiver(node, method)
                    if receiver is not None:
                        stack_uses[receiver] = stack_uses.get(receiver, 0) + 1
    return {name for name, count in reads.items() if count != stack_uses.get(name, 0)}


def walk_with_loops(statements, loops):
    for statement in statements:
        yield statement, loops
        inner_loops = (
            loops + (statement,) if isinstance(statement, (gast.For, gast.While)) else loops
        )
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                yield from walk_with_loops(inner, inner_loops)


def pushed_name(statement, stack) -> str | None:
    """``name`` for the statement ``stack.append(name)`` (or ``shape_only(name)``)."""
    if isinstance(statement, gast.Expr) and method_receiver(statement.value, "append") == stack:
        args = statement.value.args
        if len(args) == 1 and isinstance(args[0], gast.Name):
            return args[0].id
        if len(args) == 1 and is_shape_stand_in(args[0]):
            return args[0].args[0].id
    return None


def popped_name(statement, stack) -> str | None:
    """``name`` for the statement ``name = stack.pop()``."""
    if (
        isinstance(statement, gast.Assign)
        and isinstance(statement.targets[0], gast.Name)
        and method_receiver(statement.value, "pop") == stack
    ):
        return statement.targets[0].id
    return None


def read_after_restore(statements, stack, name) -> bool:
    """Whether ``name`` is read after a pop restored it (or in a loop that restores it)."""
    popped = False
    restoring_loops = {
        id(loop) for s, loops in statements if popped_name(s, stack) == name for loop in loops
    }
    for statement, loops in statements:
        if popped_name(statement, stack) == name:
            popped = True
            continue
        if pushed_name(statement, stack) == name:
            continue
        restored = popped or any(id(loop) in restoring_loops for loop in loops)
        if restored and name in _reads_of_statement_itself(statement):
            return True
    return False


def _reads_of_statement_itself(statement) -> set[str]:
    """Names a statement reads, not counting the statements nested in its body."""
    if isinstance(statement, (gast.If, gast.While)):
        return names_read(statement.test)
    if isinstance(statement, gast.For):
        return names_read(statement.iter)
    return names_read(statement)


def without_saves(statements, removable):
    result = []
    for statement in statements:
        if any(
            pushed_name(statement, stack) == name or popped_name(statement, stack) == name
            for stack, name in removable
        ):
            continue
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                inner = without_saves(inner, removable)
                if all(is_comment(s) or type(s) is gast.Pass for s in inner):
                    inner = []  # comments alone would print as an empty block
                setattr(statement, field, inner or ([gast.Pass()] if field == "body" else []))
        if empty_replay(statement):
            continue
        result.append(statement)
    return drop_orphan_comments(result, [is_comment(s) for s in result])


def empty_replay(statement) -> bool:
    """Whether ``statement`` is a backward ``if`` or loop (it has no effect of its own)
    left with nothing to do."""
    return (
        annotation(statement, REPLAY, False)
        and only_passes(statement.body)
        and only_passes(statement.orelse)
    )


def tested_again(body: list[gast.stmt], index: int) -> bool:
    """Whether ``body[index]`` is an ``if`` on a name (or its negation) with nothing left to
    do, whose name a later ``if`` of ``body`` tests again, with no write of the name nor
    ``return`` between: dropping it loses no effect (the later test raises wherever this
    one would, as for an array of several elements)."""
    statement = body[index]
    if type(statement) is not gast.If:
        return False
    if not (only_passes(statement.body) and only_passes(statement.orelse)):
        return False
    name = _tested_name(statement.test)
    if name is None:
        return False
    for later in body[index + 1 :]:
        if type(later) is gast.If and _tested_name(later.test) == name:
            return True
        if name in names_written(later) or any(type(n) is gast.Return for n in walk(later)):
            return False  # the later test may see another value, or not run
    return False


def _tested_name(test: gast.expr) -> str | None:
    if type(test) is gast.UnaryOp and type(test.op) is gast.Not:
        test = test.operand
    return test.id if type(test) is gast.Name else None
