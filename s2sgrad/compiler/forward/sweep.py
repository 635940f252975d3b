"""Forward mode's sweep: tangent statements interleaved with the primal ones (a JVP).

Every active statement ``y = op(a, b)`` is followed by ``dy = …``. Each assignment to a
differentiated name gets a :class:`~s2sgrad.compiler.steps.Step` first (its right-hand
side classified once, how its tangent is taken decided, what cannot be refused); the
tangent is then written from the rule (``tangents``) or by calling a derivative
(``calls``). Branches and loops keep their shape (nothing needs saving: tangents flow in
the same order as values), and in-place updates update the tangent in place too.
"""

from __future__ import annotations

from dataclasses import dataclass

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.answered_operands import checked_operands
from s2sgrad.compiler.array_method_receivers import called_on_a_constant, receiver_to_check
from s2sgrad.compiler.effects import (
    refuse_calls_kept_for_effect,
    refuse_frame_readers,
    tape_lacks_the_rule_too,
)
from s2sgrad.compiler.forward.calls import dynamic_call, generated_call
from s2sgrad.compiler.forward.tangents import rule_tangent
from s2sgrad.compiler.frontend import ParsedFunction
from s2sgrad.compiler.inline import Namespace
from s2sgrad.compiler.logs import only_logged
from s2sgrad.compiler.operations import (
    Operation,
    OperationKind,
    classify,
    drop_receiver,
    is_text,
)
from s2sgrad.compiler.passes.activity import Activity
from s2sgrad.compiler.passes.aliases import refuse_mutating_calls
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.reverse.facts import fresh_names
from s2sgrad.compiler.steps import Derivative, Step, StepKind
from s2sgrad.compiler.syntax import (
    assign,
    attribute,
    call,
    clone,
    comment,
    constant,
    item_target_base,
    load,
    located,
    method_receiver,
    names_read,
    names_written,
    nested_statements,
    parameter_names,
    store,
    walk,
)
from s2sgrad.compiler.transparent_blocks import is_transparent_with
from s2sgrad.compiler.type_aliases import refuse_alias_of_varied
from s2sgrad.errors import NonDifferentiableError, UnsupportedError, iterator_error
from s2sgrad.rules import get_rule
from s2sgrad.runtime.own_transforms import is_public_transform, own_transform_refusal

__all__ = ["TangentProgram", "forward_sweep"]

# private copies: a copy's tangent is a copy too, which the code may update in place
_COPIES = (runtime.owned, runtime.owned_argument)


@dataclass
class TangentProgram:
    """The body of a JVP function and the tangent of what it returns."""

    body: list[gast.stmt]
    output: gast.expr
    output_tangent: gast.expr
    tangents: dict[str, str]  # differentiated parameter → its tangent parameter's name


def forward_sweep(
    parsed: ParsedFunction,
    body: list[gast.stmt],
    wrt: list[str],
    activity: Activity,
    names: NameGenerator,
    namespace: Namespace,
    local_names: set[str],
    callee_jvp,
    dynamic: bool = True,
) -> TangentProgram:
    """Interleave tangent statements with ``body`` (normalised, with one final return).

    ``callee_jvp(function, active_parameters)`` returns a generated JVP of a user function
    (a callable ``f_jvp(*args, **tangents) -> (value, tangent)``, with the tangent
    parameter names in its ``tangent_names`` attribute).
    """
    sweep = _Forward(parsed, wrt, activity, names, namespace, local_names, callee_jvp)
    sweep.dynamic = dynamic  # False (mode="s2s"): calls resolved at run time never use the tape
    return sweep.run(body)


