"""What each statement reads and writes, computed in one walk and kept until it changes.

The optimiser asks the same questions about the same statements many times over its
fixed-point iterations, while only a few statements change between two questions. A
:class:`FactsCache` answers from one walk per version of a statement. What keeps it right:
whatever changes a statement calls :meth:`FactsCache.forget` for it, and
:func:`rename_reads` and :func:`replace_reads` do so for every statement they walk through
(the statement rewritten and those nested in it), and a loop or branch is forgotten
once its blocks are optimised.

Example::

    cache = FactsCache()
    facts = cache.of(parse("y = a + b").body[0])
    facts.reads, facts.writes  # ({'a', 'b'}, {'y'})
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from operator import attrgetter
from typing import cast

import gast

from s2sgrad.compiler.block_walks import statement_blocks
from s2sgrad.compiler.optimize.foldable import (
    binop_folds,
    compare_folds,
    is_negation,
    literal_number,
    negatable,
    subscript_folds,
    unaryop_folds,
)
from s2sgrad.compiler.optimize.simple_statements import SIMPLE_STATEMENTS
from s2sgrad.compiler.optimize.views import arrays_updated_in_place, views_of_updated_arrays
from s2sgrad.compiler.syntax import (
    COMMENT_MARK,
    COMPREHENSIONS,
    MUTATING_METHODS,
    SCOPES,
    clone,
    names_written,
    node_fields,
    string_statement,
    walk,
)

__all__ = [
    "Facts",
    "FactsCache",
    "facts_after_folding",
    "facts_after_merging",
    "facts_after_rename",
    "facts_after_replacing_by_literal",
    "rename_reads",
    "replace_reads",
    "simple_assignment",
]

_STATEMENT = attrgetter("statement")
_ASSIGN, _EXPR, _NAME = gast.Assign, gast.Expr, gast.Name
_FUNCTION_DEF, _CLASS_DEF = gast.FunctionDef, gast.ClassDef

# scopes in which a folded value could be read later than where it was written
_OWN_SCOPE = (gast.Lambda, gast.ListComp, gast.GeneratorExp, gast.SetComp)


class Facts:
    """One statement's names, as of the walk that made this record.

    ``loads``, ``stores`` and ``others`` list every ``Name`` by context (``others`` holds
    ``Del`` and ``Param``), with repeats, nested functions included; ``reads``,
    ``writes`` and ``modified`` are what :func:`s2sgrad.compiler.syntax.names_read`,
    ``names_written`` and ``names_modified`` return for the statement. ``trail``, when
    given, receives every node walked that could be changed in place.
    """

    __slots__ = (
        "statement",
        "loads",
        "stores",
        "others",
        "reads",
        "writes",
        "modified",
        "assigned",
        "comment",
        "own_scope",
        "folded",
        "foldable",
        "has_scope",
        "calls",
        "effects",
        "annotated",
        "stores_items",
        "pure_value",
        "value_size",
    )

    def __init__(
        self,
        statement: gast.stmt,
        trail: list | None = None,
        walked: _Walk | None = None,
        operations: list | None = None,
    ):
        self.statement = statement
        if walked is None:
            walked = _Walk(statement, trail, operations=operations)
        loads, stores, others = walked.loads, walked.stores, walked.others
        has_scope, annotated = walked.has_scope, walked.annotated
        self.loads, self.stores, self.others = loads, stores, others
        self.reads = set(loads)
        kind = type(statement)
        # stores inside nested functions are not the statement's own: walk again to tell
        if has_scope:
            writes = names_written(statement)
        else:
            writes = set(stores)
            if kind is _FUNCTION_DEF or kind is _CLASS_DEF:
                writes.add(statement.name)
        self.writes = writes
        self.modified = walked.modified | writes
        # only an assignment assigns a name (simple_assignment, without a call), only an
        # Expr is a comment
        assigned = None
        if kind is _ASSIGN:
            targets = statement.targets
            if len(targets) == 1 and type(targets[0]) is _NAME:
                assigned = targets[0].id
        self.assigned = assigned
        self.comment = kind is _EXPR and _is_comment(statement)
        self.own_scope = walked.own_scope
        # The constant folder has nothing to do in this version: set when it found nothing,
        # and from the start when no node is one the folder would simplify as it is (the
        # folder works bottom-up, so if it changes nothing below a node, it sees the node
        # as it is here).
        self.folded = not walked.foldable
        self.foldable = walked.foldable
        self.has_scope = has_scope  # a function, lambda or class is defined inside
        self.calls = walked.calls  # every call in the statement, nested functions included
        self.effects = walked.effects  # a yield, an await or an assignment expression is there
        self.annotated = annotated  # a name carries an annotation (which the walk included)
        self.stores_items = walked.stores_items  # an item or attribute is a target there
        self.pure_value: bool | None = None  # whether the assigned value is free of side effects
        self.value_size = None  # how many nodes the assigned value has
        if self.assigned is not None and not annotated:
            # all but the assignment and its target: names are not pushed, so not counted
            self.value_size = walked.size + len(loads) + len(stores) + len(others) - 2


class _Walk:
    """One walk of a statement, gathering what :class:`Facts` records (``trail``, when
    given, receives every node walked that could be changed in place, and ``operations``
    every ``BinOp``)."""

    __slots__ = (
        "statement",
        "loads",
        "stores",
        "others",
        "calls",
        "modified",
        "has_scope",
        "own_scope",
        "foldable",
        "effects",
        "annotated",
        "stores_items",
        "size",
        "operations",
    )

    def __init__(
        self,
        statement: gast.stmt,
        trail: list | None,
        blocks: bool = True,
        operations: list | None = None,
    ):
        self.statement = statement
        self.operations = operations
        self.loads: list[str] = []
        self.stores: list[str] = []
        self.others: list[str] = []
        self.calls: list[gast.Call] = []
        self.modified: set[str] = set()
        self.has_scope = self.own_scope = self.foldable = self.effects = False
        self.annotated = self.stores_items = False
        self.size = 0  # nodes, as s2sgrad.compiler.syntax.walk counts them (operators too)
        self._walk(statement, trail, blocks)

    def add_block_statement(self, inner: _Walk) -> None:
        """Count ``inner``, the walk of a statement in one of this statement's blocks (this
        walk left its blocks out): the same record as walking them here, but for the order
        of the names."""
        self.loads += inner.loads
        self.stores += inner.stores
        self.others += inner.others
        self.calls += inner.calls
        self.modified |= inner.modified
        # inner's own statement is a scope inside this one (a nested def)
        self.has_scope = self.has_scope or inner.has_scope or type(inner.statement) in SCOPES
        self.own_scope = self.own_scope or inner.own_scope
        self.foldable = self.foldable or inner.foldable
        self.effects = self.effects or inner.effects
        self.annotated = self.annotated or inner.annotated
        self.stores_items = self.stores_items or inner.stores_items
        self.size += inner.size

    def _walk(self, statement: gast.stmt, trail: list | None, blocks: bool = True) -> None:
        loads, stores, others = self.loads, self.stores, self.others
        size = 0
        Name, Load, Store, Constant = gast.Name, gast.Load, gast.Store, gast.Constant
        plans = _PLANS
        stack = [statement]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            size += 1
            kind = type(node)
            known = plans.get(kind)
            if known is None:
                known = plans[kind] = (node_fields(kind), _ROLES.get(kind))
            plan, role = known
            if role is not None:
                size += self._notice(node, kind, role)
            if not blocks and node is statement:
                plan = tuple(f for f in plan if f not in _BLOCK_FIELDS)
            if not plan:
                continue  # a literal in a list, or a node without children
            if trail is not None:
                trail.append(node)
            state = node.__dict__
            for field in plan:
                value = state.get(field)
                kind = type(value)
                if kind is list:
                    children = value
                elif kind is Name:
                    children = (value,)
                elif kind is Constant:
                    size += 1
                    continue
                elif value is None:
                    continue
                else:
                    push(value)
                    continue
                # names and literals are handled here rather than pushed: most nodes are
                for child in children:
                    kind = type(child)
                    if kind is Name:
                        ctx = type(child.ctx)
                        if ctx is Load:
                            loads.append(child.id)
                        elif ctx is Store:
                            stores.append(child.id)
                        else:
                            others.append(child.id)
                        if trail is not None:
                            trail.append(child)
                        if child.annotation is not None:
                            self.annotated = True
                            push(child.annotation)
                    elif kind is Constant:
                        size += 1
                    elif child is not None:
                        push(child)
        self.size += size

    def _notice(self, node: gast.AST, kind: type, role: str) -> int:
        """Record what a node of a kind with a role tells; return the operators it counts."""
        if role is _BINOP:
            self.foldable = self.foldable or binop_folds(node)
            if self.operations is not None:
                self.operations.append(node)
            return 1
        if role is _CALL:
            self.calls.append(node)
            func = node.func
            if isinstance(func, gast.Attribute):
                if isinstance(func.value, gast.Name) and func.attr in MUTATING_METHODS:
                    self.modified.add(func.value.id)
                # (-e).sum(...), which becomes -e.sum(...)
                self.foldable = self.foldable or (func.attr == "sum" and is_negation(func.value))
        elif role is _ACCESS:
            if kind is gast.Subscript and not self.foldable:
                self.foldable = subscript_folds(node)
            if type(node.ctx) is gast.Store:
                self.stores_items = True
                base = node.value
                while isinstance(base, (gast.Subscript, gast.Attribute)):
                    base = base.value
                if isinstance(base, gast.Name):
                    self.modified.add(base.id)
        elif role is _UNARYOP:
            self.foldable = self.foldable or unaryop_folds(node)
            return 1
        elif role is _COMPARE:
            self.foldable = self.foldable or compare_folds(node)
            return len(node.ops)
        elif role is _BOOLOP:
            return 1
        elif role is _SCOPE:
            self.has_scope = self.has_scope or node is not self.statement
            self.own_scope = self.own_scope or kind is gast.Lambda
        elif role is _OWN:
            self.own_scope = True
        else:  # _EFFECT
            self.effects = True
        return 0


# What the walk in Facts looks at in a node of each kind (other kinds: only the children).
_BINOP, _CALL, _ACCESS, _UNARYOP, _COMPARE, _BOOLOP, _SCOPE, _OWN, _EFFECT = (
    "binop",
    "call",
    "access",
    "unaryop",
    "compare",
    "boolop",
    "scope",
    "own",
    "effect",
)
_ROLES: dict[type, str] = {
    gast.BinOp: _BINOP,
    gast.Call: _CALL,
    gast.Subscript: _ACCESS,
    gast.Attribute: _ACCESS,
    gast.UnaryOp: _UNARYOP,
    gast.Compare: _COMPARE,
    gast.BoolOp: _BOOLOP,
    **dict.fromkeys(_OWN_SCOPE, _OWN),
    **dict.fromkeys(SCOPES, _SCOPE),  # a lambda is both: this comes second
    **dict.fromkeys((gast.Yield, gast.YieldFrom, gast.Await, gast.NamedExpr), _EFFECT),
}
# node_fields and the role of each kind met, in one entry (one look-up a node)
_PLANS: dict[type, tuple[tuple[str, ...], str | None]] = {}
_BLOCK_FIELDS = ("body", "orelse", "finalbody")  # what syntax.statement_blocks returns


# statements changed since records were handed on that of_each still patches in (each is
# looked for in the list, a loop in C): past that it looks every record up again
_FEW = 32


class FactsCache:
    """:class:`Facts` per statement, as it is now: each record is kept until the statement
    is forgotten, and every rewrite forgets what it changes.

    With ``enabled`` false :meth:`of` walks the statement again every time (for bodies in
    which two statements share a node, so that changing one silently changes the other).
    """

    def __init__(self, enabled: bool = True):
        self.table: dict[int, Facts] = {}
        self.enabled = enabled
        self.rewrites = 0  # how many times a statement was forgotten or told anew
        # name -> the names that may see the same memory (an array and its views): a
        # statement changing one in place changes them all
        self.sharing: dict[str, frozenset[str]] = {}
        self.updated: set[str] = set()  # the arrays changed in place (when primed)
        # id -> (statement, its _Walk) for statements with blocks and those in blocks, so
        # that a loop or branch forgotten is walked anew outside its blocks only
        self.walks: dict[int, tuple[gast.stmt, _Walk]] = {}
        # every statement forgotten or told anew, in order, since whoever reads it cleared it
        self.touched: list[gast.stmt] = []
        # (statements, their records) of the last remember() or of_each(), and the
        # statements forgotten or told anew since (up to one more than _FEW: too many)
        self.last: tuple[list[gast.stmt], list[Facts | None]] | None = None
        self.recent: list[gast.stmt] = []

    def of(self, statement: gast.stmt) -> Facts:
        facts = self.table.get(id(statement))
        if facts is not None and facts.statement is statement:
            return facts
        if not self.enabled:
            return self._shared(Facts(statement))
        walked = self._walk_of(statement)
        facts = self._shared(Facts(statement, walked=walked))
        self.table[id(statement)] = facts
        return facts

    def of_each(self, statements: list[gast.stmt]) -> list[Facts]:
        """``[self.of(s) for s in statements]``, with less work per statement kept."""
        last = self.last
        if last is not None and len(self.recent) <= _FEW and last[0] == statements:
            kept = last[1]
            for statement in self.recent:  # changed since: asked for again
                position = -1
                with contextlib.suppress(ValueError):  # (gone from the statements)
                    while True:
                        position = statements.index(statement, position + 1)
                        kept[position] = None
            self.recent = []
            with contextlib.suppress(ValueError):
                position = -1
                while True:
                    position = kept.index(None, position + 1)
                    kept[position] = self.of(statements[position])
            return cast("list[Facts]", list(kept))  # no None left
        records = self._of_each(statements)
        self.remember(statements, records)
        return records

    def remember(self, statements: list[gast.stmt], records: Sequence[Facts | None]) -> None:
        """Keep ``records``, the current record of each of ``statements`` (None: ask
        :meth:`of`), for :meth:`of_each` to give back while no statement is forgotten or
        told anew: a rewrite hands the records of the body it made to the next one.

        Example::

            cache.remember(result, [facts_at[i] for i in kept])
        """
        if self.enabled:  # else every record is a walk of its own, not kept
            self.last = (list(statements), list(records))
            self.recent = []

    def _of_each(self, statements: list[gast.stmt]) -> list[Facts]:
        get = self.table.get
        # most often every record is kept and current: then two maps and a comparison of
        # the statements (by identity, as nodes compare) tell, without a loop in Python
        records: list = list(map(get, map(id, statements)))
        if None not in records and list(map(_STATEMENT, records)) == statements:
            return records
        for position, facts in enumerate(records):
            statement = statements[position]
            if facts is None or facts.statement is not statement:
                records[position] = self.of(statement)
        return records

    def _walk_of(self, statement: gast.stmt) -> _Walk:
        """The walk of ``statement``, made of the kept walks of its blocks' statements."""
        blocks = statement_blocks(statement)
        if not blocks:
            return _Walk(statement, None)
        known = self.walks.get(id(statement))
        if known is not None and known[0] is statement:
            return known[1]
        walked = _Walk(statement, None, blocks=False)
        for block in blocks:
            for inner in block:
                known = self.walks.get(id(inner))
                if known is not None and known[0] is inner:
                    walked.add_block_statement(known[1])
                    continue
                inner_walk = self._walk_of(inner)
                self.walks[id(inner)] = (inner, inner_walk)
                walked.add_block_statement(inner_walk)
        self.walks[id(statement)] = (statement, walked)
        return walked

    def _shared(self, facts: Facts) -> Facts:
        """``facts`` with what changing an array in place changes: its views too."""
        if self.sharing and not facts.modified.isdisjoint(self.sharing):
            modified = set(facts.modified)
            for name in facts.modified & self.sharing.keys():
                if name not in facts.writes:  # rebinding a name changes no other
                    modified |= self.sharing[name]
            facts.modified = modified
        return facts

    def prime(self, body: list[gast.stmt], operations: list | None = None) -> list[gast.AST]:
        """Walk each statement of ``body``; turn :meth:`of`'s cache off if two share a node.

        Returns every node walked that has children (names included), for a caller that
        looks for nodes of some kind without a walk of its own; ``operations``, when given,
        receives every ``BinOp`` walked (a short list to look through)."""
        self.updated = arrays_updated_in_place(body)
        self.sharing = views_of_updated_arrays(body, self.updated)
        self.last = None
        trail: list[gast.AST] = []
        for statement in body:
            self.table[id(statement)] = self._shared(Facts(statement, trail, None, operations))
        # nodes hash and compare by identity (no gast node defines __eq__ or __hash__): a
        # set of them is one of their ids, without an int made for each
        if len(set(trail)) != len(trail):
            self.enabled = False
            self.table.clear()
            self.walks.clear()
        return trail

    def known(self, statement: gast.stmt) -> Facts | None:
        """The current record kept for ``statement``, if there is one (without making one)."""
        facts = self.table.get(id(statement))
        return facts if facts is not None and facts.statement is statement else None

    def keep(self, facts: Facts) -> None:
        """Record ``facts`` as what is now true of ``facts.statement`` (made without a walk)."""
        self.rewrites += 1
        self.touched.append(facts.statement)
        if len(self.recent) <= _FEW:
            self.recent.append(facts.statement)
        self.walks.pop(id(facts.statement), None)
        if self.enabled:
            self.table[id(facts.statement)] = self._shared(facts)

    def forget(self, statement: gast.stmt) -> None:
        """``statement`` changed: :meth:`of` must walk it again."""
        self.rewrites += 1
        self.touched.append(statement)
        if len(self.recent) <= _FEW:
            self.recent.append(statement)
        self.table.pop(id(statement), None)
        self.walks.pop(id(statement), None)

    def forget_all(self, statement: gast.stmt) -> None:
        """Something changed somewhere in ``statement``: forget it and every statement in
        its blocks (a loop's or branch's record covers those of its blocks)."""
        self.forget(statement)
        if type(statement) not in SIMPLE_STATEMENTS:
            for node in walk(statement):
                if isinstance(node, gast.stmt) and node is not statement:
                    self.forget(node)

    def views_unchanged(self, body: list[gast.stmt]) -> bool:
        """Whether the views of arrays ``body`` changes in place are those the records were
        made with (then the arrays written in place are updated to ``body``'s): after
        rewrites that forgot each statement they changed, the records are what a new
        priming of ``body`` would make when they are.

        Example::

            facts = cache if cache.views_unchanged(body) else None
        """
        updated = arrays_updated_in_place(body)
        if views_of_updated_arrays(body, updated) != self.sharing:
            return False
        self.updated = updated
        return True


