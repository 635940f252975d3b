"""Tidy generated code until it reads like a careful hand-written gradient.

Passes, run to a fixed point on each straight-line block:

* constant folding (``2 - 1`` → ``1``, ``x ** 1`` → ``x``, ``x * 1`` → ``x``);
* copy propagation (``a = b`` and later reads of ``a`` become reads of ``b``);
* folding single-use temporaries into the one expression that reads them;
* merging accumulations (``d = e1 … d = d + e2`` → ``d = e1 + e2``);
* dead-code elimination of side-effect-free assignments nobody reads.
"""

from __future__ import annotations

import operator
from collections import Counter, defaultdict
from collections.abc import Callable

import gast

from s2sgrad.compiler.optimize_facts import (
    FactsCache,
    facts_after_folding,
    facts_after_merging,
    facts_after_rename,
    facts_after_replacing_by_literal,
    literal_number,
    rename_reads,
    replace_reads,
    simple_assignment,
)
from s2sgrad.compiler.syntax import (
    BINARY_OPERATORS,
    COMMENT_MARK,
    child_fields,
    drop_rule_names,
    method_receiver,
    names_read,
    node_fields,
    string_statement,
    walk,
)

__all__ = ["optimize", "fold_constants"]

MAX_FOLDED_SIZE = 14  # nodes in an expression folded into its single use
MAX_MERGED_TERMS = 24  # terms of a sum that accumulation merging builds (code is recursed)


def drop_unneeded_saves(body: list[gast.stmt]) -> list[gast.stmt]:
    """Remove stack pushes and pops of variables that nothing reads once restored.

    The reverse transformer saves a value when backward code reads it; after
    specialisation some of those reads (shape queries) are gone.
    """
    stacks = _stacks(body)
    if not stacks:
        return body
    statements = list(_walk_with_loops(body, ()))
    removable = set()
    for stack in stacks:
        saved = {
            _pushed_name(s, stack) for s, _ in statements if _pushed_name(s, stack) is not None
        }
        for name in saved:
            if not _read_after_restore(statements, stack, name):
                removable.add((stack, name))
    if not removable:
        return body
    body = _without_saves(body, removable)
    still_pushed = {
        _pushed_name(s, stack) for s, _ in _walk_with_loops(body, ()) for stack in stacks
    }
    return [
        s
        for s in body
        if not (getattr(s, "s2s_save_init", False) and s.targets[0].id not in still_pushed)
    ]


def _stacks(body) -> set[str]:
    """The stacks the reverse transformer created (marked where they are made)."""
    return {
        s.targets[0].id
        for s in body
        if isinstance(s, gast.Assign) and getattr(s, "s2s_stack", False)
    }


def _walk_with_loops(statements, loops):
    for statement in statements:
        yield statement, loops
        inner_loops = (
            loops + (statement,) if isinstance(statement, (gast.For, gast.While)) else loops
        )
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                yield from _walk_with_loops(inner, inner_loops)


def _pushed_name(statement, stack) -> str | None:
    """``name`` for the statement ``stack.append(name)``."""
    if isinstance(statement, gast.Expr) and method_receiver(statement.value, "append") == stack:
        args = statement.value.args
        if len(args) == 1 and isinstance(args[0], gast.Name):
            return args[0].id
    return None


def _popped_name(statement, stack) -> str | None:
    """``name`` for the statement ``name = stack.pop()``."""
    if (
        isinstance(statement, gast.Assign)
        and isinstance(statement.targets[0], gast.Name)
        and method_receiver(statement.value, "pop") == stack
    ):
        return statement.targets[0].id
    return None


def _read_after_restore(statements, stack, name) -> bool:
    """Whether ``name`` is read after a pop restored it (or in a loop that restores it)."""
    popped = False
    restoring_loops = {
        id(loop) for s, loops in statements if _popped_name(s, stack) == name for loop in loops
    }
    for statement, loops in statements:
        if _popped_name(statement, stack) == name:
            popped = True
            continue
        if _pushed_name(statement, stack) == name:
            continue
        restored = popped or any(id(loop) in restoring_loops for loop in loops)
        if restored and name in _reads_of_statement_itself(statement):
            return True
    return False


