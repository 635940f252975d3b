"""A second look, along the paths the code can take, at an update the sharing analysis doubts.

:class:`.sharing.Sharing` ignores order and branches. After ::

    if c:
        t = np.flip(v)
        w = t * 2.0
    else:
        w = v
    w[0] = 1.0
    ... t ...

it gives ``w`` and ``t`` the common origin ``v``, although no run binds both to it: ``t``
is a view of ``v`` only where ``w`` is new. Code the transformer writes has this form
wherever the user's conditional expression or ``if`` chooses between a new array and an
existing one (``w = t * 2.0 if c else v``): the backward reads the branch's values again,
so differentiating the gradient once more (a Hessian) was refused.

:func:`changed_memory_reads` walks the statements in order, keeping which pairs of names may
share memory at each point: a binding pairs its name with the names its value is taken from
(:func:`.sharing.sources_of`, the same rules as the order-blind analysis) and with their
partners, and drops the pairs of the value it replaces; a loop's pairs are joined to a fixed
point. At the update, the partners of the updated name hold the changed memory; a read of
one of them afterwards, or of a name bound from one, is what the refusal is about.

Paths are kept apart by the conditions they took: ``if t2:`` on a comparison nothing changes
(:func:`_steady_conditions`) takes the same branch again in the backward, until ``t2`` is
bound anew (at most ``_MOST_PATHS`` paths, then joined). Each path also follows the save
stacks of generated code (:mod:`.aliases_restores`): where ``w[i] = stack.pop()`` pops the
snapshot saved just before an update of ``w[i]`` (same ``w``, same index, none of their names
bound since), the update is undone: the names that held its memory before it hold their
values again (reads after the restore are no longer stale), and the restore itself changes
only what was made from ``w`` since. Code the walk does not model (a nested function, a
lambda, ``try``, ``with``, ``break``, ``global``) keeps the order-blind answer.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, NamedTuple

import gast

from s2sgrad.compiler.block_walks import header_writes, statement_blocks
from s2sgrad.compiler.passes.aliases_loop_pairs import LoopPair, loop_pairs, taken_from
from s2sgrad.compiler.passes.aliases_restores import SavedWrites, written_name
from s2sgrad.compiler.passes.sharing import (
    assigned_sources,
    base_of,
    resolved_target,
    sources_of,
)
from s2sgrad.compiler.syntax import names_written, nested_statements, walk
from s2sgrad.runtime.core import shape_only, unbroadcast

__all__ = ["changed_memory_reads"]

# "<changed u>": the memory update u changes, held by the names paired with it; "<again u>",
# paired with it: u ran again before its change was undone
# statements whose effect on sharing the walk knows; anything else: no answer
_SIMPLE = (gast.Assign, gast.AugAssign, gast.Expr, gast.Return, gast.Pass, gast.Assert)
_UNMODELLED = (
    gast.FunctionDef,
    gast.AsyncFunctionDef,
    gast.ClassDef,
    gast.Lambda,
    gast.Global,
    gast.Nonlocal,
    gast.NamedExpr,
    gast.Yield,
    gast.YieldFrom,
    gast.Await,
)

Pairs = dict[str, frozenset[str]]  # each name's partners (symmetric); absent: none


class Token(NamedTuple):
    """An entry of a save stack."""

    update: int  # id of the update a snapshot is of; 0 for any other entry
    kept: frozenset[str] | None  # the names its restore needs to hold what they held
    spoiled: frozenset[str] = frozenset()  # of those, the names bound anew since
    moved: str | None = None  # stack.append(t2): the name whose value this entry is
    intact: frozenset[int] = frozenset()  # the entries below it ``moved`` had not spoiled
    held: str | None = None  # the name standing for the value it holds ("": a new value)

    def valid(self) -> bool:
        return self.kept is not None and not self.spoiled


Stacks = dict[str, tuple[Token, ...] | None]  # the entries of each save stack; None: unknown
_MOST_PATHS = 8  # more distinct paths than this are joined into one
_UNKNOWN_BELOW = Token(0, frozenset({"<unknown entries>"}))  # the bottom of a stack: not told


class _Unmodelled(Exception):
    """The walk met code whose effect on sharing it does not model."""


def changed_memory_reads(
    function: gast.FunctionDef, updates: list[tuple[gast.stmt, str]], resolve, containers
) -> dict[int, set[str]] | None:
    """For each ``(update, name)`` of ``updates`` (an update changing ``name``'s array in
    place), by ``id`` of the update: the names read after it that may hold memory it
    changed, along the paths the code can take; None when the walk cannot tell (see the
    module docstring). ``containers``: the names made as lists or dicts, whose item stores
    keep a reference.

    Example::

        # if c: t = np.flip(v); w = t * 2.0
        # else: t = None; w = v
        # w[0] = 1.0; return t
        changed_memory_reads(function, [(update, "w")], resolve, set())  # {id(update): set()}
    """
    if any(isinstance(node, _UNMODELLED) for node in walk(function) if node is not function):
        return None
    saved = SavedWrites(function, resolve)
    paths = _Paths(updates, resolve, containers, saved)
    paths.conditions = _steady_conditions(function)
    found = loop_pairs(function, saved, resolve) if saved.stacks else []
    pairs = [_Region(pair, saved, function.body, pair is found[-1], resolve) for pair in found]
    paths.skip = lambda update, name: any(r.judges(paths.current, update, name) for r in pairs)
    try:
        paths.block(function.body, [_State({}, {}, frozenset())])
        for region in pairs:  # the backward's reads, on one forward iteration undone
            paths.skip = region.leaves(paths)
            paths.iteration_undone(region.pair, region.after)
    except _Unmodelled:
        return None
    return paths.stale


class _Region:
    """The reads a loop pair's model judges: in the backward's body (and, for the last
    pair, in the statements after it), of a name not carried, of what a write of the
    forward (or its restore) changed."""

    def __init__(self, pair: LoopPair, saved: SavedWrites, body: list[gast.stmt], last, resolve):
        self.pair = pair
        self.statements = {id(s) for s in pair.backward.body}
        restores = {id(s) for s in pair.backward.body if id(s) in saved.restoring}
        self.updates = pair.forward_updates | restores
        self.after: list[gast.stmt] = []
        self.carried_after = set(pair.carried)
        if last:  # after the backward, every iteration is undone
            self.after = body[body.index(pair.backward) + 1 :]
            for statement in nested_statements(self.after):
                if taken_from(statement, resolve) & self.carried_after:
                    self.carried_after |= names_written(statement)
        self.after_ids = {id(s) for s in nested_statements(self.after)}

    def leaves(self, paths: _Paths) -> Callable[[int, str], bool]:
        """The reads this region does not judge, as the walk's ``skip``."""
        return lambda update, name: not self.judges(paths.current, update, name)

    def judges(self, statement: int, update: int, name: str) -> bool:
        if update not in self.updates:
            return False
        if statement in self.statements:
            return name not in self.pair.carried
        return statement in self.after_ids and name not in self.carried_after