def facts_after_rename(facts: Facts, old: str, new: str) -> Facts | None:
    """The facts of ``facts.statement`` once :func:`rename_reads` made reads of ``old`` read
    ``new``, told without a walk; None when they cannot be (``old`` is modified there).

    Renaming loads changes neither the nodes' kinds nor the stores, so only the loads change.
    """
    if old in facts.modified:  # a name changed in place is a load too: the walk would tell
        return None
    result = _copied(facts)
    result.loads = [new if name == old else name for name in facts.loads]
    result.reads = set(result.loads)
    result.folded = not facts.foldable
    result.pure_value = None  # a call's function may have been renamed
    return result


def facts_after_replacing_by_literal(facts: Facts, name: str, literal_size: int) -> Facts | None:
    """The facts of ``facts.statement`` once :func:`replace_reads` put a number literal (or
    its negation) in place of every read of ``name``, told without a walk; None when they
    cannot be (an annotation, which that leaves alone, or ``name`` modified in place).

    The folder may find something to do where a literal arrived: ``folded`` is false.
    """
    if facts.annotated or name in facts.modified:
        return None
    result = _copied(facts)
    result.loads = [load for load in facts.loads if load != name]
    result.reads = facts.reads - {name}
    result.foldable = True
    result.folded = False
    result.pure_value = None
    result.value_size = _grown(facts.value_size, facts.loads.count(name), literal_size)
    return result


