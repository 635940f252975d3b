"""Reverse mode: the forward sweep and the backward sweep of a normalised function.

The forward sweep is the primal code (calls to other user functions replaced by calls
to their own generated VJPs). The backward sweep visits the active statements in
reverse and, for each, inlines the derivative rule of what it computes: the cotangent
of its target flows into the cotangents of its operands. The first contribution to a
cotangent is assigned, later ones are added.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.errors import NonDifferentiableError, UnsupportedError
from s2sgrad.frontend import ParsedFunction
from s2sgrad.inline import Namespace, inline_rule
from s2sgrad.operations import Operation, classify, index_expression
from s2sgrad.passes.activity import Activity
from s2sgrad.passes.names import NameGenerator
from s2sgrad.syntax import (
    assign,
    call,
    clone,
    comment,
    constant,
    load,
    store,
)

__all__ = ["ReverseSweeps", "reverse_sweeps"]


@dataclass
class ReverseSweeps:
    """The pieces codegen assembles into a gradient or VJP function."""

    forward: list[gast.stmt]
    backward: list[gast.stmt]
    output: gast.expr  # the returned value(s) as atoms
    output_cotangent: str  # name the backward sweep reads the output's cotangent from
    adjoints: dict[str, str | None]  # wrt parameter → its cotangent's name (None: no path)
    seed_targets: list[tuple[str, int | None]] = field(default_factory=list)


CalleeVJP = Callable[[Any, tuple[str, ...], gast.AST], Any]


def reverse_sweeps(
    parsed: ParsedFunction,
    body: list[gast.stmt],
    wrt: list[str],
    activity: Activity,
    names: NameGenerator,
    namespace: Namespace,
    local_names: set[str],
    callee_vjp: CalleeVJP,
    containers: set[str] = frozenset(),
    aux: bool = False,
) -> ReverseSweeps:
    """Build the forward and backward sweeps of ``body`` differentiated wrt ``wrt``.

    ``callee_vjp(function, active_parameters, call_node)`` returns the compiled VJP
    (``value, pullback``) of a user function called with those parameters active.
    """
    sweeps = _Reverse(
        parsed, wrt, activity, names, namespace, local_names, callee_vjp, containers, aux
    )
    return sweeps.run(body)


class _Reverse:
    def __init__(
        self, parsed, wrt, activity, names, namespace, local_names, callee_vjp, containers, aux
    ):
        self.parsed = parsed
        self.wrt = wrt
        self.activity = activity
        self.names = names
        self.namespace = namespace
        self.local_names = local_names
        self.callee_vjp = callee_vjp
        self.containers = set(containers)
        self.aux = aux
        self.adjoint_names: dict[str, str] = {}
        self.defined: set[str] = set()
        self.np = namespace.bind("np", np)

    # names ------------------------------------------------------------------------------
    def adjoint(self, variable: str) -> str:
        if variable not in self.adjoint_names:
            self.adjoint_names[variable] = self.names.adjoint(variable)
        return self.adjoint_names[variable]

    def helper(self, name: str) -> gast.Name:
        return load(self.namespace.bind(name, getattr(runtime, name)))

    # driver -----------------------------------------------------------------------------
    def run(self, body: list[gast.stmt]) -> ReverseSweeps:
        *statements, final = body
        if not isinstance(final, gast.Return) or final.value is None:
            raise UnsupportedError(
                f"{self.parsed.location(final)}: the function must end with a 'return' of "
                "the value to differentiate"
            )
        forward: list[gast.stmt] = []
        for statement in statements:
            forward.extend(self.forward_statement(statement))
        output = final.value
        out_name = self.names.claim("dout") if True else ""
        self.adjoint_names_output = out_name
        blocks: list[list[gast.stmt]] = []
        self.seed_output(output, out_name, blocks, final)
        for statement in reversed(statements):
            block = self.backward_statement(statement)
            if block:
                blocks.append(block)
        backward = self.with_comments(blocks)
        adjoints = {w: (self.adjoint_names[w] if w in self.defined else None) for w in self.wrt}
        return ReverseSweeps(forward, backward, output, out_name, adjoints)

    def with_comments(self, blocks: list[list[gast.stmt]]) -> list[gast.stmt]:
        result: list[gast.stmt] = []
        last_line = None
        for block in blocks:
            line = getattr(block[0], "lineno", None)
            if line is not None and line != last_line:
                text = self.parsed.source_line(block[0])
                if text:
                    result.append(comment(f"grad of: {text}"))
                last_line = line
            result.extend(block)
        return result

    def seed_output(self, output, out_name, blocks, final) -> None:
        if isinstance(output, gast.Tuple):
            elements = output.elts[:1] if self.aux else output.elts
            block = []
            for index, element in enumerate(elements):
                if isinstance(element, gast.Name) and self.activity.is_active(element.id):
                    source = (
                        load(out_name)
                        if self.aux
                        else gast.Subscript(
                            value=load(out_name), slice=constant(index), ctx=gast.Load()
                        )
                    )
                    block.extend(self.contribute(element.id, source, final))
            if block:
                blocks.append(block)
        elif isinstance(output, gast.Name) and self.activity.is_active(output.id):
            self.adjoint_names[output.id] = out_name
            self.defined.add(output.id)

    # forward ----------------------------------------------------------------------------
    def forward_statement(self, statement: gast.stmt) -> list[gast.stmt]:
        if isinstance(statement, gast.Assign) and isinstance(
            statement.targets[0], (gast.Name, gast.Tuple, gast.List)
        ):
            targets = _target_names(statement.targets[0])
            if any(self.activity.is_active(t) for t in targets):
                operation = classify(statement.value, self.parsed, self.local_names)
                if operation.kind == "call":
                    return [self.forward_call(statement, operation)]
                if operation.kind == "no rule":
                    raise NonDifferentiableError(
                        f"{self.parsed.location(statement)}: {operation.description} has no "
                        "derivative rule; give it one with @s2sgrad.derivative(of=...), or "
                        "wrap the value in s2sgrad.stop_gradient if it needs none"
                    )
                if operation.kind == "unknown":
                    raise UnsupportedError(
                        f"{self.parsed.location(statement)}: cannot differentiate through "
                        f"{operation.description}; register a rule with "
                        "@s2sgrad.derivative, or use mode='tape'"
                    )
            return [statement]
        if isinstance(statement, (gast.Expr, gast.Pass, gast.Assert)):
            return [statement]
        if isinstance(statement, gast.Assign):
            return self.forbid_mutation(statement)
        written = _written(statement)
        if written & self.activity.active:
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: '{type(statement).__name__.lower()}' "
                "statements that compute differentiated values are not supported yet; "
                "use mode='tape'"
            )
        return [statement]

    def forbid_mutation(self, statement: gast.Assign) -> list[gast.stmt]:
        target = statement.targets[0]
        base = target
        while isinstance(base, (gast.Subscript, gast.Attribute)):
            base = base.value
        if isinstance(base, gast.Name) and base.id in self.parsed_parameters():
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: this assignment changes the argument "
                f"'{base.id}' in place, and inputs are never mutated; copy it first "
                f"('{base.id} = {base.id}.copy()') and update the copy"
            )
        if isinstance(base, gast.Name) and (
            base.id in self.activity.varied or self.activity.is_active(base.id)
        ):
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: in-place updates of differentiated "
                "arrays are not supported yet; build the array with np.where / "
                "np.concatenate, or use mode='tape'"
            )
        return [statement]

    def parsed_parameters(self) -> set[str]:
        args = self.parsed.node.args
        return {a.id for a in args.args + args.kwonlyargs}

    def forward_call(self, statement: gast.Assign, operation: Operation) -> gast.stmt:
        function = operation.primitive
        active = self.active_parameters(function, operation, statement)
        vjp_function = self.callee_vjp(function, active, statement)
        vjp_name = self.namespace.bind(f"{function.__name__}_vjp", vjp_function)
        targets = _target_names(statement.targets[0])
        pullback = self.names.claim(f"{targets[0]}_pullback" if len(targets) == 1 else "pullback")
        statement._s2s_pullback = (pullback, active, operation)
        new_value = call(load(vjp_name), operation.args, operation.keywords)
        target = gast.Tuple(elts=[clone(statement.targets[0]), store(pullback)], ctx=gast.Store())
        for node in gast.walk(target):
            if isinstance(node, gast.Name):
                node.ctx = gast.Store()
        result = assign(target, new_value, like=statement)
        result._s2s_pullback = statement._s2s_pullback
        statement._s2s_forward = result
        return result

    def active_parameters(self, function, operation: Operation, node) -> tuple[str, ...]:
        import inspect

        signature = inspect.signature(function)
        placeholders = [_Placeholder(a) for a in operation.args]
        keywords = {k: _Placeholder(v) for k, v in operation.keywords.items()}
        try:
            bound = signature.bind(*placeholders, **keywords)
        except TypeError as error:
            raise UnsupportedError(f"{self.parsed.location(node)}: {error}") from None
        active = []
        for name, value in bound.arguments.items():
            values = value if isinstance(value, (tuple, dict)) else [value]
            values = values.values() if isinstance(values, dict) else values
            if any(
                isinstance(v, _Placeholder) and self.is_active_expression(v.node) for v in values
            ):
                active.append(name)
        return tuple(active)

    def is_active_expression(self, node: gast.expr) -> bool:
        return any(
            isinstance(n, gast.Name) and self.activity.is_active(n.id) for n in gast.walk(node)
        )

    # backward ---------------------------------------------------------------------------
    def contribute(self, variable: str, value: gast.expr, like: gast.AST) -> list[gast.stmt]:
        name = self.adjoint(variable)
        if variable not in self.defined:
            self.defined.add(variable)
            return [assign(name, value, like=like)]
        if variable in self.containers:
            total = call(self.helper("add_cotangents"), [load(name), value])
        else:
            total = gast.BinOp(left=load(name), op=gast.Add(), right=value)
        return [assign(name, total, like=like)]

    def backward_statement(self, statement: gast.stmt) -> list[gast.stmt]:
        if not isinstance(statement, gast.Assign):
            return []
        target = statement.targets[0]
        if not isinstance(target, (gast.Name, gast.Tuple, gast.List)):
            return []
        targets = _target_names(target)
        if not any(t in self.defined and self.activity.is_active(t) for t in targets):
            return []
        if isinstance(target, gast.Name):
            cotangent: gast.expr = load(self.adjoint(target.id))
        else:
            cotangent = gast.Tuple(
                elts=[
                    load(self.adjoint(t)) if t in self.defined else constant(None) for t in targets
                ],
                ctx=gast.Load(),
            )
        answer: gast.expr = clone(target)
        for node in gast.walk(answer):
            if isinstance(node, gast.Name):
                node.ctx = gast.Load()
        block: list[gast.stmt] = []
        for t in targets:
            self.defined.discard(t)  # earlier values of t have cotangents of their own
        if any(_reads(arg, t) for arg in [statement.value] for t in targets):
            saved = self.names.fresh("g")
            block.append(assign(saved, cotangent, like=statement))
            cotangent = load(saved)
        pullback = getattr(getattr(statement, "_s2s_forward", None), "_s2s_pullback", None)
        if pullback is not None:
            block.extend(self.backward_call(statement, cotangent, pullback))
            return block
        operation = classify(statement.value, self.parsed, self.local_names)
        if operation.kind == "copy":
            block.extend(self.contribute(operation.args[0].id, cotangent, statement))
        elif operation.kind == "pack":
            for index, element in enumerate(operation.args):
                if isinstance(element, gast.Name) and self.activity.is_active(element.id):
                    part = gast.Subscript(value=cotangent, slice=constant(index), ctx=gast.Load())
                    block.extend(self.contribute(element.id, part, statement))
        elif operation.kind == "primitive" and operation.differentiable:
            block.extend(self.backward_primitive(statement, operation, cotangent, answer))
        elif operation.kind in ("unknown",):
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: cannot differentiate through "
                f"{operation.description}; use mode='tape'"
            )
        return block

    def backward_primitive(self, statement, operation, cotangent, answer) -> list[gast.stmt]:
        rule = operation.rule
        if rule is None or rule.vjp is None:
            raise NonDifferentiableError(
                f"{self.parsed.location(statement)}: {_describe(operation.primitive)} has no "
                "derivative rule; register one with @s2sgrad.derivative(of=...), or wrap "
                "the value in s2sgrad.stop_gradient if it needs none"
            )
        args = [self.numpy_names(a) for a in operation.args]
        wanted = {
            i
            for i, a in enumerate(args)
            if self.is_active_expression(a) and not isinstance(a, gast.Constant)
        }
        if not wanted:
            return []
        inlined = None
        if rule.inline_vjp:
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
        block: list[gast.stmt] = []
        if inlined is None:
            primitive = load(
                self.namespace.bind(_primitive_name(operation.primitive), operation.primitive)
            )
            result = self.names.fresh("cotangents")
            block.append(
                assign(
                    result,
                    call(
                        self.helper("vjp_call"),
                        [primitive, cotangent, answer, *args],
                        operation.keywords,
                    ),
                    like=statement,
                )
            )
            entries = [
                gast.Subscript(value=load(result), slice=constant(i), ctx=gast.Load())
                for i in range(len(args))
            ]
        else:
            for s in inlined.statements:
                block.append(_locate_all(s, statement))
            entries = inlined.entries
        for index in sorted(wanted):
            entry = entries[index] if index < len(entries) else None
            if entry is None:
                continue
            block.extend(self.distribute(args[index], entry, statement))
        return block

    def distribute(self, argument: gast.expr, value: gast.expr, like) -> list[gast.stmt]:
        """Send ``value`` to the cotangents of the active names inside ``argument``."""
        if isinstance(argument, gast.Name):
            if self.activity.is_active(argument.id):
                return self.contribute(argument.id, value, like)
            return []
        if isinstance(argument, (gast.Tuple, gast.List)):
            block = []
            if not isinstance(value, (gast.Tuple, gast.List, gast.Name)):
                holder = self.names.fresh("parts")
                block.append(assign(holder, value, like=like))
                value = load(holder)
            for index, element in enumerate(argument.elts):
                if not self.is_active_expression(element):
                    continue
                if isinstance(value, (gast.Tuple, gast.List)):
                    part = value.elts[index]
                else:
                    part = gast.Subscript(
                        value=clone(value), slice=constant(index), ctx=gast.Load()
                    )
                block.extend(self.distribute(element, part, like))
            return block
        return []

    def backward_call(self, statement, cotangent, pullback_info) -> list[gast.stmt]:
        pullback, active, operation = pullback_info
        import inspect

        signature = inspect.signature(operation.primitive)
        bound = signature.bind(
            *[_Placeholder(a) for a in operation.args],
            **{k: _Placeholder(v) for k, v in operation.keywords.items()},
        )
        block: list[gast.stmt] = []
        results = [self.names.fresh("d_" + name) for name in active]
        if len(results) == 1:
            target: gast.expr = store(results[0])
        else:
            target = gast.Tuple(elts=[store(r) for r in results], ctx=gast.Store())
        block.append(assign(target, call(load(pullback), [cotangent]), like=statement))
        for name, result in zip(active, results):
            value = bound.arguments[name]
            if isinstance(value, _Placeholder):
                block.extend(self.distribute(value.node, load(result), statement))
            elif isinstance(value, tuple):  # *args: the pullback returns a tuple for them
                for index, item in enumerate(value):
                    part = gast.Subscript(
                        value=load(result), slice=constant(index), ctx=gast.Load()
                    )
                    block.extend(self.distribute(item.node, part, statement))
        return block

    def numpy_names(self, node: gast.expr) -> gast.expr:
        """Rewrite the ``np`` of ``np.s_[...]`` index expressions to this module's name."""
        if self.np != "np":
            for child in gast.walk(node):
                if isinstance(child, gast.Attribute) and child.attr == "s_":
                    child.value = load(self.np)
        return node