class _State:
    """One path's facts: which names may share memory (``pairs``), the entries of the save
    stacks, and the conditions known on it (``(name, truth)``)."""

    __slots__ = ("pairs", "stacks", "facts")

    def __init__(self, pairs: Pairs, stacks: Stacks, facts: frozenset[tuple[str, bool]]):
        self.pairs = pairs
        self.stacks = stacks
        self.facts = facts

    def but(self, pairs: Pairs | None = None, stacks: Stacks | None = None, facts=None):
        return _State(
            self.pairs if pairs is None else pairs,
            self.stacks if stacks is None else stacks,
            self.facts if facts is None else facts,
        )

    def bound(self, bindings: dict[str, set[str]]) -> _State:
        """This state once the names of ``bindings`` are bound anew: paired with what their
        values are taken from, no longer the subject of a condition, nor kept by a save."""
        if not bindings:
            return self
        names = set(bindings)
        stacks = self.stacks
        for stack, entries in stacks.items():
            if entries and any(t.kept and not t.kept.isdisjoint(names) for t in entries):
                stacks = {**stacks, stack: tuple(_kept(t, names) for t in entries)}
        facts = self.facts
        if any(name in names for name, _ in facts):
            facts = frozenset(f for f in facts if f[0] not in names)
        return _State(_bound(self.pairs, bindings), stacks, facts)