def facts_after_folding(reader: Facts, dropped: Facts, value: gast.expr) -> Facts | None:
    """The facts of ``reader.statement`` once :func:`replace_reads` moved ``value``, the value
    of the single-use assignment ``dropped.statement``, where it reads the target; told without
    a walk, or None when they cannot be.

    They can be when the target is read once, no function is defined in either statement, no
    annotation is there, the target is not modified in place, and ``value`` is of a kind that
    none of the folder's conditions looks for in a child (so whether the folder has work
    there is what it was in either statement).
    """
    target = dropped.assigned
    if (
        target is None
        or reader.loads.count(target) != 1
        or reader.has_scope
        or dropped.has_scope
        or reader.annotated
        or dropped.annotated
        or target in reader.modified
        or isinstance(reader.statement, (gast.FunctionDef, gast.ClassDef))
        or _seen_by_folder_conditions(value)
    ):
        return None
    return _with_value_of(reader, dropped, target)


def facts_after_merging(later: Facts, earlier: Facts, value: gast.BinOp) -> Facts | None:
    """The facts of ``later.statement``, ``d = d + e2``, once the ``d`` on the left of
    ``value`` (its value) became the value of ``earlier.statement``, ``d = e1``; told
    without a walk, or None when they cannot be (a function defined, an annotation).
    """
    target = later.assigned
    if (
        target is None
        or earlier.assigned != target
        or later.loads.count(target) != 1
        or later.has_scope
        or earlier.has_scope
        or later.annotated
        or earlier.annotated
    ):
        return None
    result = _with_value_of(later, earlier, target)
    # the sum itself is the only node whose children changed
    result.foldable = result.foldable or binop_folds(value)
    result.folded = not result.foldable
    return result


