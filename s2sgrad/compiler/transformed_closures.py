"""Derivative functions made inside differentiated code of closures over varied values.

``sg.grad(g)`` made inside a function being differentiated is a function of ``g``'s
arguments only: where ``g`` reads a value being differentiated (a local ``def`` or lambda
closing over ``x``), the derivative of ``x`` through it would be dropped. The sweeps keep
such a call as it is (its result is a function, not a value), so it is refused here, where
its result reaches the output.
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.frontend import ParsedFunction
from s2sgrad.compiler.operations import dotted_name
from s2sgrad.compiler.passes.activity import Activity
from s2sgrad.compiler.passes.anf import is_function_reference
from s2sgrad.compiler.plain_values import reads_of_value
from s2sgrad.compiler.syntax import nested_statements
from s2sgrad.errors import UnsupportedError
from s2sgrad.rules.registry import is_function_maker

__all__ = ["refuse_transformed_closures"]


def refuse_transformed_closures(
    body: list[gast.stmt], parsed: ParsedFunction, local_names: set[str], activity: Activity
) -> None:
    """Refuse ``t = sg.grad(g)`` (or another function maker) whose ``g`` reads values being
    differentiated, when ``t`` reaches the output.

    Example::

        refuse_transformed_closures(node.body, parsed, local_names, activity)
    """
    for statement in nested_statements(body):
        if type(statement) is not gast.Assign or type(statement.value) is not gast.Call:
            continue
        target, value = statement.targets[0], statement.value
        if type(target) is not gast.Name or target.id not in activity.useful:
            continue
        if not is_function_reference(value.func, local_names):
            continue
        if not is_function_maker(parsed.resolve(value.func)):
            continue
        given = [*value.args, *(keyword.value for keyword in value.keywords)]
        if any(not reads_of_value(argument).isdisjoint(activity.varied) for argument in given):
            maker = dotted_name(value.func)
            raise UnsupportedError(
                f"{parsed.location(statement)}: '{parsed.source_line(statement)}': {maker} "
                "is given a function that reads values being differentiated, and the function "
                f"it makes would take them as constants. Pass them as arguments instead "
                f"({maker}(g, wrt=1)(y, x) for g(y, x)), or use mode='tape'"
            )