def _kept(token: Token, bound: set[str]) -> Token:
    spoiled = token.kept & bound if token.kept is not None else None
    return token._replace(spoiled=token.spoiled | spoiled) if spoiled else token


def _steady_conditions(function: gast.FunctionDef) -> set[str]:
    """The names every binding of which is a comparison (``t2 = x.size > 1``, ``t6 = t is
    not None``), a ``not`` or a literal, and that nothing changes in place or is given to:
    their truth stays what an ``if`` found until they are bound again."""
    steady: dict[str, bool] = {}
    for statement in nested_statements(function.body):
        blocks = statement_blocks(statement)  # their statements come on their own
        for name in header_writes(statement) if blocks else names_written(statement):
            single = type(statement) is gast.Assign and len(statement.targets) == 1
            plain = single and type(statement.targets[0]) is gast.Name
            truth = plain and type(statement.value) in _TRUTHS
            steady[name] = steady.get(name, True) and truth
    for node in walk(function):
        if type(node) is gast.Call:
            given = [*node.args, *(k.value for k in node.keywords), node.func]
            for argument in given:
                if type(argument) in (gast.Name, gast.Attribute, gast.Subscript):
                    base = base_of(argument)
                    if type(base) is gast.Name:
                        steady[base.id] = False
        elif type(node) in (gast.Subscript, gast.Attribute) and type(node.ctx) is not gast.Load:
            base = base_of(node)
            if type(base) is gast.Name:
                steady[base.id] = False
        elif type(node) is gast.AugAssign and type(node.target) is gast.Name:
            steady[node.target.id] = False
    return {name for name, kept in steady.items() if kept}


_TRUTHS = (gast.Compare, gast.UnaryOp, gast.BoolOp, gast.Constant)


