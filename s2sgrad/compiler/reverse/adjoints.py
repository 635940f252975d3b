"""The adjoint of each kind of statement the backward sweep meets.

``y = v`` and ``y = op(a, b)`` (a copy, a literal, a primitive's rule, a call's
derivative), ``a, *rest = v``, ``v = items.pop()``, ``y[index] = v`` and
``items.append(v)``: each gets the block that sends ``y``'s cotangent back to what it was
computed from. Control flow (branches, loops) is ``backward_sweep``'s.
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.operations import OperationKind, index_expression
from s2sgrad.compiler.reverse.calls import Calls
from s2sgrad.compiler.reverse.context import Context, located
from s2sgrad.compiler.reverse.cotangents import Cotangents
from s2sgrad.compiler.reverse.facts import (
    basic_index,
    plain_reads,
    popped_list,
    target_names,
)
from s2sgrad.compiler.reverse.nodes import name_load
from s2sgrad.compiler.reverse.rules import RuleAdjoints
from s2sgrad.compiler.reverse.saves import Saves
from s2sgrad.compiler.steps import Derivative, Step
from s2sgrad.compiler.syntax import (
    assign,
    attribute,
    call,
    clone,
    constant,
    load,
    method_receiver,
    names_read,
    names_used,
)
from s2sgrad.compiler.template_builders import plain_size

__all__ = ["Adjoints"]


class Adjoints:
    """Write the adjoint block of one statement (a :class:`Step`).

    Example::

        block, early = adjoints.backward_assign(step)  # y = np.sin(t1): [dt1 = dy * ...]
    """

    def __init__(
        self,
        context: Context,
        cotangents: Cotangents,
        saves: Saves,
        calls: Calls,
        rules: RuleAdjoints,
    ):
        self.context = context
        self.parsed = context.parsed
        self.names = context.names
        self.helper = context.helper
        self.active = context.active
        self.is_active_expression = context.is_active_expression
        self.cotangents = cotangents
        self.saves = saves
        self.calls = calls
        self.rules = rules

    def backward_assign(
        self, step: Step, reads: set[str] | None = None
    ) -> tuple[list[gast.stmt], list]:
        """The adjoint of ``y = value`` (or ``a, b = value``), and the saves it restored
        before the rule reads them (``y = f(y)``); ``reads``: the names ``value`` reads,
        when the caller has them."""
        statement, target = step.statement, step.target
        one = target.id if isinstance(target, gast.Name) else None  # a name (the commonest)
        targets = [one] if one is not None else target_names(target)
        value = statement.value
        popped_from = popped_list(statement) if type(value) is gast.Call else None
        if popped_from is not None and self.active(popped_from) and len(targets) == 1:
            return self.backward_list_pop(statement, targets[0], popped_from), []
        defined, active = self.cotangents.defined, self.active
        if one is not None:  # any's test, without a generator
            wanted = one in defined and active(one)
        else:
            wanted = any(t in defined and active(t) for t in targets)
        if not wanted:
            for t in targets:
                defined.discard(t)
            return [], []
        if not isinstance(target, gast.Name):  # a, b = v (A-normal form): v's structure
            return self.backward_unpacking(step, target, targets), []
        adjoint = self.cotangents.adjoint(target.id)
        cotangent: gast.expr = name_load(adjoint)
        answer: gast.expr = _read_of(target)
        block: list[gast.stmt] = []
        # earlier values of the target have cotangents of their own (one target: a name)
        defined.discard(target.id)
        self.cotangents.owned.discard(adjoint)
        early: list = []
        kept_answer: gast.stmt | None = None
        if reads is None:
            reads = plain_reads(value)
        if reads is None:
            reads = names_used(value)
        if target.id in reads:  # y = f(y)
            saved = self.names.fresh("g")
            block.append(assign(saved, cotangent, like=statement))
            cotangent = load(saved)
            if not step.calls:  # the rule needs the old y, and maybe the new one as ans
                new_value = self.names.fresh(f"{target.id}_new")
                kept_answer = assign(new_value, answer, like=statement)
                block.append(kept_answer)
                answer = load(new_value)
                early = step.saves  # all of them, so that they still come off in order
                if not all(s.kind == "assign" and s.target == target.id for s in early):
                    early = []
                for save in reversed(early):  # the old value back before the rule reads it
                    block.append(self.saves.restore_marker(save))
        block.extend(self.send_back(step, cotangent, answer))
        if kept_answer is not None and not any(
            new_value in names_read(s) for s in block if s is not kept_answer
        ):  # a rule that never reads ans (``b = b * 2``) must not make the new b needed
            block.remove(kept_answer)
        return block, early

    def send_back(self, step: Step, cotangent: gast.expr, answer: gast.expr) -> list[gast.stmt]:
        """Send ``cotangent``, of the value ``answer`` that ``step`` computed, back to what
        the value was computed from, the way the forward sweep decided."""
        statement = step.statement
        if step.derivative in (Derivative.GENERATED, Derivative.CUSTOM):
            return self.calls.backward_call(step, cotangent)
        if step.derivative is Derivative.DISPATCH:
            return self.calls.backward_dynamic(step, cotangent)
        operation = step.computed
        if step.derivative is Derivative.RULE:
            return self.rules.backward_primitive(statement, operation, cotangent, answer)
        if step.derivative is not Derivative.ROUTED:
            return []
        if operation.kind is OperationKind.COPY:
            return self.cotangents.contribute(operation.args[0].id, cotangent, statement)
        block: list[gast.stmt] = []  # a literal: each entry gets its part
        target = step.target
        read = self.context.entries_read.get(target.id) if isinstance(target, gast.Name) else None
        for index, element in enumerate(operation.args):
            key = index if operation.keys is None else operation.keys[index]
            if read is not None and key not in read:
                continue  # an entry nobody reads: no cotangent flows into it
            if self.is_active_expression(element):  # a name, or a literal of them
                if operation.keys is None:
                    part = gast.Subscript(value=cotangent, slice=constant(index), ctx=gast.Load())
                else:  # a dict's cotangent may lack entries nothing flowed into
                    key = constant(operation.keys[index])
                    part = call(self.helper("dict_entry"), [cotangent, key, clone(element)])
                block.extend(self.cotangents.distribute(element, part, statement))
        return block

    def backward_unpacking(self, step: Step, target, targets: list[str]) -> list[gast.stmt]:
        """``a, *rest = v``: ``dv = unpack_cotangent((da, drest), v, star=1)``, an array for
        an array, a list for a list or tuple."""
        statement = step.statement
        parts = gast.Tuple(elts=[self.tuple_entry(t, step) for t in targets], ctx=gast.Load())
        for t in targets:
            self.cotangents.defined.discard(t)  # earlier values of t have cotangents of their own
            self.cotangents.owned.discard(self.cotangents.adjoint(t))
        value = statement.value
        if not (isinstance(value, gast.Name) and self.active(value.id)):
            return []
        arguments = [parts, load(value.id)]
        star = star_position(target)
        keywords = {} if star is None else {"star": constant(star)}
        cotangent = call(self.helper("unpack_cotangent"), arguments, keywords)
        return self.cotangents.contribute(value.id, cotangent, statement)

    def backward_list_pop(self, statement, target: str, owner: str) -> list[gast.stmt]:
        """``v = items.pop()``: dv goes back on d(items), zeros if nothing flowed into v.

        Always pushing keeps the cotangent list as long as the list it mirrors.
        """
        if target in self.cotangents.defined:
            cotangent: gast.expr = load(self.cotangents.adjoint(target))
        else:
            cotangent = call(self.helper("zeros_like_value"), [load(target)])
        self.cotangents.defined.discard(target)
        block = self.cotangents.ensure_owned(owner)
        append = call(attribute(load(self.cotangents.adjoint(owner)), "append"), [cotangent])
        block.append(gast.Expr(value=append))
        return [located(s, statement) for s in block]

    def tuple_entry(self, variable: str, step: Step) -> gast.expr:
        if variable in self.cotangents.defined:
            return load(self.cotangents.adjoint(variable))
        if step.calls:
            return call(self.helper("zeros_like_value"), [load(variable)])
        source = step.statement.value
        if isinstance(source, gast.Name) and source.id in self.context.parameters:
            # the cotangent leaves the function: its caller reads every entry
            return call(self.helper("zeros_like_value"), [load(variable)])
        return constant(None)

    def backward_item_assignment(self, statement: gast.Assign) -> list[gast.stmt]:
        """``y[index] = v``: v receives dy[index] (where an index repeats an element, only
        at its last write, the one NumPy keeps); dy[index] is then zero."""
        target = statement.targets[0]
        base = target.value.id
        if base not in self.cotangents.defined or not self.active(base):
            return []
        index = index_expression(clone(target.slice))
        self.rules.numpy_names(index)
        adjoint = self.cotangents.adjoint(base)
        block: list[gast.stmt] = []
        if base not in self.context.lists and _whole(target.slice):
            # y[...] = v on a 0-d y: its cotangent may be a number, which cannot be indexed
            block.append(assign(adjoint, self.cotangents.owned_copy(base)))
            self.cotangents.owned.add(adjoint)
        value = statement.value
        if base in self.context.lists or basic_index(
            target.slice, self.cotangents.counters | self.context.integers
        ):
            part = gast.Subscript(value=load(adjoint), slice=clone(target.slice), ctx=gast.Load())
            part = call(self.helper("snapshot"), [part])  # the buffer is zeroed in place next
        else:  # an integer array may write an element twice: only the last write counts
            part = call(self.helper("assigned_cotangent"), [load(adjoint), index])
        later: list[gast.stmt] = []
        if isinstance(value, gast.Name) and self.active(value.id):
            if value.id == base:  # y[i] = y: the old y gets dy[i] after dy[i] is zeroed
                kept = self.names.fresh("g")
                block.append(assign(kept, part))
                part = load(kept)
            contribution = call(self.helper("unbroadcast"), [part, load(value.id)])
            added = self.cotangents.contribute(value.id, contribution, statement)
            (later if value.id == base else block).extend(added)
        block.extend(self.cotangents.ensure_owned(base))
        zero = gast.Subscript(value=load(adjoint), slice=clone(target.slice), ctx=gast.Store())
        nothing: gast.expr = constant(0.0)
        if base in self.context.lists:  # a list element is replaced by zeros of its own shape
            element = gast.Subscript(value=load(base), slice=clone(target.slice), ctx=gast.Load())
            nothing = call(self.helper("zeros_like_value"), [element])
        block.append(gast.Assign(targets=[zero], value=nothing, type_comment=None))
        block.extend(later)
        return [located(s, statement) for s in block]

    def backward_expression(self, statement: gast.Expr) -> list[gast.stmt]:
        value = statement.value
        if not method_receiver(value, "append") is not None:
            return []
        owner = value.func.value.id
        element = value.args[0] if value.args else None
        if owner not in self.cotangents.defined or not self.active(owner):
            return []
        popped = call(attribute(load(self.cotangents.adjoint(owner)), "pop"))
        block = self.cotangents.ensure_owned(owner)
        if isinstance(element, gast.Name) and self.active(element.id):
            block.extend(self.cotangents.contribute(element.id, popped, statement))
        else:
            block.append(gast.Expr(value=popped))
        return [located(s, statement) for s in block]


_LOAD = load("_").ctx  # the context syntax.load gives every name


_NAME_SIZE = plain_size(gast.Name)


def _read_of(target: gast.Name) -> gast.Name:
    """A copy of the name ``target`` (its place in the source kept) that reads it."""
    state = target.__dict__
    if state.get("annotation") is None and len(state) <= _NAME_SIZE:
        answer = gast.Name.__new__(gast.Name)
        answer.__dict__ = {**state, "ctx": _LOAD}
        return answer
    answer = clone(target)
    answer.ctx = gast.Load()
    return answer


def _whole(index: gast.expr) -> bool:
    """``...`` or ``()``: an index that selects a whole array, a 0-d one included."""
    if isinstance(index, gast.Constant):
        return index.value is Ellipsis
    return isinstance(index, gast.Tuple) and not index.elts


def star_position(target: gast.expr) -> int | None:
    for position, element in enumerate(getattr(target, "elts", ())):
        if isinstance(element, gast.Starred):
            return position
    return None
