"""A backward loop that pops one saved value per iteration iterates the saved list instead.

::

    stack = []                              stack = []
    for _ in range(200):                    for _ in range(200):
        stack.append(x)                         stack.append(x)
        x = math.sin(x) * a + b * x             x = math.sin(x) * a + b * x
    for _ in reversed(range(200)):    →     for x in reversed(stack):
        x = stack.pop()                         db = db + dx * x
        db = db + dx * x

(the pop may come after assignments that do not use its name).

The same values in the same order, without a method call per iteration (what a person
writes: ``for x in reversed(xs)``). Only when the forward loop pushes exactly once per
iteration (the append is one of its statements, and it has no ``break`` or ``continue``),
both loops run over the same ``range``, the list is made empty just before and used by
nothing else, and the backward loop's own variable is read nowhere.

Example::

    iterate_saved_stacks(node.body)  # True when a loop changed
"""

from __future__ import annotations

from collections import Counter

import gast

from s2sgrad.compiler.optimize.simple_statements import without_blocks
from s2sgrad.compiler.optimize.statements import name_counts
from s2sgrad.compiler.syntax import every_statement, load, store, walk

__all__ = ["iterate_saved_stacks"]


def iterate_saved_stacks(body: list[gast.stmt]) -> bool:
    """Rewrite the loop pairs of ``body`` in place as the module says; True if any changed.

    Example::

        iterate_saved_stacks(node.body)
    """
    if without_blocks(body):  # no loop at all
        return False
    blocks = [body] + [
        inner
        for statement in every_statement(body)
        for inner in (getattr(statement, "body", None), getattr(statement, "orelse", None))
        if type(inner) is list
    ]
    # Only a loop over reversed(...) can be rewritten: without one, no counting is needed.
    if not any(_backward_loop(statement) for statements in blocks for statement in statements):
        return False
    reads, writes = name_counts(body)
    changed = False
    for statements in blocks:
        for position in range(len(statements)):
            if _rewrite(statements, position, reads, writes):
                changed = True
    return changed


def _backward_loop(statement: gast.stmt) -> bool:
    """Whether ``statement`` is ``for name in reversed(...)`` without ``else``."""
    if not (
        type(statement) is gast.For
        and not statement.orelse
        and type(statement.iter) is gast.Call
        and type(statement.target) is gast.Name
    ):
        return False
    call = statement.iter
    return (
        type(call.func) is gast.Name
        and call.func.id == "reversed"
        and len(call.args) == 1
        and not call.keywords
    )


def _rewrite(statements, position, reads: Counter, writes: Counter) -> bool:
    """Rewrite the backward loop ``statements[position]`` if it pops a list as the module
    says; True if it did."""
    backward = statements[position]
    if not _backward_loop(backward) or reads[backward.target.id] != 0:
        return False
    reversed_call = backward.iter
    first = _first_pop(backward.body)
    if first is None:
        return False
    pop, stack, popped = first
    if writes[stack] != 1 or reads[stack] != 2 or _jumps(backward.body):
        return False
    found = _forward_loop(statements[:position], stack, reversed_call.args[0], reads, writes)
    if not found:
        return False
    backward.body = [s for s in backward.body if s is not pop]
    backward.target = store(popped)
    backward.iter = gast.Call(func=load("reversed"), args=[load(stack)], keywords=[])
    reads[stack] -= 1
    return True


def _first_pop(body) -> tuple[gast.Assign, str, str] | None:
    """``(statement, stack, name)`` for the first statement ``name = stack.pop()`` of
    ``body`` when the statements before it are assignments or comments that do not use
    ``name`` (so that it might as well come first)."""
    for index, statement in enumerate(body):
        if type(statement) is gast.Expr and type(statement.value) is gast.Constant:
            continue
        if not (
            type(statement) is gast.Assign
            and len(statement.targets) == 1
            and type(statement.targets[0]) is gast.Name
        ):
            return None
        value = statement.value
        if not (
            type(value) is gast.Call
            and type(value.func) is gast.Attribute
            and value.func.attr == "pop"
            and type(value.func.value) is gast.Name
            and not value.args
            and not value.keywords
        ):
            continue
        name = statement.targets[0].id
        for earlier in body[:index]:
            if any(type(node) is gast.Name and node.id == name for node in walk(earlier)):
                return None
        return statement, value.func.value.id, name
    return None


def _forward_loop(before, stack: str, sequence, reads: Counter, writes: Counter) -> bool:
    """Whether ``before`` ends ``stack = []``, a loop over ``sequence`` appending to
    ``stack`` once per iteration, then statements that do not touch ``stack``."""
    if not _fixed_range(sequence, before, writes):
        return False
    for index in range(len(before) - 1, 0, -1):
        loop = before[index]
        if type(loop) is not gast.For:
            continue
        appends = [s for s in loop.body if _appends_to(s, stack)]
        creation = before[index - 1]
        return (
            len(appends) == 1
            and not loop.orelse
            and gast.dump(loop.iter) == gast.dump(sequence)
            and not _jumps(loop.body)
            and type(creation) is gast.Assign
            and len(creation.targets) == 1
            and type(creation.targets[0]) is gast.Name
            and creation.targets[0].id == stack
            and type(creation.value) is gast.List
            and not creation.value.elts
        )
    return False


def _fixed_range(sequence, before, writes: Counter) -> bool:
    """Whether ``sequence`` is ``range(...)`` of numbers, or a name bound once, in
    ``before``, to a ``range(...)``: the same length both times it is iterated."""
    if type(sequence) is gast.Name:
        if writes[sequence.id] != 1:
            return False
        return any(
            type(statement) is gast.Assign
            and len(statement.targets) == 1
            and type(statement.targets[0]) is gast.Name
            and statement.targets[0].id == sequence.id
            and _range_call(statement.value)
            for statement in before
        )
    return _range_call(sequence) and all(type(a) is gast.Constant for a in sequence.args)


def _range_call(value) -> bool:
    return (
        type(value) is gast.Call
        and type(value.func) is gast.Name
        and value.func.id == "range"
        and not value.keywords
    )


def _appends_to(statement, stack: str) -> bool:
    return (
        type(statement) is gast.Expr
        and type(statement.value) is gast.Call
        and type(statement.value.func) is gast.Attribute
        and statement.value.func.attr == "append"
        and type(statement.value.func.value) is gast.Name
        and statement.value.func.value.id == stack
        and len(statement.value.args) == 1
    )


def _jumps(body) -> bool:
    """Whether ``break``, ``continue``, ``return`` or ``yield`` occurs in ``body``."""
    return any(
        type(node) in (gast.Break, gast.Continue, gast.Return, gast.Yield, gast.YieldFrom)
        for statement in body
        for node in walk(statement)
    )