class _Paths:
    def __init__(self, updates: list[tuple[gast.stmt, str]], resolve, containers, restores):
        self.updates = {id(update): updated for update, updated in updates}
        self.marks = {_changed(u): u for u in self.updates}
        self.resolve = resolve
        self.containers = containers
        self.restores: SavedWrites = restores
        self.stale: dict[int, set[str]] = {u: set() for u in self.updates}
        self.conditions: set[str] = set()  # names a branch may be known to have tested
        self.current = 0  # id of the statement being walked
        self.skip: Callable[[int, str], bool] = lambda update, name: False
        self.loop_starts: dict[int, list[_State]] = {}  # by id of a loop: its fixed points

    def block(self, statements: list[gast.stmt], states: list[_State]) -> list[_State]:
        """The states after ``statements`` run from each of ``states`` (none: no path gets
        there)."""
        for statement in statements:
            if not states:
                return states
            states = _merged([out for state in states for out in self.statement(statement, state)])
        return states

    def statement(self, statement: gast.stmt, state: _State) -> list[_State]:
        kind = type(statement)
        self.current = id(statement)
        if kind is gast.If:
            self.read(statement.test, state)
            return self.branches(statement, state)
        if kind is gast.For:
            return self.for_loop(statement, state)
        if kind is gast.While:
            return self.while_loop(statement, state)
        if kind is gast.Raise:
            self.read(statement, state)
            return []
        if kind is gast.Delete and all(type(t) is gast.Name for t in statement.targets):
            return [state.bound({t.id: set() for t in statement.targets})]
        if kind not in _SIMPLE:
            raise _Unmodelled
        moved = self.restores.transfers.get(id(statement))
        if moved is None:
            self.read(statement, state)
        elif moved == "shape":  # a stand-in of the shape: shares nothing, reads no items
            shape = Token(0, None, held="")
            return [_pushed(state, self.restores.operations[id(statement)][0], shape)]
        if kind is gast.Return:
            return []
        return [self.simple(statement, state)]

    def branches(self, statement: gast.If, state: _State) -> list[_State]:
        test = statement.test
        if type(test) is not gast.Name or test.id not in self.conditions:
            return self.block(statement.body, [state]) + self.block(statement.orelse, [state])
        known = dict(state.facts)
        if test.id in known:
            return self.block(statement.body if known[test.id] else statement.orelse, [state])
        yes = state.but(facts=state.facts | {(test.id, True)})
        no = state.but(facts=state.facts | {(test.id, False)})
        return self.block(statement.body, [yes]) + self.block(statement.orelse, [no])

    def simple(self, statement: gast.stmt, state: _State) -> _State:
        operation = self.restores.operations.get(id(statement))
        popped = None
        if operation is not None and operation[1] == "pop":
            state, popped = _popped(state, operation[0])
        if popped is not None and popped.held is not None and _plain_target(statement):
            state = _taken(state, statement.targets[0].id, popped.held)
        else:
            state = self.effect(statement, state)
        if operation is not None and popped is not None and popped.moved and popped.intact:
            state = _given_back(state, operation[0], popped, statement)
        if operation is not None and operation[1] == "append":
            stack = operation[0]
            saved = self.restores.saved.get(id(statement))
            token = Token(0, None)
            if saved is not None:
                update = saved[1]
                kept = self.restores.kept[id(update)] | {written_name(update)}
                token = Token(id(update), kept)
            elif self.restores.transfers.get(id(statement)) == "name":
                moved = statement.value.args[0].id
                entry = f"<entry {id(statement)}>"
                state = state.bound({entry: {moved}})
                token = Token(0, None, moved=moved, held=entry)
            state = _pushed(state, stack, token)
        if id(statement) in self.restores.kept:  # an update whose restore may come
            state = self.saving(statement, state)
        restored = None
        undoes = self.restores.restoring.get(id(statement), ())
        if popped is not None and popped.valid() and popped.update in undoes:
            restored = popped.update
        if restored in self.updates:
            mark = _changed(restored)
            if f"<again {restored}>" not in state.pairs.get(mark, ()):
                state = state.but(pairs=_dropped(state.pairs, mark))
        updated = self.updates.get(id(statement))
        if updated is not None:
            mark = _changed(id(statement))
            held = {n for n in state.pairs.get(updated, ()) if not _is_mark(n)}
            if restored is not None:  # names holding what the update changed get it back
                held -= _holding_before(state.pairs, restored)
            if state.pairs.get(mark):  # a change of an earlier run in effect: one is undone
                held.add(f"<again {id(statement)}>")
            state = state.but(pairs=_added(state.pairs, mark, held))
        return state

    def saving(self, update: gast.stmt, state: _State) -> _State:
        """Mark the names holding ``updated``'s memory before ``update`` (``<before u>``)
        and ``updated`` after it (``<after u>``): a restore gives the first their values
        back and changes the second."""
        name = written_name(update)
        before = {n for n in state.pairs.get(name, ()) if not _is_mark(n)}
        pairs = _added(state.pairs, f"<before {id(update)}>", before)
        return state.but(pairs=_added(pairs, f"<after {id(update)}>", {name}))

    def for_loop(self, loop: gast.For, state: _State) -> list[_State]:
        self.read(loop.iter, state)
        runs_over = f"<loop {id(loop)}>"  # what the loop runs over, evaluated once
        start = state.bound({runs_over: self.sources(loop.iter)})
        targets = {n.id for n in walk(loop.target) if type(n) is gast.Name}
        while True:
            ends = self.block(loop.body, [start.bound(dict.fromkeys(targets, {runs_over}))])
            joined = _joined([start, *ends])
            if _same(joined, start):
                break
            start = joined
        self.loop_starts.setdefault(id(loop), []).append(start)
        return self.block(loop.orelse, [start])

    def iteration_undone(self, pair: LoopPair, after: list[gast.stmt]) -> None:
        """Walk one iteration of ``pair``'s forward, the statements between and one
        iteration of its backward, from where the forward's iterations start (see
        :mod:`.aliases_loop_pairs`): the changes of earlier iterations stay
        (``<earlier u>``), the stacks hold this iteration's entries on unknown ones."""
        starts = self.loop_starts.get(id(pair.forward))
        if not starts:
            return  # the walk never got there
        start = _earlier_changes(_joined(starts), pair.forward_updates)
        self.marks.update({f"<earlier {u}>": u for u in pair.forward_updates})
        stacks: Stacks = {k: (_UNKNOWN_BELOW,) if v is None else v for k, v in start.stacks.items()}
        for stack in self.restores.stacks:
            stacks.setdefault(stack, (_UNKNOWN_BELOW,))
        start = start.but(stacks=stacks)
        forward, backward = pair.forward, pair.backward
        target = forward.target.id  # the same name and number in both (loop_pairs)
        states = [start.bound({target: {f"<loop {id(forward)}>"}})]
        heights = {k: len(v) for k, v in states[0].stacks.items() if v is not None}
        states = self.block(pair.between, self.block(forward.body, states))
        runs_over = f"<loop {id(backward)}>"
        states = [
            _target_back(
                s.bound({runs_over: self.sources(backward.iter)}).bound({target: {runs_over}}),
                target,
                heights,
            )
            for s in states
        ]
        self.block(after, self.block(backward.body, states))

    def while_loop(self, loop: gast.While, state: _State) -> list[_State]:
        start = state
        while True:
            self.read(loop.test, start)
            joined = _joined([start, *self.block(loop.body, [start])])
            if _same(joined, start):
                break
            start = joined
        return self.block(loop.orelse, [start])

    def effect(self, statement: gast.stmt, state: _State) -> _State:
        """The state after a statement without blocks, as :func:`.sharing.links_of` links."""
        if type(statement) is gast.Assign:
            sources = assigned_sources(statement.value, self.resolve, self.containers)
            bound: dict[str, set[str]] = {}
            pairs = state.pairs
            for target in statement.targets:
                if type(target) in (gast.Name, gast.Tuple, gast.List, gast.Starred):
                    for node in walk(target):
                        if type(node) is gast.Name and type(node.ctx) is gast.Store:
                            bound[node.id] = sources
                for node in walk(target):  # items[i] = x: a list holds x itself
                    if type(node) in (gast.Subscript, gast.Attribute):
                        pairs = self.stored(node, sources, pairs)
            state = state.but(pairs=pairs).bound(bound)
            chained = len(statement.targets) > 1  # a = b = x * 2.0: one array, two names
            if (sources or chained) and len(bound) > 1:  # a, b = v: both may hold v's arrays
                pairs = state.pairs
                for name in bound:
                    pairs = _added(pairs, name, set(bound) - {name})
                state = state.but(pairs=pairs)
            return state
        pairs = state.pairs
        if type(statement) is gast.AugAssign:  # items += [v]: a list holds v
            base = base_of(statement.target)
            sources = self.sources(statement.value)
            if type(base) is gast.Name and sources:
                pairs = _added(pairs, base.id, _with_partners(pairs, sources))
        elif type(statement) is gast.Expr and type(statement.value) is gast.Call:
            value = statement.value  # items.append(x)
            func = value.func
            owner = base_of(func.value) if type(func) is gast.Attribute else None
            if isinstance(owner, gast.Name) and not self.is_module(owner):
                sources = set().union(*map(self.sources, [*value.args, *value.keywords]))
                if sources:
                    pairs = _added(pairs, owner.id, _with_partners(pairs, sources))
        return state.but(pairs=pairs)

    def stored(self, target: gast.expr, sources: set[str], pairs: Pairs) -> Pairs:
        """``items[i] = x`` of a list or dict, ``obj.a = x``: the container holds ``x``."""
        base = base_of(target)
        if type(base) is not gast.Name or not sources:
            return pairs
        if type(target) is gast.Subscript and base.id not in self.containers:
            return pairs  # an array's items: the values are copied
        return _added(pairs, base.id, _with_partners(pairs, sources))

    def is_module(self, node: gast.Name) -> bool:
        """``np`` of ``np.copyto(y, v)``: a module keeps nothing."""
        return isinstance(resolved_target(node, self.resolve), types.ModuleType)

    def sources(self, node: gast.AST) -> set[str]:
        if type(node) is gast.keyword:
            node = node.value
        return sources_of(node, self.resolve)

    def read(self, node: gast.AST, state: _State) -> None:
        """Note the names ``node`` reads that may hold the changed memory."""
        pairs, marks = state.pairs, self.marks
        operation = self.restores.operations.get(self.current)
        for_shape = _shape_reads(node, self.resolve)
        for found in walk(node):
            if operation is not None and found is _receiver(node):
                continue  # stack.pop(): the stack's values are read where they are used
            if type(found) is gast.Name and type(found.ctx) is gast.Load:
                if id(found) in for_shape:
                    continue  # its shape, which no write of items changes
                for partner in pairs.get(found.id, ()):
                    if partner in marks and not self.skip(marks[partner], found.id):
                        self.stale[marks[partner]].add(found.id)


