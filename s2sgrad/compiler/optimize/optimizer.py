"""The optimiser's loop: passes over a function body, each block in turn, until a pass
changes nothing (at most 20).

On each straight-line block, in order: constant folding of what changed, copy
propagation, folding single-use temporaries, accumulation merging, dead-code
elimination; the blocks of loops and branches first, with only the names local to them.

Example::

    optimize(parse("t = a * 1\nreturn t").body, lambda c: True)  # [return a]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import gast

from s2sgrad.compiler.optimize.accumulation import merge_accumulations, merge_item_updates
from s2sgrad.compiler.optimize.copies import fold_single_uses, propagate_copies
from s2sgrad.compiler.optimize.facts import FactsCache
from s2sgrad.compiler.optimize.folding import ConstantFolder
from s2sgrad.compiler.optimize.saves import empty_replay, tested_again
from s2sgrad.compiler.optimize.simple_statements import SIMPLE_STATEMENTS, without_blocks
from s2sgrad.compiler.optimize.statements import (
    count_names,
    drop_orphan_comments,
    flat_targets,
    has_blocks,
    node_size,
    only_passes,
    simple_assignment,
    value_reads,
)
from s2sgrad.compiler.syntax import child_fields, drop_rule_names, walk

__all__ = ["Optimizer", "optimize"]


def optimize(
    body: list[gast.stmt],
    is_pure_call: Callable[[gast.Call], bool],
    facts: FactsCache | None = None,
) -> list[gast.stmt]:
    """Optimise a function body; ``is_pure_call`` says which calls may be moved or dropped.
    ``facts``, when given, is a cache primed on ``body`` (``FactsCache.prime``) and kept
    true of its statements since (a pass before that walked them all for itself).

    Example::

        optimize(parse("t = a * 1\\nreturn t").body, lambda c: True)  # [return a]
    """
    # they are for the unoptimised code (sg.show(..., optimize=False)); an assignment,
    # augmented or not, is no comment and holds none (nor facts a comment's words change)
    drop_rule_names([s for s in body if type(s) not in _WITHOUT_COMMENTS])
    if facts is None:
        facts = FactsCache()
        facts.prime(body)
    unchanged_by: dict[Callable, tuple[int, list[gast.stmt]]] = {}  # see Optimizer.run
    for _ in range(20):
        optimizer = Optimizer(is_pure_call, facts, unchanged_by)
        body = optimizer.block(body, live_after=set(), top=True)
        if not optimizer.changed:
            break
    return body


_WITHOUT_COMMENTS = frozenset({gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Return})


class Optimizer:
    """One pass over a function body; ``changed`` tells whether another pass may help.

    Example::

        optimizer = Optimizer(is_pure, FactsCache())
        body = optimizer.block(body, live_after=set(), top=True)
    """

    def __init__(self, is_pure_call, facts: FactsCache, unchanged_by: dict | None = None):
        self.is_pure_call = is_pure_call
        self.facts = facts
        # rewrite -> (facts.rewrites, the function body) when it last ran on that body and
        # changed nothing; kept from one pass over the function to the next
        self.unchanged_by = {} if unchanged_by is None else unchanged_by
        self.changed = False
        # A value is judged when first asked about in a pass, and the verdict stays for the
        # pass even when folding later grows the value (the generated code depends on it).
        self._purity: dict[int, tuple[bool, gast.AST]] = {}
        # The names counted outside the block being optimised (reads, writes): in the
        # statements beside it and beside each block around it, and in the other fields of
        # the loops and branches holding it. What lies outside a block does not change
        # while the block is optimised; each block's share is added as block() moves down
        # it and taken off when it is done (see _Beside).
        self._outside: tuple[_Tally, _Tally] = (_Tally(), _Tally())

    def counts(self, statements) -> tuple[Counter, Counter]:
        """How often each name is read (or deleted) and written in ``statements``."""
        reads: list[str] = []
        writes: list[str] = []
        self._collect_counts(statements, reads, writes)
        return Counter(reads), Counter(writes)

    def _collect_counts(self, statements, reads, writes):
        # No statement counted here has a block being optimised (see _around), so the facts
        # of a loop or branch, which cover its blocks, are current.
        for statement in statements:
            facts = self.facts.of(statement)
            reads += facts.loads
            reads += facts.others
            writes += facts.stores

    def _around(self, beside: _Beside, index: int, field: str) -> None:
        """Count, as outside, the names beside block ``field`` of ``body[index]``: in the
        other statements of ``body`` and in the statement's other fields."""
        reads: list[str] = []
        writes: list[str] = []
        statement = beside.body[index]
        for other in child_fields(type(statement)):
            value = getattr(statement, other, None)
            if other in ("body", "orelse") and type(value) is list:
                if other != field:
                    self._collect_counts(value, reads, writes)
            elif value is not None:
                count_names(value, reads, writes)
        beside.at(index, reads, writes)

    def _used_outside(self, name: str) -> bool:
        """Whether ``name`` is read or written outside the block at hand."""
        reads, writes = self._outside
        return name in reads or name in writes

    def _read_outside(self, name: str) -> bool:
        return name in self._outside[0]

    def block_local(self, body) -> set[str]:
        """Names a loop or branch body assigns before any use and nobody outside it uses."""
        # only names an assignment of the body writes may be local: a loop or branch among
        # the statements is asked about those alone (its names are those of every block
        # inside it, so asking about each of them made 90 nested ifs cost 90²)
        facts_of = [self.facts.of(statement) for statement in body]
        pending: set[str] = set()
        for statement, facts in zip(body, facts_of):
            if isinstance(statement, gast.Assign):
                pending |= facts.writes
        written_first: list[str] = []
        for statement, facts in zip(body, facts_of):
            if not pending:
                break
            if isinstance(statement, gast.Assign):
                pending.difference_update(value_reads(statement, facts))
                for name in facts.writes:
                    if name in pending:
                        pending.discard(name)
                        written_first.append(name)
            elif len(pending) < len(facts.reads) + len(facts.writes):
                pending.difference_update(
                    [name for name in pending if name in facts.reads or name in facts.writes]
                )
            else:
                pending.difference_update(facts.reads)
                pending.difference_update(facts.writes)
        return {name for name in written_first if not self._used_outside(name)}

    def pure_value(self, statement: gast.Assign) -> bool:
        """Whether ``statement.value`` is free of side effects (so it may move or go)."""
        node = statement.value
        known = self._purity.get(id(node))
        if known is not None and known[1] is node:
            return known[0]
        facts = self.facts.of(statement)
        verdict = facts.pure_value
        if verdict is None:
            if facts.assigned is not None and not facts.annotated:
                # ``name = value``: every call and effect the walk found is in the value
                verdict = not facts.effects and all(map(self.is_pure_call, facts.calls))
            else:
                verdict = self._pure(node)
            facts.pure_value = verdict
        self._purity[id(node)] = (verdict, node)
        return verdict

    def value_size(self, statement: gast.Assign) -> int:
        facts = self.facts.of(statement)
        if facts.value_size is None:
            facts.value_size = node_size(statement.value)
        return facts.value_size

    def _pure(self, node: gast.AST) -> bool:
        for child in walk(node):
            if isinstance(child, gast.Call) and not self.is_pure_call(child):
                return False
            if isinstance(child, (gast.Yield, gast.YieldFrom, gast.Await, gast.NamedExpr)):
                return False
        return True

    def block(self, body: list[gast.stmt], live_after: set[str], top: bool) -> list[gast.stmt]:
        if top:
            self.facts.touched.clear()  # see fold_simple_statements
        if without_blocks(body):  # no if to fold, no block to optimise: only statements
            for record in self.facts.of_each(body):
                if not record.folded:
                    self.fold_statement(record.statement)
            return self._straight_line(body, live_after, top)
        folded = self.fold_constant_branches(body)
        if len(folded) != len(body) or any(a is not b for a, b in zip(folded, body)):
            self.changed = True
        body = folded
        facts_of, known = self.facts.of, self.facts.table.get
        compound = False  # a statement that may be an if or a loop
        beside = _Beside(self, body)
        for index, statement in enumerate(body):
            if type(statement) not in SIMPLE_STATEMENTS:
                compound = True
                if has_blocks(statement):
                    if self._optimise_blocks(beside, index):
                        self.facts.forget(statement)
                    self.fold_statement(statement)
                    continue
            facts = known(id(statement))
            if facts is None or facts.statement is not statement:
                facts = facts_of(statement)
            if not facts.folded:
                self.fold_statement(statement)
        beside.leave()
        if compound and any(empty_replay(s) for s in body):
            body = [s for s in body if not empty_replay(s)]
            self.changed = True
        dropped = tested_again(body) if compound else set()
        if dropped:
            body = [s for i, s in enumerate(body) if i not in dropped]
            self.changed = True
        return self._straight_line(body, live_after, top)

    def _straight_line(self, body, live_after: set[str], top: bool) -> list[gast.stmt]:
        """The rewrites of one block's own statements, its loops and branches done."""
        if not top:
            local = self.block_local(body)
            body = propagate_copies(self, body, allowed=local)
            body = fold_single_uses(self, body, allowed=local)
            body = merge_accumulations(self, body)
            return self.eliminate_unread(body)
        body = self.run(propagate_copies, body)
        self.fold_simple_statements(body)  # what propagation brought together, in this round
        body = self.run(fold_single_uses, body)
        body = self.run(merge_accumulations, body)
        body = self.run(merge_item_updates, body)
        if live_after:
            return self.eliminate_dead(body, live_after)
        return self.run(_eliminate_dead, body)

    def run(self, rewrite: Callable, body: list[gast.stmt]) -> list[gast.stmt]:
        """``rewrite(self, body)`` on the function's body, unless it already ran on this
        very body and changed nothing, or this very body is what it made (for a rewrite
        that leaves nothing to do for itself, see :data:`_IDEMPOTENT`).

        Exact: a rewrite's result depends only on the statements (the same objects, in the
        same order) and on their facts, and every change to a statement goes through the
        facts cache, which counts it in ``facts.rewrites`` (a statement forgotten or told
        anew); the same objects with the same count are the same body."""
        if self.done_with(rewrite, body):
            return body
        rewrites = self.facts.rewrites
        result = rewrite(self, body)
        if rewrite in _IDEMPOTENT or (self.facts.rewrites == rewrites and result == body):
            self.unchanged_by[rewrite] = (self.facts.rewrites, result)
        else:
            self.unchanged_by.pop(rewrite, None)
        return result

    def done_with(self, rewrite: Callable, body: list[gast.stmt]) -> bool:
        """Whether ``rewrite`` would change nothing in ``body`` (see :meth:`run`)."""
        known = self.unchanged_by.get(rewrite)
        return known is not None and known[0] == self.facts.rewrites and known[1] == body

    def _optimise_blocks(self, beside: _Beside, index: int) -> bool:
        """Optimise the blocks of the loop or branch ``beside.body[index]``; whether it
        changed.

        Unchanged means: every rewrite inside forgets the facts of what it changes (see
        ``optimize/facts.py``), none did, and the blocks hold the same statements; then the
        statement's facts, which cover its blocks, stay (no walk of it again)."""
        statement = beside.body[index]
        rewrites = self.facts.rewrites
        changed = False
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if not isinstance(inner, list):
                continue
            if inner:  # an empty block asks nothing about the names outside it
                self._around(beside, index, field)
            optimised = self.block(inner, set(), top=False) or [gast.Pass()]
            if field == "orelse" and only_passes(inner):
                optimised = []
            changed = changed or not _same_statements(optimised, inner)
            setattr(statement, field, optimised)
        if type(statement) is gast.If and only_passes(statement.body) and statement.orelse:
            # if c: pass / else: ...  reads better as  if not c: ...
            statement.test = gast.UnaryOp(op=gast.Not(), operand=statement.test)
            statement.body, statement.orelse = statement.orelse, []
            self.changed = changed = True
        return changed or self.facts.rewrites != rewrites

    def fold_simple_statements(self, body):
        """Fold constants in the statements (outside loops and branches) that changed.

        Run after the round's first folding of ``body`` (in :meth:`block`), which left each
        statement folded or forgotten: only those forgotten or told anew since can have
        work (when the cache keeps records; else a record never says folded)."""
        if self.facts.enabled:
            touched = set(map(id, self.facts.touched))
            body = [statement for statement in body if id(statement) in touched]
        for statement in body:
            if not has_blocks(statement) and not self.facts.of(statement).folded:
                self.fold_statement(statement)

    def fold_statement(self, statement):
        folder = ConstantFolder(self.facts)
        folder.visit(statement)
        if folder.changed:
            self.changed = True
            self.facts.forget(statement)
        else:
            self.facts.of(statement).folded = True

    def fold_constant_branches(self, body):
        """Replace ``if`` statements whose test folds to a constant by the branch taken."""
        result = []
        for statement in body:
            if isinstance(statement, gast.If):
                folder = ConstantFolder(self.facts)
                folder.visit(statement.test)  # changes inside the test; a new test is dropped
                if folder.changed:
                    self.facts.forget(statement)
                if isinstance(statement.test, gast.Constant):
                    branch = statement.body if statement.test.value else statement.orelse
                    result.extend(s for s in branch if not isinstance(s, gast.Pass))
                    continue
            result.append(statement)
        return result

    def eliminate_unread(self, body):
        """Drop side-effect-free assignments to names the whole function never reads."""
        reads, _ = self.counts(body)

        def unread(name):
            return name is not None and reads[name] == 0 and not self._read_outside(name)

        kept = [s for s in body if not (unread(simple_assignment(s)) and self.pure_value(s))]
        if len(kept) != len(body):
            self.changed = True
        # a block of comments alone would print as no statement at all
        kept = drop_orphan_comments(kept, [self.facts.of(s).comment for s in kept])
        return kept or [gast.Pass()]

    def eliminate_dead(self, body, live_after):
        """Drop side-effect-free assignments nothing later reads."""
        live = set(live_after)
        result = []
        comments = []
        records = []  # of the statements kept
        for statement, facts in zip(reversed(body), reversed(self.facts.of_each(body))):
            if facts.comment:
                result.append(statement)
                records.append(facts)
                comments.append(True)
                continue
            assigned = facts.assigned
            if assigned is not None:  # name = value: its reads are the value's
                if assigned not in live and self.pure_value(statement):
                    self.changed = True
                    continue
                live.discard(assigned)
                live |= facts.reads
                result.append(statement)
                records.append(facts)
                comments.append(False)
                continue
            if isinstance(statement, gast.Assign) and all(
                isinstance(t, gast.Name) for t in flat_targets(statement.targets[0])
            ):
                targets = {t.id for t in flat_targets(statement.targets[0])}
            else:
                live |= facts.reads
                result.append(statement)
                records.append(facts)
                comments.append(False)
                continue
            if not targets & live and self.pure_value(statement):
                self.changed = True
                continue
            live -= targets
            live |= value_reads(statement, facts)
            result.append(statement)
            records.append(facts)
            comments.append(False)
        result.reverse()
        comments.reverse()
        kept = drop_orphan_comments(result, comments)
        if len(kept) == len(result):  # the same statements: their records are current
            records.reverse()
            self.facts.remember(kept, records)
        return kept