def _reads_of_statement_itself(statement) -> set[str]:
    """Names a statement reads, not counting the statements nested in its body."""
    if isinstance(statement, (gast.If, gast.While)):
        return names_read(statement.test)
    if isinstance(statement, gast.For):
        return names_read(statement.iter)
    return names_read(statement)


def _without_saves(statements, removable):
    result = []
    for statement in statements:
        if any(
            _pushed_name(statement, stack) == name or _popped_name(statement, stack) == name
            for stack, name in removable
        ):
            continue
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                inner = _without_saves(inner, removable)
                if all(_is_comment(s) or type(s) is gast.Pass for s in inner):
                    inner = []  # comments alone would print as an empty block
                setattr(statement, field, inner or ([gast.Pass()] if field == "body" else []))
        if _empty_replay(statement):
            continue
        result.append(statement)
    return _drop_orphan_comments(result, [_is_comment(s) for s in result])


def _empty_replay(statement) -> bool:
    """Whether ``statement`` is a backward ``if`` or loop (it has no effect of its own)
    left with nothing to do."""
    return (
        getattr(statement, "s2s_replay", False)
        and _only_passes(statement.body)
        and _only_passes(statement.orelse)
    )


def optimize(body: list[gast.stmt], is_pure_call: Callable[[gast.Call], bool]) -> list[gast.stmt]:
    """Optimise a function body; ``is_pure_call`` says which calls may be moved or dropped.

    Example::

        optimize(parse("t = a * 1\\nreturn t").body, lambda c: True)  # [return a]
    """
    drop_rule_names(body)  # they are for the unoptimised code (sg.show(..., optimize=False))
    facts = FactsCache()
    facts.prime(body)
    for _ in range(20):
        optimizer = _Optimizer(is_pure_call, body, facts)
        body = optimizer.block(body, live_after=set(), top=True)
        if not optimizer.changed:
            break
    return body


