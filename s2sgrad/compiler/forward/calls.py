"""Tangents of calls: a user function's generated JVP, or a dispatch when the call runs.

``y = f(x)`` becomes ``y, dy = f_jvp(x, dx=dx)``; a call the transformer cannot resolve
(a method, a function passed as an argument) becomes ``y, dy = dynamic_jvp(f, (dx,), x)``.
"""

from __future__ import annotations

import gast
import numpy as np

from s2sgrad import numpy_signatures
from s2sgrad.compiler.effects import not_at_run_time
from s2sgrad.compiler.operations import (
    Operation,
    drop_receiver,
    keeps_arguments_inside,
    named_values_moved_last,
    refuse_dispatched_keywords,
)
from s2sgrad.compiler.syntax import assign, attribute, call, clone, constant, load, names_written
from s2sgrad.errors import S2SGradError, UnsupportedError

__all__ = ["generated_call", "dynamic_call"]


def generated_call(sweep, statement, operation: Operation, names: list[str]) -> gast.stmt:
    """``y, dy = f_jvp(x, dx=dx)``: the callee's own generated JVP (dispatched when the
    call runs if that cannot be made)."""
    function = operation.primitive
    if any(isinstance(a, gast.Starred) for a in operation.args):
        drop_receiver(operation)
        return dynamic_call(sweep, statement, operation, names)  # f(x, *rest)
    try:
        bound = numpy_signatures.signature(function).bind(*operation.args, **operation.keywords)
    except TypeError as error:
        raise UnsupportedError(f"{sweep.parsed.location(statement)}: {error}") from None
    for name, value in bound.arguments.items():
        if isinstance(value, dict) and any(map(sweep.is_active_expression, value.values())):
            raise UnsupportedError(
                f"{sweep.parsed.location(statement)}: differentiated values passed to "
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
        if isinstance(value, gast.AST) and sweep.is_active_expression(value)
    )
    try:
        jvp_function = sweep.callee_jvp(function, active)
    except S2SGradError as error:
        # s2sgrad's pytree functions (sg.tree_flatten) are not dispatched again as the call
        # runs: transformed there, their refusal named s2sgrad's line, or the tangent was lost
        if getattr(error, "not_at_run_time", False) or _is_own_pytree_function(function):
            raise _own_callee_refused_at(error, function, sweep, statement) from None
        drop_receiver(operation)
        return dynamic_call(sweep, statement, operation, names)
    jvp_name = sweep.namespace.bind(jvp_function.__name__, jvp_function)
    keywords = dict(operation.keywords)
    for name in active:
        keywords[jvp_function.tangent_names[name]] = sweep.tangent_of(bound.arguments[name])
    return _returning_tangents(
        sweep, statement, call(load(jvp_name), operation.args, keywords), names
    )


def _is_own(function) -> bool:
    """Whether ``function`` is s2sgrad's own (``sg.constant``, ``sg.tree_flatten``)."""
    return (getattr(function, "__module__", None) or "").startswith("s2sgrad.")


def _is_own_pytree_function(function) -> bool:
    """Whether ``function`` is one of s2sgrad's pytree functions (``sg.tree_leaves``)."""
    return getattr(function, "__module__", None) == "s2sgrad.pytrees"


def _own_callee_refused_at(error: S2SGradError, function, sweep, statement) -> S2SGradError:
    """A refusal met inside s2sgrad's own code (``sg.constant`` called by the user's
    function), said at the user's call rather than at s2sgrad's line; any other as it is."""
    if not _is_own(function) or str(error).startswith(
        sweep.parsed.location(statement).rsplit(":", 1)[0]
    ):
        return error
    name = getattr(function, "__qualname__", None) or repr(function)
    refusal = type(error)(
        f"{sweep.parsed.location(statement)}: forward mode (jvp, hvp, hessian) by source "
        f"transformation cannot differentiate through s2sgrad's own {name} ({error}); use "
        "mode='auto' or mode='tape'"
    )
    refusal.__dict__.update(error.__dict__)
    return refusal


