"""Forward mode: tangent statements interleaved with the primal ones (a JVP).

Every active statement ``y = op(a, b)`` is followed by ``dy = …``, the sum over its
active operands of the JVP rule's entry for that operand with ``t`` bound to the
operand's tangent. Branches and loops keep their shape (nothing needs saving: tangents
flow in the same order as values), in-place updates update the tangent in place too,
and calls to other user functions call their own generated JVPs.
"""

from __future__ import annotations

from dataclasses import dataclass

import gast
import numpy as np

from s2sgrad import numpy_signatures, runtime
from s2sgrad.compiler.frontend import ParsedFunction
from s2sgrad.compiler.inline import Namespace, inline_rule
from s2sgrad.compiler.operations import (
    Operation,
    classify,
    keeps_arguments_inside,
    refuse_differentiated_keywords,
)
from s2sgrad.compiler.passes.activity import Activity
from s2sgrad.compiler.passes.aliases import refuse_mutating_calls
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.reverse import not_at_run_time, refuse_calls_kept_for_effect
from s2sgrad.compiler.syntax import (
    assign,
    attribute,
    call,
    clone,
    comment,
    constant,
    item_target_base,
    load,
    method_receiver,
    names_read,
    names_written,
    nested_statements,
    store,
    walk,
)
from s2sgrad.errors import (
    NonDifferentiableError,
    S2SGradError,
    UnsupportedError,
    iterator_error,
)

__all__ = ["ForwardSweep", "forward_sweep"]


