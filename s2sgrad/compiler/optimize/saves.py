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
    "pushed_stacks",
    "Restores",
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
    saves = Restores(statements)
    removable = {
        (stack, name)
        for stack, name in saves.pushed
        if stack in stacks and not saves.read_after_restore(stack, name)
    }
    if not removable:
        return body
    body = without_saves(body, removable)
    still_pushed = set()
    for statement, _ in walk_with_loops(body, ()):
        push = _push(statement)
        if push is not None and push[0] in stacks:
            still_pushed.add(push[1])
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
    push = _push(statement)
    return push[1] if push is not None and push[0] == stack else None


def pushed_stacks(body: list[gast.stmt]) -> set[str]:
    """The stacks ``body`` pushes onto (``stack.append(name)``), its blocks included.

    Example::

        pushed_stacks(forward.body)  # {'stack'}
    """
    return {push[0] for s, _ in walk_with_loops(body, ()) if (push := _push(s)) is not None}


def popped_name(statement, stack) -> str | None:
    """``name`` for the statement ``name = stack.pop()``."""
    pop = _pop(statement)
    return pop[1] if pop is not None and pop[0] == stack else None


def _push(statement) -> tuple[str, str] | None:
    """``(stack, name)`` for the statement ``stack.append(name)`` (or ``shape_only(name)``)."""
    if not isinstance(statement, gast.Expr):
        return None
    stack = method_receiver(statement.value, "append")
    if stack is None:
        return None
    args = statement.value.args
    if len(args) == 1 and isinstance(args[0], gast.Name):
        return stack, args[0].id
    if len(args) == 1 and is_shape_stand_in(args[0]):
        return stack, args[0].args[0].id
    return None


def _pop(statement) -> tuple[str, str] | None:
    """``(stack, name)`` for the statement ``name = stack.pop()``."""
    if not (isinstance(statement, gast.Assign) and isinstance(statement.targets[0], gast.Name)):
        return None
    stack = method_receiver(statement.value, "pop")
    return None if stack is None else (stack, statement.targets[0].id)


class Restores:
    """The pushes, pops and reads of a walk of statements (``walk_with_loops``), indexed in
    one pass, so that asking whether a saved value is read once restored costs the reads
    of that name, not a walk of every statement: a loop body of n statements and n saves
    takes time linear in n.

    Example::

        saves = Restores(list(walk_with_loops(body, ())))
        unread = [p for p in saves.pushed if not saves.read_after_restore(*p)]
    """

    def __init__(self, statements: list[tuple[gast.stmt, tuple]]) -> None:
        self.pushed: dict[tuple[str, str], None] = {}  # in order of the walk
        self._saves: list[tuple[str, str] | None] = []  # each statement's push or pop
        self._loops = [loops for _, loops in statements]
        self._first_pop: dict[tuple[str, str], int] = {}
        self._restoring_loops: dict[tuple[str, str], set[int]] = {}
        self._readers: dict[str, list[int]] = {}
        for index, (statement, loops) in enumerate(statements):
            push = _push(statement)
            pop = _pop(statement) if push is None else None
            self._saves.append(push or pop)
            if push is not None:
                self.pushed[push] = None
            if pop is not None:
                self._first_pop.setdefault(pop, index)
                self._restoring_loops.setdefault(pop, set()).update(id(loop) for loop in loops)
            for name in _reads_of_statement_itself(statement):
                self._readers.setdefault(name, []).append(index)

    def read_after_restore(self, stack: str, name: str) -> bool:
        """Whether ``name`` is read after a pop from ``stack`` restored it (or in a loop
        that restores it), by a statement other than its pushes and pops."""
        pair = (stack, name)
        first_pop = self._first_pop.get(pair)
        if first_pop is None:
            return False
        restoring = self._restoring_loops[pair]
        for index in self._readers.get(name, ()):
            if self._saves[index] == pair:
                continue
            if index > first_pop or any(id(loop) in restoring for loop in self._loops[index]):
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
    """``statements`` without the pushes and pops of the ``(stack, name)`` pairs in
    ``removable`` (a set), and without the blocks and replays that leaves empty."""
    result = []
    for statement in statements:
        if (_push(statement) or _pop(statement)) in removable:
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


def tested_again(body: list[gast.stmt]) -> set[int]:
    """The indices of ``body``'s ``if`` statements on a name (or its negation) with nothing
    left to do, whose name a later ``if`` of ``body`` tests again, with no write of the name
    nor ``return`` between: dropping them loses no effect (the later test raises wherever
    this one would, as for an array of several elements).

    One walk down the body: each such ``if`` waits, by its name, for the first later
    statement that settles it (asking every ``if`` to read on made many in a row cost n²).

    Example::

        tested_again(body)  # {0} for: if t: pass / y = 1 / if t: y = 2
    """
    dropped: set[int] = set()
    waiting: dict[str, list[int]] = {}  # name -> the emptied ifs on it not yet settled
    for index, statement in enumerate(body):
        tested = _tested_name(statement.test) if type(statement) is gast.If else None
        if waiting:
            if tested is not None and tested in waiting:
                dropped.update(waiting.pop(tested))
            if waiting:
                if any(type(n) is gast.Return for n in walk(statement)):
                    waiting.clear()  # the later test may not run
                else:
                    for name in names_written(statement) & waiting.keys():
                        del waiting[name]  # the later test may see another value
        if tested is not None and only_passes(statement.body) and only_passes(statement.orelse):
            waiting.setdefault(tested, []).append(index)
    return dropped


def _tested_name(test: gast.expr) -> str | None:
    if type(test) is gast.UnaryOp and type(test.op) is gast.Not:
        test = test.operand
    return test.id if type(test) is gast.Name else None
