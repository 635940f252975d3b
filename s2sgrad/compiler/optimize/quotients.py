"""Reuse a quotient the forward sweep computed: ``(a / t + b) * e`` → ``(a + b * t) * w``
where ``w = e / t`` was assigned before, in the same block, and none of ``w``, ``e``, ``t``
changed since; then ``b * t`` → ``b`` when ``b = x / t`` is read only there (its
definition becomes ``b = x``).

The softmax ``w = e / e.sum(...)`` differentiates to ``(dw / t + dt) * e`` (the quotient's
rule, then the sum's broadcast, then ``exp``'s ``* e``); this is the hand-written
``(dw - (dw * w).sum(...)) * w``: one full-size pass fewer, equal up to rounding.

Example::

    body = parse("w = e / t\\nb = -s / t\\ng = (a / t + b) * e").body
    reuse_quotients(body, lambda call: True)
    # w = e / t; b = -s; g = (a + b) * w
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import chain

import gast

from s2sgrad.compiler.optimize.facts import Facts, FactsCache
from s2sgrad.compiler.optimize.simple_statements import without_blocks
from s2sgrad.compiler.optimize.statements import name_counts
from s2sgrad.compiler.syntax import every_statement, load, names_written, walk

__all__ = ["reuse_quotients"]


def reuse_quotients(
    body: list[gast.stmt],
    is_pure: Callable[[gast.Call], bool],
    facts: FactsCache | None = None,
) -> bool:
    """Rewrite ``body``'s blocks in place as the module says; True if anything changed.
    ``facts``, when given (true of a body without blocks), tells what each statement calls
    and how often each name is read and written (no walks), and forgets each statement
    changed.

    Example::

        reuse_quotients(parse("w = e / t\\ng = (a / t + b) * e").body, lambda c: True)
        # g = (a + b * t) * w
    """
    # Only a block that assigns a quotient of two names can change: elsewhere no quotient is
    # ever recorded, so no product is rewritten (and the counts are not needed).
    every_block = [body] if without_blocks(body) else _blocks(body)
    blocks = [statements for statements in every_block if any(map(_is_quotient, statements))]
    if not blocks:
        return False
    counts = _Counts(body, facts)
    changed = False
    for statements in blocks:
        block = _Block(statements, is_pure, counts, facts)
        changed |= block.rewrite()
        if facts is not None:
            for statement in block.rewritten:
                facts.forget(statement)
    return changed


def _is_quotient(statement: gast.stmt) -> bool:
    """Whether ``statement`` is ``w = e / t`` (what :meth:`_Block._record` records)."""
    if type(statement) is not gast.Assign:
        return False
    value = statement.value
    return (
        type(value) is gast.BinOp
        and type(value.op) is gast.Div
        and type(value.left) is gast.Name
        and type(value.right) is gast.Name
    )


def _blocks(body: list[gast.stmt]):
    yield body
    for statement in every_statement(body):
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if type(inner) is list and inner:
                yield inner


class _Counts:
    """How often each name of ``body`` is read and written (``name_counts``), counted when
    first asked for: before a product is rewritten nothing has changed, so the counts are
    those of ``body`` as it was given, and most bodies have no product to rewrite. With
    ``facts`` (true of ``body``, which has no blocks) they are read off its records: their
    names by context (``loads``; ``stores`` and ``others``, ``Del`` and parameters, which
    ``name_counts`` counts as writes), annotations and nested functions included, as the
    walk's."""

    def __init__(self, body: list[gast.stmt], facts: FactsCache | None = None):
        self._body = body
        self._facts = facts
        self._counts: tuple[Counter, Counter] | None = None

    @property
    def reads(self) -> Counter:
        return self._both()[0]

    @property
    def writes(self) -> Counter:
        return self._both()[1]

    def _both(self) -> tuple[Counter, Counter]:
        if self._counts is None:
            if self._facts is None:
                self._counts = name_counts(self._body)
            else:
                records = self._facts.of_each(self._body)
                reads = Counter(chain.from_iterable([f.loads for f in records]))
                writes = Counter(chain.from_iterable([f.stores for f in records]))
                writes.update(chain.from_iterable([f.others for f in records]))
                self._counts = reads, writes
        return self._counts