def _with_value_of(outer: Facts, inner: Facts, target: str) -> Facts:
    """The facts of ``outer.statement`` once its one read of ``target`` became the value of
    ``inner.statement`` (``target = value``)."""
    result = _copied(outer)
    result.loads = [name for name in outer.loads if name != target] + inner.loads
    stores = list(inner.stores)
    stores.remove(target)
    result.stores = outer.stores + stores
    result.others = outer.others + inner.others
    result.reads = set(result.loads)
    result.writes = set(result.stores)
    result.modified = outer.modified | (inner.modified - {target}) | result.writes
    result.own_scope = outer.own_scope or inner.own_scope
    result.effects = outer.effects or inner.effects
    result.stores_items = outer.stores_items or inner.stores_items
    result.calls = outer.calls + inner.calls
    result.foldable = outer.foldable or inner.foldable
    result.folded = not result.foldable
    result.pure_value = None
    result.value_size = _grown(outer.value_size, 1, inner.value_size)
    return result


def _seen_by_folder_conditions(node) -> bool:
    """Whether a condition of the folder's could hold of ``node`` where a name was before.

    They look for literals, negations, tuples, and products whose left factor is a literal
    or (down the left factors) a negation.
    """
    if isinstance(node, (gast.Constant, gast.Tuple)):
        return True
    if isinstance(node, gast.UnaryOp):
        return isinstance(node.op, gast.USub)
    if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Mult, gast.Div)):
        return literal_number(node.left) is not None or negatable(node)
    return False


