"""A loop of generated code and the loop of its backward, which undoes it iteration by
iteration, read from the source of a gradient differentiated again.

The reverse sweep writes a loop's forward and backward as two loops of one function::

    for t in range(4):                  # the forward: each iteration saves, then writes
        stack.append(t2)
        t2 = h[t]
        stack.append(snapshot(h[t6]))
        h[t6] = t5
    ...
    for t in reversed(range(4)):        # the backward: each iteration undoes one of them
        dt5 = ...
        h[t6] = stack.pop()
        ...
        t2 = stack.pop()

The backward's iteration ``k`` runs once every later forward iteration is undone: every
name the forward pushed before binding it is back to its value of iteration ``k``, every
write it saved back to what it overwrote. :mod:`.aliases_paths` then judges the reads of
the backward's iteration on the forward's iteration followed by the backward's, once
(:func:`loop_pairs`), rather than on the stack the loops join into one bag.

A pair qualifies when both loops are statements of the function's own body with no
``else`` and no block in their bodies, the backward runs over ``reversed`` of what the
forward runs over (its names bound by neither loop nor between them), the forward only
pushes (``stack.append(t2)``, ``stack.append(shape_only(t2))``, the save of a write) and
the backward only pops, one pop for each push in the reverse order and of its kind (``t2 =
stack.pop()``, the write's restore), and nothing between the loops uses the stacks or
writes in place.
"""

from __future__ import annotations

from dataclasses import dataclass

import gast

from s2sgrad.compiler.passes.aliases_restores import SavedWrites
from s2sgrad.compiler.passes.sharing import sources_of, updated_name
from s2sgrad.compiler.syntax import names_read, names_written, nested_statements, walk

__all__ = ["LoopPair", "loop_pairs", "taken_from"]

_STRAIGHT = (gast.Assign, gast.AugAssign, gast.Expr, gast.Pass)


@dataclass(frozen=True)
class LoopPair:
    """A forward loop and the backward loop that undoes it, with the statements between
    them and the names whose values in an iteration of the backward are not those of the
    forward's iteration it undoes followed by the statements between (``carried``)."""

    forward: gast.For
    between: list[gast.stmt]
    backward: gast.For
    carried: frozenset[str]
    forward_updates: frozenset[int]  # ids of the writes in the forward's body


def loop_pairs(function: gast.FunctionDef, saved: SavedWrites, resolve) -> list[LoopPair]:
    """The pairs of loops of ``function``'s body whose backward undoes the forward (see
    the module docstring).

    Example::

        loop_pairs(gradient, SavedWrites(gradient, resolve), resolve)  # [LoopPair(...)]
    """
    body = function.body
    pairs = []
    for first, forward in enumerate(body):
        if not _straight_loop(forward):
            continue
        pushes = [s for s in forward.body if id(s) in saved.operations]
        if not pushes or any(saved.operations[id(s)][1] != "append" for s in pushes):
            continue
        for second in range(first + 1, len(body)):
            statement = body[second]
            if _straight_loop(statement) and _undoes(statement, forward, pushes, saved):
                between = body[first + 1 : second]
                if _quiet_between(between, saved) and _same_runs(forward, between, statement):
                    pairs.append(_pair(forward, between, statement, saved, resolve))
                break
            if any(id(s) in saved.operations for s in nested_statements([statement])):
                break  # the stacks are used between: no pair
    return pairs


def _straight_loop(statement: gast.stmt) -> bool:
    return (
        type(statement) is gast.For
        and not statement.orelse
        and all(type(s) in _STRAIGHT for s in statement.body)
    )


def _undoes(backward: gast.For, forward: gast.For, pushes, saved: SavedWrites) -> bool:
    """Whether ``backward``'s body pops, in reverse order, one entry of each kind
    ``forward``'s ``pushes`` pushed, and uses the stacks in no other way."""
    pops = [s for s in backward.body if id(s) in saved.operations]
    if len(pops) != len(pushes) or any(saved.operations[id(s)][1] != "pop" for s in pops):
        return False
    for push, pop in zip(pushes, reversed(pops)):
        if saved.operations[id(push)][0] != saved.operations[id(pop)][0]:
            return False
        if type(pop) is not gast.Assign or len(pop.targets) != 1:
            return False
        target = pop.targets[0]
        moved = saved.transfers.get(id(push))
        if moved is not None:  # stack.append(t2) or of shape_only(t2): t2 = stack.pop()
            name = _pushed_name(push)
            if type(target) is not gast.Name or target.id != name:
                return False
        elif id(push) in saved.saved:  # the save of a write: its restore
            update = saved.saved[id(push)][1]
            if id(update) not in saved.restoring.get(id(pop), ()):
                return False
        else:
            return False
    return True