class _Forward:
    def __init__(self, parsed, wrt, activity, names, namespace, local_names, callee_jvp):
        self.parsed = parsed
        self.wrt = wrt
        self.activity = activity
        self.names = names
        self.namespace = namespace
        self.local_names = local_names
        self.callee_jvp = callee_jvp
        self.dynamic = True  # False (mode="s2s"): calls resolved at run time never use the tape
        self.tangent_names: dict[str, str] = {}
        self.np = namespace.bind("np", np)
        # variables whose tangent is known to be a private, writable copy (dv[i] = ... is safe)
        self.owned: set[str] = set()
        self.fresh: set[str] = set()  # names always bound to a new array or list (run sets it)
        self.views: set[str] = set()  # names bound to what may be a view of another array
        self.copied: set[str] = set()  # names last bound to a private copy (v = owned(v))

    def tangent(self, variable: str) -> str:
        if variable not in self.tangent_names:
            self.tangent_names[variable] = self.names.adjoint(variable)
        return self.tangent_names[variable]

    def active(self, name: str) -> bool:
        return name in self.activity.varied

    def helper(self, name: str) -> gast.Name:
        return load(self.namespace.bind(name, getattr(runtime, name)))

    def tangent_of(self, node: gast.expr) -> gast.expr:
        """The tangent of an operand: its tangent's name, or zeros for a constant list entry."""
        if isinstance(node, gast.Name) and self.active(node.id):
            return load(self.tangent(node.id))
        if isinstance(node, (gast.List, gast.Tuple)):
            return type(node)(elts=[self.tangent_of(e) for e in node.elts], ctx=gast.Load())
        if isinstance(node, gast.Starred):  # f(*v): the entries of v's tangent
            return gast.Starred(value=self.tangent_of(node.value), ctx=gast.Load())
        return call(self.helper("zeros_like_value"), [clone(node)])

    def is_active_expression(self, node: gast.expr) -> bool:
        return any(isinstance(n, gast.Name) and self.active(n.id) for n in walk(node))

    # driver -----------------------------------------------------------------------------
    def run(self, body: list[gast.stmt]) -> TangentProgram:
        *statements, final = body
        if not isinstance(final, gast.Return) or final.value is None:
            raise UnsupportedError(
                f"{self.parsed.location(final)}: the function must end with a 'return'"
            )
        parameters = parameter_names(self.parsed.node, starred=False)
        refuse_mutating_calls(statements, self.parsed, parameters, self.activity)
        self.fresh = fresh_names(statements, self.parsed, self.local_names)
        self.nested = list(nested_statements(statements))
        self.views = _bound_to_views(statements)
        tangents = {w: self.tangent(w) for w in self.wrt}
        result = self.constant_parameters() + self.block(statements)
        output = final.value
        if isinstance(output, gast.Tuple):
            output_tangent: gast.expr = gast.Tuple(
                elts=[self.tangent_of(e) for e in output.elts], ctx=gast.Load()
            )
        else:
            output_tangent = self.tangent_of(output)
        return TangentProgram(result, output, output_tangent, tangents)

    def constant_parameters(self) -> list[gast.stmt]:
        """Zero tangents for the parameters not differentiated that the code later sets to
        differentiated values (``y = y + x`` in a branch): on the other path they stay
        constants, and their tangents are read all the same."""
        arguments = self.parsed.node.args
        parameters = [a.id for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
        return [
            assign(self.tangent(p), call(self.helper("zeros_like_value"), [load(p)]))
            for p in parameters
            if p not in self.wrt and self.active(p)
        ]

    def block(self, statements: list[gast.stmt]) -> list[gast.stmt]:
        result: list[gast.stmt] = []
        last_line = None
        for statement in statements:
            lines = self.statement(statement)
            tangent_lines = [s for s in lines if s is not statement]
            _under_the_users_line(lines, statement)
            line = getattr(statement, "lineno", None)
            if tangent_lines and line is not None and line != last_line:
                text = self.parsed.source_line(statement)
                if text and not isinstance(statement, (gast.If, gast.For, gast.While)):
                    result.append(comment(f"tangent of: {text}"))
                last_line = line
            result.extend(lines)
        return result

    def statement(self, statement: gast.stmt) -> list[gast.stmt]:
        if isinstance(statement, gast.If):
            before = set(self.owned)
            statement.body = self.block(statement.body) or [gast.Pass()]
            after_body, self.owned = self.owned, before
            statement.orelse = self.block(statement.orelse)
            self.owned &= after_body  # owned after the branch only if owned on both paths
            return [statement]
        if isinstance(statement, (gast.For, gast.While)):
            if isinstance(statement, gast.For) and self.is_active_expression(statement.iter):
                raise UnsupportedError(
                    f"{self.parsed.location(statement)}: forward mode cannot loop over "
                    "differentiated values directly; loop over range(len(...))"
                )
            # a tangent the loop writes into is copied once, before it, not every iteration
            rebound = names_written(statement)
            copies = sorted(
                base
                for base in _item_written([statement]) - rebound - self.owned
                if self.active(base)
            )
            lines = [self.own_tangent(base, statement) for base in copies]
            self.owned = (self.owned | set(copies)) - rebound
            entry = set(self.owned)
            statement.body = self.block(statement.body) or [gast.Pass()]
            if isinstance(statement, gast.For):
                # a target active elsewhere (a name reused by another loop) that this loop
                # binds from values without tangents (a range): its tangent here is zero
                targets = [n for n in sorted(names_written(statement.target)) if self.active(n)]
                zeros = [
                    assign(self.tangent(n), call(self.helper("zeros_like_value"), [load(n)]))
                    for n in targets
                ]
                statement.body = [*zeros, *statement.body]
            statement.orelse = self.block(statement.orelse)
            self.owned = entry
            return [*lines, statement]
        if isinstance(statement, gast.Assign):
            return self.assignment(statement)
        if isinstance(statement, gast.Expr):
            return self.expression(statement)
        if isinstance(statement, (gast.Pass, gast.Break, gast.Continue, gast.Assert, gast.Raise)):
            return [statement]
        if isinstance(statement, gast.TypeAlias):  # 'type Vec = list[float]' (3.12 on)
            active = {n for n in names_read(statement.value) if self.active(n)}
            refuse_alias_of_varied(statement, active, self.parsed.location(statement))
            return [statement]
        if is_transparent_with(statement, self.parsed):
            statement.body = self.block(statement.body)
            return [statement]
        if isinstance(statement, gast.FunctionDef):
            if self.active(statement.name):
                raise UnsupportedError(
                    f"{self.parsed.location(statement)}: a function defined here captures "
                    "differentiated values; pass them as arguments instead"
                )
            return [statement]
        raise UnsupportedError(
            f"{self.parsed.location(statement)}: forward mode cannot differentiate a "
            f"'{type(statement).__name__.lower()}' statement; use mode='tape'"
        )

    def expression(self, statement: gast.Expr) -> list[gast.stmt]:
        value = statement.value
        refuse_calls_kept_for_effect(statement, self.parsed, self.local_names, self.activity)
        refuse_frame_readers(statement, self.parsed)
        owner = method_receiver(value, "append")
        if owner is not None and self.active(owner):
            if self.outside_log(owner):
                return [statement]  # history.append(float(loss)): nothing reads it back
            self.refuse_outside_container(statement, owner)
            tangent = self.tangent_of(value.args[0])
            line = gast.Expr(value=call(attribute(load(self.tangent(owner)), "append"), [tangent]))
            return [statement, gast.copy_location(line, statement)]
        return [statement]

    # assignments ------------------------------------------------------------------------
    def assignment(self, statement: gast.Assign) -> list[gast.stmt]:
        target = statement.targets[0]
        refuse_frame_readers(statement, self.parsed)
        if isinstance(target, gast.Subscript):
            return self.item_assignment(statement)
        if isinstance(target, gast.Attribute):
            touched = names_read(statement.value) | names_read(target)
            if touched & self.activity.varied:  # read back through the object, or in place
                raise UnsupportedError(
                    f"{self.parsed.location(statement)}: storing a differentiated value in an "
                    "attribute cannot be transformed; keep it in a variable, or use mode='tape'"
                )
            return [statement]
        names = _flat_names(target)
        self.owned.difference_update(names)
        self.copied.difference_update(names)
        checked = checked_operands(statement.value, self.parsed.resolve, self.activity.varied)
        if checked:  # c < x: c's own __lt__ may answer with a value computed from x
            check = call(self.helper("answered_plainly"), [load(n) for n in checked])
            located = gast.copy_location(gast.Expr(value=check), statement)
            return [located, *self.assignment_of_names(statement, names)]
        return self.assignment_of_names(statement, names)

    def assignment_of_names(self, statement: gast.Assign, names: list[str]) -> list[gast.stmt]:
        """The lines of ``statement`` binding ``names``, with their tangents."""
        if not any(self.active(n) for n in names):
            return [statement]
        step = self.step(statement)
        if step.derivative is Derivative.NONE:
            zeros = [
                assign(self.tangent(n), call(self.helper("zeros_like_value"), [load(n)]))
                for n in names
                if self.active(n)
            ]
            self.owned.update(n for n in names if self.active(n))  # new zeros of their own
            return [statement, *[gast.copy_location(z, statement) for z in zeros]]
        if step.derivative is Derivative.DISPATCH:
            return [dynamic_call(self, statement, step.computed, names)]
        if step.calls:
            return [generated_call(self, statement, step.computed, names)]
        checked = receiver_to_check(statement, step.computed, self.is_active_expression)
        if checked is None:
            return self.rule_assignment(statement, step.computed, names)
        # acc.dot(x): NumPy's ndarray.dot for an array, refused for an object of the user's
        method = gast.Constant(value=statement.value.func.attr, kind=None)
        check = call(self.helper("array_receiver"), [load(checked), method])
        lines = self.rule_assignment(statement, step.computed, names)
        return [gast.copy_location(gast.Expr(value=check), statement), *lines]

    def step(self, statement: gast.Assign) -> Step:
        """The step of an assignment to differentiated names: how its tangent is taken
        (the statement classified once); refused when it cannot be."""
        operation = classify(statement.value, self.parsed, self.local_names)
        step = Step(statement, StepKind.ASSIGN, operation, target=statement.targets[0])
        kind = operation.kind
        if (
            not self.is_active_expression(statement.value)
            or kind in (OperationKind.COMPARISON, OperationKind.CONSTANT)
            or (kind is OperationKind.PRIMITIVE and not operation.differentiable)
            or self.text_kept_from_the_result(statement, operation)
        ):
            step.derivative = Derivative.NONE
        elif kind is OperationKind.PRIMITIVE and any(
            isinstance(a, gast.Starred) for a in operation.args
        ):  # np.add(*xs): which parameters the arguments fill is known when it runs
            operation.callee = statement.value.func
            drop_receiver(operation)  # t.dot(*xs): the bound method, as written
            step.derivative = Derivative.DISPATCH
        elif kind is OperationKind.PRIMITIVE and called_on_a_constant(
            statement, operation, self.is_active_expression
        ):  # m.sum(x) of m = np, acc.sum(x): by what m.sum is when it runs
            operation.callee = statement.value.func
            drop_receiver(operation)
            step.derivative = Derivative.DISPATCH
        elif kind is OperationKind.CALL and is_public_transform(operation.primitive):
            where = self.parsed.location(statement)  # sg.jvp(f, ...) inside: not its code
            refusal = own_transform_refusal(operation.primitive, where)
            raise UnsupportedError(f"{refusal}; use mode='auto' or mode='tape'")
        elif kind is OperationKind.CALL:
            rule = get_rule(operation.primitive)
            custom = rule is not None and rule.custom is not None
            step.derivative = Derivative.CUSTOM if custom else Derivative.GENERATED
        elif kind is OperationKind.UNKNOWN and operation.callee is not None:
            step.derivative = Derivative.DISPATCH
        elif kind in (OperationKind.COPY, OperationKind.PACK, OperationKind.LIST_POP):
            step.derivative = Derivative.ROUTED
        else:
            _refuse(operation, self.parsed.location(statement))
            step.derivative = Derivative.RULE
        return step

    def text_kept_from_the_result(self, statement: gast.Assign, operation: Operation) -> bool:
        """Whether ``statement`` writes text from varied values (``message = f"{loss:.3f}"``)
        whose value never reaches the result (it is logged, printed or stored): no tangent
        to take, as reverse mode has none (``float(message)`` returned is still refused)."""
        target = statement.targets[0]
        return (
            is_text(operation)
            and type(target) is gast.Name
            and target.id not in self.activity.useful
        )

    def rule_assignment(self, statement, operation: Operation, names) -> list[gast.stmt]:
        """``y = op(a, b)`` followed by ``dy = …``, the tangent written from op's rule."""
        target = statement.targets[0]
        overwritten = set(names) & names_read(statement.value)
        if overwritten:  # z = z ** 2: keep the old z until its tangent is computed
            fresh = self.names.fresh("t")
            final = assign(clone(target), load(fresh), like=statement)
            statement = assign(fresh, statement.value, like=statement)
            target = statement.targets[0]
            names = [fresh] if isinstance(final.targets[0], gast.Name) else names
        self.pending: list[gast.stmt] = []  # statements an inlined rule needs first
        tangent = rule_tangent(self, statement, operation)
        if overwritten:
            original = final.targets[0]
            tangent_target = self.tangent(original.id) if isinstance(original, gast.Name) else None
            lines = [statement, *self.pending]
            if tangent_target is not None:
                lines.append(assign(tangent_target, tangent, like=statement))
                lines.append(final)
                if operation.primitive in _COPIES:  # g = owned(g): its tangent is a copy
                    self.owned.add(original.id)
                    self.copied.add(original.id)
                return lines
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: forward mode cannot unpack into "
                "variables the same statement reads; use new names"
            )
        lines = [statement, *self.pending]
        if isinstance(target, gast.Name):
            lines.append(assign(self.tangent(target.id), tangent, like=statement))
            if operation.primitive in _COPIES:  # its tangent is a copy too
                self.owned.add(target.id)
                self.copied.add(target.id)
        else:  # a, *rest = v (A-normal form: names only): da, *drest = dv
            unpacked = gast.Tuple(
                elts=[self.tangent_target(e) for e in target.elts], ctx=gast.Store()
            )
            lines.append(assign(unpacked, tangent, like=statement))
        return lines

    def item_assignment(self, statement: gast.Assign) -> list[gast.stmt]:
        """``y[i] = v``: ``dy[i] = dv`` (zeros where v is constant)."""
        target = statement.targets[0]
        base = target.value.id
        if not self.active(base) or self.outside_log(base):
            return [statement]
        self.refuse_outside_container(statement, base)
        self.refuse_shared_write(statement, base)
        place = gast.Subscript(
            value=load(self.tangent(base)), slice=clone(target.slice), ctx=gast.Store()
        )
        value = statement.value
        if self.is_active_expression(value):
            tangent = self.tangent_of(value)
        elif type(target.slice) is gast.Slice:  # y[1:3] = v: a list's slice takes a list
            written = gast.Subscript(value=load(base), slice=clone(target.slice), ctx=gast.Load())
            tangent = call(self.helper("zeros_like_value"), [written])
        else:
            tangent = constant(0.0)
        lines = [statement]
        if base not in self.owned:  # the tangent may be a broadcast view, or another's tangent
            lines.append(self.own_tangent(base, statement))
            self.owned.add(base)
        return [*lines, assign(place, tangent, like=statement)]

    def outside_log(self, base: str) -> bool:
        """Whether ``base`` is a list or dict of the code around the function that it only
        writes into and nothing it calls reads (:mod:`s2sgrad.compiler.logs`)."""
        return (
            base not in self.local_names
            and isinstance(self.parsed.resolve_name(base), (list, dict))
            and only_logged(base, getattr(self, "nested", ()), self.parsed)
        )

    def refuse_outside_container(self, statement: gast.stmt, base: str) -> None:
        """Refuse storing a differentiated value in a list, dict or array of the code around
        the function (a global, a closure's): its tangent would be a local never set."""
        if base not in self.local_names:
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: this stores values being differentiated "
                f"in '{base}', which belongs to the code around this function; source "
                "transformation does not follow values through it: pass them as arguments or "
                "return them, or use mode='tape'"
            )

    def refuse_shared_write(self, statement: gast.stmt, base: str) -> None:
        """Refuse a write into an array that may share memory with another (a view an
        expression made: ``a.T[0] = v``, ``a[1:][0] = v``, ``a.reshape(-1)[0] = v``): its
        tangent, made a private copy to be written, would no longer share the other's."""
        if base in self.fresh or base in self.copied or base not in self.views:
            return
        raise UnsupportedError(
            f"{self.parsed.location(statement)}: '{self.parsed.source_line(statement)}' writes "
            "into an array that may share memory with another (a view such as a.T[0] = ..., "
            "a[1:][0] = ..., a.reshape(-1)[0] = ..., or an object's attribute, p.w[0] = ...), "
            "which forward mode does not follow; "
            "write into the array itself with one index (a[0, 1] = ..., a[:, 0] = ...), or "
            "make a new array first (np.copy, .copy())"
        )

    def own_tangent(self, variable: str, statement: gast.stmt) -> gast.stmt:
        """``dv = owned_tangent(dv, v)``: a private, writable copy of ``v``'s tangent,
        complex where ``v`` is (an item written may be complex)."""
        tangent = self.tangent(variable)
        copy = call(self.helper("owned_tangent"), [load(tangent), load(variable)])
        return assign(tangent, copy, like=statement)

    def tangent_target(self, target: gast.expr) -> gast.expr:
        """``(da, db), dc`` for the target ``(a, b), c``: a call's tangents have the
        structure of its value."""
        if isinstance(target, gast.Name):
            return store(self.tangent(target.id))
        if isinstance(target, gast.Starred):
            return gast.Starred(value=self.tangent_target(target.value), ctx=gast.Store())
        return gast.Tuple(elts=[self.tangent_target(e) for e in target.elts], ctx=gast.Store())


