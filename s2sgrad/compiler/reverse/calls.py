"""Calls of other functions: differentiated by the callee's derivative, not by a rule.

A user function (or one with a custom derivative) is called through its VJP in the
forward sweep, ``y, y_saved = f_vjp(x)``, and its ``backward`` in the backward sweep,
``dx = f_vjp.backward(y_saved, dy)``. A call the transformer cannot resolve (a method, a
function passed as an argument) is dispatched when it runs: ``y, y_pullback =
dynamic_vjp(f, x)`` … ``cotangents = y_pullback(dy)``.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from s2sgrad import numpy_signatures
from s2sgrad.compiler.effects import (
    changes_state,
    is_library_function,
    not_at_run_time,
    stores_on_itself,
)
from s2sgrad.compiler.operations import (
    Operation,
    keeps_arguments_inside,
    named_values_moved_last,
    refuse_dispatched_keywords,
)
from s2sgrad.compiler.reverse.context import Context
from s2sgrad.compiler.reverse.cotangents import Cotangents
from s2sgrad.compiler.reverse.facts import target_names
from s2sgrad.compiler.steps import Derivative, Step
from s2sgrad.compiler.syntax import (
    assign,
    attribute,
    call,
    clone,
    constant,
    load,
    names_read,
    store,
    walk,
)
from s2sgrad.errors import S2SGradError, UnsupportedError
from s2sgrad.rules import get_rule
from s2sgrad.runtime.records import record_fields

__all__ = ["Calls", "CalleeVJP", "unnested"]

# (function, its differentiated parameters, the call, those of them given containers)
# → the callee's VJP: f_vjp(*args) returns (value, saved), f_vjp.backward(saved, g) cotangents
CalleeVJP = Callable[[Any, tuple[str, ...], gast.AST, frozenset], Any]

_DICT_VIEWS = ("items", "values", "keys")


class Calls:
    """The two halves of a call's derivative, one for each sweep.

    Example::

        calls.forward_call(step)  # y = f(x) → y, y_saved = f_vjp(x)
        calls.backward_call(step, load("dy"))  # [dx = f_vjp.backward(y_saved, dy)]
    """

    def __init__(self, context: Context, cotangents: Cotangents, callee_vjp: CalleeVJP):
        self.context = context
        self.parsed = context.parsed
        self.activity = context.activity
        self.names = context.names
        self.namespace = context.namespace
        self.helper = context.helper
        self.is_active_expression = context.is_active_expression
        self.cotangents = cotangents
        self.callee_vjp = callee_vjp

    def forward_call(self, step: Step) -> None:
        """``y = f(x)`` becomes ``y, y_saved = f_vjp(x)``: the callee's own derivative."""
        statement, operation = step.statement, step.computed
        function = operation.primitive
        active = self.active_parameters(function, operation, statement)
        bound = self.bind(function, operation, statement)
        containers = frozenset(
            name
            for name in active
            if isinstance(bound.arguments.get(name), _Placeholder)
            and isinstance(bound.arguments[name].node, gast.Name)
            and bound.arguments[name].node.id in self.context.containers
        )
        vjp_function = self.callee_vjp(function, active, statement, containers)
        vjp_name = self.namespace.bind(vjp_function.__name__, vjp_function)
        targets = target_names(statement.targets[0])
        stem = f"{targets[0]}_saved" if len(targets) == 1 else "saved"
        saved = self.names.claim(stem)
        self.retarget(statement, saved)
        statement.value = call(load(vjp_name), operation.args, operation.keywords)
        rule = get_rule(function)
        custom = rule is not None and rule.custom is not None
        if not custom:  # a generated derivative's cotangent of a list is a CotangentList
            self.context.structured |= self.parameters_passed_on(active, bound)
        step.derivative = Derivative.CUSTOM if custom else Derivative.GENERATED
        step.extra, step.active, step.vjp_name = saved, active, vjp_name

    def parameters_passed_on(self, active, bound) -> set[str]:
        """This function's parameters passed as they are to a callee's differentiated
        parameters. Called with ``params["layers"]``, a list, this function is compiled
        without knowing it holds one; the callee's cotangents for it are then added with
        ``add_cotangents``, which a derivative of this derivative can differentiate
        (``+`` of two lists is differentiated as of two arrays)."""
        passed = set()
        for name in active:
            argument = bound.arguments.get(name)
            if isinstance(argument, _Placeholder) and isinstance(argument.node, gast.Name):
                passed.add(argument.node.id)
        passed &= self.context.parameters
        if passed:  # one this function computes with (x * 2, x @ W) holds a number or array
            passed -= self.context.containers | _arithmetic_operands(self.parsed.node)
        return passed

    def forward_dynamic(self, step: Step, spread: bool = False) -> None:
        """A call resolved at run time: ``y, y_pullback = dynamic_vjp(f, *args)``.

        ``spread``: a call with starred arguments, which mode='s2s' (``self.context.dynamic``
        false) differentiates with ``transformed_vjp``, never with the tape.
        """
        statement, operation = step.statement, step.computed
        callee = operation.callee
        captures = any(n in self.activity.varied for n in names_read(callee))
        if captures and isinstance(callee, gast.Attribute) and callee.attr in _DICT_VIEWS:
            raise UnsupportedError(
                f"{self.parsed.location(statement)}: .{callee.attr}() of a dict of "
                "differentiated values can only be looped over ('for k, v in "
                "d.items():'); read entries by key (d[k]) elsewhere, or use mode='tape'"
            )
        if self.is_method_of_varied(callee):  # model.predict(x), model differentiated
            self.forward_method(step)
            return
        if isinstance(callee, gast.Name) and callee.id in self.activity.varied:
            # layer(x) of an object being differentiated: its class's __call__, with the
            # object first (a function held by a differentiated value: plain_callable's)
            operation.callee = attribute(clone(callee), "__call__")
            self.forward_method(step)
            return
        callee_node = clone(operation.callee)
        if any(n in self.activity.varied for n in names_read(operation.callee)):
            if isinstance(operation.callee, gast.Attribute):  # x.tolist(): x's own method
                raise not_at_run_time(
                    UnsupportedError(
                        f"{self.parsed.location(statement)}: {operation.description} is a "
                        "method of a value being differentiated, which the transformer "
                        "cannot follow; compute with NumPy functions instead, or use "
                        "mode='tape'"
                    )
                )
            # a function taken out of a differentiated value: called if it holds nothing
            callee_node = call(self.helper("plain_callable"), [callee_node])
        named = named_values_moved_last(operation, self.is_active_expression)
        if named:  # f(*args, w=y): y is passed last, and by name again when it runs
            names = gast.Tuple(elts=[constant(n) for n in named], ctx=gast.Load())
            callee_node = call(self.helper("keywords_at_the_end"), [callee_node, names])
        location = self.parsed.location(statement)
        refuse_dispatched_keywords(operation, self.is_active_expression, location)
        stores = stores_on_itself(self.parsed.resolve(operation.callee))
        if stores is not None:
            self.require_transformable(step, stores)
        if self.made_with_stores(operation):
            raise not_at_run_time(
                UnsupportedError(
                    f"{self.parsed.location(statement)}: {operation.description}(...) makes "
                    "an object of values being differentiated, in a function that also stores "
                    "on objects' attributes (or calls code of yours that may), which could "
                    "change what the object holds where no derivative follows; keep the "
                    "new values in variables, or use mode='tape'"
                )
            )
        if keeps_arguments_inside(operation.primitive):
            raise not_at_run_time(
                UnsupportedError(
                    f"{self.parsed.location(statement)}: {operation.description}(...) keeps "
                    "differentiated values inside an object, which the transformer cannot "
                    "follow; call the function with them directly (g(x, d), or map(partial("
                    "g, x), items) passed straight to sum/list/a loop), or use mode='tape'"
                )
            )
        targets = target_names(statement.targets[0])
        stem = f"{targets[0]}_pullback" if len(targets) == 1 else "pullback"
        pullback = self.names.claim(stem)
        self.retarget(statement, pullback)
        dispatch = "dynamic_vjp" if self.context.dynamic else "transformed_vjp"  # s2s: no tape
        statement.value = call(
            self.helper(dispatch), [callee_node, *operation.args], operation.keywords
        )
        step.derivative, step.extra = Derivative.DISPATCH, pullback

    def made_with_stores(self, operation) -> bool:
        """A record object (``runtime/records.py``) made from differentiated values in a
        function that also stores on objects' attributes: a store through another name
        (``q = p; q.w = v``) would change what ``p.w`` reads as the code runs, where only
        a refusal after steps already taken could follow; refused now, so that mode "auto"
        tapes the whole function."""
        if record_fields(operation.primitive) is None:
            return False
        return getattr(self.context, "stores_attributes", True) or self.calls_changing_state()

    def calls_changing_state(self) -> bool:
        """Whether the function calls code of the user's that may store on an object it is
        given (``update(p, g)`` storing ``p.w``): asked once per function."""
        known = self.__dict__.get("_changing_state")
        if known is None:
            known = False
            for statement in getattr(self.context, "nested", ()):
                for node in walk(statement):
                    if type(node) is not gast.Call:
                        continue
                    callee = self.parsed.resolve(node.func)
                    callee = getattr(callee, "__func__", callee)
                    if (
                        isinstance(callee, types.FunctionType)
                        and not is_library_function(callee)
                        and changes_state(callee)
                    ):
                        known = True
                        break
                if known:
                    break
            self.__dict__["_changing_state"] = known
        return known

    def require_transformable(self, step: Step, stores: str) -> None:
        """A layer that stores on itself is differentiated by source or not at all: the
        tape, for this call alone, would leave what it stores for the rest of the
        function to read as a constant (``mode="auto"`` then tapes the whole function)."""
        statement, operation = step.statement, step.computed
        obj = self.parsed.resolve(operation.callee)
        function = obj.__func__ if isinstance(obj, types.MethodType) else type(obj).__call__
        if any(isinstance(a, gast.Starred) for a in operation.args):
            return  # which parameters the arguments fill is known when it runs
        parameters = numpy_signatures.positional_parameters(function)[1:]
        active = tuple(
            name
            for name, argument in zip(parameters, operation.args)
            if self.is_active_expression(argument)
        )
        try:
            self.callee_vjp(function, active, statement, frozenset())
        except S2SGradError as error:
            raise not_at_run_time(
                UnsupportedError(
                    f"{self.parsed.location(statement)}: {stores}, and cannot be "
                    f"transformed by source ({error}); use mode='tape'"
                )
            ) from None

    def is_method_of_varied(self, callee: gast.expr) -> bool:
        """``obj.name`` of an object being differentiated, named unlike an array's method
        (``x.view()`` of an array without a rule stays refused, not dispatched)."""
        return (
            isinstance(callee, gast.Attribute)
            and isinstance(callee.value, gast.Name)
            and callee.value.id in self.activity.varied
            and not hasattr(np.ndarray, callee.attr)
        )

    def forward_method(self, step: Step) -> None:
        """``y = obj.name(x)`` of an object being differentiated: ``y, y_pullback =
        method_vjp(obj, "name", x)``, whose pullback gives ``obj`` its cotangent first."""
        statement, operation = step.statement, step.computed
        for name, value in operation.keywords.items():
            if self.is_active_expression(value):
                raise UnsupportedError(
                    f"{self.parsed.location(statement)}: pass differentiated values to "
                    f"{operation.description} positionally, not as "
                    + (f"'{name}='" if name is not None else "**keywords")
                )
        callee = operation.callee
        assert isinstance(callee, gast.Attribute)  # is_method_of_varied chose this step
        owner, name = callee.value, callee.attr
        targets = target_names(statement.targets[0])
        stem = f"{targets[0]}_pullback" if len(targets) == 1 else "pullback"
        pullback = self.names.claim(stem)
        self.retarget(statement, pullback)
        dispatch = "method_vjp" if self.context.dynamic else "transformed_method_vjp"
        arguments = [clone(owner), constant(name), *operation.args]
        statement.value = call(self.helper(dispatch), arguments, operation.keywords)
        operation.args = [clone(owner), *operation.args]  # the pullback's order
        step.derivative, step.extra = Derivative.DISPATCH, pullback

    def retarget(self, statement: gast.Assign, extra: str) -> None:
        """``y = f(x)`` becomes ``y, extra = ...`` (see :func:`unnested` for tuples)."""
        original = statement.targets[0]
        target = gast.Tuple(elts=[clone(original), store(extra)], ctx=gast.Store())
        for node in walk(target):
            if isinstance(node, gast.Name):
                node.ctx = gast.Store()
        statement.targets = [target]

    def active_parameters(self, function, operation: Operation, node) -> tuple[str, ...]:
        bound = self.bind(function, operation, node)
        active = []
        for name, value in bound.arguments.items():
            values = value.values() if isinstance(value, dict) else value
            values = values if isinstance(value, (tuple, dict)) else [value]
            if any(
                isinstance(v, _Placeholder) and self.is_active_expression(v.node) for v in values
            ):
                if isinstance(value, dict) and get_rule(function) is None:  # at the user's call
                    raise UnsupportedError(
                        f"{self.parsed.location(node)}: differentiated values passed to "
                        f"**{name} of {getattr(function, '__qualname__', function)}; pass "
                        "them to named parameters, or use mode='tape'"
                    )
                active.append(name)
        return tuple(active)

    def bind(self, function, operation, node):
        placeholders = [_Placeholder(a) for a in operation.args]
        keywords = {k: _Placeholder(v) for k, v in operation.keywords.items()}
        try:
            return numpy_signatures.signature(function).bind(*placeholders, **keywords)
        except TypeError as error:
            raise UnsupportedError(f"{self.parsed.location(node)}: {error}") from None

    def backward_call(self, step: Step, cotangent) -> list[gast.stmt]:
        statement, operation = step.statement, step.computed
        saved, active, vjp_name = _named(step.extra), step.active, _named(step.vjp_name)
        bound = self.bind(operation.primitive, operation, statement)
        block: list[gast.stmt] = []
        results = [
            self.names.claim("d" + _argument_stem(bound.arguments[name], name)) for name in active
        ]
        if len(results) == 1:
            target: gast.expr = store(results[0])
        else:
            target = gast.Tuple(elts=[store(r) for r in results], ctx=gast.Store())
        backward = call(attribute(load(vjp_name), "backward"), [load(saved), cotangent])
        block.append(assign(target, backward, like=statement))
        for name, result in zip(active, results):
            value = bound.arguments[name]
            if isinstance(value, _Placeholder):
                block.extend(self.cotangents.distribute(value.node, load(result), statement))
            elif isinstance(value, tuple):  # *args: the pullback returns a tuple for them
                for index, item in enumerate(value):
                    part = gast.Subscript(
                        value=load(result), slice=constant(index), ctx=gast.Load()
                    )
                    block.extend(self.cotangents.distribute(item.node, part, statement))
        return block

    def backward_dynamic(self, step: Step, cotangent) -> list[gast.stmt]:
        statement, pullback, args = step.statement, _named(step.extra), step.computed.args
        holder = self.names.fresh("cotangents")
        block = [assign(holder, call(load(pullback), [cotangent]), like=statement)]
        position: gast.expr = constant(0)  # where the argument's cotangents start
        for argument in args:
            if isinstance(argument, gast.Starred):  # *v: len(v) cotangents, one v's worth
                value = argument.value
                end = gast.BinOp(left=position, op=gast.Add(), right=call(load("len"), [value]))
                if self.is_active_expression(value):
                    parts = gast.Subscript(
                        value=load(holder),
                        slice=gast.Slice(lower=clone(position), upper=clone(end), step=None),
                        ctx=gast.Load(),
                    )
                    part = call(self.helper("unpack_cotangent"), [parts, clone(value)])
                    block.extend(self.cotangents.distribute(value, part, statement))
                position = end
                continue
            if self.is_active_expression(argument):
                part = gast.Subscript(value=load(holder), slice=clone(position), ctx=gast.Load())
                block.extend(self.cotangents.distribute(argument, part, statement))
            position = _plus_one(position)
        return block


