"""The forward sweep: the primal code, and a :class:`Step` for each statement.

Each statement is classified once and given its step: how its value is pulled back (a
primitive's rule, the generated or custom derivative of a function it calls, a dispatch
at run time), what it saves before it overwrites it, and, for a loop that ``break``s or a
``while`` loop, the variable that counts its iterations. Calls are rewritten to call a
derivative (``calls``); what cannot be differentiated is refused here, before any
backward code is written.
"""

from __future__ import annotations

import re
import types

import gast
import numpy as np

from s2sgrad.compiler.annotations import CHANGED_AS_VISITED, RANGE_LOOP, annotation
from s2sgrad.compiler.answered_operands import checked_operands
from s2sgrad.compiler.array_method_receivers import called_on_a_constant, receiver_to_check
from s2sgrad.compiler.effects import (
    is_not_at_run_time,
    not_at_run_time,
    refuse_calls_kept_for_effect,
    refuse_frame_readers,
    tape_lacks_the_rule_too,
)
from s2sgrad.compiler.frontend import NOT_FOUND
from s2sgrad.compiler.logs import only_logged
from s2sgrad.compiler.operations import Operation, OperationKind, drop_receiver
from s2sgrad.compiler.passes.aliases import copy_where_made, refuse_mutating_calls
from s2sgrad.compiler.reverse.calls import Calls
from s2sgrad.compiler.reverse.context import Context, located
from s2sgrad.compiler.reverse.facts import (
    breaks,
    fresh_names,
    mutated_base,
    mutated_names,
    target_names,
    writes_nothing,
)
from s2sgrad.compiler.reverse.saves import Saves
from s2sgrad.compiler.reverse.stored_state import StoredState
from s2sgrad.compiler.steps import Derivative, Step, StepKind
from s2sgrad.compiler.syntax import (
    assign,
    call,
    clone,
    constant,
    load,
    method_receiver,
    names_read,
    names_written,
    nested_statements,
)
from s2sgrad.compiler.transparent_blocks import is_transparent_with
from s2sgrad.compiler.type_aliases import refuse_alias_of_varied
from s2sgrad.errors import NonDifferentiableError, S2SGradError, UnsupportedError, iterator_error
from s2sgrad.runtime.object_gradients import is_instance_object
from s2sgrad.runtime.records import defines_value_protocols, record_fields

__all__ = ["ForwardSweep", "refuse_operation"]