def _shape_reads(node: gast.AST, resolve) -> set[int]:
    """The ids of the names ``node`` reads for their shape and dtype alone: the second
    argument of the runtime's ``unbroadcast(g, t5)`` and the argument of ``shape_only(t5)``
    in generated code (a view of an array written in place keeps its shape)."""
    found: set[int] = set()
    for call in walk(node):
        if type(call) is not gast.Call or call.keywords:
            continue
        arguments = call.args
        if len(arguments) not in (1, 2) or type(arguments[-1]) is not gast.Name:
            continue
        target = resolved_target(call.func, resolve)
        if (target is unbroadcast and len(arguments) == 2) or (
            target is shape_only and len(arguments) == 1
        ):
            found.add(id(arguments[-1]))
    return found


def _receiver(statement: gast.AST) -> gast.AST | None:
    """``stack`` of ``t2 = stack.pop()`` or ``stack.append(v)``, a statement of its own."""
    value: Any = getattr(statement, "value", None)
    if type(value) is gast.Call and type(value.func) is gast.Attribute:
        return value.func.value
    return None


def _changed(update: int) -> str:
    return f"<changed {update}>"


def _is_mark(name: str) -> bool:
    """``<before u>``, ``<after u>``, ``<changed u>``, ``<again u>``: marks, not values that
    can share memory."""
    return name.startswith(("<before ", "<after ", "<changed ", "<again ", "<earlier "))


