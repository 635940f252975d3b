"""Activity analysis: which variables need derivative code at all.

A variable is *varied* if its value depends on a differentiated argument, and *useful*
if the output depends on it. Only variables that are both (*active*) get adjoints; an
inactive statement is copied into the forward sweep and has no backward code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import gast

from s2sgrad.compiler.plain_values import reads_of_value
from s2sgrad.compiler.syntax import (
    load,
    method_receiver,
    names_read,
    names_written,
    nested_statements,
)

__all__ = ["Activity", "analyse_activity"]


@dataclass
class Activity:
    """The result of :func:`analyse_activity`; its sets are not changed afterwards."""

    varied: set[str]
    useful: set[str]
    # text written from varied values (``f"{loss:.3f}"``): varied, so that a number read
    # back from it is refused, yet no value being differentiated when printed or stored
    text: frozenset[str] = frozenset()

    def is_active(self, name: str) -> bool:
        return name in self.varied and name in self.useful

    @cached_property
    def active(self) -> set[str]:
        # computed once: passes ask for it per statement
        return self.varied & self.useful


def analyse_activity(
    body: list[gast.stmt],
    wrt: set[str],
    output_names: Callable[[gast.Return], set[str]],
    blocks_derivative: Callable[[gast.expr], bool],
) -> Activity:
    """Compute varied and useful variables of an A-normal-form body.

    ``output_names(return_statement)`` names the returned values that are differentiated
    (all of them, or the first of ``(value, aux)``); ``blocks_derivative(expression)`` is
    true for right-hand sides whose value carries no derivative (comparisons, calls to
    non-differentiable functions, ``stop_gradient``).

    Example::

        analyse_activity(body, {"x"}, lambda r: names_read(r), lambda e: False).active
    """
    # (statement, names it writes, its value, names the value reads, whether the value
    # blocks the derivative), computed once: both fixed points below read them
    facts = []
    for statement in nested_statements(body):
        targets, value = _assignment(statement)
        if value:
            facts.append(
                (statement, targets, value, reads_of_value(value), blocks_derivative(value))
            )
        else:
            facts.append((statement, targets, value, set(), False))
    varied = set(wrt)
    carriers = [(t, reads) for _, t, value, reads, blocked in facts if value and not blocked]
    changed = True
    while changed:  # loops feed values back: iterate to a fixed point
        changed = False
        for targets, reads in carriers:
            if not reads.isdisjoint(varied) and not targets <= varied:
                varied |= targets
                changed = True
    # (names written, or None for a return, names read), last first, asked once
    readers: list[tuple[set[str] | None, set[str]]] = []
    for statement, targets, value, reads, blocked in reversed(facts):
        if isinstance(statement, gast.Return) and statement.value is not None:
            readers.append((None, output_names(statement)))
        elif value is not None:
            if reads and blocked:  # len(text): no derivative reaches them
                reads = set()
            if isinstance(statement, gast.Assign) and not isinstance(
                statement.targets[0], (gast.Name, gast.Tuple, gast.List)
            ):
                reads = reads | names_read(statement.targets[0])
            readers.append((targets, reads))
    useful: set[str] = set()
    changed = True
    while changed:
        changed = False
        for written, reads in readers:
            if written is not None and written.isdisjoint(useful):
                continue
            new = reads - useful
            if new:
                useful |= new
                changed = True
    return Activity(varied=varied, useful=useful)


def _assignment(statement: gast.stmt) -> tuple[set[str], gast.expr | None]:
    """(names written, value) of an assignment-like statement; (set(), None) otherwise."""
    if isinstance(statement, gast.Assign):
        target = statement.targets[0]
        plain = type(target) is gast.Name and type(target.ctx) is gast.Store
        if plain and target.annotation is None:
            return {target.id}, statement.value  # names_written of it, without a walk
        if isinstance(target, gast.Subscript):  # y[i] = v updates y from v and y itself
            base = target.value
            while isinstance(base, gast.Subscript):
                base = base.value
            if isinstance(base, gast.Name):
                return {base.id}, statement.value
            return set(), None
        return names_written(target), statement.value
    if isinstance(statement, gast.For):
        return names_written(statement.target), statement.iter
    if isinstance(statement, gast.FunctionDef):  # a closure carries what it reads
        return {statement.name}, gast.Tuple(
            elts=[load(n) for n in sorted(names_read(statement))], ctx=gast.Load()
        )
    owner = method_receiver(getattr(statement, "value", None), "append")
    if isinstance(statement, gast.Expr) and owner is not None and statement.value.args:
        return {owner}, statement.value.args[0]  # items.append(v): the list now holds v
    return set(), None