def _flat_names(target: gast.expr) -> list[str]:
    """The names a target binds, nested tuples included, in order."""
    if isinstance(target, gast.Name):
        return [target.id]
    if isinstance(target, gast.Starred):
        return _flat_names(target.value)
    if isinstance(target, (gast.Tuple, gast.List)):
        return [n for e in target.elts for n in _flat_names(e)]
    return []


# methods and NumPy functions whose result may be a view of their array
_VIEW_MAKERS = frozenset(
    {
        "reshape",
        "ravel",
        "transpose",
        "swapaxes",
        "moveaxis",
        "squeeze",
        "view",
        "diagonal",
        "expand_dims",
        "broadcast_to",
        "flip",
        "fliplr",
        "flipud",
        "rot90",
        "T",
        "mT",
        "flat",
        "real",
        "imag",
        "atleast_1d",
        "atleast_2d",
        "atleast_3d",
        "asarray",
        "asanyarray",
        # what may return its argument or a view of it too (np.einsum("ii->i", a))
        *("einsum", "permute_dims", "matrix_transpose", "rollaxis", "ascontiguousarray"),
        *("asfortranarray", "require", "asarray_chkfinite", "array", "astype", "nan_to_num"),
        *("as_strided", "broadcast_arrays", "split", "array_split", "hsplit", "vsplit"),
        *("dsplit", "unstack", "diag"),
        "__dict__",  # an object's attributes: o.__dict__["a"] = v changes what o.a reads
    }
)