class _Tally:
    """How many times each name is counted, names added and taken off by the list (both
    as fast: ``Counter.subtract`` is a loop in Python, ``Counter.update`` of a list is not).

    Example::

        tally = _Tally()
        tally.add(["a", "a"])
        tally.take(["a"])
        "a" in tally  # True: once
    """

    __slots__ = ("added", "taken")

    def __init__(self) -> None:
        self.added: Counter = Counter()
        self.taken: Counter = Counter()

    def add(self, names: list[str]) -> None:
        self.added.update(names)

    def take(self, names: list[str]) -> None:
        """Take off names added before."""
        self.taken.update(names)

    def __contains__(self, name: object) -> bool:
        return self.added.get(name, 0) > self.taken.get(name, 0)


class _Beside:
    """The names of a block counted in :attr:`Optimizer._outside` as :meth:`Optimizer.block`
    moves down it: beside the current position, those of the statements before and after
    it, and of the fields of the statement there other than the block being optimised.

    Linear in the block, however many loops and branches it holds: a statement is counted
    as before the position once, when the position has passed it and it changes no more,
    and taken off the statements after the position once, as the record it was counted by
    (a statement after the position is as it was when counted: the block's statements are
    optimised in order, each changing only itself, unless two share a node: then each
    position counts them afresh). :meth:`leave` takes off all it counted.

    Example::

        beside = _Beside(optimizer, body)
        beside.at(3, ["c"], [])  # counted: body[:3], body[4:] and a read of c
        beside.leave()  # none of them
    """

    def __init__(self, optimizer: Optimizer, body: list[gast.stmt]):
        self.reads, self.writes = optimizer._outside
        self.of = optimizer.facts.of
        # False when statements may share a node (see FactsCache.prime): then optimising one
        # may change another, and each position counts the others afresh
        self.kept = optimizer.facts.enabled
        self.body = body
        self.before: list = []  # the record each statement before was counted by
        self.after: list | None = None  # the same for those after (None: nothing counted)
        self.counted_after = 0  # body[counted_after:] is counted
        self.fields: tuple[list[str], list[str]] = ([], [])

    def at(self, index: int, reads: list[str], writes: list[str]) -> None:
        """Count what is beside ``body[index]``, with ``reads`` and ``writes`` in its fields."""
        if not self.kept:
            self.leave()
        self.reads.take(self.fields[0])
        self.writes.take(self.fields[1])
        for statement in self.body[len(self.before) : index]:
            facts = self.of(statement)
            self.before.append(facts)
            self._count(facts, _Tally.add)
        self.reads.add(reads)
        self.writes.add(writes)
        self.fields = (reads, writes)
        if self.after is None:
            self.after = [None] * len(self.body)
            for position in range(index + 1, len(self.body)):
                facts = self.after[position] = self.of(self.body[position])
                self._count(facts, _Tally.add)
            self.counted_after = index + 1
        for position in range(self.counted_after, index + 1):
            self._count(self.after[position], _Tally.take)
        self.counted_after = max(self.counted_after, index + 1)

    def leave(self) -> None:
        """Take off all that is counted (the block is done)."""
        if self.after is None:
            return
        self.reads.take(self.fields[0])
        self.writes.take(self.fields[1])
        for facts in self.before:
            self._count(facts, _Tally.take)
        for position in range(self.counted_after, len(self.body)):
            self._count(self.after[position], _Tally.take)
        self.before, self.after, self.fields = [], None, ([], [])

    def _count(self, facts, change: Callable) -> None:
        change(self.reads, facts.loads)
        change(self.reads, facts.others)
        change(self.writes, facts.stores)


# Rewrites that, run on what they made, change nothing: folding single uses (why: in
# docs/design.md, "The optimiser's rounds"). A temporary it leaves is left for a reason
# its own folds do not take away (counts of other names stay, statements only grow, and
# those it removes could not have stopped a fold).
_IDEMPOTENT = frozenset({fold_single_uses})


def _eliminate_dead(optimizer: Optimizer, body: list[gast.stmt]) -> list[gast.stmt]:
    return optimizer.eliminate_dead(body, set())


def _same_statements(new: list[gast.stmt], old: list[gast.stmt]) -> bool:
    """Whether a block holds the same statements as before (a ``pass`` for a ``pass``)."""
    return len(new) == len(old) and all(
        a is b or (type(a) is gast.Pass and type(b) is gast.Pass) for a, b in zip(new, old)
    )
