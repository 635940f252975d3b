"""Entries written into a dict the caller passes (``cache[k] = h``, ``stats[name] = m``):
the caller sees them change, which source transformation does not follow (it would
differentiate a private copy, whose item writes it takes for an array's). Such a call is
refused before any code is generated, so that mode="auto" differentiates it on the tape,
which leaves the primal values in the caller's dict. A write under a string literal
(``d['k'] = v``) marks a dict without the argument (``argument_updates``); this check
covers the others (``d[i] = v``, ``d[name] = v``), knowing the argument is a dict.

Example::

    refuse_writes_into_caller_dicts(f, (x, {}), {}, ("x",))  # raises if f writes d[i] = ...
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import gast

from s2sgrad.compiler.caller_dict_entries import rewritable_dict_parameters
from s2sgrad.compiler.frontend import parse_function
from s2sgrad.compiler.passes.mutation import changed_in_place
from s2sgrad.compiler.syntax import nested_statements
from s2sgrad.errors import S2SGradError, UnsupportedError

__all__ = ["refuse_writes_into_caller_dicts"]


def refuse_writes_into_caller_dicts(
    function: Any, args: tuple, kwargs: dict, wrt: tuple[str, ...]
) -> None:
    """Raise ``UnsupportedError`` naming the line when ``function`` writes an entry of a
    dict given for a parameter it is not differentiated with respect to."""
    if not isinstance(function, types.FunctionType):
        return
    dicts = _dict_parameters(function, args, kwargs, wrt)
    if not dicts:
        return
    try:
        parsed = parse_function(function)
    except S2SGradError:  # no source: refused, or taped, elsewhere
        return
    written = dicts & changed_in_place(parsed.node, parsed.resolve, arrays_only=True)
    followed = rewritable_dict_parameters(parsed.node, parsed, wrt)  # see caller_dict_entries
    written -= followed - _shared(followed, function, args, kwargs)
    for statement in nested_statements(parsed.node.body):
        name = _written_entry_of(statement)
        if name in written:
            raise UnsupportedError(
                f"{parsed.location(statement)}: this writes an entry of the dict '{name}' "
                f"that {function.__name__} is given, which its caller then sees; source "
                "transformation would change a copy of it instead: use mode='auto' or "
                "mode='tape', which leave the values in the caller's dict"
            )


def _dict_parameters(function, args: tuple, kwargs: dict, wrt) -> set[str]:
    """The parameters not in ``wrt`` that this call gives a dict."""
    if not any(isinstance(v, dict) for v in (*args, *kwargs.values())):
        return set()  # the common case, known without binding
    try:
        bound = inspect.signature(function).bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return set()
    return {
        name
        for name, value in bound.arguments.items()
        if name not in wrt and isinstance(value, dict)
    }


def _shared(names: set[str], function, args: tuple, kwargs: dict) -> set[str]:
    """The parameters in ``names`` whose dict the call also gives in another argument (or
    inside one): an entry stored through one parameter would be read through the other
    as a constant."""
    if not names:
        return set()
    bound = inspect.signature(function).bind_partial(*args, **kwargs).arguments
    shared = set()
    for name in names:
        others = [v for k, v in bound.items() if k != name]
        if any(_holds(value, bound[name]) for value in others):
            shared.add(name)
    return shared


def _holds(value: Any, target: dict, depth: int = 0) -> bool:
    """Whether ``value`` is ``target`` or holds it (in lists, tuples and dicts)."""
    if value is target:
        return True
    if depth > 8:
        return False
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds(v, target, depth + 1) for v in value)
    return False


def _written_entry_of(statement: gast.stmt) -> str | None:
    """``d`` of ``d[k] = v``, ``d[k][j] = v`` or ``d[k] += v``."""
    if type(statement) is gast.Assign and len(statement.targets) == 1:
        target = statement.targets[0]
    elif type(statement) is gast.AugAssign:
        target = statement.target
    else:
        return None
    if type(target) is not gast.Subscript:
        return None
    while type(target) is gast.Subscript:
        target = target.value
    return target.id if type(target) is gast.Name else None
