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

:func:`changed_memory_read` walks the statements in order, keeping which pairs of names may
share memory at each point: a binding pairs its name with the names its value is taken from
(:func:`.sharing.sources_of`, the same rules as the order-blind analysis) and with their
partners, and drops the pairs of the value it replaces; the pairs of two branches are
joined after them, a loop's to a fixed point. At the update, the partners of the updated
name hold the changed memory; a read of one of them afterwards, or of a name bound from
one, is what the refusal is about. Code the walk does not model (a nested function, a
lambda, ``try``, ``with``, ``break``, ``global``) keeps the order-blind answer.
"""

from __future__ import annotations

import types

import gast

from s2sgrad.compiler.passes.sharing import (
    assigned_sources,
    base_of,
    resolved_target,
    sources_of,
)
from s2sgrad.compiler.syntax import walk

__all__ = ["changed_memory_read"]

_CHANGED = "<changed>"  # the memory the update changes, held by the names paired with it
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


class _Unmodelled(Exception):
    """The walk met code whose effect on sharing it does not model."""


def changed_memory_read(
    function: gast.FunctionDef, update: gast.stmt, updated: str, resolve, containers: set[str]
) -> set[str] | None:
    """The names read after ``update`` (which changes ``updated``'s array in place) that may
    hold memory it changed, along the paths the code can take; None when the walk cannot
    tell (see the module docstring). ``containers``: the names made as lists or dicts, whose
    item stores keep a reference.

    Example::

        # if c: t = np.flip(v); w = t * 2.0
        # else: t = None; w = v
        # w[0] = 1.0; return t
        changed_memory_read(function, update, "w", resolve, set())  # set(): t never holds w's
    """
    if any(isinstance(node, _UNMODELLED) for node in walk(function) if node is not function):
        return None
    paths = _Paths(update, updated, resolve, containers)
    try:
        paths.block(function.body, {})
    except _Unmodelled:
        return None
    return paths.stale


class _Paths:
    def __init__(self, update: gast.stmt, updated: str, resolve, containers: set[str]):
        self.update = update
        self.updated = updated
        self.resolve = resolve
        self.containers = containers
        self.stale: set[str] = set()

    def block(self, statements: list[gast.stmt], pairs: Pairs | None) -> Pairs | None:
        """The pairs after ``statements`` run from ``pairs`` (None: no path gets there)."""
        for statement in statements:
            if pairs is None:
                return None
            pairs = self.statement(statement, pairs)
        return pairs

    def statement(self, statement: gast.stmt, pairs: Pairs) -> Pairs | None:
        kind = type(statement)
        if kind is gast.If:
            self.read(statement.test, pairs)
            return _join(self.block(statement.body, pairs), self.block(statement.orelse, pairs))
        if kind is gast.For:
            return self.for_loop(statement, pairs)
        if kind is gast.While:
            return self.while_loop(statement, pairs)
        if kind is gast.Raise:
            self.read(statement, pairs)
            return None
        if kind is gast.Delete and all(type(t) is gast.Name for t in statement.targets):
            return _bound(pairs, {t.id: set() for t in statement.targets})
        if kind not in _SIMPLE:
            raise _Unmodelled
        self.read(statement, pairs)
        if kind is gast.Return:
            return None
        pairs = self.effect(statement, pairs)
        if statement is self.update:
            held = pairs.get(self.updated, frozenset()) - {_CHANGED}
            pairs = _added(pairs, _CHANGED, held)
        return pairs

    def for_loop(self, loop: gast.For, pairs: Pairs) -> Pairs | None:
        self.read(loop.iter, pairs)
        runs_over = f"<loop {id(loop)}>"  # what the loop runs over, evaluated once
        pairs = _bound(pairs, {runs_over: self.sources(loop.iter)})
        targets = {n.id for n in walk(loop.target) if type(n) is gast.Name}
        start = pairs
        while True:
            end = self.block(loop.body, _bound(start, dict.fromkeys(targets, {runs_over})))
            joined = _join(start, end) or start
            if joined == start:
                break
            start = joined
        return self.block(loop.orelse, start)

    def while_loop(self, loop: gast.While, pairs: Pairs) -> Pairs | None:
        start = pairs
        while True:
            self.read(loop.test, start)
            joined = _join(start, self.block(loop.body, start)) or start
            if joined == start:
                break
            start = joined
        return self.block(loop.orelse, start)

    def effect(self, statement: gast.stmt, pairs: Pairs) -> Pairs:
        """The pairs after a statement without blocks, as :func:`.sharing.links_of` links."""
        if type(statement) is gast.Assign:
            sources = assigned_sources(statement.value, self.resolve, self.containers)
            bound: dict[str, set[str]] = {}
            for target in statement.targets:
                if type(target) in (gast.Name, gast.Tuple, gast.List, gast.Starred):
                    for node in walk(target):
                        if type(node) is gast.Name and type(node.ctx) is gast.Store:
                            bound[node.id] = sources
                for node in walk(target):  # items[i] = x: a list holds x itself
                    if type(node) in (gast.Subscript, gast.Attribute):
                        pairs = self.stored(node, sources, pairs)
            pairs = _bound(pairs, bound)
            if sources and len(bound) > 1:  # a, b = v: both may hold v's arrays
                for name in bound:
                    pairs = _added(pairs, name, set(bound) - {name})
            return pairs
        if type(statement) is gast.AugAssign:  # items += [v]: a list holds v
            base = base_of(statement.target)
            sources = self.sources(statement.value)
            if type(base) is gast.Name and sources:
                pairs = _added(pairs, base.id, _with_partners(pairs, sources))
            return pairs
        if type(statement) is gast.Expr and type(statement.value) is gast.Call:  # items.append(x)
            value = statement.value
            func = value.func
            owner = base_of(func.value) if type(func) is gast.Attribute else None
            if isinstance(owner, gast.Name) and not self.is_module(owner):
                sources = set().union(*map(self.sources, [*value.args, *value.keywords]))
                if sources:
                    pairs = _added(pairs, owner.id, _with_partners(pairs, sources))
        return pairs

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

    def read(self, node: gast.AST, pairs: Pairs) -> None:
        """Note the names ``node`` reads that may hold the changed memory."""
        holders = pairs.get(_CHANGED)
        if not holders:
            return
        for found in walk(node):
            if type(found) is gast.Name and type(found.ctx) is gast.Load and found.id in holders:
                self.stale.add(found.id)


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


def _join(first: Pairs | None, second: Pairs | None) -> Pairs | None:
    if first is None or second is None:
        return second if first is None else first
    joined = dict(first)
    for name, partners in second.items():
        joined[name] = joined.get(name, frozenset()) | partners
    return joined
