"""The record a derivative sweep keeps of each statement: what it is and how it is differentiated.

Reverse mode's forward sweep turns each statement of the normal form into a :class:`Step`
(nested for branches and loops) and the backward sweep reads those steps in reverse: the
hand-off between the two sweeps is this list, not facts left on syntax nodes. Forward mode
records the same kind of step for each assignment it differentiates. Each statement's
right-hand side is classified once (:class:`Operations`)::

    step = Step(statement, StepKind.ASSIGN, operation=operations.of(statement))
    step.derivative = Derivative.RULE   # the backward sweep inlines the primitive's rule
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import gast

from s2sgrad.compiler.frontend import ParsedFunction
from s2sgrad.compiler.operations import Operation, classify

__all__ = ["Step", "StepKind", "Derivative", "CALLS", "Operations"]


class StepKind(Enum):
    """What a statement is, as the sweeps see it."""

    ASSIGN = "assign"  # names (one, or an A-normal-form tuple) bound to a value
    ITEM_WRITE = "item write"  # y[index] = v
    STORE = "store"  # a constant stored out of sight (an attribute, a nested container)
    EXPRESSION = "expression"  # a call for its effect: items.append(v), print(x)
    BRANCH = "branch"  # if
    LOOP = "loop"  # for, while
    COUNTER = "counter"  # the increment of a loop's iteration counter, added by the sweep
    OTHER = "other"  # pass, break, continue, assert, and statements without a derivative


class Derivative(Enum):
    """How the derivative of a step's value is taken (a pullback, or a tangent)."""

    NONE = "none"  # nothing flows through it (a constant, or no differentiated value)
    ROUTED = "routed"  # a copy, a literal, a pop: the derivative is passed on, no rule needed
    RULE = "rule"  # a primitive's registered rule (VJP or JVP), inlined or called
    GENERATED = "generated"  # the generated derivative of a user function it calls
    CUSTOM = "custom"  # the user's own derivative (@s2sgrad.derivative) of what it calls
    DISPATCH = "dispatch"  # a call resolved when it runs (dynamic_vjp / transformed_vjp)


CALLS = frozenset({Derivative.GENERATED, Derivative.CUSTOM, Derivative.DISPATCH})


@dataclass(eq=False)
class Step:
    """One statement as the forward sweep emitted it, and what the backward sweep needs.

    ``target`` is the target as the user's code binds it: the forward sweep adds a second
    one to a call's (``y, y_saved = f_vjp(x)``), named ``extra`` here.
    """

    statement: gast.stmt
    kind: StepKind
    operation: Operation | None = None  # what the right-hand side computes
    derivative: Derivative = Derivative.NONE
    target: gast.expr | None = None
    extra: str | None = None  # GENERATED/CUSTOM: the saved values; DISPATCH: the pullback
    vjp_name: str | None = None  # GENERATED/CUSTOM: the name of the callee's VJP
    active: tuple[str, ...] = ()  # GENERATED/CUSTOM: the callee's differentiated parameters
    saves: list[Any] = field(default_factory=list)  # values pushed before it overwrites them
    body: list[Step] = field(default_factory=list)  # BRANCH, LOOP: the steps inside
    orelse: list[Step] = field(default_factory=list)  # BRANCH: the other arm's
    counter: str | None = None  # LOOP: the variable that counts its iterations, if any

    @property
    def line(self) -> int | None:
        """The user's source line the statement comes from."""
        return getattr(self.statement, "lineno", None)

    @property
    def computed(self) -> Operation:
        """The operation of an ``ASSIGN`` step, which the forward sweep has classified."""
        if self.operation is None:
            raise ValueError("a step without an operation")  # not an ASSIGN step
        return self.operation

    @property
    def calls(self) -> bool:
        """Whether the statement calls a derivative (the callee's, or one found at run time)."""
        return self.derivative in CALLS

    def walk(self):
        """This step and every step nested in it, in order."""
        # a stack, not nested generators: each step is handed up once, not once per step
        # around it
        stack = [self]
        while stack:
            step = stack.pop()
            yield step
            stack.extend(reversed((*step.body, *step.orelse)))


class Operations:
    """What each statement's right-hand side computes, classified once per statement.

    Example::

        operations = Operations(parsed, local_names)
        operations.of(statement).kind  # OperationKind.PRIMITIVE
    """

    def __init__(
        self,
        parsed: ParsedFunction,
        local_names: set[str],
        classified: dict[int, tuple] | None = None,
    ):
        self.parsed = parsed
        self.local_names = local_names
        self.known: dict[int, tuple[gast.stmt, Operation]] = {}
        # {id(value): (value, its operation)}: values classified before (by the activity
        # analysis), none changed since; taken instead of classifying them again
        self.classified = classified or {}

    def of(self, statement: gast.stmt) -> Operation:
        """The operation of ``statement.value`` as it was when first asked."""
        known = self.known.get(id(statement))
        if known is not None:
            return known[1]
        value = statement.value
        before = self.classified.get(id(value))
        if before is not None and before[0] is value:
            operation = before[1]
        else:
            operation = classify(value, self.parsed, self.local_names)
        self.known[id(statement)] = (statement, operation)  # the statement kept: ids stay unique
        return operation
