"""Saves of code on Python numbers computed again in the backward loop instead of pushed.

In code on Python numbers (``scalars.py``) a push and a pop cost more than one ``math``
call or one arithmetic operation, so a temporary the backward loop reads is computed
again there from the values it was computed from, as a person writes it::

    for _ in range(200):               for _ in range(200):
        stack.append(t2)                   stack.append(x)
        t2 = math.sin(x)          ─►       x = math.sin(x) * a + b * x
        stack.append(x)                ...
        x = t2 * a + b * x             for _ in reversed(range(200)):
    ...                                    x = stack.pop()
    for _ in reversed(range(200)):         da = da + dx * math.sin(x)
        x = stack.pop()
        da = da + dx * t2
        t2 = stack.pop()

Only where that is surely the same value. ``v = E`` (one operation on names and
constants) is the one write of ``v`` in its forward loop, which pushes ``v`` just before
it; the backward loop pops ``v`` once, and reads it only before that pop and after the
values ``E`` reads are back. Each name ``E`` reads is one the function never writes, or
one pushed once in the forward loop (holding, where it is pushed, what it held at ``E``)
and popped once in the backward loop, or one computed again this way before. Nothing else
reads ``v``: its pops only restored it for the backward loop, which now computes it.

Example::

    recompute_cheap_saves(function, namespace)  # after scalars.scalar_code
"""

from __future__ import annotations

import math

import gast

from s2sgrad.compiler.annotations import SAVE_INIT, annotation
from s2sgrad.compiler.syntax import (
    SCOPES,
    assign,
    clone_rewriting,
    load,
    method_receiver,
    names_read,
    names_written,
    nested_statements,
    walk,
)

__all__ = ["recompute_cheap_saves"]

_LOOPS = (gast.For, gast.While)
_JUMPS = (gast.Break, gast.Continue, gast.Return, gast.Try)


def recompute_cheap_saves(function: gast.FunctionDef, namespace: dict) -> bool:
    """Compute again, in the backward loop, the cheap temporaries of code on Python numbers
    that the forward loop pushes; True if any was. ``function`` is changed in place.

    Example::

        recompute_cheap_saves(function, namespace)  # t2 = math.sin(x) is no longer pushed
    """
    nodes = walk(function)
    if any(type(n) in SCOPES for n in nodes if n is not function):
        return False
    if any(type(n) is gast.Try for n in nodes):
        return False
    # name → the statement computing it again backward (under a name of its own, so that
    # the optimiser, which folds names local to one loop, folds each into its one reader)
    recomputed: dict[str, gast.Assign] = {}
    changed = False
    while True:
        found = _next_candidate(function, namespace, recomputed)
        if found is None:
            return changed
        name, statement = found
        recomputed[name] = statement
        changed = True


def _next_candidate(function, namespace, recomputed):
    """Recompute one save that may be; ``(name, its backward statement)`` or None."""
    statements = list(nested_statements(function.body))
    pushes = _located(function.body, _pushed)
    pops = _located(function.body, _popped)
    written = set().union(*map(_own_writes, statements))
    for (stack, name), places in pushes.items():
        if len(places) != 1 or len(pops.get((stack, name), ())) != 1 or name in recomputed:
            continue
        (forward, push_at), (backward, pop_at) = places[0], pops[(stack, name)][0]
        if not _loops_apart(forward, backward):
            continue
        plan = _plan(name, forward, push_at, namespace)
        if plan is None:
            continue
        at, value = plan
        insert_at = _insertion(
            value, stack, forward, at, backward, pushes, pops, written, recomputed
        )
        if insert_at is None or not _reads_allowed(
            function, name, forward, at, backward, insert_at, pop_at
        ):
            continue
        if not _writes_allowed(statements, name, forward.body[at], backward.body[pop_at]):
            continue
        again = _fresh(name, walk(function))
        backward_names = {n: s.targets[0].id for n, s in recomputed.items()} | {name: again}
        statement = assign(again, _renamed(value, backward_names))
        del forward.body[push_at]
        del backward.body[pop_at]  # after the insertion point: the reads lie between
        backward.body[insert_at:pop_at] = [
            _renamed(s, {name: again}) for s in backward.body[insert_at:pop_at]
        ]
        backward.body.insert(insert_at, statement)
        _drop_init(function, name)
        return name, statement
    return None


def _fresh(name: str, nodes) -> str:
    taken = {n.id for n in nodes if type(n) is gast.Name}
    while name in taken:
        name += "_"
    return name


def _renamed(node, names: dict[str, str]):
    """A copy of ``node`` reading ``names[n]`` wherever it reads a name ``n`` of ``names``."""

    def rename(current):
        if type(current.ctx) is gast.Load and current.id in names:
            return load(names[current.id])
        return current

    return clone_rewriting(node, rename, kinds=(gast.Name,))


def _located(body, match) -> dict[tuple[str, str], list[tuple[gast.stmt | None, int]]]:
    """``(stack, name)`` → ``(loop, index)`` of each statement ``match`` recognises, for
    those directly in a loop's body; one anywhere else is at ``(None, -1)``."""
    found: dict[tuple[str, str], list] = {}
    placed = set()
    for loop in (s for s in nested_statements(body) if isinstance(s, _LOOPS)):
        for index, statement in enumerate(loop.body):
            key = match(statement)
            if key is not None:
                found.setdefault(key, []).append((loop, index))
                placed.add(id(statement))
    for statement in nested_statements(body):
        key = match(statement)
        if key is not None and id(statement) not in placed:
            found.setdefault(key, []).append((None, -1))
    return found


def _pushed(statement) -> tuple[str, str] | None:
    if type(statement) is gast.Expr and method_receiver(statement.value, "append") is not None:
        args = statement.value.args
        if len(args) == 1 and type(args[0]) is gast.Name and not statement.value.keywords:
            return statement.value.func.value.id, args[0].id
    return None