def _grown(size: int | None, names: int, size_of_each: int | None) -> int | None:
    """A value's size once ``names`` names in it became expressions of ``size_of_each``."""
    if size is None or size_of_each is None:
        return None
    return size + names * (size_of_each - 1)


def _copied(facts: Facts) -> Facts:
    result = Facts.__new__(Facts)
    result.statement = facts.statement
    result.loads, result.stores, result.others = facts.loads, facts.stores, facts.others
    result.reads, result.writes, result.modified = facts.reads, facts.writes, facts.modified
    result.assigned, result.comment = facts.assigned, facts.comment
    result.own_scope, result.has_scope = facts.own_scope, facts.has_scope
    result.folded, result.foldable = facts.folded, facts.foldable
    result.calls, result.effects, result.annotated = facts.calls, facts.effects, facts.annotated
    result.stores_items = facts.stores_items
    result.pure_value, result.value_size = facts.pure_value, facts.value_size
    return result


def _is_comment(statement) -> bool:
    text = string_statement(statement)
    return text is not None and text.startswith(COMMENT_MARK)


def simple_assignment(statement) -> str | None:
    """``name`` for the statement ``name = value``, else None."""
    if (
        type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
    ):
        return statement.targets[0].id
    return None


def rename_reads(statement: gast.stmt, old: str, new: str, cache: FactsCache) -> None:
    """Make every read of ``old`` in ``statement`` a read of ``new`` (nested functions too).
    Each such read is replaced by a new name, not changed: specialised code shares its
    names with the raw code (``specialize/probe_copy.py``)."""
    stack = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, gast.stmt):
            cache.forget(node)
        state = node.__dict__
        for field in node_fields(type(node)):
            value = state.get(field)
            if type(value) is list:
                for position, item in enumerate(value):
                    if type(item) is gast.Name:
                        if item.id == old and type(item.ctx) is gast.Load:
                            value[position] = item = _renamed(item, new)
                        if item.annotation is not None:
                            stack.append(item)
                    elif type(item) in _SCOPES:
                        stack.extend(outer_reads_in(item, old))
                    elif isinstance(item, gast.AST):
                        stack.append(item)
            elif type(value) is gast.Name:
                if value.id == old and type(value.ctx) is gast.Load:
                    state[field] = value = _renamed(value, new)
                if value.annotation is not None:
                    stack.append(value)
            elif type(value) in _SCOPES:
                stack.extend(outer_reads_in(value, old))
            elif isinstance(value, gast.AST):
                stack.append(value)


