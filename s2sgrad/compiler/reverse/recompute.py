"""Values recomputed in the backward loop instead of saved every iteration.

``v = xs[t]`` in ``for t in ...`` (and the slices, index arithmetic and inner ranges of
the indices of nested loops) is computed again at the top of the backward loop's body,
where the same ``t`` comes back, instead of being pushed every iteration.

Example::

    read_back -= recompute_in_loops(saves, forward, backward)
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.annotations import RANGE_LOOP, annotation
from s2sgrad.compiler.reverse.saves import PUSH, Saves, marker_key
from s2sgrad.compiler.syntax import (
    assign,
    clone,
    names_modified,
    names_read,
    names_written,
    nested_statements,
    string_statement,
    walk,
)

__all__ = ["recompute_in_loops"]


def recompute_in_loops(saves: Saves, forward, backward) -> set[str]:
    """Instead of saving ``v = xs[t]`` every iteration of ``for t in ...``, compute it
    again at the top of the backward loop's body, where the same ``t`` comes back.

    Only where that is surely the same value: ``v`` is written once in the function
    and read, forward, only by the loop's later statements and, backward, only inside
    the backward loop; ``xs`` and the other names of the index are never written; ``t``
    only by the loop. The forward loop is then the user's code (its temporaries fold
    into one statement again), as a hand-written loop reads ``xs[t]`` twice. Returns
    the names the backward sweep no longer reads (it reads the new ones instead).
    """
    loops = [(b, f) for b, f in saves.replays.values() if type(f) is type(b) is gast.For]
    if not loops or _writes_in_place(forward):  # an alias's write would be unseen
        return set()
    writes = _write_counts(forward)
    top = {n for s in forward if type(s) is gast.Assign for n in names_written(s)}
    renamed: set[str] = set()
    replayed = [
        (backward_loop, forward_loop)
        for backward_loop, forward_loop in saves.replays.values()
        if type(forward_loop) is gast.For
        and type(backward_loop) is gast.For
        and _same_index(forward_loop, backward_loop, writes)
    ]
    for backward_loop, forward_loop in replayed:
        # the indices of the replayed loops around it are the same backward too
        indices = {forward_loop.target.id} | {
            outer.target.id
            for _, outer in replayed
            if any(inner is forward_loop for inner in nested_statements(outer.body))
        }
        body = forward_loop.body
        fixed = _Fixed(writes, top, indices)
        # what each candidate asks of the statements before it, gathered as the loop goes
        # (asked anew per candidate, it made a long loop body quadratic): nothing below
        # changes the forward body, nor the backward sweep outside this backward loop
        arithmetic = _LoopArithmetic(body, fixed)
        reads = _ReadsBefore(body)
        outside: set[str] | None = None
        for position, statement in enumerate(body[:-1]):
            key = marker_key(statement, PUSH)
            save = saves.saves[key] if key is not None else None
            if save is None or not save.used or save.kind != "assign":
                continue
            value = _recomputed_value(body, position + 1, save.target, fixed, arithmetic)
            target = save.target
            if value is None or target in reads.up_to(position + 1):
                continue
            if outside is None:
                outside = _reads_outside(forward, forward_loop) | _reads_outside(
                    backward, backward_loop
                )
            if target in outside:
                continue
            save.used = False
            # a name of its own, so that the forward loop's stays local to it (and folds)
            again = saves.names.claim(target)
            _rename(backward_loop.body, target, again)
            backward_loop.body.insert(0, assign(again, clone(value)))
            renamed.add(target)
    return renamed


def _write_counts(statements) -> dict[str, int]:
    """How often each name is rebound or written in place, loop headers included."""
    counts: dict[str, int] = {}
    for statement in nested_statements(statements):
        if isinstance(statement, gast.For):
            written = names_written(statement.target)
        elif isinstance(statement, (gast.If, gast.While)):
            continue
        else:
            written = names_modified(statement)
        for name in written:
            counts[name] = counts.get(name, 0) + 1
    return counts


def _writes_in_place(statements) -> bool:
    """Whether a statement may change a value in place: an item or attribute store, ``+=``,
    a mutating method, or a call whose result is dropped (the markers are strings)."""
    for statement in nested_statements(statements):
        if isinstance(statement, (gast.AugAssign, gast.Delete)):
            return True
        if isinstance(statement, gast.Expr) and string_statement(statement) is None:
            return True
        if isinstance(statement, gast.Assign) and names_modified(statement) - names_written(
            statement
        ):
            return True
    return False


def _same_index(forward_loop: gast.For, backward_loop: gast.For, writes) -> bool:
    """Whether the backward loop runs the forward loop's index (a name only it sets)."""
    target = forward_loop.target
    return (
        type(target) is gast.Name
        and type(backward_loop.target) is gast.Name
        and backward_loop.target.id == target.id
        and writes.get(target.id) == 1
    )