def _pushed_name(push: gast.stmt) -> str | None:
    pushed = push.value.args[0]
    if type(pushed) is gast.Call:
        pushed = pushed.args[0]
    return pushed.id if type(pushed) is gast.Name else None


def _quiet_between(between: list[gast.stmt], saved: SavedWrites) -> bool:
    """Nothing between the loops uses the stacks or writes in place."""
    statements = list(nested_statements(between))
    return not any(id(s) in saved.operations or updated_name(s) for s in statements)


def _same_runs(forward: gast.For, between: list[gast.stmt], backward: gast.For) -> bool:
    """The backward runs over ``reversed(...)`` of the ``range(...)`` the forward runs
    over, whose names neither loop nor the statements between bind, with the same one
    name as its target, bound by nothing else: iteration ``k`` of each binds it to the
    same number."""
    runs = forward.iter
    if type(runs) is not gast.Call or type(runs.func) is not gast.Name or runs.func.id != "range":
        return False
    back = backward.iter
    if not (
        type(back) is gast.Call
        and type(back.func) is gast.Name
        and back.func.id == "reversed"
        and len(back.args) == 1
        and not back.keywords
        and gast.dump(back.args[0]) == gast.dump(runs)
    ):
        return False
    used = {n.id for n in walk(runs) if type(n) is gast.Name} - {"range"}
    written = set().union(
        *(names_written(s) for s in nested_statements([forward, *between, backward]))
    )
    target = forward.target  # one name, bound by the two headers alone: the same values
    if type(target) is not gast.Name or gast.dump(backward.target) != gast.dump(target):
        return False
    bodies = nested_statements([*forward.body, *between, *backward.body])
    return not used & written and not any(target.id in names_written(s) for s in bodies)


def _pair(forward: gast.For, between, backward: gast.For, saved: SavedWrites, resolve) -> LoopPair:
    """The pair, with the names whose values differ from the model of one iteration:
    bound in the forward but not pushed first and given back by a pop, bound between the
    loops, carried from one iteration of the backward to the next, and bound from any of
    these (a new value, ``dt3 = dt4 * w``, is not)."""
    given_back = {
        s.targets[0].id
        for s in backward.body
        if id(s) in saved.operations and type(s.targets[0]) is gast.Name
    }
    pushed: set[str] = set()
    carried: set[str] = set()
    for statement in forward.body:
        if id(statement) in saved.transfers:
            pushed.add(_pushed_name(statement) or "")
        carried |= names_written(statement) - pushed  # bound before its value is pushed
    carried |= set().union(*(names_written(s) for s in forward.body)) - given_back
    carried |= set().union(*(names_written(s) for s in nested_statements(between)))
    bound_in_backward = set().union(*(names_written(s) for s in backward.body))
    bound_here: set[str] = set()
    for statement in backward.body:
        written = names_written(statement)
        if id(statement) not in saved.operations:
            read = names_read(statement)
            carried |= (read & bound_in_backward) - bound_here - given_back
            if taken_from(statement, resolve) & carried:
                carried |= written
        bound_here |= written
    updates = frozenset(id(s) for s in forward.body if updated_name(s))
    return LoopPair(forward, between, backward, frozenset(carried), updates)


def taken_from(statement: gast.stmt, resolve) -> set[str]:
    """The names whose memory what ``statement`` binds may share: the sources of an
    assignment's value (arithmetic: none), every name any other statement reads."""
    if type(statement) is gast.Assign:
        return sources_of(statement.value, resolve)
    return names_read(statement)


def _bound_in(loop: gast.For) -> set[str]:
    return set().union(*(names_written(s) for s in loop.body)) - {
        n.id for n in walk(loop.target) if type(n) is gast.Name
    }
