"""Derivative functions made inside differentiated code of closures over varied values.

``sg.grad(g)`` made inside a function being differentiated is a function of ``g``'s
arguments only: where ``g`` reads a value being differentiated (a local ``def`` or lambda
closing over ``x``), the derivative of ``x`` through it would be dropped. The sweeps keep
such a call as it is (its result is a function, not a value), so it is refused here, where
its result reaches the output.
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.block_walks import header_writes, statement_blocks
from s2sgrad.compiler.frontend import ParsedFunction
from s2sgrad.compiler.operations import dotted_name
from s2sgrad.compiler.passes.activity import Activity
from s2sgrad.compiler.passes.anf import is_function_reference
from s2sgrad.compiler.plain_values import reads_of_value
from s2sgrad.compiler.syntax import names_read, names_written, nested_statements
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
    definitions = None  # made at the first function maker: most functions call none
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
        if definitions is None:
            definitions = _local_functions(body)
        if any(
            not _closed_over(argument, definitions).isdisjoint(activity.varied)
            for argument in given
        ):
            maker = dotted_name(value.func)
            raise UnsupportedError(
                f"{parsed.location(statement)}: '{parsed.source_line(statement)}': {maker} "
                "is given a function that reads values being differentiated, and the function "
                f"it makes would take them as constants. Pass them as arguments instead "
                f"({maker}(g, wrt=1)(y, x) for g(y, x)), or use mode='tape'"
            )


def _local_functions(body: list[gast.stmt]) -> dict[str, gast.FunctionDef | gast.Lambda]:
    """The local ``def``s and lambdas (``t1 = lambda w, x: ...``, as normal form names them)
    of ``body``, by the name each binds, for the names bound once only."""
    found: dict[str, gast.FunctionDef | gast.Lambda] = {}
    bindings: dict[str, int] = {}
    for statement in nested_statements(body):
        # a compound statement's own bindings only: its blocks' statements come on their own
        blocks = statement_blocks(statement)
        written = header_writes(statement) if blocks else names_written(statement)
        for name in written if type(statement) is not gast.FunctionDef else ():
            bindings[name] = bindings.get(name, 0) + 1
        if type(statement) is gast.FunctionDef:
            bindings[statement.name] = bindings.get(statement.name, 0) + 1
            found[statement.name] = statement
        elif (
            type(statement) is gast.Assign
            and len(statement.targets) == 1
            and type(statement.targets[0]) is gast.Name
            and type(statement.value) is gast.Lambda
        ):
            found[statement.targets[0].id] = statement.value
    return {name: node for name, node in found.items() if bindings.get(name) == 1}


def _closed_over(argument: gast.expr, functions: dict) -> set[str]:
    """The names a function given to a function maker reads from the caller: a lambda's or
    a local ``def``'s free names (its defaults' and decorators' reads included; its own
    parameters, which may share a name with the caller's ``x``, are its own), else what
    the expression reads."""
    if type(argument) is gast.Name and argument.id in functions:
        argument = functions[argument.id]
    if type(argument) is gast.Lambda:
        return _free_reads(argument.args, [argument.body], [])
    if type(argument) is gast.FunctionDef:
        return _free_reads(argument.args, argument.body, argument.decorator_list)
    return reads_of_value(argument)


def _free_reads(arguments: gast.arguments, body: list, decorators: list) -> set[str]:
    parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    parameters += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    own = {a.id for a in parameters if type(a) is gast.Name}
    own |= set().union(*(names_written(s) for s in body if isinstance(s, gast.stmt)))
    read = set().union(*(names_read(part) for part in body)) - own
    outer = [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]
    return read.union(*(names_read(part) for part in [*outer, *decorators]))
