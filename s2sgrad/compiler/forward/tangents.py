"""The tangent of one statement, written from its primitive's JVP rule.

``y = np.sin(t1)`` gets ``dy = dt1 * np.cos(t1)``: the sum, over the differentiated
operands, of the rule's entry for each, inlined with the call's names (or called through
``jvp_entry`` where it cannot be). Copies, literals and ``items.pop()`` pass tangents on.
"""

from __future__ import annotations

import gast

from s2sgrad import runtime
from s2sgrad.compiler.inline import inline_rule
from s2sgrad.compiler.operations import (
    Operation,
    OperationKind,
    refuse_differentiated_keywords,
    refuse_missing_entry,
    refuse_refused_arguments,
)
from s2sgrad.compiler.syntax import attribute, call, clone, constant, load, walk
from s2sgrad.errors import NonDifferentiableError, UnsupportedError

__all__ = ["rule_tangent"]


def rule_tangent(sweep, statement, operation: Operation) -> gast.expr:
    """The tangent of ``statement``'s value (statements an inlined rule needs first go
    to ``sweep.pending``).

    Example::

        rule_tangent(sweep, parse_statement("y = np.sin(t1)"), operation)  # dt1 * np.cos(t1)
    """
    if operation.kind is OperationKind.COPY:
        return sweep.tangent_of(operation.args[0])
    if operation.kind is OperationKind.PACK:
        tangents = [sweep.tangent_of(a) for a in operation.args]
        if operation.keys is not None:
            return gast.Dict(keys=[constant(k) for k in operation.keys], values=tangents)
        if isinstance(statement.value, gast.Tuple):
            return gast.Tuple(elts=tangents, ctx=gast.Load())
        return gast.List(elts=tangents, ctx=gast.Load())
    if operation.kind is OperationKind.LIST_POP:
        owner = operation.args[0].id
        return call(attribute(load(sweep.tangent(owner)), "pop"))
    if operation.primitive is runtime.add_cotangents:  # containers add leaf by leaf
        return call(sweep.helper("add_cotangents"), [sweep.tangent_of(a) for a in operation.args])
    rule = operation.rule
    if rule is None or rule.jvp is None:
        _refuse_own_custom_derivative(sweep, statement, operation.primitive)
        raise NonDifferentiableError(
            f"{sweep.parsed.location(statement)}: {operation.primitive!r} has no JVP rule "
            "for forward mode; give it one (@sg.derivative(of=..., jvp=...)), or use "
            "mode='tape'"
        )
    answer = clone(statement.targets[0])
    for node in walk(answer):
        if isinstance(node, gast.Name):
            node.ctx = gast.Load()
    refuse_differentiated_keywords(
        operation, sweep.is_active_expression, sweep.parsed.location(statement)
    )
    contributions = []
    differentiated = tuple(
        sweep.is_active_expression(a) and not isinstance(a, gast.Constant) for a in operation.args
    )
    refuse_refused_arguments(
        operation,
        {i for i, moving in enumerate(differentiated) if moving},
        sweep.parsed.location(statement),
    )
    for index, argument in enumerate(operation.args):
        if not differentiated[index] or index in rule.zero_by_design:
            continue  # a zero by design: an integer argument, np.full_like's a
        tangent = sweep.tangent_of(argument)
        inlined = None
        if rule.inline_jvp:
            inlined = inline_rule(
                rule.jvp,
                tangent,
                answer,
                list(operation.args),
                operation.keywords,
                {index},
                sweep.names,
                sweep.namespace,
                differentiated,
            )
        if inlined is not None:
            if inlined.entries[index] is not None:  # None: not differentiable in it
                sweep.pending.extend(inlined.statements)
                contributions.append(inlined.entries[index])
            else:
                refuse_missing_entry(operation, index, sweep.parsed, statement)
        else:
            primitive = load(sweep.namespace.bind(_name(operation.primitive), operation.primitive))
            contributions.append(
                call(
                    sweep.helper("jvp_entry"),
                    [primitive, constant(index), tangent, answer, *operation.args],
                    operation.keywords,
                )
            )
    if not contributions:
        return call(sweep.helper("zeros_like_value"), [answer])
    # a rule of several outputs gives one tangent per output: add them entry by entry
    # (``+`` would join the tuples, np.linalg.lstsq(a, b) losing b's tangent)
    entrywise = not rule.inline_jvp or any(isinstance(c, gast.Tuple) for c in contributions)
    total = contributions[0]
    for contribution in contributions[1:]:
        if entrywise:
            total = call(sweep.helper("add_cotangents"), [total, contribution])
        else:
            total = gast.BinOp(left=total, op=gast.Add(), right=contribution)
    return total


def _refuse_own_custom_derivative(sweep, statement, primitive) -> None:
    """Forward mode over the gradient of s2sgrad's own reverse-only derivative (a loop over
    ``sg.checkpointed(range(n))``): refused naming it, rather than as a rule to register."""
    own = isinstance(primitive, runtime.custom_vjp)
    function = getattr(primitive, "function", None) if own else None
    if function is None:
        return
    if not getattr(function, "__module__", "").startswith("s2sgrad."):
        # the user's reverse rule: its pullback would be differentiated again
        name = getattr(function, "__qualname__", "the function")
        raise UnsupportedError(
            f"{sweep.parsed.location(statement)}: forward mode (jvp, hvp, hessian) over the "
            f"gradient of {name}, whose derivative is registered as a pullback "
            f"(@sg.derivative(of={name}) or @sg.custom_gradient), differentiates that "
            "pullback again, which source transformation does not do; use mode='auto' or "
            "mode='tape' (which differentiate it as it runs)"
        )
    looped = function is runtime.run_checkpointed
    what = "a loop over s2sgrad.checkpointed(...)" if looped else "it"
    raise UnsupportedError(
        f"{sweep.parsed.location(statement)}: forward mode (jvp, hvp, hessian) over the "
        f"gradient of {what} is not supported by source transformation; use mode='auto' or "
        "mode='tape'"
    )


def _name(primitive) -> str:
    name = getattr(primitive, "__name__", None) or "primitive"
    return name if name.isidentifier() else "primitive"
