"""The adjoint of a primitive: its registered rule's body, inlined with the call's names.

``y = np.sin(t1)`` gets ``dt1 = dy * np.cos(t1)``: the rule (s2sgrad/rules/) is parsed
once and inlined (``compiler/inline.py``), or called through ``vjp_call`` where it cannot
be. ``v = x[i]`` in a loop accumulates into x's private cotangent in place.
"""

from __future__ import annotations

import operator
from typing import Any

import gast

from s2sgrad.compiler.inline import inline_rule, rule_plan
from s2sgrad.compiler.operations import (
    Operation,
    refuse_differentiated_keywords,
    refuse_missing_entry,
    refuse_refused_arguments,
)
from s2sgrad.compiler.reverse.context import Context, located
from s2sgrad.compiler.reverse.cotangents import Cotangents
from s2sgrad.compiler.reverse.facts import basic_index
from s2sgrad.compiler.syntax import assign, call, child_fields, clone, constant, load, walk
from s2sgrad.errors import NonDifferentiableError
from s2sgrad.rules.registry import silent_zero_positions

__all__ = ["RuleAdjoints", "rule_label", "without_unbroadcasts"]


class RuleAdjoints:
    """Adjoints of statements that compute a primitive, and the labels of the rules used.

    ``applied``: the rules applied for the statement being differentiated, which its
    ``# grad of:`` comment names.

    Example::

        rules.backward_primitive(statement, operation, load("dy"), load("y"))
        # [dt1 = dy * np.cos(t1)]
    """

    def __init__(self, context: Context, cotangents: Cotangents):
        self.context = context
        self.parsed = context.parsed
        self.names = context.names
        self.namespace = context.namespace
        self.helper = context.helper
        self.active = context.active
        self.is_active_expression = context.is_active_expression
        self.cotangents = cotangents
        self.applied: list[str] = []
        self.plans: dict[tuple, Any] = {}  # (rule function, argument count) → its plan
        self.unbroadcast: Any = None  # what the name helper("unbroadcast") gives is bound to
        self.renamed_numpy = context.np != "np"  # np.s_ in indices is this module's name

    def backward_primitive(self, statement, operation, cotangent, answer) -> list[gast.stmt]:
        rule = operation.rule
        if rule is None or rule.vjp is None:
            raise NonDifferentiableError(
                f"{self.parsed.location(statement)}: {_describe(operation.primitive)} has no "
                "derivative rule; register one with @s2sgrad.derivative(of=...), or wrap "
                "the value in s2sgrad.stop_gradient if it needs none"
            )
        args = list(operation.args)
        if self.renamed_numpy:
            args = [self.numpy_names(a) for a in args]
        if operation.primitive is operator.getitem:
            in_place = self.accumulate_item(statement, operation, cotangent)
            if in_place is not None:
                return in_place
        active = self.active
        wanted = set()  # the positions of the arguments that receive a cotangent
        for i, a in enumerate(args):
            kind = type(a)
            if (
                active(a.id)
                if kind is gast.Name
                else (kind is not gast.Constant and self.is_active_expression(a))
            ):
                wanted.add(i)
        keywords = operation.keywords
        if keywords:
            refuse_differentiated_keywords(
                operation, self.is_active_expression, self.parsed.location(statement)
            )
        if not wanted:
            return []
        if rule.refused:  # (most rules refuse no argument: no location to write)
            refuse_refused_arguments(operation, wanted, self.parsed.location(statement))
        inlined, label, stripped = None, None, False
        planned = self.plan(rule.vjp, args) if rule.inline_vjp and not keywords else None
        scalar: Any = _UNKNOWN  # scalar_name's answer, asked once
        if planned is not None:
            plan, label = planned
            scalar = self.scalar_name(operation, args)
            if scalar is not None:  # y = x * 2
                positions = frozenset(i for i, a in enumerate(args) if type(a) is gast.Name)
                scaled = plan.without_unbroadcasts(positions, self.unbroadcast_helper())
                stripped = scaled is not None
                plan = scaled or plan
            inlined = plan.inline(cotangent, answer, args, wanted, self.namespace)
        elif rule.inline_vjp:
            inlined = inline_rule(
                rule.vjp,
                cotangent,
                answer,
                args,
                operation.keywords,
                wanted,
                self.names,
                self.namespace,
            )
        if label is None:  # the general path's, or a called rule's
            label = rule_label(rule.vjp if inlined is not None else None, operation)
        self.applied.append(label)
        block: list[gast.stmt] = []
        if inlined is None:
            # a called rule's None is a zero nobody sees: refused where no declaration
            # says it is right, as for an inlined rule's missing entry
            for index in sorted(wanted & silent_zero_positions(operation.primitive, rule)):
                refuse_missing_entry(operation, index, self.parsed, statement)
            primitive_name = self.namespace.bind(
                _primitive_name(operation.primitive), operation.primitive
            )
            result = self.names.fresh("cotangents")
            # copies: the forward sweep's statement holds these nodes, and a helper's
            # backward function renames the names it restores (assemble._private_copies)
            arguments = [load(primitive_name), cotangent, answer, *map(clone, args)]
            keywords = {k: clone(v) for k, v in (operation.keywords or {}).items()}
            rule_call = call(self.helper("vjp_call"), arguments, keywords)
            block.append(assign(result, rule_call, like=statement))
            entries = [
                gast.Subscript(value=load(result), slice=constant(i), ctx=gast.Load())
                for i in range(len(args))
            ]
        else:
            if inlined.statements:
                block.extend(located(s, statement) for s in inlined.statements)
            entries = inlined.entries
            if not stripped:  # the plan made them without the calls
                if scalar is _UNKNOWN:
                    scalar = self.scalar_name(operation, args)
                entries = self.without_unbroadcasts_of(scalar, entries)
        contribute = self.cotangents.contribute
        for index in sorted(wanted):
            entry = entries[index] if index < len(entries) else None
            if entry is None:
                refuse_missing_entry(operation, index, self.parsed, statement)
                continue
            argument = args[index]
            if type(argument) is gast.Name:  # distribute's first case: wanted, so active
                block.extend(contribute(argument.id, entry, statement))
            else:
                block.extend(self.cotangents.distribute(argument, entry, statement))
        return block

    def plan(self, rule_function, args: list) -> tuple[Any, str] | None:
        """What :func:`inline_rule` inlines ``rule_function`` at a call of ``args`` without
        keywords by (its plan), and the label the comment names the rule by, both kept per
        rule and count; None where it takes its general path or calls the rule."""
        key = (rule_function, len(args))
        planned = self.plans.get(key, _UNKNOWN)
        if planned is _UNKNOWN:
            plan = rule_plan(rule_function, len(args))
            planned = None
            if plan is not None:
                planned = (plan, rule_label(rule_function, None))
            self.plans[key] = planned
        if planned is not None and gast.Starred in map(type, args):
            return None  # inline_rule calls such a rule
        return planned

    def without_scalar_unbroadcasts(self, operation, args, entries) -> list:
        """``y = x * 2``: y has x's shape, so ``unbroadcast(dy * 2, x)`` is ``dy * 2``.

        Only for arithmetic whose other operands are real number literals, and for an ``x``
        that surely holds a number or an array (``reverse/numeric.py``), never a list or
        tuple, which ``* 2`` repeats. Dropping the call drops the
        backward's read of x: a loop's ``b = b * 2`` needs no save of b per iteration.
        """
        return self.without_unbroadcasts_of(self.scalar_name(operation, args), entries)

    def without_unbroadcasts_of(self, name: str | None, entries: list) -> list:
        """:meth:`without_scalar_unbroadcasts` given :meth:`scalar_name`'s answer ``name``."""
        if name is None:
            return entries
        unbroadcast = self.unbroadcast_helper()
        objects = self.namespace.objects
        return [
            None if e is None else without_unbroadcasts(e, objects, unbroadcast, name)
            for e in entries
        ]

    def scalar_name(self, operation, args) -> str | None:
        """The one name of ``y = x * 2`` whose ``unbroadcast`` calls
        :meth:`without_scalar_unbroadcasts` drops (the others are real literals), else None."""
        if operation.primitive not in _SHAPE_KEEPING or operation.keywords:
            return None
        names = {a.id for a in args if isinstance(a, gast.Name)}
        if len(names) != 1 or not all(isinstance(a, gast.Name) or _real_literal(a) for a in args):
            return None
        (name,) = names
        if name not in self.context.numeric or name in self.context.structured:
            return None  # x may be a list or tuple, which x * 2 repeats
        return name

    def unbroadcast_helper(self) -> Any:
        """What the name ``helper("unbroadcast")`` gives is bound to."""
        unbroadcast = self.unbroadcast
        if unbroadcast is None:  # bound at the first ask, under a name that stays its own
            unbroadcast = self.unbroadcast = self.namespace.objects.get(
                self.helper("unbroadcast").id
            )
        return unbroadcast

    def accumulate_item(self, statement, operation, cotangent) -> list[gast.stmt] | None:
        """``v = x[i]`` in a loop: ``dx[i] += dv`` into x's private cotangent buffer.

        Only for indices that cannot repeat an element (integers, loop counters, slices),
        and only where the buffer is known to be private: then each iteration costs the
        size of ``x[i]``, not of ``x``.
        """
        read = statement.value
        if operation.primitive is not operator.getitem or type(read) is not gast.Subscript:
            return None  # (operator.getitem(x, i) spelled as a call goes the general way)
        base, index = read.value, read.slice
        if not isinstance(base, gast.Name) or not self.active(base.id):
            return None
        name = self.cotangents.adjoint(base.id)
        if base.id not in self.cotangents.defined or name not in self.cotangents.owned:
            return None
        if not basic_index(index, self.cotangents.counters):
            return None
        place = gast.Subscript(value=load(name), slice=clone(index), ctx=gast.Store())
        if base.id in self.context.structured:  # an entry of a list's cotangent is replaced
            if isinstance(index, gast.Slice):
                return None
            current = gast.Subscript(value=load(name), slice=clone(index), ctx=gast.Load())
            total = call(self.helper("add_cotangents"), [current, cotangent])
            update: gast.stmt = gast.Assign(targets=[place], value=total, type_comment=None)
        else:
            update = gast.AugAssign(target=place, op=gast.Add(), value=cotangent)
        return [located(update, statement)]

    def numpy_names(self, node: gast.expr) -> gast.expr:
        """Rewrite the ``np`` of ``np.s_[...]`` index expressions to this module's name."""
        if self.context.np != "np":
            for child in walk(node):
                if isinstance(child, gast.Attribute) and child.attr == "s_":
                    child.value = load(self.context.np)
        return node


