"""A function taken out of a value being differentiated (``out = stats(x); out[3](y)``),
called where it runs: allowed when it can hold no value, so that differentiating the call
with respect to its arguments alone misses nothing.

Example::

    plain_callable(np.sum)  # np.sum
    plain_callable(lambda v: v * x)  # UnsupportedError: it holds x
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from s2sgrad.errors import UnsupportedError
from s2sgrad.rules.registry import get_rule, nondifferentiable
from s2sgrad.running import running_origin
from s2sgrad.runtime.forward_pullbacks import PullbackWithTangent

__all__ = ["plain_callable"]


def plain_callable(function: Any) -> Any:
    """``function`` itself when it holds no value (a NumPy or builtin function, a rule's
    function, a function whose closure, defaults and bound object hold only functions,
    modules, classes, strings, integers and the like); else ``UnsupportedError``.

    Example::

        plain_callable(math.exp)  # math.exp
    """
    if not isinstance(function, type) and _holds_nothing(function, depth=0):
        return function  # (a class would make an object of the values it is given)
    if isinstance(function, PullbackWithTangent):  # it carries the tangents of its values
        return function
    error = UnsupportedError(
        f"{running_origin('the differentiated function')}: the function called here was "
        f"taken out of a value being differentiated, and {_described(function)} holds "
        "values of its own, which the transformer cannot follow; pass those values to it "
        "as arguments, or use mode='tape'"
    )
    error.whole_function_on_tape = True  # mode="auto": the tape follows what it holds
    raise error


nondifferentiable(plain_callable)


def holds_values(function: Any) -> bool:
    """Whether ``function`` (not a class) may hold values of its own (a closure over an
    array, a ``partial`` of one, a bound method of an object), which a call of it may
    compute with.

    Example::

        holds_values(np.sum)  # False
    """
    return not isinstance(function, type) and not _holds_nothing(function, depth=0)


_ATOMS = (str, bytes, int, bool, type(None), type(Ellipsis), type, types.ModuleType)


def _holds_nothing(value: Any, depth: int) -> bool:
    if depth > 8:  # functions referring to each other: hold nothing found so far
        return True
    if isinstance(value, _ATOMS) and not isinstance(value, np.generic):
        return True
    if isinstance(value, np.ufunc) or (callable(value) and get_rule(value) is not None):
        return True  # (a value being differentiated on the tape must not be hashed)
    if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        owner = getattr(value, "__self__", None)
        return owner is None or isinstance(owner, types.ModuleType)
    if isinstance(value, types.FunctionType):
        cells = [cell.cell_contents for cell in value.__closure__ or () if _filled(cell)]
        defaults = [*(value.__defaults__ or ()), *(value.__kwdefaults__ or {}).values()]
        return all(_holds_nothing(v, depth + 1) for v in cells + defaults)
    if isinstance(value, types.MethodType):
        return _holds_nothing(value.__self__, depth + 1) and _holds_nothing(
            value.__func__, depth + 1
        )
    if isinstance(value, functools.partial):
        parts = [value.func, *value.args, *value.keywords.values()]
        return all(_holds_nothing(v, depth + 1) for v in parts)
    if isinstance(value, (tuple, frozenset)):
        return all(_holds_nothing(v, depth + 1) for v in value)
    return False  # a float, an array, a list, an object: a value it may compute with


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


def _described(function: Any) -> str:
    name = getattr(function, "__qualname__", None) or type(function).__name__
    return f"'{name}'"