def _earlier_changes(state: _State, updates: frozenset[int]) -> _State:
    """``state`` at the start of an iteration of a loop whose body makes ``updates``: their
    changes so far are an earlier iteration's (``<earlier u>``, never undone in the one
    walked), their saves' marks gone."""
    renamed = {_changed(u): f"<earlier {u}>" for u in updates}
    dropped = {f"<{kind} {u}>" for u in updates for kind in ("before", "after", "again")}
    pairs: Pairs = {}
    for name, partners in state.pairs.items():
        if name in dropped:
            continue
        kept = frozenset(renamed.get(p, p) for p in partners if p not in dropped)
        if kept:
            pairs[renamed.get(name, name)] = kept
    return state.but(pairs=pairs)


def _holding_before(pairs: Pairs, update: int) -> set[str]:
    """The names that hold what ``update`` changed as it was before (and nothing made
    from its array since): a restore of ``update`` gives them their values back."""
    before = pairs.get(f"<before {update}>", frozenset())
    after = f"<after {update}>"
    return {name for name in before if after not in pairs.get(name, ())}


def _popped(state: _State, stack: str) -> tuple[_State, Token | None]:
    entries = state.stacks.get(stack, ())
    if not entries or entries == (_UNKNOWN_BELOW,):  # unknown, or empty: not told
        return state.but(stacks={**state.stacks, stack: None}), None
    return state.but(stacks={**state.stacks, stack: entries[:-1]}), entries[-1]


def _pushed(state: _State, stack: str, token: Token) -> _State:
    """``stack`` once ``token`` is pushed: on a stack whose entries are unknown (pushed in a
    loop, say), the entries pushed since are still known, and come off first."""
    entries = state.stacks.get(stack, ())
    if entries and token.moved is not None:  # which saves the name is still right for
        name = token.moved
        intact = {
            i
            for i, t in enumerate(entries)
            if t.kept is not None and name in t.kept and name not in t.spoiled
        }
        token = token._replace(intact=frozenset(intact))
    grown = (_UNKNOWN_BELOW, token) if entries is None else (*entries, token)
    return state.but(stacks={**state.stacks, stack: grown})