@dataclass
class ForwardSweep:
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
) -> ForwardSweep:
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
        self.tangent_names: dict[str, str] = {}
        self.np = namespace.bind("np", np)
        # variables whose tangent is known to be a private, writable copy (dv[i] = ... is safe)
        self.owned: set[str] = set()

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
    def run(self, body: list[gast.stmt]) -> ForwardSweep:
        *statements, final = body
        if not isinstance(final, gast.Return) or final.value is None:
            raise UnsupportedError(
                f"{self.parsed.location(final)}: the function must end with a 'return'"
            )
        refuse_mutating_calls(statements, self.parsed, _parameters(self.parsed.node), self.activity)
        tangents = {w: self.tangent(w) for w in self.wrt}
        result = self.constant_parameters() + self.block(statements)
        output = final.value
        if isinstance(output, gast.Tuple):
            output_tangent: gast.expr = gast.Tuple(
                elts=[self.tangent_of(e) for e in output.elts], ctx=gast.Load()
            )
        else:
            output_tangent = self.tangent_of(output)
        return ForwardSweep(result, output, output_tangent, tangents)

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
            statement.orelse = self.block(statement.orelse)
            self.owned = entry
            return [*lines, statement]
        if isinstance(statement, gast.Assign):
            return self.assignment(statement)
        if isinstance(statement, gast.Expr):
            return self.expression(statement)
        if isinstance(statement, (gast.Pass, gast.Break, gast.Continue, gast.Assert, gast.Raise)):
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
        owner = method_receiver(value, "append")
        if owner is not None and self.active(owner):
            tangent = self.tangent_of(value.args[0])
            line = gast.Expr(value=call(attribute(load(self.tangent(owner)), "append"), [tangent]))
            return [statement, gast.copy_location(line, statement)]
        return [statement]

    # assignments ------------------------------------------------------------------------
    def assignment(self, statement: gast.Assign) -> list[gast.stmt]:
        target = statement.targets[0]
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
        if not any(self.active(n) for n in names):
            return [statement]
        operation = classify(statement.value, self.parsed, self.local_names)
        if (
            not self.is_active_expression(statement.value)
            or operation.kind
            in (
                "comparison",
                "constant",
            )
            or (operation.kind == "primitive" and not operation.differentiable)
        ):
            zeros = [
                assign(self.tangent(n), call(self.helper("zeros_like_value"), [load(n)]))
                for n in names
                if self.active(n)
            ]
            self.owned.update(n for n in names if self.active(n))  # new zeros of their own
            return [statement, *[gast.copy_location(z, statement) for z in zeros]]
        if operation.kind == "primitive" and any(
            isinstance(a, gast.Starred) for a in operation.args
        ):  # np.add(*xs): which parameters the arguments fill is known when it runs
            operation.callee = statement.value.func
            return [self.dynamic_call(statement, operation, names)]
        if operation.kind == "call":
            return [self.call(statement, operation, names)]
        if operation.kind == "unknown" and operation.callee is not None:
            return [self.dynamic_call(statement, operation, names)]
        if operation.kind == "iterator":
            raise iterator_error(self.parsed.location(statement), operation.description)
        if operation.kind in ("unknown", "no rule"):
            error = NonDifferentiableError if operation.kind == "no rule" else UnsupportedError
            refusal = error(
                f"{self.parsed.location(statement)}: forward mode cannot differentiate "
                f"{operation.description}; "
                + (operation.advice or "give it a derivative with @s2sgrad.derivative")
            )
            refusal.tape_cannot_either = bool(operation.advice)  # the advice is the fix
            raise refusal
        overwritten = set(names) & names_read(statement.value)
        if overwritten:  # z = z ** 2: keep the old z until its tangent is computed
            fresh = self.names.fresh("t")
            final = assign(clone(target), load(fresh), like=statement)
            statement = assign(fresh, statement.value, like=statement)
            target = statement.targets[0]
            names = [fresh] if isinstance(final.targets[0], gast.Name) else names
        self.pending: list[gast.stmt] = []  # statements an inlined rule needs first
        tangent = self.tangent_expression(statement, operation)
        if overwritten:
            original = final.targets[0]
            tangent_target = self.tangent(original.id) if isinstance(original, gast.Name) else None
            lines = [statement, *self.pending]
            if tangent_target is not None:
                lines.append(assign(tangent_target, tangent, like=statement))
                lines.append(final)
                if operation.primitive is runtime.owned:  # g = owned(g): its tangent is a copy
                    self.owned.add(original.id)
                return lines
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: forward mode cannot unpack into "
                "variables the same statement reads; use new names"
            )
        lines = [statement, *self.pending]
        if isinstance(target, gast.Name):
            lines.append(assign(self.tangent(target.id), tangent, like=statement))
            if operation.primitive is runtime.owned:  # its tangent is a copy too
                self.owned.add(target.id)
        else:  # a, *rest = v (A-normal form: names only): da, *drest = dv
            unpacked = gast.Tuple(
                elts=[self.tangent_target(e) for e in target.elts], ctx=gast.Store()
            )
            lines.append(assign(unpacked, tangent, like=statement))
        return lines

    def tangent_expression(self, statement, operation: Operation) -> gast.expr:
        if operation.kind == "copy":
            return self.tangent_of(operation.args[0])
        if operation.kind == "pack":
            tangents = [self.tangent_of(a) for a in operation.args]
            if operation.keys is not None:
                return gast.Dict(keys=[constant(k) for k in operation.keys], values=tangents)
            if isinstance(statement.value, gast.Tuple):
                return gast.Tuple(elts=tangents, ctx=gast.Load())
            return gast.List(elts=tangents, ctx=gast.Load())
        if operation.kind == "list pop":
            owner = operation.args[0].id
            return call(attribute(load(self.tangent(owner)), "pop"))
        if operation.primitive is runtime.add_cotangents:  # containers add leaf by leaf
            return call(self.helper("add_cotangents"), [self.tangent_of(a) for a in operation.args])
        rule = operation.rule
        if rule is None or rule.jvp is None:
            raise NonDifferentiableError(
                f"{self.parsed.location(statement)}: {operation.primitive!r} has no JVP rule "
                "for forward mode; register one with @s2sgrad.rules.jvp_rule"
            )
        answer = clone(statement.targets[0])
        for node in walk(answer):
            if isinstance(node, gast.Name):
                node.ctx = gast.Load()
        refuse_differentiated_keywords(
            operation, self.is_active_expression, self.parsed.location(statement)
        )
        contributions = []
        differentiated = tuple(
            self.is_active_expression(a) and not isinstance(a, gast.Constant)
            for a in operation.args
        )
        for index, argument in enumerate(operation.args):
            if not differentiated[index]:
                continue
            tangent = self.tangent_of(argument)
            inlined = None
            if rule.inline_jvp:
                inlined = inline_rule(
                    rule.jvp,
                    tangent,
                    answer,
                    list(operation.args),
                    operation.keywords,
                    {index},
                    self.names,
                    self.namespace,
                    differentiated,
                )
            if inlined is not None:
                if inlined.entries[index] is not None:  # None: not differentiable in it
                    self.pending.extend(inlined.statements)
                    contributions.append(inlined.entries[index])
            else:
                primitive = load(
                    self.namespace.bind(_name(operation.primitive), operation.primitive)
                )
                contributions.append(
                    call(
                        self.helper("jvp_entry"),
                        [primitive, constant(index), tangent, answer, *operation.args],
                        operation.keywords,
                    )
                )
        if not contributions:
            return call(self.helper("zeros_like_value"), [answer])
        total = contributions[0]
        for contribution in contributions[1:]:
            if rule.inline_jvp:
                total = gast.BinOp(left=total, op=gast.Add(), right=contribution)
            else:  # a called rule may give one tangent per output: add them entry by entry
                total = call(self.helper("add_cotangents"), [total, contribution])
        return total

    def item_assignment(self, statement: gast.Assign) -> list[gast.stmt]:
        """``y[i] = v``: ``dy[i] = dv`` (zeros where v is constant)."""
        target = statement.targets[0]
        base = target.value.id
        if not self.active(base):
            return [statement]
        place = gast.Subscript(
            value=load(self.tangent(base)), slice=clone(target.slice), ctx=gast.Store()
        )
        value = statement.value
        tangent = self.tangent_of(value) if self.is_active_expression(value) else constant(0.0)
        lines = [statement]
        if base not in self.owned:  # the tangent may be a broadcast view, or another's tangent
            lines.append(self.own_tangent(base, statement))
            self.owned.add(base)
        return [*lines, assign(place, tangent, like=statement)]

    def own_tangent(self, variable: str, statement: gast.stmt) -> gast.stmt:
        """``dv = owned(dv)``: a private, writable copy of ``v``'s tangent."""
        tangent = self.tangent(variable)
        return assign(tangent, call(self.helper("owned"), [load(tangent)]), like=statement)

    # calls --------------------------------------------------------------------------------
    def call(self, statement, operation: Operation, names: list[str]) -> gast.stmt:
        function = operation.primitive
        if any(isinstance(a, gast.Starred) for a in operation.args):
            return self.dynamic_call(statement, operation, names)  # f(x, *rest)
        try:
            bound = numpy_signatures.signature(function).bind(*operation.args, **operation.keywords)
        except TypeError as error:
            raise UnsupportedError(f"{self.parsed.location(statement)}: {error}") from None
        for name, value in bound.arguments.items():
            if isinstance(value, dict) and any(map(self.is_active_expression, value.values())):
                raise UnsupportedError(
                    f"{self.parsed.location(statement)}: differentiated values passed to "
                    f"**{name} of {getattr(function, '__qualname__', function)}; pass them "
                    "to named parameters, or use mode='tape'"
                )
        bound.arguments.update(  # what *args takes: one tuple, with one tangent per entry
            (name, gast.Tuple(elts=list(value), ctx=gast.Load()))
            for name, value in bound.arguments.items()
            if isinstance(value, tuple)
        )
        active = tuple(
            name
            for name, value in bound.arguments.items()
            if isinstance(value, gast.AST) and self.is_active_expression(value)
        )
        try:
            jvp_function = self.callee_jvp(function, active)
        except S2SGradError as error:
            if getattr(error, "not_at_run_time", False):
                raise
            return self.dynamic_call(statement, operation, names)
        jvp_name = self.namespace.bind(jvp_function.__name__, jvp_function)
        keywords = dict(operation.keywords)
        for name in active:
            keywords[jvp_function.tangent_names[name]] = self.tangent_of(bound.arguments[name])
        return self.call_returning_tangents(
            statement, call(load(jvp_name), operation.args, keywords), names
        )

    def dynamic_call(self, statement, operation: Operation, names: list[str]) -> gast.stmt:
        if self.is_active_expression(operation.callee):
            raise not_at_run_time(
                UnsupportedError(
                    f"{self.parsed.location(statement)}: forward mode (jvp, hvp, hessian) "
                    f"cannot follow {operation.description}, whose function depends on the "
                    "values being differentiated (the pullback of a call resolved at run time, "
                    "such as a function passed as an argument); call the function by its "
                    "name, or use mode='auto' or mode='tape'"
                )
            )
        if keeps_arguments_inside(operation.primitive):
            raise not_at_run_time(
                UnsupportedError(
                    f"{self.parsed.location(statement)}: {operation.description}(...) keeps "
                    "differentiated values inside an object, which forward mode cannot "
                    "follow; call the function with them directly, or use mode='tape'"
                )
            )
        tangents = gast.Tuple(elts=[self.tangent_of(a) for a in operation.args], ctx=gast.Load())
        value = call(
            self.helper("dynamic_jvp" if self.dynamic else "transformed_jvp"),
            [clone(operation.callee), tangents, *operation.args],
            operation.keywords,
        )
        return self.call_returning_tangents(statement, value, names)

    def call_returning_tangents(self, statement, value, names) -> gast.stmt:
        target = statement.targets[0]
        primal = clone(target)
        tangent = self.tangent_target(target)
        new = assign(gast.Tuple(elts=[primal, tangent], ctx=gast.Store()), value, like=statement)
        return new

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


def _unstarred(element: gast.expr) -> gast.expr:
    return element.value if isinstance(element, gast.Starred) else element


def _name(primitive) -> str:
    name = getattr(primitive, "__name__", None) or "primitive"
    return name if name.isidentifier() else "primitive"


def _item_written(statements: list[gast.stmt]) -> set[str]:
    """The variables that ``statements`` (and the blocks in them) write items of."""
    return {b for s in nested_statements(statements) if (b := item_target_base(s)) is not None}


def _parameters(node: gast.FunctionDef) -> set[str]:
    args = node.args
    return {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}