class _Optimizer:
    """One pass over a function body; ``changed`` tells whether another pass may help."""

    def __init__(self, is_pure_call, function_body, facts: FactsCache):
        self.is_pure_call = is_pure_call
        self.function_body = function_body
        self.facts = facts
        self.changed = False
        # A value is judged when first asked about in a pass, and the verdict stays for the
        # pass even when folding later grows the value (the generated code depends on it).
        self._purity: dict[int, tuple[bool, gast.AST]] = {}

    def counts(self, statements) -> tuple[Counter, Counter]:
        """How often each name is read (or deleted) and written in ``statements``."""
        reads: list[str] = []
        writes: list[str] = []
        self._collect_counts(statements, reads, writes)
        return Counter(reads), Counter(writes)

    def _collect_counts(self, statements, reads, writes):
        for statement in statements:
            if _has_blocks(statement):  # its blocks may be changing: no facts kept for it
                for field in child_fields(type(statement)):
                    value = getattr(statement, field, None)
                    if field in ("body", "orelse") and type(value) is list:
                        self._collect_counts(value, reads, writes)
                    elif value is not None:
                        _count_names(value, reads, writes)
            else:
                facts = self.facts.of(statement)
                reads += facts.loads
                reads += facts.others
                writes += facts.stores

    def block_local(self, body) -> set[str]:
        """Names a loop or branch body assigns before any use and nobody outside it uses."""
        all_reads, all_writes = self.counts(self.function_body)
        reads, writes = self.counts(body)
        first_seen: dict[str, bool] = {}
        for statement in body:
            facts = self.facts.of(statement)
            if isinstance(statement, gast.Assign):
                top_writes = facts.writes
                read = _value_reads(statement, facts)
            else:
                top_writes = set()
                read = facts.reads | facts.writes
            for name in read:
                first_seen.setdefault(name, False)
            for name in top_writes:
                first_seen.setdefault(name, True)
        return {
            name
            for name, written_first in first_seen.items()
            if written_first and reads[name] == all_reads[name] and writes[name] == all_writes[name]
        }

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
            facts.value_size = _size(statement.value)
        return facts.value_size

    def _pure(self, node: gast.AST) -> bool:
        for child in walk(node):
            if isinstance(child, gast.Call) and not self.is_pure_call(child):
                return False
            if isinstance(child, (gast.Yield, gast.YieldFrom, gast.Await, gast.NamedExpr)):
                return False
        return True

    def block(self, body: list[gast.stmt], live_after: set[str], top: bool) -> list[gast.stmt]:
        folded = self.fold_constant_branches(body)
        if len(folded) != len(body) or any(a is not b for a, b in zip(folded, body)):
            self.changed = True
        body = folded
        for statement in body:
            if _has_blocks(statement):
                for field in ("body", "orelse"):
                    inner = getattr(statement, field, None)
                    if isinstance(inner, list):
                        setattr(
                            statement, field, self.block(inner, set(), top=False) or [gast.Pass()]
                        )
                        if field == "orelse" and all(isinstance(s, gast.Pass) for s in inner):
                            statement.orelse = []
                if type(statement) is gast.If and _only_passes(statement.body) and statement.orelse:
                    # if c: pass / else: ...  reads better as  if not c: ...
                    statement.test = gast.UnaryOp(op=gast.Not(), operand=statement.test)
                    statement.body, statement.orelse = statement.orelse, []
                    self.changed = True
                self.facts.forget(statement)
            elif self.facts.of(statement).folded:
                continue
            self.fold_statement(statement)
        if any(_empty_replay(s) for s in body):
            body = [s for s in body if not _empty_replay(s)]
            self.changed = True
        if not top:
            local = self.block_local(body)
            body = self.propagate_copies(body, allowed=local)
            body = self.fold_single_uses(body, allowed=local)
            return self.eliminate_unread(body)
        body = self.propagate_copies(body)
        self.fold_simple_statements(body)  # what propagation brought together, in this round
        body = self.fold_single_uses(body)
        body = self.merge_accumulations(body)
        body = self.merge_item_updates(body)
        body = self.eliminate_dead(body, live_after)
        return body

    def fold_simple_statements(self, body):
        """Fold constants in the statements (outside loops and branches) that changed."""
        for statement in body:
            if not _has_blocks(statement) and not self.facts.of(statement).folded:
                self.fold_statement(statement)

    def fold_statement(self, statement):
        folder = _ConstantFolder(self.facts)
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
                folder = _ConstantFolder(self.facts)
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
        reads, _ = self.counts(self.function_body)
        kept = [
            s
            for s in body
            if not (
                _simple_assignment(s) and reads[_simple_assignment(s)] == 0 and self.pure_value(s)
            )
        ]
        if len(kept) != len(body):
            self.changed = True
        # a block of comments alone would print as no statement at all
        kept = _drop_orphan_comments(kept, [self.facts.of(s).comment for s in kept])
        return kept or [gast.Pass()]

    # ---------------------------------------------------------------------------------------
    def propagate_copies(self, body, allowed=None):
        """Replace reads of ``a`` after ``a = b`` (or ``a = 2``) by ``b`` and drop the copy."""
        if not _has_copies(body, allowed):  # nothing below would happen
            return list(body)
        cache = self.facts
        block = _IndexedBlock(body, cache)
        writes = Counter(n for f in block.facts for n in f.writes)
        for index, statement in enumerate(block.statements):
            if not block.alive[index]:
                continue
            copy = block.facts[index].assigned
            if copy is None or (allowed is not None and copy not in allowed):
                continue
            value = statement.value
            if writes[copy] == 1 and _literal(value):
                for position in block.after(block.readers, copy, index):
                    block.replace_by_literal(position, copy, value)
                block.remove(index)
                self.changed = True
                continue
            if type(value) is gast.Name:
                source = value.id
                if _drop_copy_back(block, index, copy, source):
                    self.changed = True
                source_rewritten = bool(block.after(block.modifiers, source, index))
                if writes[copy] == 1 and not source_rewritten and copy != source:
                    for position in block.after(block.readers, copy, index):
                        block.rename(position, copy, source)
                    block.remove(index)
                    self.changed = True
        return block.remaining()

    def fold_single_uses(self, body, allowed=None):
        """Fold a temporary read exactly once into the statement that reads it."""
        cache = self.facts
        result = list(body)
        facts_at = [cache.of(s) for s in result]  # None once rewritten, until asked again
        writes = Counter(n for f in facts_at for n in f.writes)
        reads = Counter(n for f in facts_at for n in f.loads)
        comments = [f.comment for f in facts_at]
        assigned = [f.assigned for f in facts_at]  # rewriting reads leaves these alone
        removed = [False] * len(result)
        for index, statement in enumerate(result):
            target = assigned[index]
            if not target or writes[target] != 1 or reads[target] != 1:
                continue
            if (
                (allowed is not None and target not in allowed)
                or getattr(statement, "keep_apart", False)
                or getattr(statement, "keep_name", False)
            ):
                continue
            value = statement.value
            if not self.pure_value(statement) or self.value_size(statement) > MAX_FOLDED_SIZE:
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
                        or _is_compound(later)
                        or isinstance(later, gast.Return)
                        or getattr(later, "keep_apart", False)
                        or (cache.of(later).own_scope and not _top_level_reads(later, target))
                    ):
                        break
                    # The value moves rather than being copied. The dropped statement keeps
                    # it too, but only counts() still looks there, through the facts kept
                    # from before the move (so not when the cache is off).
                    replace_reads(later, target, value, cache, move=cache.enabled)
                    self._purity.pop(id(value), None)  # judged afresh where it now is
                    told = facts_after_folding(later_facts, facts, value)
                    if told is None or not cache.enabled:
                        cache.forget(later)
                        facts_at[later_index] = None
                    else:
                        cache.keep(told)
                        facts_at[later_index] = told
                    removed[index] = True
                    self.changed = True
                    break
                if not later_facts.modified.isdisjoint(inputs) or not (
                    type(later) is gast.Assign and self.pure_value(later)
                ):
                    break
        return [s for s, gone in zip(result, removed) if not gone]

    def merge_accumulations(self, body):
        """``d = e1 … d = d + e2`` → ``d = e1 + e2`` when nothing in between reads ``d``."""
        if not any(_accumulation(s) for s in body):  # nothing below would happen
            return list(body)
        cache = self.facts
        result = list(body)
        assigned = [_simple_assignment(s) for s in result]
        facts_at = [cache.of(s) for s in result]
        for index, statement in enumerate(result):
            target = assigned[index]
            if statement is None or target is None:
                continue
            value = statement.value
            if not (
                isinstance(value, gast.BinOp)
                and isinstance(value.op, gast.Add)
                and isinstance(value.left, gast.Name)
                and value.left.id == target
                and type(value.left.ctx) is gast.Load
                and cache.of(statement).loads.count(target) == 1  # not read on the right
            ):
                continue
            # the nearest statement before that reads or writes the target
            earlier_index = index - 1
            while earlier_index >= 0 and (
                result[earlier_index] is None
                or (
                    target not in facts_at[earlier_index].reads
                    and target not in facts_at[earlier_index].writes
                )
            ):
                earlier_index -= 1
            if earlier_index < 0 or assigned[earlier_index] != target:
                continue
            earlier = result[earlier_index]
            if _sum_length(earlier.value) >= MAX_MERGED_TERMS:  # keep expressions shallow
                continue
            between = [
                facts_at[p] for p in range(earlier_index + 1, index) if result[p] is not None
            ]
            inputs = _value_reads(earlier, cache.of(earlier))
            if all(
                target not in f.reads and f.modified.isdisjoint(inputs) for f in between
            ) and not any(_is_compound(f.statement) for f in between):
                value.left = earlier.value
                told = facts_after_merging(facts_at[index], facts_at[earlier_index], value)
                if told is None or not cache.enabled:
                    cache.forget(statement)
                    facts_at[index] = cache.of(statement)
                else:
                    cache.keep(told)
                    facts_at[index] = told
                result[earlier_index] = None
                self.changed = True
        return [s for s in result if s is not None]

    def merge_item_updates(self, body):
        """``d[i] = a … d[i] += b`` → ``d[i] = a + b`` when nothing in between touches d."""
        cache = self.facts
        result = list(body)
        for index, statement in enumerate(result):
            if not (isinstance(statement, gast.AugAssign) and isinstance(statement.op, gast.Add)):
                continue
            target = statement.target
            if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)):
                continue
            name, place = target.value.id, gast.dump(target.slice)
            for earlier_index in range(index - 1, -1, -1):
                earlier = result[earlier_index]
                if earlier is None or _is_comment(earlier):
                    continue
                earlier_target = _item_target(earlier)
                if earlier_target is not None and earlier_target[0] == name:
                    if earlier_target[1] != place:
                        break
                    value = earlier.value
                    between = [s for s in result[earlier_index + 1 : index] if s is not None]
                    earlier_reads = cache.of(earlier).reads
                    if any(
                        _is_compound(s) or cache.of(s).modified & earlier_reads for s in between
                    ) or name in names_read(statement.value):
                        break
                    combined = gast.BinOp(left=value, op=gast.Add(), right=statement.value)
                    if isinstance(earlier, gast.Assign):
                        merged = gast.Assign(targets=[target], value=combined, type_comment=None)
                    else:
                        merged = gast.AugAssign(target=target, op=gast.Add(), value=combined)
                    result[index] = gast.copy_location(merged, statement)
                    result[earlier_index] = None
                    self.changed = True
                    break
                earlier_facts = cache.of(earlier)
                if name in earlier_facts.reads or name in earlier_facts.modified:
                    break
        return [s for s in result if s is not None]

    def eliminate_dead(self, body, live_after):
        """Drop side-effect-free assignments nothing later reads."""
        live = set(live_after)
        result = []
        comments = []
        for statement in reversed(body):
            facts = self.facts.of(statement)
            if facts.comment:
                result.append(statement)
                comments.append(True)
                continue
            if facts.assigned is not None:
                targets = {facts.assigned}
            elif isinstance(statement, gast.Assign) and all(
                isinstance(t, gast.Name) for t in _flat_targets(statement.targets[0])
            ):
                targets = {t.id for t in _flat_targets(statement.targets[0])}
            else:
                live |= facts.reads
                result.append(statement)
                comments.append(False)
                continue
            if not targets & live and self.pure_value(statement):
                self.changed = True
                continue
            live -= targets
            live |= _value_reads(statement, facts)
            result.append(statement)
            comments.append(False)
        result.reverse()
        comments.reverse()
        return _drop_orphan_comments(result, comments)