def _arithmetic_operands(function: gast.FunctionDef) -> set[str]:
    """The names ``function`` uses as operands of arithmetic (``x * 2``, ``-x``, ``x @ W``)."""
    found: set[str] = set()
    for node in gast.walk(function):
        if isinstance(node, gast.BinOp):
            operands: tuple = (node.left, node.right)
        elif isinstance(node, gast.UnaryOp):
            operands = (node.operand,)
        else:
            continue
        found.update(o.id for o in operands if isinstance(o, gast.Name))
    return found


class _Placeholder:
    def __init__(self, node):
        self.node = node


def _argument_stem(value, parameter: str) -> str:
    """Name a callee's cotangent after the caller's argument when it is a plain name."""
    node = getattr(value, "node", None)
    return node.id if isinstance(node, gast.Name) else parameter


def _plus_one(position: gast.expr) -> gast.expr:
    if isinstance(position, gast.Constant):
        return constant(position.value + 1)
    return gast.BinOp(left=position, op=gast.Add(), right=constant(1))


def unnested(statements: list[gast.stmt], retargeted: dict, names) -> list[gast.stmt]:
    """``(a, b), saved = f_vjp(x)`` → ``value, saved = f_vjp(x)``; ``a, b = value``: code
    that is differentiated again then unpacks one level at a time."""
    result = []
    for statement in statements:
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                setattr(statement, field, unnested(inner, retargeted, names))
        original = retargeted.get(id(statement))
        if isinstance(statement, gast.Assign) and isinstance(original, gast.Tuple):
            value = names.fresh("value")
            statement.targets[0].elts[0] = store(value)
            result.append(statement)
            result.append(assign(clone(original), load(value), like=statement))
            continue
        result.append(statement)
    return result


def _named(name: str | None) -> str:
    """A name the forward sweep gave a call's step (its saved values, its pullback)."""
    if name is None:
        raise ValueError("a call's step without the names the forward sweep gives it")
    return name
