"""Copy propagation and folding of single-use temporaries, on one straight-line block.

* ``a = b`` (or ``a = 2``): later reads of ``a`` become reads of ``b`` and the copy goes;
* a temporary read exactly once is folded into the one expression that reads it.

Each takes the running optimiser (its facts cache, purity verdicts and ``changed`` flag).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import chain, compress
from operator import attrgetter, not_

import gast

from s2sgrad.compiler.annotations import KEEP_APART, KEEP_NAME, annotation
from s2sgrad.compiler.optimize.facts import (
    FactsCache,
    facts_after_folding,
    facts_after_rename,
    facts_after_replacing_by_literal,
    rename_reads,
    replace_reads,
)
from s2sgrad.compiler.optimize.simple_statements import SIMPLE_STATEMENTS
from s2sgrad.compiler.optimize.statements import (
    has_copies,
    is_compound,
    is_constant_range,
    is_literal,
    is_shape_stand_in,
    node_size,
    top_level_reads,
)

__all__ = ["propagate_copies", "fold_single_uses", "MAX_FOLDED_SIZE"]

MAX_FOLDED_SIZE = 14  # nodes in an expression folded into its single use


def propagate_copies(optimizer, body, allowed=None):
    """Replace reads of ``a`` after ``a = b`` (or ``a = 2``) by ``b`` and drop the copy."""
    cache = optimizer.facts
    facts = cache.of_each(body)
    if not has_copies(facts, allowed):  # nothing below would happen
        return list(body)
    positions = _copy_positions(facts)
    # a few copies ask about a few names: those are looked up, not every name indexed
    sources = [v.id for v in (facts[p].statement.value for p in positions) if type(v) is gast.Name]
    if len(sources) <= _FEW_COPIES:
        block = _IndexedBlock(body, cache, facts, lazy=True)
    else:  # the names asked about: the copies', and the sources a copy may read then
        copies = {facts[p].assigned for p in positions}
        block = _IndexedBlock(body, cache, facts, asked=(copies, copies.union(sources)))
    writes = Counter(chain.from_iterable(map(attrgetter("writes"), block.facts)))
    statements = block.statements
    for index in positions:
        if not block.alive[index]:
            continue
        copy = block.facts[index].assigned
        if allowed is not None and copy not in allowed:
            continue
        statement = statements[index]
        value = statement.value
        if writes[copy] == 1 and is_constant_range(value) and optimizer.is_pure_call(value):
            for position in block.after(block.readers, copy, index):
                block.replace_by_expression(position, copy, value)
            block.remove(index)
            optimizer.changed = True
            continue
        if writes[copy] == 1 and is_literal(value):
            for position in block.after(block.readers, copy, index):
                block.replace_by_literal(position, copy, value)
            block.remove(index)
            optimizer.changed = True
            continue
        if type(value) is gast.Name:
            source = value.id
            if _drop_copy_back(block, index, copy, source):
                optimizer.changed = True
            changes = block.after(block.modifiers, source, index)
            if writes[copy] == 1 and copy != source and _read_before_change(block, copy, changes):
                for position in block.after(block.readers, copy, index):
                    block.rename(position, copy, source)
                block.remove(index)
                optimizer.changed = True
    return block.remaining()


# copies of a name (``a = b``) up to which the block's names are looked up when asked
# (each a pass over the block), not all indexed at the start
_FEW_COPIES = 4

# what the value of ``a = value`` may be for propagation to start from it, now or once
# names in it are replaced (a literal is a Constant or a negated one; range(...) a Call)
_MAY_BE_COPIED = frozenset({gast.Name, gast.Constant, gast.UnaryOp, gast.Call})


def _copy_positions(records: list) -> list[int]:
    """The positions of the assignments ``name = value`` in a block (``records``, their
    facts) whose value is of a kind propagation starts from.

    Propagation rewrites only names read in a statement, so the kind of a value changes
    only where the value is a name (which is in): what is not in at the start never is.
    """
    kinds = _MAY_BE_COPIED
    return [
        position
        for position, facts in enumerate(records)
        if facts.assigned is not None and type(facts.statement.value) in kinds
    ]


def _read_before_change(block: _IndexedBlock, copy: str, changes: list[int]) -> bool:
    """After ``copy = source``, whether every read of ``copy`` sees what ``source`` holds
    there: ``source`` never changes after, or is first rebound by a plain assignment
    (``source = source * b + copy``, which reads before it binds) that no read of ``copy``
    follows."""
    if not changes:
        return True
    first = changes[0]
    statement = block.statements[first]
    if not (
        type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
        and block.facts[first].modified == {statement.targets[0].id}
    ):
        return False
    readers = block.readers.get(copy, ())
    return all(p <= first for p in readers if block.alive[p])


def fold_single_uses(optimizer, body, allowed=None):
    """Fold a temporary read exactly once into the statement that reads it."""
    cache = optimizer.facts
    result = list(body)
    facts_at: list = cache.of_each(result)  # None once rewritten, until asked again
    writes = Counter(chain.from_iterable(map(attrgetter("writes"), facts_at)))
    reads = Counter(chain.from_iterable(map(attrgetter("loads"), facts_at)))
    comments = list(map(attrgetter("comment"), facts_at))
    assigned = list(map(attrgetter("assigned"), facts_at))  # rewriting reads leaves these alone
    removed = [False] * len(result)
    # the counts are of the block as it came: a fold changes no other name's (the value's
    # reads move with it), so they stay right for every candidate
    once = {name for name, count in writes.items() if count == 1}
    once.intersection_update(name for name, count in reads.items() if count == 1)
    candidates = [index for index, target in enumerate(assigned) if target in once]
    for index in candidates:
        statement = result[index]
        target = assigned[index]
        if (allowed is not None and target not in allowed) or annotation(
            statement, KEEP_APART, False
        ):
            continue
        # an adjoint named after the user's variable stays visible, unless its one reader
        # makes a temporary of it (dt = dh * mask): folded, it is freed there, not kept
        # alive to the end of the function beside the temporary
        keeps_name = annotation(statement, KEEP_NAME, False)
        value = statement.value
        if not optimizer.pure_value(statement) or optimizer.value_size(statement) > MAX_FOLDED_SIZE:
            continue
        facts = facts_at[index] or cache.of(statement)
        facts_at[index] = facts
        inputs = facts.reads
        for later_index in range(index + 1, len(result)):
            if removed[later_index] or comments[later_index]:
                continue
            later = result[later_index]
            later_facts = facts_at[later_index] or cache.of(later)
            facts_at[later_index] = later_facts
            if target in later_facts.reads:
                if (
                    target in later_facts.modified  # t[0] = v writes into t itself
                    or (keeps_name and not _makes_temporary(later))
                    or is_compound(later)
                    or isinstance(later, gast.Return)
                    or annotation(later, KEEP_APART, False)
                    or (later_facts.own_scope and not top_level_reads(later, target))
                ):
                    break
                # The value moves rather than being copied. The dropped statement keeps
                # it too, but only counts() still looks there, through the facts kept
                # from before the move (so not when the cache is off).
                reads_there = (  # the walk's count is replace_reads' without annotations
                    later_facts.loads.count(target)
                    if type(later) in SIMPLE_STATEMENTS and not later_facts.annotated
                    else -1
                )
                replace_reads(later, target, value, cache, cache.enabled, reads_there)
                optimizer._purity.pop(id(value), None)  # judged afresh where it now is
                told = facts_after_folding(later_facts, facts, value)
                if told is None or not cache.enabled:
                    cache.forget(later)
                    facts_at[later_index] = None
                else:
                    cache.keep(told)
                    facts_at[later_index] = told
                removed[index] = True
                optimizer.changed = True
                break
            if not later_facts.modified.isdisjoint(inputs):
                break
            if not (type(later) is gast.Assign and optimizer.pure_value(later)) and not (
                _is_append(later) or _is_pop(later)  # they change the stack, not the value
            ):
                break
    kept = list(map(not_, removed))
    result = list(compress(result, kept))
    cache.remember(result, list(compress(facts_at, kept)))  # None where forgotten
    return result


def _makes_temporary(statement) -> bool:
    """Whether ``statement`` assigns one name that is not kept for the user to read."""
    return (
        type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
        and not annotation(statement, KEEP_NAME, False)
    )


def _is_append(statement) -> bool:
    """Whether ``statement`` is ``items.append(name)`` (or ``shape_only(name)``)."""
    if type(statement) is not gast.Expr or type(statement.value) is not gast.Call:
        return False
    value = statement.value
    return (
        type(value.func) is gast.Attribute
        and value.func.attr == "append"
        and type(value.func.value) is gast.Name
        and len(value.args) == 1
        and not value.keywords
        and (type(value.args[0]) is gast.Name or is_shape_stand_in(value.args[0]))
    )


def _is_pop(statement) -> bool:
    """Whether ``statement`` is ``name = stack.pop()`` of the backward sweep's stack (or
    its copy, ``stack_``): the caller checks the value moved past it reads neither."""
    if type(statement) is not gast.Assign or type(statement.value) is not gast.Call:
        return False
    value = statement.value
    return (
        len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
        and type(value.func) is gast.Attribute
        and value.func.attr == "pop"
        and type(value.func.value) is gast.Name
        and value.func.value.id.startswith("stack")  # no user list another name shares
        and not value.args
        and not value.keywords
    )


class _IndexedBlock:
    """A block's statements with, for each name, the positions that read or modify it.

    Statements are rewritten through :meth:`rewrite` (which keeps the index right) and
    removed by marking them dead, so positions stay put. With ``lazy`` the positions of a
    name are found when first asked for (see :class:`_Positions`).
    """

    def __init__(
        self,
        statements,
        cache: FactsCache,
        records: list,
        lazy: bool = False,
        asked: tuple[set[str], set[str]] | None = None,
    ):
        self.statements = list(statements)
        self.cache = cache
        self.facts = records  # each statement's record in ``cache``
        self.alive = [True] * len(self.statements)
        # ``asked``: the names whose readers and modifiers are indexed at the start (others
        # are looked up as with ``lazy``)
        read, modified = asked if asked is not None else (None, None)
        self.readers = _Positions(records, "reads", lazy, read)
        self.modifiers = _Positions(records, "modified", lazy, modified)
        self._compounds: list[int] | None = None

    @property
    def compounds(self) -> list[int]:
        """Positions of the loops and branches (found when first asked)."""
        if self._compounds is None:
            simple = SIMPLE_STATEMENTS  # most statements: told by their type alone
            self._compounds = [
                p for p, s in enumerate(self.statements) if type(s) not in simple and is_compound(s)
            ]
        return self._compounds

    def after(self, index: dict[str, set[int]], name: str, position: int) -> list[int]:
        """The live positions after ``position`` in ``index[name]``, in order."""
        alive = self.alive
        return sorted(p for p in index.get(name, ()) if p > position and alive[p])

    def rename(self, position: int, old_name: str, new_name: str) -> None:
        """Make the statement at ``position`` read ``new_name`` where it reads ``old_name``."""
        old = self.facts[position]
        rename_reads(old.statement, old_name, new_name, self.cache)
        self._update(position, old, facts_after_rename(old, old_name, new_name))

    def replace_by_literal(self, position: int, name: str, literal: gast.expr) -> None:
        """Put a copy of the number or boolean ``literal`` where the statement at
        ``position`` reads ``name``."""
        old = self.facts[position]
        replace_reads(old.statement, name, literal, self.cache)
        self._update(position, old, facts_after_replacing_by_literal(old, name, node_size(literal)))

    def replace_by_expression(self, position: int, name: str, value: gast.expr) -> None:
        """Put a copy of ``value`` where the statement at ``position`` reads ``name``."""
        old = self.facts[position]
        replace_reads(old.statement, name, value, self.cache)
        self._update(position, old, None)

    def _update(self, position: int, old, new) -> None:
        """The statement at ``position`` changed: ``new`` is its facts, if they are known."""
        statement = old.statement
        if new is None or not self.cache.enabled:
            self.cache.forget(statement)
            new = self.cache.of(statement)
        else:
            self.cache.keep(new)
        self.facts[position] = new
        self.readers.changed(position, old.reads, new.reads)
        self.modifiers.changed(position, old.modified, new.modified)

    def remove(self, position: int) -> None:
        self.alive[position] = False

    def remaining(self) -> list[gast.stmt]:
        """The statements not removed, whose records (kept current) the cache is handed."""
        result = list(compress(self.statements, self.alive))
        self.cache.remember(result, list(compress(self.facts, self.alive)))
        return result


class _Positions:
    """For each name, the positions of the records (of a block's statements) whose set
    ``field`` (``reads``, ``modified``) holds it; told of each record replaced
    (:meth:`changed`), so that it is always what the records say now. Built in one pass
    over the records, or, ``lazy``, a name at a time when asked for (a pass each: up to
    :data:`_LOOKUPS` names, then all at once).

    Example::

        readers = _Positions(records, "reads", lazy=True)
        readers.get("t")  # {3, 7}: records[3].reads and records[7].reads hold "t"
    """

    def __init__(self, records: list, field: str, lazy: bool, names: set[str] | None = None):
        self.records = records  # kept current by the owner: it replaces a record, then tells
        self.field = field
        self.known: dict[str, set[int]] = {}
        self.complete = False  # every name is in ``known``
        self.lookups = 0
        if names is not None:
            self._index_names(names)
        elif not lazy:
            self._index_all()

    def get(self, name: str, default=()):
        """The positions whose records name ``name`` (a set; ``default`` when none is)."""
        positions = self.known.get(name)
        if positions is not None or self.complete:
            return default if positions is None else positions
        self.lookups += 1
        if self.lookups > _LOOKUPS:
            self._index_all()
            return self.known.get(name, default)
        names = map(attrgetter(self.field), self.records)
        positions = {p for p, held in enumerate(names) if name in held}
        self.known[name] = positions
        return positions

    def changed(self, position: int, before: set[str], now: set[str]) -> None:
        """The record at ``position`` changed: ``before`` was its field, ``now`` is."""
        known = self.known
        for name in before - now:
            positions = known.get(name)
            if positions is not None:
                positions.discard(position)
        for name in now - before:
            positions = known.get(name)
            if positions is not None:
                positions.add(position)
            elif self.complete:
                known[name] = {position}

    def _index_names(self, names: set[str]) -> None:
        """Index ``names`` alone, in one pass: a record holding none of them (most) is
        passed over by a test in C. Exact as a lookup of each: :meth:`changed` keeps every
        indexed name's positions (an empty set included) current, and any other name is
        looked up when asked for."""
        known: dict[str, set[int]] = {name: set() for name in names}
        for position, held in enumerate(map(attrgetter(self.field), self.records)):
            if not held.isdisjoint(names):
                for name in held.intersection(names):
                    known[name].add(position)
        self.known = known

    def _index_all(self) -> None:
        known: defaultdict[str, set[int]] = defaultdict(set)
        for position, names in enumerate(map(attrgetter(self.field), self.records)):
            for name in names:
                known[name].add(position)
        self.known = known
        self.complete = True


_LOOKUPS = 8  # names a lazy _Positions looks up one at a time before indexing them all


def _drop_copy_back(block: _IndexedBlock, index, target, source) -> bool:
    """After ``a = b``, a later ``b = a`` (with neither changed in between) does nothing."""
    alive = block.alive
    stops = [
        p
        for p in (*block.modifiers.get(target, ()), *block.modifiers.get(source, ()))
        if p > index and alive[p]
    ]
    stops += (p for p in block.compounds if p > index and alive[p])
    if not stops:
        return False
    position = min(stops)  # the first statement that changes a or b, or is compound
    later = block.statements[position]
    if (
        block.facts[position].assigned == source
        and isinstance(later.value, gast.Name)
        and later.value.id == target
    ):
        block.remove(position)
        return True
    return False