def _sum_length(value: gast.expr) -> int:
    """How many terms ``a + b + …`` adds (1 for anything else)."""
    length = 1
    while isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add):
        value, length = value.left, length + 1
    return length


def _only_passes(statements) -> bool:
    return all(type(s) is gast.Pass for s in statements)


def _has_blocks(statement) -> bool:
    """Whether the optimiser treats ``statement``'s ``body``/``orelse`` as blocks of its own."""
    return not isinstance(statement, gast.FunctionDef) and (
        type(getattr(statement, "body", None)) is list
        or type(getattr(statement, "orelse", None)) is list
    )


def _count_names(node, reads: list[str], writes: list[str]) -> None:
    """Add the names ``node`` stores to ``writes`` and the others it names to ``reads``."""
    for child in walk(node) if isinstance(node, gast.AST) else ():
        if type(child) is gast.Name:
            (writes if isinstance(child.ctx, gast.Store) else reads).append(child.id)
    if type(node) is list:
        for item in node:
            _count_names(item, reads, writes)


def _value_reads(statement: gast.Assign, facts) -> set[str]:
    """``names_read(statement.value)``, from the statement's facts when that is the same."""
    if len(statement.targets) == 1 and type(statement.targets[0]) is gast.Name:
        return facts.reads
    return names_read(statement.value)