def _popped(statement) -> tuple[str, str] | None:
    if (
        type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
        and method_receiver(statement.value, "pop") is not None
        and not statement.value.args
    ):
        return statement.value.func.value.id, statement.targets[0].id
    return None


def _loops_apart(forward, backward) -> bool:
    """Two different loops, neither inside the other, without jumps or else blocks."""
    if forward is None or backward is None or forward is backward:
        return False
    for loop, other in ((forward, backward), (backward, forward)):
        if loop.orelse or any(n is other or type(n) in _JUMPS for n in walk(loop)):
            return False
    return True


def _plan(name, forward, push_at, namespace):
    """``(index, E)`` of ``name = E`` in the forward loop's body, right after the push
    that saves the old value, when ``E`` is one cheap operation; else None."""
    at = push_at + 1
    if at >= len(forward.body):
        return None
    statement = forward.body[at]
    if not (
        type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
        and statement.targets[0].id == name
    ):
        return None
    value = statement.value
    if not _cheap(value, namespace) or name in names_read(value):
        return None
    return at, value


def _cheap(value, namespace) -> bool:
    """One operation of numbers on names and constants: ``math.sin(x)``, ``a * x``, ``-x``."""
    kind = type(value)
    if kind is gast.BinOp:
        operands = [value.left, value.right]
    elif kind is gast.UnaryOp:
        operands = [value.operand]
    elif kind is gast.Call:
        func = value.func
        if not (
            type(func) is gast.Attribute
            and type(func.value) is gast.Name
            and namespace.get(func.value.id) is math
            and not value.keywords
        ):
            return False
        operands = value.args
    else:
        return False
    return all(type(o) in (gast.Name, gast.Constant) for o in operands)


def _insertion(value, stack, forward, at, backward, pushes, pops, written, recomputed):
    """Where in the backward loop's body every name ``value`` reads holds what it held at
    ``forward.body[at]``: the index after the last of their pops; None if one may not."""
    restored = []  # (name, the index of the backward statement that gives its value)
    for name in names_read(value) & written:  # the others hold the same value everywhere
        if name in recomputed:
            forward_at = _index_of_write(forward.body, name, at)
            backward_at = _index(backward.body, recomputed[name])
        else:
            pushed = pushes.get((stack, name), [])
            popped = pops.get((stack, name), [])
            if len(pushed) != 1 or len(popped) != 1:
                return None
            if pushed[0][0] is not forward or popped[0][0] is not backward:
                return None
            forward_at, backward_at = pushed[0][1], popped[0][1]
        if forward_at is None or backward_at is None:
            return None
        low, high = sorted((forward_at, at))
        if any(name in names_written(s) for s in forward.body[low + 1 : high]):
            return None
        restored.append((name, backward_at))
    insert_at = max((index + 1 for _, index in restored), default=0)
    for name, index in restored:  # nothing rebinds them between their pop and the insertion
        if any(name in names_written(s) for s in backward.body[index + 1 : insert_at]):
            return None
    return insert_at


def _index_of_write(body, name, before) -> int | None:
    """The index of the one statement of ``body`` that writes ``name``, if before ``before``."""
    writes = [i for i, s in enumerate(body) if name in names_written(s)]
    return writes[0] if len(writes) == 1 and writes[0] < before else None


def _index(body, statement) -> int | None:
    for index, candidate in enumerate(body):
        if candidate is statement:
            return index
    return None


def _reads_allowed(function, name, forward, at, backward, insert_at, pop_at) -> bool:
    """``name`` is read only in the forward loop after it is computed, and in the
    backward loop between its new computation and its old pop."""
    if name in _header_reads(forward) or name in _header_reads(backward):
        return False
    push_at = at - 1  # the push itself reads it, to save it
    if any(name in names_read(s) for s in forward.body[:push_at]):
        return False
    inside = sum(_count_reads(s, name) for s in forward.body[at:])
    between = sum(_count_reads(s, name) for s in backward.body[insert_at:pop_at])
    if not between:
        return False  # nothing reads it back: the saves' own pass drops it
    return 1 + inside + between == _count_reads(function, name)


def _header_reads(loop) -> set[str]:
    if type(loop) is gast.For:
        return names_read(loop.iter) | names_read(loop.target)
    return names_read(loop.test)


def _count_reads(node, name) -> int:
    return sum(
        1 for n in walk(node) if type(n) is gast.Name and n.id == name and type(n.ctx) is gast.Load
    )


def _writes_allowed(statements, name, computation, restore) -> bool:
    """``name`` is written only by its computation, its pop and its first binding."""
    return all(
        statement is computation
        or statement is restore
        or annotation(statement, SAVE_INIT, False)
        or name not in _own_writes(statement)
        for statement in statements
    )


def _own_writes(statement) -> set[str]:
    """Names ``statement`` itself binds, not those of the statements in its blocks."""
    if type(statement) is gast.For:
        return names_written(statement.target) | names_written(statement.iter)
    if type(statement) in (gast.While, gast.If):
        return names_written(statement.test)
    return names_written(statement)


def _drop_init(function, name) -> None:
    """Remove ``name = None`` bound only so that the first push had a value."""
    for statement in nested_statements(function.body):
        for field in ("body", "orelse"):
            block = getattr(statement, field, None)
            if isinstance(block, list):
                block[:] = [s for s in block if not _init_of(s, name)]
    function.body[:] = [s for s in function.body if not _init_of(s, name)]


def _init_of(statement, name) -> bool:
    return (
        annotation(statement, SAVE_INIT, False)
        and type(statement) is gast.Assign
        and type(statement.targets[0]) is gast.Name
        and statement.targets[0].id == name
    )