class _Placeholder:
    def __init__(self, node):
        self.node = node


def _target_names(target: gast.expr) -> list[str]:
    if isinstance(target, gast.Name):
        return [target.id]
    return [e.id for e in target.elts if isinstance(e, gast.Name)]


def _written(statement: gast.stmt) -> set[str]:
    from s2sgrad.syntax import names_written

    return names_written(statement)


def _reads(node: gast.AST, name: str) -> bool:
    return any(isinstance(n, gast.Name) and n.id == name for n in gast.walk(node))


def _locate_all(statement: gast.stmt, like: gast.AST) -> gast.stmt:
    for node in gast.walk(statement):
        if "lineno" in getattr(node, "_attributes", ()):
            node.lineno = like.lineno
            node.col_offset = 0
            node.end_lineno = like.lineno
            node.end_col_offset = 0
    return statement


def _describe(primitive) -> str:
    name = getattr(primitive, "__qualname__", None) or getattr(primitive, "__name__", None)
    module = getattr(primitive, "__module__", None)
    if name and module == "_operator":
        return f"the operator {name}"
    return f"{module}.{name}" if name and module else repr(primitive)


def _primitive_name(primitive) -> str:
    name = getattr(primitive, "__name__", None) or "primitive"
    return name if name.isidentifier() else "primitive"


_ = (operator, index_expression)
