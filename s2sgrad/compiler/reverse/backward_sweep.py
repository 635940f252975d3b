"""The backward sweep: the forward sweep's steps in reverse, each with its adjoint block.

Blocks are read last statement first; a branch is replayed with the same test and a loop
runs its ``range`` backwards (a ``while`` loop, or one that ``break``s, as many times as
the forward sweep counted). The adjoint of each statement is ``adjoints``'s; after it come
the restores of what the statement overwrote. Each source line's blocks go under a
``# grad of:`` comment naming the rules applied.
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.block_walks import names_read_kept
from s2sgrad.compiler.reverse.adjoints import Adjoints
from s2sgrad.compiler.reverse.context import Context, located
from s2sgrad.compiler.reverse.cotangents import Cotangents
from s2sgrad.compiler.reverse.facts import (
    indexed_by_counters,
    iteration_local,
    plain_reads,
    range_targets,
)
from s2sgrad.compiler.reverse.rules import RuleAdjoints
from s2sgrad.compiler.reverse.saves import Saves, is_marker
from s2sgrad.compiler.steps import Step, StepKind
from s2sgrad.compiler.syntax import (
    add_rule_names,
    assign,
    call,
    clone,
    comment,
    load,
    names_modified,
    names_read,
    names_written,
    store,
)

__all__ = ["BackwardSweep"]


_NESTED = (StepKind.BRANCH, StepKind.LOOP)  # the steps that hold blocks of steps


class BackwardSweep:
    """Write the backward sweep of a list of steps.

    Example::

        backward = BackwardSweep(context, cotangents, saves, adjoints).backward_block(
            steps, later_reads={"y"}
        )
    """

    def __init__(self, context: Context, cotangents: Cotangents, saves: Saves, adjoints: Adjoints):
        self.context = context
        self.parsed = context.parsed
        self.activity = context.activity
        self.names = context.names
        self.helper = context.helper
        self.active = context.active
        self._reads: dict = {}  # names_read_kept's: a branch's reads, for the one around it
        self.cotangents = cotangents
        self.saves = saves
        self.adjoints = adjoints
        self.rules: RuleAdjoints = adjoints.rules

    def backward_block(self, steps: list[Step], later_reads: set[str]) -> list[gast.stmt]:
        blocks: list[list[gast.stmt]] = []
        reads_after = set(later_reads)
        rules: list[list[str]] = []
        # only loops and branches ask what is read after them: what the steps after the
        # first of them read is gathered, no more
        asked = next((i for i, step in enumerate(steps) if step.kind in _NESTED), len(steps))
        for index in range(len(steps) - 1, -1, -1):
            step = steps[index]
            # a copy for a loop or branch alone (one per statement made straight-line code
            # quadratic)
            after = set(reads_after) if step.kind in _NESTED else reads_after
            outer_rules, self.rules.applied = self.rules.applied, []
            reads = _plain_assignment_reads(step)  # read once, by the adjoint and here
            if reads is not None:
                block, early = self.adjoints.backward_assign(step, reads)
            else:
                block, early = self.backward_step(step, after)
            if index > asked:
                reads_after |= reads if reads is not None else self.reads_of(step.statement)
            block_rules, self.rules.applied = self.rules.applied, outer_rules
            for save in reversed(step.saves):  # last pushed first
                if save not in early:
                    block.append(self.saves.restore_marker(save))
            if block:
                blocks.append(block)
                rules.append(block_rules)
        return self.with_comments(blocks, rules)

    def reads_of(self, statement: gast.stmt) -> set[str]:
        """``names_read(statement)``: for ``name = value`` with a plain value without a
        walk, else remembered for the blocks around it (``names_read_kept``)."""
        if (
            type(statement) is gast.Assign
            and len(statement.targets) == 1
            and type(statement.targets[0]) is gast.Name
        ):
            reads = plain_reads(statement.value)
            if reads is not None:
                return reads
        return names_read_kept(statement, self._reads)

    def with_comments(
        self, blocks: list[list[gast.stmt]], rules: list[list[str]]
    ) -> list[gast.stmt]:
        """The blocks, each group of one source line under a ``# grad of:`` comment that
        also names the rules applied (shown in unoptimised code, see compiler/optimize/)."""
        result: list[gast.stmt] = []
        last_line, last_comment = None, None
        named: list[tuple[gast.Expr, list[str]]] = []  # each comment, the rules it names
        for block, block_rules in zip(blocks, rules):
            first = block[0]
            line = getattr(first, "lineno", None)
            if line is not None and line != last_line and not is_marker(first):
                text = self.parsed.source_line(first)
                last_comment = None
                if text:
                    last_comment = comment(f"grad of: {text}")
                    result.append(last_comment)
                    named.append((last_comment, []))
                last_line = line
            if block_rules and last_comment is not None:  # the last comment made
                known = named[-1][1]
                known += [r for r in block_rules if r not in known]  # add_rule_names's
            result.extend(block)
        for statement, known in named:  # its text written once, not once per block
            if known:
                add_rule_names(statement, known)
        return result

    def backward_step(self, step: Step, later_reads: set[str]) -> tuple[list[gast.stmt], list]:
        """The adjoint block of ``step``, and the saves it restored itself (early)."""
        if step.kind is StepKind.ASSIGN:
            return self.adjoints.backward_assign(step)
        if step.kind is StepKind.BRANCH:
            return self.backward_if(step, later_reads), []
        if step.kind is StepKind.LOOP:
            return self.backward_loop(step, later_reads), []
        if step.kind is StepKind.EXPRESSION:
            return self.adjoints.backward_expression(step.statement), []
        if step.kind is StepKind.ITEM_WRITE:
            return self.adjoints.backward_item_assignment(step.statement), []
        if step.kind is StepKind.STORE and step.extra is not None:  # obj.name = v, v noted
            forget = call(self.context.helper("forget_stored"), [load(step.extra)])
            return [located(gast.Expr(value=forget), step.statement)], []
        return [], []  # a constant stored out of sight (the others are refused), a counter

    def backward_if(self, step: Step, later_reads) -> list[gast.stmt]:
        statement = step.statement
        entry_defined, entry_owned = set(self.cotangents.defined), set(self.cotangents.owned)
        body = self.backward_block(step.body, later_reads)
        body_defined, body_owned = self.cotangents.defined, self.cotangents.owned
        self.cotangents.defined, self.cotangents.owned = set(entry_defined), set(entry_owned)
        orelse = self.backward_block(step.orelse, later_reads)
        else_defined, else_owned = self.cotangents.defined, self.cotangents.owned
        union = body_defined | else_defined
        body += self.cotangents.zeros_for(union - body_defined)
        orelse += self.cotangents.zeros_for(union - else_defined)
        self.cotangents.defined = union
        self.cotangents.owned = (body_owned | (union - body_defined)) & (
            else_owned | (union - else_defined)
        )
        self.cotangents.owned = {
            n for n in self.cotangents.owned if n in {self.cotangents.adjoint(v) for v in union}
        }
        replay = gast.If(test=clone(statement.test), body=body or [gast.Pass()], orelse=orelse)
        return [self.saves.replaying(statement, replay)]

    def backward_loop(self, step: Step, later_reads) -> list[gast.stmt]:
        loop = step.statement
        written = set().union(*(names_written(s) for s in loop.body))
        read = set().union(*(names_read(s) for s in loop.body))
        modified = set().union(*(names_modified(s) for s in loop.body))
        if not (modified & self.activity.active):  # only values it overwrote to restore
            body = self.backward_block(step.body, later_reads | read)
            self.forget_loop_variables(loop)
            return [self.reversed_loop(step, body)]
        local = iteration_local(loop.body, frozenset(later_reads)) - self.cotangents.defined
        carried = {
            v for v in (read - local) | (written & self.cotangents.defined) if self.active(v)
        }
        carried |= {
            v for v in written & later_reads if self.active(v) and v in self.cotangents.defined
        }
        before = self.cotangents.zeros_for(carried - self.cotangents.defined)
        indexed = indexed_by_counters(loop.body, self.cotangents.counters | range_targets(loop))
        for variable in sorted(carried & (self.context.mutated | indexed)):
            name = self.cotangents.adjoint(variable)
            if name not in self.cotangents.owned:
                before.append(assign(name, self.cotangents.owned_copy(variable)))
                self.cotangents.owned.add(name)
        self.cotangents.defined |= carried
        outside = set(self.cotangents.defined)
        # a later pass assigns its iteration-local variables before it reads them
        reads_inside = later_reads | (read - local)
        counters = self.cotangents.counters
        self.cotangents.counters = counters | range_targets(loop)
        body = self.backward_block(step.body, reads_inside)
        self.cotangents.counters = counters
        body += self.cotangents.zeros_for(carried - self.cotangents.defined)
        self.cotangents.defined = outside
        self.forget_loop_variables(loop)
        return [*before, self.reversed_loop(step, body)]

    def forget_loop_variables(self, loop) -> None:
        """What a loop's variable held before the loop is another value: the cotangent the
        loop's items (or counter) gathered is not its own (``k = 3.0; y = x * k`` before
        ``for k in range(2)``)."""
        if isinstance(loop, gast.For):
            for name in names_written(loop.target):
                self.cotangents.defined.discard(name)
                self.cotangents.owned.discard(self.cotangents.adjoint(name))

    def reversed_loop(self, step: Step, body: list[gast.stmt]) -> gast.For:
        """The backward sweep's loop over the loop's iterations, last first."""
        loop, counter = step.statement, step.counter
        if isinstance(loop, gast.While):
            if counter is None:
                raise ValueError("a while loop's step without the counter of its iterations")
            header = gast.For(
                target=store(self.names.claim("_")),
                iter=call(load("range"), [load(counter)]),
                body=body or [gast.Pass()],
                orelse=[],
                type_comment=None,
            )
        else:
            sequence: gast.expr = clone(loop.iter)
            if counter is not None:
                sequence = gast.Subscript(
                    value=sequence,
                    slice=gast.Slice(lower=None, upper=load(counter), step=None),
                    ctx=gast.Load(),
                )
            header = gast.For(
                target=clone(loop.target),
                iter=call(load("reversed"), [sequence]),
                body=body or [gast.Pass()],
                orelse=[],
                type_comment=None,
            )
        return self.saves.replaying(loop, header)


def _plain_assignment_reads(step: Step) -> set[str] | None:
    """``names_read`` of an ``ASSIGN`` step's ``name = value`` whose value
    :func:`plain_reads` sees through (the commonest statement), else None."""
    statement = step.statement
    if step.kind is not StepKind.ASSIGN or type(statement) is not gast.Assign:
        return None
    targets = statement.targets
    if len(targets) != 1 or type(targets[0]) is not gast.Name:
        return None
    return plain_reads(statement.value)