_UNKNOWN = object()  # a plan not looked up yet

# arithmetic whose result has the shape of an array operand when the others are numbers
_SHAPE_KEEPING = frozenset(
    (operator.mul, operator.add, operator.sub, operator.truediv, operator.neg, operator.pos)
)


def _real_literal(node: gast.expr) -> bool:
    """``2``, ``-0.5``: a real number written in the source (not a bool, not complex)."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        node = node.operand
    return isinstance(node, gast.Constant) and type(node.value) in (int, float)


def rule_label(rule_function: Any, operation: Operation | None) -> str:
    """How a ``# grad of:`` comment names the rule applied to ``operation``: the inlined
    rule's function and module, or the primitive whose rule the generated code calls."""
    if rule_function is None:
        assert operation is not None  # a called rule is named by its primitive
        return f"{_describe(operation.primitive)} (rule called)"
    module = getattr(rule_function, "__module__", "") or ""
    return f"{rule_function.__qualname__} in {module}"


def _describe(primitive) -> str:
    name = getattr(primitive, "__qualname__", None) or getattr(primitive, "__name__", None)
    module = getattr(primitive, "__module__", None)
    if name and module == "_operator":
        return f"the operator {name}"
    return f"{module}.{name}" if name and module else repr(primitive)


def _primitive_name(primitive) -> str:
    name = getattr(primitive, "__name__", None) or "primitive"
    return name if name.isidentifier() else "primitive"