def _renamed(name: gast.Name, new: str) -> gast.Name:
    renamed = gast.Name.__new__(gast.Name)
    renamed.__dict__ = {**name.__dict__, "id": new}
    return renamed


def replace_reads(
    statement: gast.stmt,
    name: str,
    value: gast.expr,
    cache: FactsCache,
    move: bool = False,
    reads: int = -1,
) -> None:
    """Replace every read of ``name`` in ``statement`` by a copy of ``value``.

    With ``move`` the first read gets ``value`` itself (for a value about to be dropped
    from where it was). ``reads``, when the caller knows it, is how many there are: the
    walk stops after the last (only for a statement that holds no other statement, whose
    walk has nothing else to do).

    Example::

        replace_reads(parse("y = t * t").body[0], "t", parse_expression("a + 1"), cache)
        # y = (a + 1) * (a + 1)
    """
    stack = [statement]
    while stack:
        node = stack.pop()
        if type(node) is gast.Name:
            continue  # like a NodeTransformer's visit_Name: annotations are left alone
        if isinstance(node, gast.stmt):
            cache.forget(node)
        state = node.__dict__
        for field in node_fields(type(node)):
            child = state.get(field)
            if type(child) is list:
                for position, item in enumerate(child):
                    if _is_read_of(item, name):
                        child[position] = value if move else clone(value)
                        move = False
                        reads -= 1
                        if not reads:
                            return
                    elif type(item) in _SCOPES:
                        stack.extend(outer_reads_in(item, name))
                    elif isinstance(item, gast.AST):
                        stack.append(item)
            elif _is_read_of(child, name):
                setattr(node, field, value if move else clone(value))
                move = False
                reads -= 1
                if not reads:
                    return
            elif type(child) in _SCOPES:
                stack.extend(outer_reads_in(child, name))
            elif isinstance(child, gast.AST):
                stack.append(child)


_SCOPES = frozenset({gast.Lambda, gast.FunctionDef, *COMPREHENSIONS})


def outer_reads_in(scope: gast.AST, name: str) -> list[gast.AST]:
    """Where a nested scope (a lambda, a function, a comprehension) may read the outer
    ``name``: all of it, unless it binds ``name`` itself (``lambda u: -u``, ``[u for u in
    xs]``), which leaves only what runs outside it (defaults, the first iterable).

    Example::

        outer_reads_in(parse_expression("lambda u: -u"), "u")  # [] (its own u)
    """
    if type(scope) in COMPREHENSIONS:
        bound = set().union(*(names_written(g.target) for g in scope.generators))
        return [scope.generators[0].iter] if name in bound else [scope]
    arguments = scope.args
    parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    parameters += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    if name not in {p.id for p in parameters if type(p) is gast.Name}:
        return [scope]
    defaults = [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]
    return [*defaults, *getattr(scope, "decorator_list", [])]


def _is_read_of(node, name: str) -> bool:
    return type(node) is gast.Name and node.id == name and isinstance(node.ctx, gast.Load)