class ForwardSweep:
    """Emit the forward sweep of a block and record its steps.

    Example::

        steps = []
        forward = ForwardSweep(context, saves, calls).forward_block(statements, False, steps)
    """

    def __init__(self, context: Context, saves: Saves, calls: Calls):
        self.context = context
        self.parsed = context.parsed
        self.activity = context.activity
        self.names = context.names
        self.active = context.active
        self.saves = saves
        self.calls = calls
        self.parameters = context.parameters
        self.stored_state: StoredState | None = None  # made by check_mutations
        self.made_by_calls: set[str] = set()  # names bound to a new object of a class

    def check_mutations(self, statements: list[gast.stmt]) -> None:
        """In-place updates must target arrays or lists the function created itself."""
        nested = getattr(self.context, "nested", None)  # made by Context.study
        if nested is None:
            nested = list(nested_statements(statements))
        refuse_mutating_calls(statements, self.parsed, self.context.parameters, self.activity)
        self.stored_state = stored_state = StoredState(
            self.parsed, statements, self.activity.varied
        )
        dicts = set()
        self.made_by_calls = set()
        self.answering_objects: set[str] = set()  # made by classes answering ==, round ...
        mutated = []
        # Context.study's mutated_names: the bases below, found already (none: no search)
        updates = bool(getattr(self.context, "mutated", True))
        for s in nested:
            if type(s) is gast.Assign:
                value = s.value
                if type(s.targets[0]) is gast.Name and (
                    type(value) is gast.Dict
                    or type(value) is gast.Name
                    and value.id in dicts
                    or self._makes_a_dict(value)
                ):  # d = {}, and hs = t2 of the normal form's xs, hs = {}, {}
                    dicts.add(s.targets[0].id)
                elif (
                    type(value) is gast.Call
                    and isinstance(stored_state.callee(value), type)
                    # a record's attributes send their cotangents back to its arguments
                    and record_fields(stored_state.callee(value)) is None
                ):
                    self.made_by_calls.update(target_names(s.targets[0]))
                    if defines_value_protocols(stored_state.callee(value)):
                        self.answering_objects.update(target_names(s.targets[0]))
            base = mutated_base(s) if updates else None
            if base is not None:
                mutated.append((s, base))
        if not mutated:
            return  # nothing updated in place: no name whose updates to check
        fresh = fresh_names(statements, self.parsed, self.context.local_names, nested)
        for statement, base in mutated:
            if base in self.context.parameters:
                error = UnsupportedError(
                    f"{self.parsed.location(statement)}: this changes the argument '{base}' "
                    "(a list, tuple or dict) in place, which source transformation does not "
                    f"follow; copy it first ('{base} = {base}.copy()') and update the copy, "
                    "or use mode='tape'"
                )
                # the tape updates its own copy of a list or dict; an array is copied above;
                # an argument not differentiated (a log of messages) the tape changes as NumPy
                error.tape_cannot_either = (
                    base not in self.context.containers and base in self.context.wrt
                )
                raise error
            if self.stores_only_text(statement):  # a log line: no value being differentiated
                continue
            if base in dicts and (base in self.activity.varied or self.active(base)):
                raise UnsupportedError(  # the tape can: auto falls back to it
                    f"{self.parsed.location(statement)}: writing entries of the dict "
                    f"'{base}' that hold values being differentiated is not transformed by "
                    "source; build the dict in one expression ({k: ... for k in ...} or "
                    "dict(zip(...))), or use mode='tape'"
                )
            if base not in fresh and (base in self.activity.varied or self.active(base)):
                outside = (
                    self.parsed.resolve_name(base)
                    if base not in self.context.local_names
                    else NOT_FOUND
                )
                if isinstance(outside, (list, dict)):  # the tape follows values through it
                    if only_logged(base, nested, self.parsed):
                        continue  # history.append(float(loss)): nothing reads it back
                    raise UnsupportedError(
                        f"{self.parsed.location(statement)}: this stores values being "
                        f"differentiated in the {type(outside).__name__} '{base}', which "
                        "belongs to the code around this function; source transformation "
                        "does not follow values through it: pass them as arguments or return "
                        "them, or use mode='tape'"
                    )
                error = UnsupportedError(self._shared_update_message(statement, base, statements))
                error.tape_cannot_either = False  # the tape checks views and aliases itself
                raise error

    def _makes_a_dict(self, value: gast.expr) -> bool:
        """``dict(...)``: a new dict (the normal form of ``{k: v.copy() for ...}`` too),
        whose entries the tape follows."""
        return (
            type(value) is gast.Call
            and type(value.func) is gast.Name
            and self.parsed.resolve(value.func) is dict
        )

    def stores_only_text(self, statement: gast.stmt) -> bool:
        """Whether ``statement`` stores text written from varied values and nothing else
        (``log.append(f"{loss:.3f}")``, ``info["line"] = message``)."""
        text = self.activity.text
        if not text:
            return False
        if type(statement) is gast.Assign:
            stored = statement.value
        else:  # items.append(line), and calls given nothing (items.clear())
            given = getattr(getattr(statement, "value", None), "args", None) or [None]
            stored = given[0]
        return type(stored) is gast.Name and stored.id in text

    def _shared_update_message(self, statement: gast.stmt, base: str, statements) -> str:
        """Why an in-place update of ``base``, which may share memory, is refused."""
        where = self.parsed.location(statement)
        line = self.parsed.source_line(statement)
        if not re.search(rf"\b{re.escape(base)}\b", line):  # a temporary the expression made
            root = re.match(r"\s*(\w+)\s*\[", line)
            if root is not None and root.group(1) in getattr(self.context, "lists", ()):
                return (  # D[i][j] = v of a list of lists (a dynamic programming table)
                    f"{where}: '{line}' writes into a list held in the list "
                    f"'{root.group(1)}', which source transformation does not follow; build "
                    "the table as a NumPy array (np.zeros((n, m)), then D[i, j] = ...), or "
                    "use mode='tape'"
                )
            return (
                f"{where}: '{line}' writes into part of an array that an expression makes "
                "(such as a.T[0] = ..., a[1:][0] = ..., a[0][1] = ...), which may share memory "
                "with another array; write into the array itself with one index "
                "(a[0, 1] = ..., a[:, 0] = ...), or make a new array first (np.copy, .copy())"
            )
        instead = copy_where_made(statements, base, calls_only=True) or (
            "make it a new array first (np.zeros, np.copy, x.copy(), a list)"
        )
        return (
            f"{where}: '{base}' is updated in place but may share memory with another array "
            f"(a view such as y[0], or an alias); update the array it comes from "
            f"(y[0, 1] = ...), or {instead}"
        )

    def forward_block(self, statements, in_loop: bool, steps: list[Step]) -> list[gast.stmt]:
        result: list[gast.stmt] = []
        for statement in statements:
            result.extend(self.forward_statement(statement, in_loop, steps))
        return result

    def forward_statement(
        self, statement: gast.stmt, in_loop: bool, steps: list[Step]
    ) -> list[gast.stmt]:
        if type(statement) is gast.Assign:  # the commonest first
            return self.forward_assign(statement, in_loop, steps)
        if isinstance(statement, gast.If):
            step = Step(statement, StepKind.BRANCH)
            statement.body = self.forward_block(statement.body, in_loop, step.body) or [gast.Pass()]
            statement.orelse = self.forward_block(statement.orelse, in_loop, step.orelse)
            steps.append(step)
            return [statement]
        if isinstance(statement, (gast.For, gast.While)):
            return self.forward_loop(statement, in_loop, steps)
        if isinstance(statement, gast.Assign):
            return self.forward_assign(statement, in_loop, steps)
        if isinstance(statement, gast.Expr):
            return self.forward_expression(statement, steps)
        if is_transparent_with(statement, self.parsed):  # its body's steps are this block's
            statement.body = self.forward_block(statement.body, in_loop, steps) or [gast.Pass()]
            return [statement]
        plain = (gast.Pass, gast.Break, gast.Continue, gast.Assert)
        if type(statement) is gast.ClassDef:
            self.refuse_class_reading_varied(statement)
        if type(statement) is gast.With:
            self.refuse_entered_values(statement)
        if type(statement) is gast.TypeAlias:  # 'type V = x' (Python 3.12 on)
            where = self.parsed.location(statement)
            refuse_alias_of_varied(statement, self.activity.varied, where)
        if not isinstance(statement, plain) and names_written(statement) & self.activity.active:
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: '{type(statement).__name__.lower()}' "
                "statements that compute differentiated values cannot be transformed; "
                "use mode='tape'"
            )
        steps.append(Step(statement, StepKind.OTHER))
        return [statement]

    def refuse_entered_values(self, statement: gast.With) -> None:
        """Refuse ``with manager(x) as v:`` where ``manager(x)`` reads a differentiated
        value: ``v`` is what ``__enter__`` returns (``contextlib.nullcontext(x)``, a
        generator's ``yield x * 2``), which no sweep follows; read as a constant, everything
        computed from it had no derivative."""
        for item in statement.items:
            if item.optional_vars is None:
                continue
            if names_read(item.context_expr) & self.activity.varied:
                raise UnsupportedError(
                    f"{self.parsed.location(statement)}: 'with ... as "
                    f"{', '.join(sorted(names_written(item.optional_vars)))}' binds what a context "
                    "manager made from differentiated values gives on entering, which source "
                    "transformation does not follow; compute the value before the 'with', "
                    "or use mode='tape'"
                )

    def constant_call(self, statement: gast.Assign) -> None:
        """A value computed from no differentiated one: refused, or checked when it runs,
        where it may read a differentiated value stored on an object."""
        if self.stored_state is not None:
            self.stored_state.refuse_opaque_call(statement)
            self.checked_calls(statement.value)

    def refuse_class_reading_varied(self, statement: gast.ClassDef) -> None:
        """A class defined here whose body or methods read a value being differentiated
        (``class C: k = x * 2``): its attributes would hold it where no sweep looks."""
        read = sorted(names_read(statement) & self.activity.varied)
        if read:
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: the class {statement.name} defined here "
                f"reads '{read[0]}', a value being differentiated, which source "
                "transformation does not follow into a class; pass it to the class's "
                "methods as an argument, or use mode='tape'"
            )

    def forward_assign(
        self, statement: gast.Assign, in_loop: bool, steps: list[Step]
    ) -> list[gast.stmt]:
        target = statement.targets[0]
        if self.answering_objects:
            self.refuse_answered_by_objects(statement)
        checks = self.answer_checks(statement)
        if type(target) is not gast.Name:
            return checks + self.forward_store(statement, target, in_loop, steps)
        return checks + self.forward_binding(statement, target, in_loop, steps)

    def answer_checks(self, statement: gast.Assign) -> list[gast.stmt]:
        """``answered_plainly(c, x)`` before ``t = c < x`` (or ``round(c)``) that reads a
        differentiated value, for each operand whose class is known only as the code runs:
        a parameter's ``__lt__`` may return a value computed from ``x``, which the
        sweeps would take for a flag (:mod:`s2sgrad.runtime.answering_objects`)."""
        # a parameter may hold anything, a differentiated one too: a helper's derivative is
        # taken in every argument its caller passes (sg.hvp of f(*args), a starred call)
        names = checked_operands(statement.value, self.parsed.resolve, self.activity.varied)
        if names:  # the plain ones left out here, not by a set of them made per statement
            numeric, parameters = self.context.numeric, self.parameters
            names = [name for name in names if name not in numeric or name in parameters]
        if not names:
            return []
        check = call(self.context.helper("answered_plainly"), [load(n) for n in names])
        return [located(gast.Expr(value=check), statement)]

    def refuse_answered_by_objects(self, statement: gast.Assign) -> None:
        """Refuse a comparison (or ``round``, ``math.floor`` ...) of an object made from
        differentiated values whose class answers it with code of its own (``__eq__``
        returning ``self.v * 2``): taken for a flag, a constant, what it returned had no
        derivative, silently."""
        value = statement.value
        read = names_read(value) & self.answering_objects & self.activity.varied
        if not read:
            return
        operation = self.context.operations.of(statement)
        if operation.kind is OperationKind.COMPARISON or not operation.differentiable:
            raise not_at_run_time(
                UnsupportedError(
                    f"{self.parsed.location(statement)}: '{self.parsed.source_line(statement)}'"
                    " asks an object made of values being differentiated to compare or "
                    "round itself, which its class does with code of its own whose result is "
                    "taken for a constant; compare the values it holds, or use mode='tape'"
                )
            )

    def forward_store(
        self, statement: gast.Assign, target: gast.expr, in_loop: bool, steps: list[Step]
    ) -> list[gast.stmt]:
        """``obj.name = v``, ``y[i] = v``, ``a.b[i] = v``; ``a, b = v`` goes on to bind."""
        if is_object_store(target):
            return self.forward_object_store(statement, steps)
        if isinstance(target, gast.Attribute) or (
            isinstance(target, gast.Subscript) and not isinstance(target.value, gast.Name)
        ):
            # what is stored may be read back through the object; storing into a
            # differentiated array (t.flat = v) changes it in place
            if self.context.is_varied_expression(statement.value) or (
                names_read(target) & self.activity.varied
            ):
                raise UnsupportedError(
                    f"{self.parsed.location(statement)}: storing a differentiated value in an "
                    "attribute or a nested container cannot be transformed; keep it in a "
                    "variable, or use mode='tape'"
                )
            steps.append(Step(statement, StepKind.STORE, target=target))
            return [statement]
        if isinstance(target, gast.Subscript):
            step = Step(statement, StepKind.ITEM_WRITE, target=target)
            steps.append(step)
            # a constant array is saved too: the backward sweep may read it (z = x * t;
            # t[:] = 0.5 leaves dz's rule reading t), and unread saves are dropped
            save = self.saves.new_save(step, target.value.id, "item", index=clone(target.slice))
            return [self.saves.save_marker(save), statement]
        return self.forward_binding(statement, target, in_loop, steps)

    def forward_binding(
        self, statement: gast.Assign, target: gast.expr, in_loop: bool, steps: list[Step]
    ) -> list[gast.stmt]:
        """``y = v`` or ``a, b = v``: an ``ASSIGN`` step, how its value is pulled back."""
        step = Step(statement, StepKind.ASSIGN, target=target)
        targets = [target.id] if type(target) is gast.Name else target_names(target)
        refuse_frame_readers(statement, self.parsed)
        if self.stored_state is not None:
            self.stored_state.refuse_read(statement)
            self.stored_state.refuse_repeated_call(statement, in_loop)
        active = self.active
        if active(targets[0]) if len(targets) == 1 else any(map(active, targets)):
            step.operation = self.context.operations.of(statement)
            self.choose_derivative(step)
        else:
            self.constant_call(statement)
        steps.append(step)
        result: list[gast.stmt] = []
        if in_loop and step.calls and step.extra is not None:  # each iteration's pullback
            self.context.in_loops.add(step.extra)  # is needed later
            targets = [*targets, step.extra]
        writes, in_loops, parameters = self.context.writes, self.context.in_loops, self.parameters
        for name in targets:  # overwritten(name), asked in place
            if writes[name] > 1 or name in in_loops or name in parameters:
                result.append(self.saves.save_marker(self.saves.new_save(step, name, "assign")))
        operation = step.operation or self.context.operations.of(statement)
        if operation.kind is OperationKind.LIST_POP and len(targets) == 1:
            owner = operation.args[0].id
            if self.active(owner) or owner in self.activity.varied:  # the list changes
                # saved last, so restored first: the popped value goes back before the
                # variable it was popped into gets its earlier value back
                popped = load(targets[0])
                result.append(
                    self.saves.save_marker(self.saves.new_save(step, owner, "pop", popped))
                )
        if step.derivative is Derivative.RULE:
            result += self.receiver_checks(step)
        statement.value = self.checked_reads(statement.value)
        result.append(step.statement)
        return result

    def receiver_checks(self, step: Step) -> list[gast.stmt]:
        """``array_receiver(acc, 'dot')`` before ``y = acc.dot(x)``, differentiated by
        ``ndarray.dot``'s rule, unless ``acc`` surely holds an array: an object of the
        user's with a method of that name is refused where it runs (auto tapes it)."""
        statement = step.statement
        name = receiver_to_check(statement, step.computed, self.context.is_varied_expression)
        if name is None or (name in self.context.numeric and name not in self.parameters):
            return []
        method = gast.Constant(value=statement.value.func.attr, kind=None)
        check = call(self.context.helper("array_receiver"), [load(name), method])
        return [located(gast.Expr(value=check), statement)]

    def checked_reads(self, value: gast.expr) -> gast.expr:
        """``value`` with each read of an object's attribute that may see state stored in
        this computation wrapped in ``reads_stored(...)`` (see :meth:`reads_object_state`)."""
        if writes_nothing(value):  # names and literals under a call or an operator:
            return value  # no attribute read but a called function's, nothing to wrap
        if self.reads_object_state(value):
            return call(self.context.helper("reads_stored"), [value])
        for field in ("args", "elts", "values"):
            items = getattr(value, field, None)
            if isinstance(items, list):
                setattr(value, field, [self.checked_reads(item) for item in items])
        for field in ("left", "right", "operand", "value"):
            part = getattr(value, field, None)
            if isinstance(part, gast.expr) and not isinstance(value, gast.Attribute):
                setattr(value, field, self.checked_reads(part))
        return value

    def checked_calls(self, value: gast.expr) -> None:
        """Wrap each call in ``value`` of code other than a library's in ``opaque(...)``:
        the sweeps keep it as it is, and it may read a differentiated value a caller of
        this function stored on an object (refused when it runs)."""
        stored_state = self.stored_state
        assert stored_state is not None
        for part in stored_state.opaque_calls(value):
            part.func = call(self.context.helper("opaque"), [part.func])

    def reads_object_state(self, value: gast.expr) -> bool:
        """Whether ``value`` reads an attribute of an object others may have stored a
        differentiated value on in this computation (``reads_stored`` refuses that): any
        object but a method's own ``self``, whose calls are checked when they run."""
        if not (isinstance(value, gast.Attribute) and isinstance(value.value, gast.Name)):
            return False
        if isinstance(getattr(np.ndarray, value.attr, None), types.GetSetDescriptorType):
            return False  # x.shape, x.T: an array's own, read as such (operations.classify)
        base = value.value.id
        if base in self.context.local_names:
            arguments = self.parsed.node.args
            first = (arguments.posonlyargs + arguments.args)[:1]
            return not (first and first[0].id == base == "self")
        owner = self.parsed.resolve(value.value)
        return owner is not NOT_FOUND and is_instance_object(owner)

    def forward_object_store(self, statement: gast.Assign, steps: list[Step]) -> list[gast.stmt]:
        """``obj.name = v``: the plain value is stored, as the user's code stores it. A
        value computed from differentiated ones is noted (``note_stored``) until this
        step's adjoint forgets it: read back as a constant meanwhile, it is refused."""
        target, value = statement.targets[0], statement.value
        step = Step(statement, StepKind.STORE, target=target)
        steps.append(step)
        if not self.context.is_varied_expression(value):
            return [statement]
        if not isinstance(value, gast.Name):
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: storing a differentiated value in an "
                "attribute cannot be transformed here; assign it to a variable first"
            )
        step.extra = value.id  # the backward sweep forgets it
        owner, name = load(target.value.id), gast.Constant(value=target.attr, kind=None)
        note = call(self.context.helper("note_stored"), [load(value.id), owner, name])
        return [statement, located(gast.Expr(value=note), statement)]

    def choose_derivative(self, step: Step) -> None:
        """Decide how ``step``'s value is pulled back, refusing what cannot be; a call is
        rewritten to call a derivative (``forward_call``, ``forward_dynamic``)."""
        operation, statement = step.computed, step.statement
        if has_starred(operation) and operation.kind in (
            OperationKind.CALL,
            OperationKind.PRIMITIVE,
        ):
            # f(x, *rest): which parameters the arguments fill is known when it runs
            operation.callee = statement.value.func
            drop_receiver(operation)
            self.calls.forward_dynamic(step, spread=True)
        elif operation.kind is OperationKind.CALL:
            try:
                self.calls.forward_call(step)
            except S2SGradError as error:
                if not (self.context.dynamic or error.recursive_call) or is_not_at_run_time(error):
                    raise
                drop_receiver(operation)
                self.calls.forward_dynamic(step)
        elif operation.kind is OperationKind.UNKNOWN and operation.callee is not None:
            if not self.context.is_varied_expression(statement.value):
                # d.get(k, np.zeros(n)), its target varied later (r = 0.9 * r + x): a
                # constant, which the call leaves to be checked as any constant's
                self.constant_call(statement)
                return
            self.calls.forward_dynamic(step)
        elif operation.kind in (OperationKind.COPY, OperationKind.PACK):
            step.derivative = Derivative.ROUTED
        elif operation.kind is OperationKind.PRIMITIVE and called_on_a_constant(
            statement, operation, self.context.is_varied_expression
        ):
            # m.sum(x) of an m not differentiated: a module or an object of the user's may
            # hold it, not an array, so it is dispatched by what m.sum is when it runs
            operation.callee = statement.value.func
            drop_receiver(operation)
            self.calls.forward_dynamic(step)
        elif operation.kind is OperationKind.PRIMITIVE and operation.differentiable:
            self.refuse_attribute_of_made_object(step)
            step.derivative = Derivative.RULE
        elif operation.kind is OperationKind.NO_RULE and not any(
            map(self.context.is_varied_expression, [*operation.args, *operation.keywords.values()])
        ):
            return  # made from constants here (f"W{i}"), as a literal is: no derivative
        else:
            refuse_operation(operation, self.parsed.location(statement))

    def refuse_attribute_of_made_object(self, step: Step) -> None:
        """``o = Point(x); y = o.value``: the attribute's cotangent would have to go back
        through the class's ``__init__``, which no derivative follows (the tape can)."""
        operation = step.computed
        base = operation.args[0] if operation.args else None
        made = isinstance(base, gast.Name) and base.id in self.made_by_calls
        if operation.primitive is getattr and made:
            raise UnsupportedError(
                f"{self.parsed.location(step.statement)}: reads an attribute of an object "
                "made by a call from values being differentiated, which source "
                "transformation cannot follow back through the call; pass the values "
                "themselves, or use mode='tape'"
            )

    def forward_expression(self, statement: gast.Expr, steps: list[Step]) -> list[gast.stmt]:
        value = statement.value
        refuse_calls_kept_for_effect(
            statement, self.parsed, self.context.local_names, self.activity
        )
        refuse_frame_readers(statement, self.parsed)
        if self.stored_state is not None:
            self.stored_state.refuse_opaque_call(statement)
            self.checked_calls(value)
        step = Step(statement, StepKind.EXPRESSION)
        steps.append(step)
        if method_receiver(value, "append") is not None:
            owner = value.func.value.id
            if self.active(owner) or owner in self.activity.varied:
                return [
                    self.saves.save_marker(self.saves.new_save(step, owner, "append")),
                    statement,
                ]
            return [statement]
        if method_receiver(value, "pop") is not None and self.active(value.func.value.id):
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: a list of differentiated values is popped "
                "without keeping the value; write 'value = items.pop()' instead"
            )
        return [statement]

    def forward_loop(self, loop, in_loop: bool, steps: list[Step]) -> list[gast.stmt]:
        prefix: list[gast.stmt] = []
        step = Step(loop, StepKind.LOOP)
        increment = None
        if isinstance(loop, gast.While) or breaks(loop.body):
            counter = self.names.fresh("iterations")
            if in_loop:
                self.context.in_loops.add(counter)
            step.counter = counter
            start = assign(counter, constant(0), like=loop)
            increment = assign(
                counter, gast.BinOp(left=load(counter), op=gast.Add(), right=constant(1))
            )
            prefix.extend(self.forward_assign(start, False, steps))
        elif annotation(loop, CHANGED_AS_VISITED) and self.loop_is_active(loop):
            raise UnsupportedError(
                f"{self.parsed.location(loop)}: this loop changes the list "
                f"'{annotation(loop, CHANGED_AS_VISITED)}' it runs over (Python's loop sees "
                "the entries added, removed or replaced as it goes), which source "
                "transformation does not follow; loop over a copy (list(...)) if that is "
                "what is meant, or use mode='tape'"
            )
        elif not annotation(loop, RANGE_LOOP, False) and self.loop_is_active(loop):
            raise UnsupportedError(
                f"{self.parsed.location(loop)}: this loop iterates over something the "
                "transformer cannot replay backwards; iterate over range(...), an array, "
                "a list, enumerate or zip, or use mode='tape'"
            )
        body = self.forward_block(loop.body, in_loop=True, steps=step.body)
        if increment is not None:
            body.insert(0, increment)
            step.body.insert(0, Step(increment, StepKind.COUNTER))
        loop.body = body or [gast.Pass()]
        if loop.orelse:
            raise UnsupportedError(
                f"{self.parsed.location(loop)}: 'else' clauses on loops are not supported; "
                "use a flag variable instead"
            )
        if isinstance(loop, gast.For):  # the backward loop leaves its variable at the first
            for name in self.read_before_loop(loop):  # item: what it held goes back
                prefix.append(self.saves.save_marker(self.saves.new_save(step, name, "assign")))
        steps.append(step)
        return [*prefix, loop]

    def read_before_loop(self, loop: gast.For) -> list[str]:
        """The loop's variables that hold a value before it which a step outside the loop
        reads (``k = 3.0; y = x * k; for k in range(2): ...``): the backward sweep reaches
        that step's derivative after it ran the loop again, which rebinds them."""
        overwritten = [n for n in sorted(names_written(loop.target)) if self.overwritten(n)]
        if not overwritten:
            return []
        inside = {id(s) for s in nested_statements(loop.body)}
        read: set[str] = set()
        for statement in self.context.nested:
            if id(statement) in inside or statement is loop:
                continue
            if isinstance(statement, gast.For):
                read |= names_read(statement.iter)
            elif isinstance(statement, (gast.If, gast.While)):
                read |= names_read(statement.test)
            elif not isinstance(statement, (gast.Try, gast.With)):
                read |= names_read(statement)
        return [name for name in overwritten if name in read]

    def loop_is_active(self, loop) -> bool:
        """Whether the loop sets a differentiated value: its variable, a name, a list it
        appends to or an array it writes into."""
        changed = set().union(*(names_written(s) for s in loop.body)) | mutated_names(loop.body)
        if isinstance(loop, gast.For):
            changed |= names_written(loop.target)
        return bool(changed & self.activity.active)

    def overwritten(self, name: str) -> bool:
        return (
            self.context.writes[name] > 1
            or name in self.context.in_loops
            or name in self.context.parameters
        )