def dynamic_call(sweep, statement, operation: Operation, names: list[str]) -> gast.stmt:
    """``y, dy = dynamic_jvp(f, (dx,), x)``: the derivative found when the call runs."""
    callee = clone(operation.callee)
    if _is_method_of_active(sweep, operation.callee):  # model.loss(x), model differentiated
        return method_call(sweep, statement, operation, names)
    if isinstance(operation.callee, gast.Name) and sweep.active(operation.callee.id):
        # layer(x) of an object being differentiated: its class's __call__ (the reverse
        # sweep's forward_dynamic says why)
        operation.callee = attribute(clone(operation.callee), "__call__")
        return method_call(sweep, statement, operation, names)
    if sweep.is_active_expression(operation.callee):
        if isinstance(operation.callee, gast.Attribute):  # x.tolist(): x's own method
            raise not_at_run_time(
                UnsupportedError(
                    f"{sweep.parsed.location(statement)}: forward mode (jvp, hvp, hessian) "
                    f"cannot follow {operation.description}, a method of a value being "
                    "differentiated; compute with NumPy functions instead, or use "
                    "mode='auto' or mode='tape'"
                )
            )
        # a function taken out of a differentiated value: called if it holds nothing
        callee = call(sweep.helper("plain_callable"), [callee])
    if keeps_arguments_inside(operation.primitive):
        raise not_at_run_time(
            UnsupportedError(
                f"{sweep.parsed.location(statement)}: {operation.description}(...) keeps "
                "differentiated values inside an object, which forward mode cannot "
                "follow; call the function with them directly, or use mode='tape'"
            )
        )
    named = named_values_moved_last(operation, sweep.is_active_expression)
    if named:  # f(*args, w=y): y is passed last, and by name again when it runs
        names = gast.Tuple(elts=[constant(n) for n in named], ctx=gast.Load())
        callee = call(sweep.helper("keywords_at_the_end"), [callee, names])
    if any(n in sweep.activity.useful for n in names_written(statement.targets[0])):
        location = sweep.parsed.location(statement)
        refuse_dispatched_keywords(operation, sweep.is_active_expression, location)
    tangents = gast.Tuple(elts=[sweep.tangent_of(a) for a in operation.args], ctx=gast.Load())
    value = call(
        sweep.helper("dynamic_jvp" if sweep.dynamic else "transformed_jvp"),
        [callee, tangents, *operation.args],
        operation.keywords,
    )
    return _returning_tangents(sweep, statement, value, names)


def _is_method_of_active(sweep, callee: gast.expr) -> bool:
    """``obj.name`` of an object being differentiated, named unlike an array's method (as
    the reverse sweep's ``is_method_of_varied``)."""
    return (
        isinstance(callee, gast.Attribute)
        and isinstance(callee.value, gast.Name)
        and sweep.active(callee.value.id)
        and not hasattr(np.ndarray, callee.attr)
    )


def method_call(sweep, statement, operation: Operation, names: list[str]) -> gast.stmt:
    """``y, dy = transformed_method_jvp(obj, "name", (dobj, dx), x)`` for ``y =
    obj.name(x)`` of an object being differentiated: its class's method differentiated
    with ``obj`` as its first argument when the call runs."""
    drop_receiver(operation)
    callee = operation.callee
    assert isinstance(callee, gast.Attribute)  # _is_method_of_active chose it
    for name, value in operation.keywords.items():
        if sweep.is_active_expression(value):
            raise not_at_run_time(
                UnsupportedError(
                    f"{sweep.parsed.location(statement)}: pass differentiated values to "
                    f"{operation.description} positionally, not as "
                    + (f"'{name}='" if name is not None else "**keywords")
                    + ", or use mode='tape'"
                )
            )
    if any(isinstance(a, gast.Starred) for a in operation.args):
        raise not_at_run_time(
            UnsupportedError(
                f"{sweep.parsed.location(statement)}: forward mode (jvp, hvp, hessian) "
                f"cannot follow {operation.description} given starred arguments, a method "
                "of a value being differentiated; pass them one by one, or use "
                "mode='auto' or mode='tape'"
            )
        )
    owner = callee.value
    tangents = gast.Tuple(
        elts=[sweep.tangent_of(owner), *(sweep.tangent_of(a) for a in operation.args)],
        ctx=gast.Load(),
    )
    helper = "method_jvp" if sweep.dynamic else "transformed_method_jvp"
    value = call(
        sweep.helper(helper),
        [clone(owner), constant(callee.attr), tangents, *operation.args],
        operation.keywords,
    )
    return _returning_tangents(sweep, statement, value, names)


def _returning_tangents(sweep, statement, value, names) -> gast.stmt:
    target = statement.targets[0]
    primal = clone(target)
    tangent = sweep.tangent_target(target)
    new = assign(gast.Tuple(elts=[primal, tangent], ctx=gast.Store()), value, like=statement)
    return new