def _bound_to_views(statements: list[gast.stmt]) -> set[str]:
    """The names some statement binds to a part of an array (``t = y[1:]``) or to what a
    method or function may return as a view of one (``t = a.reshape(-1)``, ``a.T``)."""
    found = set()
    for statement in nested_statements(statements):
        if type(statement) is not gast.Assign or type(statement.targets[0]) is not gast.Name:
            continue
        value = statement.value
        if type(value) is gast.Call:
            value = value.func
        if (
            type(value) is gast.Subscript
            or (type(value) is gast.Attribute and value.attr in _VIEW_MAKERS)
            or (type(value) is gast.Name and value.id == "vars")  # vars(o): o.__dict__
            # t = p.w: the array the object holds, whose tangent (p's) a write into t
            # would leave behind (p.w[0] = v, in A-normal form)
            or (type(statement.value) is gast.Attribute and type(value.value) is gast.Name)
        ):
            found.add(statement.targets[0].id)
    return found


def _item_written(statements: list[gast.stmt]) -> set[str]:
    """The variables that ``statements`` (and the blocks in them) write items of."""
    return {b for s in nested_statements(statements) if (b := item_target_base(s)) is not None}


def _refuse(operation: Operation, location: str) -> None:
    """Raise the error for a tangent of what forward mode cannot differentiate: an
    iterator, a library function without a rule, what it cannot see through."""
    if operation.kind is OperationKind.ITERATOR:
        raise iterator_error(location, operation.description)
    if operation.kind in (OperationKind.UNKNOWN, OperationKind.NO_RULE):
        no_rule = operation.kind is OperationKind.NO_RULE
        error = NonDifferentiableError if no_rule else UnsupportedError
        refusal = error(
            f"{location}: forward mode cannot differentiate {operation.description}; "
            + (operation.advice or "give it a derivative with @s2sgrad.derivative")
        )
        refusal.tape_cannot_either = bool(operation.advice) or tape_lacks_the_rule_too(operation)
        raise refusal


def _under_the_users_line(lines: list[gast.stmt], statement: gast.stmt) -> None:
    """Place the statements made for ``statement``, and the calls in them made without a
    location, on ``statement``'s line: a refusal raised as the code runs names the user's
    statement from it (``running.statement_origin``), also after the optimiser moved a call
    into another statement."""
    line = statement.__dict__.get("lineno")
    if line is None:
        return
    for made in lines:
        if made is not statement:
            located(made, statement)
        for node in walk(made):
            if type(node) is gast.Call and node.__dict__.get("lineno") is None:
                node.lineno = node.end_lineno = line
                node.col_offset = node.end_col_offset = 0