def without_unbroadcasts(node: gast.AST, objects: dict, unbroadcast: Any, name: str) -> gast.AST:
    """``node`` with each ``unbroadcast(v, name)`` call replaced by ``v``, in place (a
    module function: a recursive closure would be a reference cycle keeping its caller);
    ``objects``: the generated namespace's, where ``unbroadcast`` is bound.

    Example::

        without_unbroadcasts(parse_expression("unbroadcast(dy * 2, x)"), objects, f, "x")
        # dy * 2, where objects["unbroadcast"] is f
    """
    kind = type(node)
    if kind in _LEAVES:  # nothing below to replace
        return node
    if (
        kind is gast.Call
        and isinstance(node.func, gast.Name)
        and objects.get(node.func.id) is unbroadcast
        and len(node.args) == 2
        and not node.keywords
        and isinstance(node.args[1], gast.Name)
        and node.args[1].id == name
    ):
        return without_unbroadcasts(node.args[0], objects, unbroadcast, name)
    for field in child_fields(kind):
        value = getattr(node, field, None)
        if isinstance(value, gast.AST):
            setattr(node, field, without_unbroadcasts(value, objects, unbroadcast, name))
        elif isinstance(value, list):
            value[:] = [
                without_unbroadcasts(v, objects, unbroadcast, name)
                if isinstance(v, gast.AST)
                else v
                for v in value
            ]
    return node


_LEAVES = frozenset((gast.Name, gast.Constant))  # no call below them