def refuse_operation(operation: Operation, location: str) -> None:
    """Raise the error for a differentiated value computed by what has no derivative
    (a custom derivative differentiated again, an iterator, a library function without a
    rule, what the transformer cannot see through); other operations pass."""
    if operation.kind is OperationKind.HIGHER_ORDER_CUSTOM:
        error = NonDifferentiableError(
            f"{location}: this derivative uses a custom derivative "
            f"({operation.description}), whose pullback cannot be differentiated again; "
            "derivatives of higher order need the function itself, without "
            "@s2sgrad.derivative"
        )
        error.tape_cannot_either = True
        raise error
    if operation.kind is OperationKind.ITERATOR:
        raise iterator_error(location, operation.description)
    if operation.kind is OperationKind.NO_RULE:
        error = NonDifferentiableError(
            f"{location}: {operation.description} has no derivative rule; "
            + (
                operation.advice
                or "give it one with @s2sgrad.derivative(of=...), or wrap the "
                "value in s2sgrad.stop_gradient if it needs none"
            )
        )
        error.tape_cannot_either = bool(operation.advice) or tape_lacks_the_rule_too(operation)
        raise error
    if operation.kind is OperationKind.UNKNOWN:
        raise UnsupportedError(
            f"{location}: cannot differentiate through {operation.description}; register a "
            "rule with @s2sgrad.derivative, or use mode='tape'"
        )


def is_object_store(target: gast.expr) -> bool:
    """``obj.name = v``, not an array's own attribute (``x.flat = v`` changes ``x``)."""
    return (
        isinstance(target, gast.Attribute)
        and isinstance(target.value, gast.Name)
        and not hasattr(getattr(np.ndarray, target.attr, None), "__set__")
    )


def has_starred(operation: Operation) -> bool:
    return gast.Starred in map(type, operation.args)  # asked of every statement's operation