class _Block:
    """One straight-line run of statements and what holds in it at each statement."""

    def __init__(self, statements, is_pure, counts: _Counts, facts: FactsCache | None = None):
        self.statements = statements
        self.is_pure = is_pure
        self.counts = counts
        self.facts = facts  # true of each statement until this block rewrites it
        self.current: Facts | None = None  # with facts: the statement's, read by _plain
        self.quotients: dict[tuple[str, str], str] = {}  # (e, t) → w holding e / t
        self.last_write: dict[str, int] = {}  # name → index of the statement binding it
        self.last_unsafe = -1  # index of the last statement that may change arrays
        self.index = 0
        self.changed = False
        self.rewritten: list[gast.stmt] = []  # the statements changed, in order

    def rewrite(self) -> bool:
        for index, statement in enumerate(self.statements):
            self.index = index
            if not self._plain(statement):
                self.quotients.clear()
                self.last_unsafe = self.index
                continue
            if type(statement) is gast.Assign:
                # a product is rewritten only with a quotient recorded above it
                if self.quotients:
                    statement.value = self._expression(statement.value)
                self._record(statement)
        return self.changed

    def _plain(self, statement) -> bool:
        """Whether ``statement`` only binds names to values computed by pure calls."""
        self.current = None
        if type(statement) is gast.Expr:
            return type(statement.value) is gast.Constant  # a comment
        if type(statement) is not gast.Assign:
            return False
        if not all(_bare_names(target) for target in statement.targets):
            return False
        if self.facts is not None:  # not rewritten yet (only statements above it are): its
            # record's calls, every call in it, are the value's (the targets are names)
            self.current = self.facts.of(statement)
            return all(map(self.is_pure, self.current.calls))
        return all(self.is_pure(node) for node in walk(statement.value) if type(node) is gast.Call)

    def _record(self, statement: gast.Assign) -> None:
        # the record read before the statement was rewritten: a rewrite moves reads only
        written = names_written(statement) if self.current is None else self.current.writes
        for name in written:
            self.last_write[name] = self.index
        self.quotients = {
            key: w for key, w in self.quotients.items() if not written & {key[0], key[1], w}
        }
        value = statement.value
        if (
            len(statement.targets) == 1
            and type(statement.targets[0]) is gast.Name
            and type(value) is gast.BinOp
            and type(value.op) is gast.Div
            and type(value.left) is gast.Name
            and type(value.right) is gast.Name
            and statement.targets[0].id not in (value.left.id, value.right.id)
        ):
            self.quotients[(value.left.id, value.right.id)] = statement.targets[0].id

    def _expression(self, node):
        """``node`` with the rewrite applied bottom-up."""
        if type(node) is gast.BinOp:
            node.left = self._expression(node.left)
            node.right = self._expression(node.right)
            if type(node.op) is gast.Mult:
                return self._product(node)
            return node
        if type(node) in (gast.UnaryOp, gast.Call, gast.Attribute, gast.Subscript):
            for field in ("operand", "func", "value"):
                child = getattr(node, field, None)
                if isinstance(child, gast.expr):
                    setattr(node, field, self._expression(child))
            if type(node) is gast.Call:
                node.args = [self._expression(a) for a in node.args]
                for keyword in node.keywords:
                    keyword.value = self._expression(keyword.value)
        return node

    def _product(self, node: gast.BinOp):
        """``(a / t ± b) * e`` (either order) as ``(a ± b * t) * w``, or ``node``."""
        for factor, other, factor_left in (
            (node.left, node.right, True),
            (node.right, node.left, False),
        ):
            if type(factor) is not gast.Name or type(other) is not gast.BinOp:
                continue
            if type(other.op) not in (gast.Add, gast.Sub):
                continue
            for quotient_left in (True, False):
                quotient = other.left if quotient_left else other.right
                if not (
                    type(quotient) is gast.BinOp
                    and type(quotient.op) is gast.Div
                    and type(quotient.right) is gast.Name
                ):
                    continue
                t = quotient.right.id
                w = self.quotients.get((factor.id, t))
                if w is None:
                    continue
                rest = other.right if quotient_left else other.left
                scaled = self._times(rest, t)
                if quotient_left:
                    total = gast.BinOp(left=quotient.left, op=other.op, right=scaled)
                else:
                    total = gast.BinOp(left=scaled, op=other.op, right=quotient.left)
                self.changed = True
                self.rewritten.append(self.statements[self.index])
                self.counts.reads[t] -= 1
                self.counts.reads[factor.id] -= 1
                self.counts.reads[w] += 1
                if factor_left:
                    return gast.BinOp(left=load(w), op=gast.Mult(), right=total)
                return gast.BinOp(left=total, op=gast.Mult(), right=load(w))
        return node

    def _times(self, term, t: str):
        """``term * t``, or ``b`` when ``term`` is ``b`` bound to ``x / t`` here and read
        only here (whose definition becomes ``b = x``)."""
        if (
            type(term) is gast.Name
            and self.counts.reads[term.id] == 1
            and self.counts.writes[term.id] == 1
        ):
            at = self.last_write.get(term.id)
            if at is not None and at > self.last_unsafe and self.last_write.get(t, -1) < at:
                definition = self.statements[at]
                value = definition.value
                if (
                    len(definition.targets) == 1
                    and type(value) is gast.BinOp
                    and type(value.op) is gast.Div
                    and type(value.right) is gast.Name
                    and value.right.id == t
                ):
                    definition.value = value.left
                    self.rewritten.append(definition)
                    self.counts.reads[t] -= 1
                    return term
        self.counts.reads[t] += 1
        return gast.BinOp(left=term, op=gast.Mult(), right=load(t))


def _bare_names(target) -> bool:
    if type(target) is gast.Name:
        return True
    if type(target) in (gast.Tuple, gast.List):
        return all(_bare_names(element) for element in target.elts)
    return False