def _item_target(statement):
    """(name, dumped index) of ``d[i] = …`` or ``d[i] += …``, else None."""
    if isinstance(statement, gast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
    elif isinstance(statement, gast.AugAssign) and isinstance(statement.op, gast.Add):
        target = statement.target
    else:
        return None
    if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
        return target.value.id, gast.dump(target.slice)
    return None


class _IndexedBlock:
    """A block's statements with, for each name, the positions that read or modify it.

    Statements are rewritten through :meth:`rewrite` (which keeps the index right) and
    removed by marking them dead, so positions stay put.
    """

    def __init__(self, statements, cache: FactsCache):
        self.statements = list(statements)
        self.cache = cache
        self.facts = [cache.of(s) for s in self.statements]
        self.alive = [True] * len(self.statements)
        self.readers: defaultdict[str, set[int]] = defaultdict(set)
        self.modifiers: defaultdict[str, set[int]] = defaultdict(set)
        for position, facts in enumerate(self.facts):
            for name in facts.reads:
                self.readers[name].add(position)
            for name in facts.modified:
                self.modifiers[name].add(position)
        self._compounds: list[int] | None = None

    @property
    def compounds(self) -> list[int]:
        """Positions of the loops and branches (found when first asked)."""
        if self._compounds is None:
            self._compounds = [p for p, s in enumerate(self.statements) if _is_compound(s)]
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
        self._update(position, old, facts_after_replacing_by_literal(old, name, _size(literal)))

    def _update(self, position: int, old, new) -> None:
        """The statement at ``position`` changed: ``new`` is its facts, if they are known."""
        statement = old.statement
        if new is None or not self.cache.enabled:
            self.cache.forget(statement)
            new = self.cache.of(statement)
        else:
            self.cache.keep(new)
        self.facts[position] = new
        for index, before, now in (
            (self.readers, old.reads, new.reads),
            (self.modifiers, old.modified, new.modified),
        ):
            for name in before - now:
                index[name].discard(position)
            for name in now - before:
                index[name].add(position)

    def remove(self, position: int) -> None:
        self.alive[position] = False

    def remaining(self) -> list[gast.stmt]:
        return [s for s, alive in zip(self.statements, self.alive) if alive]


def _accumulation(statement) -> bool:
    """Whether ``statement`` reads ``d = d + e`` (what merge_accumulations starts from)."""
    target = _simple_assignment(statement)
    if target is None:
        return False
    value = statement.value
    return (
        isinstance(value, gast.BinOp)
        and isinstance(value.op, gast.Add)
        and isinstance(value.left, gast.Name)
        and value.left.id == target
    )


def _literal(value: gast.expr) -> bool:
    """Whether ``value`` is a number or ``True``/``False`` (which propagate like names)."""
    return _number(value) is not None or (
        type(value) is gast.Constant and type(value.value) is bool
    )


def _has_copies(body, allowed) -> bool:
    """Whether ``body`` has an ``a = b`` or ``a = 2`` (with ``a`` in ``allowed``, if given).

    Propagation only starts from one: without, it changes nothing.
    """
    for statement in body:
        target = _simple_assignment(statement)
        if target is not None and (allowed is None or target in allowed):
            value = statement.value
            if type(value) is gast.Name or _literal(value):
                return True
    return False


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


def _drop_orphan_comments(body, comments):
    """``body`` without the comments (``comments[i]`` tells) that no statement follows."""
    result = []
    last = len(body) - 1
    for index, statement in enumerate(body):
        if comments[index] and (index == last or comments[index + 1]):
            continue
        result.append(statement)
    return result


def _is_comment(statement) -> bool:
    text = string_statement(statement)
    return text is not None and text.startswith(COMMENT_MARK)


_COMPOUNDS = (gast.If, gast.For, gast.While, gast.With, gast.Try)


def _is_compound(statement) -> bool:
    return isinstance(statement, _COMPOUNDS)


def _flat_targets(target):
    if isinstance(target, (gast.Tuple, gast.List)):
        return [e for t in target.elts for e in _flat_targets(t)]
    return [target]


_simple_assignment = simple_assignment


def _size(node) -> int:
    return sum(1 for _ in walk(node))


def _top_level_reads(statement, name) -> bool:
    """The read of ``name`` is not inside a lambda or comprehension (own scope)."""
    for node in walk(statement):
        scoped = (gast.Lambda, gast.ListComp, gast.GeneratorExp, gast.SetComp)
        if isinstance(node, scoped) and name in names_read(node):
            return False
    return True


_FOLDABLE = {  # arithmetic on two numbers that folds to a number
    kind: BINARY_OPERATORS[kind]
    for kind in (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow)
}


def _doubled(term: gast.expr) -> gast.expr | None:
    """``c * x + c * x`` as ``(2 * c) * x`` for a float ``c`` and a call-free ``x``.

    Exact in floating point (doubling is), and the float keeps the types as they were; with
    no float in it, ``x + x`` of boolean arrays would be ``or``, not ``2 * x``.
    """
    if not (
        type(term) is gast.BinOp
        and type(term.op) is gast.Mult
        and type(_number(term.left)) is float
        and not any(type(n) is gast.Call for n in walk(term.right))
    ):
        return None
    return gast.BinOp(left=_number_node(2 * _number(term.left)), op=gast.Mult(), right=term.right)


def _same(a: gast.expr, b: gast.expr) -> bool:
    return type(a) is type(b) and gast.dump(a) == gast.dump(b)


_number = literal_number


def _number_node(value):
    node = gast.Constant(value=abs(value), kind=None)
    if value < 0:
        return gast.UnaryOp(op=gast.USub(), operand=node)
    return node


def _negated(node):
    """The expression ``-node`` without a double negation, or None if that is not simpler."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return node.operand
    if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Mult, gast.Div)):
        left = _negated(node.left)
        if left is not None:
            return gast.BinOp(left=left, op=node.op, right=node.right)
    return None


def fold_constants(body: list[gast.stmt]) -> None:
    """Fold constant arithmetic in ``body``, in place (after a rewrite that exposed some).

    Example::

        fold_constants(parse("y = x * 1.0 * 2.0").body)  # y = x * 2.0
    """
    folder = _ConstantFolder(FactsCache(enabled=False))
    for statement in body:
        folder.visit(statement)


class _ConstantFolder:
    """Simplifies constant arithmetic bottom-up, in place, like a ``gast.NodeTransformer``.

    ``visit(node)`` returns the node to use instead of ``node``; ``changed`` tells whether
    anything changed. Statements it changes are forgotten by ``facts``; a statement whose
    facts say it was folded with nothing to do (and not changed since) is skipped.
    """

    def __init__(self, facts: FactsCache):
        self.facts = facts
        self.changed = False
        self.edits = 0

    def visit(self, node):
        kind = type(node)
        handler = _FOLD_HANDLERS.get(kind)
        if handler is None:
            handler = _FOLD_HANDLERS[kind] = _handler_for(kind)
        result = handler(self, node)
        if result is not node:
            self.changed = True
            self.edits += 1
        return result

    def visit_children(self, node):
        state = node.__dict__
        kind = type(node)
        plan = _FOLD_PLANS.get(kind)
        if plan is None:
            plan = _FOLD_PLANS[kind] = node_fields(kind)
        visit = self.visit
        for field in plan:
            value = state.get(field)
            kind = type(value)
            if kind is list:
                for position, item in enumerate(value):
                    if _needs_visit(item):
                        new = visit(item)
                        if new is not item:
                            value[position] = new
            # as _needs_visit(value), written out: most children are names or literals
            elif (
                value.annotation is not None
                if kind is gast.Name
                else kind is not gast.Constant and value is not None and isinstance(value, gast.AST)
            ):
                new = visit(value)
                if new is not value:
                    setattr(node, field, new)
        return node

    def visit_statement(self, node):
        known = self.facts.known(node)
        if known is not None and known.folded:
            return node
        edits = self.edits
        self.visit_children(node)
        if self.edits != edits:
            self.facts.forget(node)
        return node

    def visit_Name(self, node):
        return node if node.annotation is None else self.visit_children(node)

    def visit_Call(self, node):
        self.visit_children(node)
        func = node.func
        if (
            isinstance(func, gast.Attribute)
            and func.attr == "sum"
            and isinstance(func.value, gast.UnaryOp)
            and isinstance(func.value.op, gast.USub)
        ):  # (-e).sum(...) → -e.sum(...): negate the smaller array
            func.value = func.value.operand
            return gast.UnaryOp(op=gast.USub(), operand=node)
        return node

    def visit_UnaryOp(self, node):
        self.visit_children(node)
        if isinstance(node.op, gast.USub):
            simpler = _negated(node.operand)
            if simpler is not None:
                return simpler
            operand = node.operand
            if (
                isinstance(operand, gast.BinOp)
                and isinstance(operand.op, (gast.Mult, gast.Div))
                and _number(operand.left) is not None
            ):  # -(2 * e) → -2 * e
                return gast.BinOp(
                    left=_number_node(-_number(operand.left)), op=operand.op, right=operand.right
                )
        return node

    def visit_BinOp(self, node):
        self.visit_children(node)
        left, right = _number(node.left), _number(node.right)
        op = type(node.op)
        if left is not None and right is not None and op in _FOLDABLE:
            try:
                value = _FOLDABLE[op](left, right)
            except (ZeroDivisionError, OverflowError):
                return node
            if isinstance(value, (int, float)) and abs(value) < 1e15:
                return _number_node(value)
        if op in (gast.Mult, gast.Div):
            # move a negation into a constant factor: (-a) * 2 → a * -2
            if (
                right is not None
                and isinstance(node.left, gast.UnaryOp)
                and isinstance(node.left.op, gast.USub)
            ):
                return gast.BinOp(left=node.left.operand, op=node.op, right=_number_node(-right))
            if left is not None and op is gast.Mult:
                negated = _negated(node.right)
                if negated is not None:
                    return gast.BinOp(left=_number_node(-left), op=node.op, right=negated)
        if op is gast.Add:
            doubled = _doubled(node.left)  # 0.5 * x + 0.5 * x → 1.0 * x
            if doubled is not None and _same(node.left, node.right):
                return doubled
            negated = _negated(node.right)
            if negated is not None:  # a + -b → a - b
                return gast.BinOp(left=node.left, op=gast.Sub(), right=negated)
        if op is gast.Sub:
            negated = _negated(node.right)
            if negated is not None:  # a - -b → a + b
                return gast.BinOp(left=node.left, op=gast.Add(), right=negated)
        if op is gast.Pow and right == 1 and type(right) is int:
            return node.left
        if op is gast.Mult and right == 1 and type(right) is int:
            return node.left
        if op is gast.Mult and left == 1 and type(left) is int:
            return node.right
        return node

    def visit_Subscript(self, node):
        self.visit_children(node)
        index = node.slice
        if (
            isinstance(node.value, gast.Tuple)
            and isinstance(index, gast.Constant)
            and type(index.value) is int
            and -len(node.value.elts) <= index.value < len(node.value.elts)
            and isinstance(node.ctx, gast.Load)
        ):
            return node.value.elts[index.value]
        return node

    def visit_Compare(self, node):
        self.visit_children(node)
        if (
            len(node.ops) == 1
            and isinstance(node.ops[0], (gast.Is, gast.IsNot))
            and isinstance(node.left, gast.Constant)
            and isinstance(node.comparators[0], gast.Constant)
            and node.comparators[0].value is None
        ):
            same = node.left.value is None
            return gast.Constant(
                value=same if isinstance(node.ops[0], gast.Is) else not same, kind=None
            )
        values = [node.left, *node.comparators]
        if all(type(v) is gast.Constant and type(v.value) in (int, float) for v in values) and all(
            type(op) in _ORDER_TESTS for op in node.ops
        ):  # 3 > 0, once ndim is known
            numbers = [v.value for v in values]
            holds = all(
                _ORDER_TESTS[type(op)](a, b) for op, a, b in zip(node.ops, numbers, numbers[1:])
            )
            return gast.Constant(value=holds, kind=None)
        return node


_ORDER_TESTS = {
    gast.Lt: operator.lt,
    gast.LtE: operator.le,
    gast.Gt: operator.gt,
    gast.GtE: operator.ge,
    gast.Eq: operator.eq,
    gast.NotEq: operator.ne,
}


def _needs_visit(node) -> bool:
    """Whether folding could change ``node`` (names and literals stay as they are)."""
    kind = type(node)
    if kind is gast.Name:
        return node.annotation is not None
    return kind is not gast.Constant and isinstance(node, gast.AST)


def _handler_for(kind: type):
    if issubclass(kind, gast.stmt):
        return _ConstantFolder.visit_statement
    return getattr(_ConstantFolder, f"visit_{kind.__name__}", _ConstantFolder.visit_children)


_FOLD_HANDLERS: dict[type, Callable] = {}
_FOLD_PLANS: dict[type, tuple[str, ...]] = {}  # node_fields, kept here as well (faster)