class _Fixed:
    """Whether a name holds one value wherever a loop body reads it: never written, or
    written once in the function's own body (in no loop or branch), or the index of a
    loop the backward sweep runs again with the same index."""

    def __init__(self, writes: dict[str, int], top: set[str], indices: set[str]):
        self.writes, self.top, self.indices = writes, top, indices

    def __call__(self, name: str) -> bool:
        count = self.writes.get(name)
        return not count or (count == 1 and name in self.top) or name in self.indices


class _LoopArithmetic:
    """:func:`_loop_arithmetic` of the first statements of a loop body, for growing
    prefixes, each statement looked at once."""

    def __init__(self, body: list[gast.stmt], fixed: _Fixed):
        self.body, self.fixed = body, fixed
        self.found: dict[str, gast.expr] = {}
        self.seen = 0  # the statements looked at: body[:seen]

    def of_first(self, count: int) -> dict[str, gast.expr]:
        """``_loop_arithmetic(body[:count], fixed)`` (``count`` never less than before)."""
        if count > self.seen:
            self.found.update(_loop_arithmetic(self.body[self.seen : count], self.fixed))
            self.seen = count
        return self.found


class _ReadsBefore:
    """:func:`_reads_before` of a loop body, for growing positions, each statement
    walked once (and only once a candidate asks)."""

    def __init__(self, body: list[gast.stmt]):
        self.body = body
        self.read: set[str] = set()
        self.seen = 0

    def up_to(self, position: int) -> set[str]:
        """``_reads_before(body, position)`` (``position`` never less than before)."""
        if position > self.seen:
            self.read |= _reads_before(self.body[self.seen : position], position - self.seen)
            self.seen = position
        return self.read


def _recomputed_value(
    body, position: int, target: str, fixed: _Fixed, before: _LoopArithmetic
) -> gast.expr | None:
    """What ``target = value`` at ``body[position]`` computes, written so that the backward
    loop can compute it again, or None. The statement must be the only write of
    ``target``, and the value one of: an element or slice ``base[...]`` of a ``fixed``
    base at an index of fixed names (``xs[t]``, ``x[:, i : i + oh]``); arithmetic of fixed
    names reading a loop index (``i + 1``); or ``range(...)`` of such, when the next
    statement is the loop over it (so ``range`` is the builtin: ``passes/loops.py``).
    Arithmetic temporaries assigned once earlier in the body (``t = i + oh``, which
    ``before`` gathers) have their expressions written out in their place."""
    statement = body[position]
    if not (
        type(statement) is gast.Assign
        and type(statement.targets[0]) is gast.Name
        and statement.targets[0].id == target
        and fixed.writes.get(target) == 1
    ):
        return None
    value = statement.value
    if target in names_read(value):
        return None
    arithmetic = before.of_first(position)  # read here only: the next call adds to it
    known = lambda name: fixed(name) or name in arithmetic  # noqa: E731
    if type(value) is gast.Subscript:
        if not (type(value.value) is gast.Name and fixed(value.value.id)):
            return None
        if not _plain_index(value.slice) or not all(map(known, names_read(value.slice))):
            return None
    elif type(value) is gast.Call:
        if not _loop_range(value, body[position + 1 : position + 2], target, known):
            return None
    elif not (_arithmetic(value, known) and names_read(value) & (fixed.indices | set(arithmetic))):
        return None
    value = _written_out(clone(value), arithmetic)
    # what the backward loop reads must hold there what it held here
    return value if all(map(fixed, names_read(value))) else None