def _target_back(state: _State, target: str, heights: dict[str, int]) -> _State:
    """The backward's iteration binds ``target`` to the number the forward's bound it to:
    the saves the forward's iteration pushed (above ``heights``) are right for it again."""
    stacks = dict(state.stacks)
    for stack, entries in state.stacks.items():
        if entries is not None and stack in heights:
            stacks[stack] = tuple(
                t._replace(spoiled=t.spoiled - {target}) if i >= heights[stack] else t
                for i, t in enumerate(entries)
            )
    return state.but(stacks=stacks)


def _plain_target(statement: gast.stmt) -> bool:
    return (
        type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
    )


def _taken(state: _State, name: str, held: str) -> _State:
    """``name = stack.pop()`` of the entry whose value ``held`` stands for (none: a new
    value): ``name`` shares what it shares, and the entry is gone."""
    state = state.bound({name: {held} if held else set()})
    return state.bound({held: set()}) if held else state


def _given_back(state: _State, stack: str, popped: Token, statement: gast.stmt) -> _State:
    """``t2 = stack.pop()`` of the entry ``stack.append(t2)`` pushed: ``t2`` holds again
    the value it held then, so the saves below that entry that ``t2`` was right for are
    right again (``u_next[1:-1] = stack.pop()`` once ``u_next``, swapped since, is back)."""
    targets = statement.targets if type(statement) is gast.Assign else []
    if len(targets) != 1 or type(targets[0]) is not gast.Name or targets[0].id != popped.moved:
        return state
    entries = state.stacks.get(stack)
    if not entries:
        return state
    name = popped.moved
    restored = tuple(
        t._replace(spoiled=t.spoiled - {name}) if i in popped.intact else t
        for i, t in enumerate(entries)
    )
    return state.but(stacks={**state.stacks, stack: restored})


def _dropped(pairs: Pairs, name: str) -> Pairs:
    result = dict(pairs)
    for other in result.pop(name, ()):
        if other in result:
            result[other] = result[other] - {name}
    return result


def _merged(states: list[_State]) -> list[_State]:
    """The states of the paths, one per set of known conditions (all joined into one past
    ``_MOST_PATHS``)."""
    if len(states) <= 1:
        return states
    groups: dict[frozenset, list[_State]] = {}
    for state in states:
        groups.setdefault(state.facts, []).append(state)
    if len(groups) > _MOST_PATHS:
        return [_joined(states)]
    return [group[0] if len(group) == 1 else _joined(group) for group in groups.values()]


def _joined(states: list[_State]) -> _State:
    first, *others = states
    pairs, stacks, facts = first.pairs, dict(first.stacks), first.facts
    for state in others:
        pairs = _join(pairs, state.pairs)
        for stack in set(stacks) | set(state.stacks):
            if stacks.get(stack, ()) != state.stacks.get(stack, ()):
                stacks[stack] = None
        facts = facts & state.facts
    return _State(pairs, stacks, facts)


def _same(first: _State, second: _State) -> bool:
    return (first.pairs, first.stacks, first.facts) == (second.pairs, second.stacks, second.facts)


def _with_partners(pairs: Pairs, names: set[str]) -> set[str]:
    return set(names).union(*(pairs.get(n, ()) for n in names))


def _bound(pairs: Pairs, bindings: dict[str, set[str]]) -> Pairs:
    """The pairs once each name of ``bindings`` is bound anew to a value taken from its
    names (all read before any is bound): paired with them and their partners."""
    if not bindings:
        return pairs
    partners = {name: _with_partners(pairs, sources) - {name} for name, sources in bindings.items()}
    result = dict(pairs)
    for name in bindings:  # the values they held are no longer theirs
        for other in result.pop(name, ()):
            if other in result:
                result[other] = result[other] - {name}
    for name, found in partners.items():
        result = _added(result, name, found)
    return result


def _added(pairs: Pairs, name: str, partners: set[str] | frozenset[str]) -> Pairs:
    partners = set(partners) - {name}
    if not partners:
        return pairs
    result = dict(pairs)
    result[name] = result.get(name, frozenset()) | partners
    for other in partners:
        result[other] = result.get(other, frozenset()) | {name}
    return result


def _join(first: Pairs, second: Pairs) -> Pairs:
    joined = dict(first)
    for name, partners in second.items():
        joined[name] = joined.get(name, frozenset()) | partners
    return joined