def _written_out(node: gast.expr, expressions: dict[str, gast.expr]) -> gast.expr:
    """``node`` with each name of ``expressions`` read replaced by its expression."""
    if type(node) is gast.Name:
        return clone(expressions[node.id]) if node.id in expressions else node
    for field, child in gast.iter_fields(node):
        if isinstance(child, list):
            setattr(node, field, [_written_out(c, expressions) for c in child])
        elif isinstance(child, gast.AST):
            setattr(node, field, _written_out(child, expressions))
    return node


def _loop_range(value: gast.Call, following, target: str, known) -> bool:
    """Whether ``value`` is ``range(...)`` of ``known`` arithmetic and ``following`` is
    the loop over ``target`` (an inner loop's range)."""
    return (
        type(value.func) is gast.Name
        and value.func.id == "range"
        and not value.keywords
        and all(_arithmetic(a, known) for a in value.args)
        and len(following) == 1
        and type(following[0]) is gast.For
        and annotation(following[0], RANGE_LOOP, False)
        and type(following[0].iter) is gast.Name
        and following[0].iter.id == target
    )


def _loop_arithmetic(statements, fixed: _Fixed) -> dict[str, gast.expr]:
    """``name -> expression`` for the statements ``name = expression`` written once,
    where the expression is arithmetic (``+ - * // %``, signs) of constants and fixed
    names."""
    found = {}
    for statement in statements:
        if (
            type(statement) is gast.Assign
            and type(statement.targets[0]) is gast.Name
            and fixed.writes.get(statement.targets[0].id) == 1
            and _arithmetic(statement.value, fixed)
        ):
            found[statement.targets[0].id] = statement.value
    return found


_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)


def _arithmetic(node, known) -> bool:
    kind = type(node)
    if kind is gast.Constant:
        return type(node.value) in (int, float)
    if kind is gast.Name:
        return known(node.id)
    if kind is gast.BinOp:
        return (
            isinstance(node.op, _ARITHMETIC)
            and _arithmetic(node.left, known)
            and _arithmetic(node.right, known)
        )
    if kind is gast.UnaryOp:
        return isinstance(node.op, (gast.USub, gast.UAdd)) and _arithmetic(node.operand, known)
    return False


def _plain_index(node) -> bool:
    if type(node) in (gast.Name, gast.Constant):
        return True
    if type(node) is gast.Tuple:
        return all(_plain_index(e) for e in node.elts)
    if type(node) is gast.Slice:
        return all(p is None or _plain_index(p) for p in (node.lower, node.upper, node.step))
    return False


def _rename(statements, old: str, new: str) -> None:
    for statement in statements:
        for node in walk(statement):
            if type(node) is gast.Name and node.id == old:
                node.id = new


def _reads_before(body, position: int) -> set[str]:
    read: set[str] = set()
    for statement in body[:position]:
        read |= names_read(statement)
    return read


def _reads_outside(statements, skipped) -> set[str]:
    """Names ``statements`` read, leaving out the statement ``skipped`` (its header too)."""
    read: set[str] = set()
    for statement in statements:
        if statement is skipped:
            continue
        blocks = [getattr(statement, f, None) for f in ("body", "orelse", "finalbody")]
        blocks = [b for b in blocks if isinstance(b, list)]
        if not blocks or isinstance(statement, gast.FunctionDef):
            read |= names_read(statement)
            continue
        for field, value in gast.iter_fields(statement):
            if field in ("body", "orelse", "finalbody"):
                continue
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, gast.AST):
                    read |= names_read(item)
        for block in blocks:
            read |= _reads_outside(block, skipped)
    return read
