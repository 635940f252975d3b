"""Calls whose effects neither derivative sweep follows, refused where they matter.

A call kept only for what it does (``obj.store(x)``, its result unused), a call of an
object or method that stores on itself, a call dispatched at run time that would be handed
differentiated values out of sight: both reverse and forward mode ask this module.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import logging
import sys
import types
import warnings
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.frontend import NOT_FOUND, parse_function
from s2sgrad.compiler.operations import OperationKind, classify
from s2sgrad.compiler.syntax import method_receiver, walk
from s2sgrad.errors import S2SGradError, UnsupportedError

__all__ = [
    "tape_lacks_the_rule_too",
    "refuse_calls_kept_for_effect",
    "stores_on_itself",
    "not_at_run_time",
    "is_not_at_run_time",
    "refuse_frame_readers",
    "is_reporter",
]


def refuse_calls_kept_for_effect(statement: gast.Expr, parsed, local_names, activity) -> None:
    """``obj.store(x)``, its result unused, with ``x`` differentiated: the call can only
    matter by what it changes (an attribute, a container), which neither sweep follows.
    Refused unless the callee is known to change nothing: a function with a derivative
    rule, ``print``, or a Python function of the user's that stores no attribute and
    changes no argument (calls that change arguments are refused on their own)."""
    value = statement.value
    if not isinstance(value, gast.Call) or method_receiver(value, "append") is not None:
        return
    arguments = [
        a
        for a in (*value.args, *(k.value for k in value.keywords))
        if type(a) is not gast.JoinedStr  # text, which carries no derivative
    ]
    varied = activity.varied.difference(activity.text) if activity.text else activity.varied
    differentiated = [
        n.id for a in arguments for n in walk(a) if type(n) is gast.Name and n.id in varied
    ]
    if not differentiated:
        return
    operation = classify(value, parsed, local_names)
    target = operation.primitive
    if operation.kind is OperationKind.PRIMITIVE or is_reporter(target):
        return
    if operation.kind is OperationKind.CALL and not changes_state(target):
        return
    raise UnsupportedError(
        f"{parsed.location(statement)}: the result of {operation.description or 'this call'}"
        f" is not used, so it can only matter by what it changes or stores, and neither "
        f"sweep follows a differentiated value ('{differentiated[0]}') there; return the "
        "value and use it, or use mode='tape'"
    )


# functions that only write their arguments out, as text: print and logging's
_LOG_LEVELS = ("debug", "info", "warning", "warn", "error", "exception", "critical", "log")
_REPORTERS = (
    print,
    warnings.warn,
    *(
        getattr(owner, level)
        for owner in (logging, logging.Logger, logging.LoggerAdapter)
        for level in _LOG_LEVELS
        if hasattr(owner, level)  # Python 3.13 has no warn
    ),
)


def is_reporter(function: Any) -> bool:
    """Whether ``function`` only writes its arguments out: ``print``, ``logging.info``,
    ``logger.warning`` (a method, bound or not).

    Example::

        is_reporter(logging.getLogger("train").info)  # True
    """
    function = getattr(function, "__func__", function)
    return any(function is reporter for reporter in _REPORTERS)


def refuse_frame_readers(statement: gast.Assign | gast.Expr, parsed) -> None:
    """Refuse ``locals()``, ``vars()``, ``eval``, ``exec`` and the frame of
    ``sys._getframe()``: they read the function's variables by name, so a value being
    differentiated reaches their result where neither sweep sees it (and generated code's
    variables are not the function's). The tape sees the values themselves.

    Example::

        refuse_frame_readers(parse_statement("t1 = locals()"), parsed)  # UnsupportedError
    """
    value = statement.value
    if type(value) is not gast.Call:
        return
    func = value.func
    named = func.id if type(func) is gast.Name else getattr(func, "attr", None)
    if named not in _FRAME_READER_NAMES:  # the common case, without resolving the name
        return
    target = parsed.resolve(func)
    if target is vars and (value.args or value.keywords):
        return  # vars(obj): the object's attributes, read as obj.__dict__
    if not any(target is reader for reader in _FRAME_READERS):
        return
    name = getattr(target, "__qualname__", "this call")
    raise UnsupportedError(
        f"{parsed.location(statement)}: {name}() reads this function's variables by name, "
        "so values being differentiated would reach its result where source "
        "transformation cannot follow them; use the variables themselves, or use "
        "mode='tape'"
    )


_FRAME_READERS = (locals, vars, eval, exec, sys._getframe, inspect.currentframe, inspect.stack)
_FRAME_READER_NAMES = frozenset(reader.__name__ for reader in _FRAME_READERS)


def changes_state(function: Any) -> bool:
    """Whether calling the Python function ``function`` may change what outlives the call:
    it stores an attribute (``self.v = x``), declares a name ``global`` or ``nonlocal``,
    changes in place an argument or a name from outside (``CACHE.append(v)``,
    ``BUFFER[:] = v``, ``d.__setitem__(k, v)``), or calls a function of the user's that
    may. True when its source cannot be read: it may do anything.

    Example::

        def remember(v):
            CACHE.append(v)

        changes_state(remember), changes_state(np.sum)  # True, False
    """
    return _changes_state(getattr(function, "__func__", function), set())


def _changes_state(function: Any, seen: set[int]) -> bool:
    from s2sgrad.compiler.passes.mutation import changed_in_place, is_users_code

    if id(function) in seen:
        return False  # a call to itself: what it changes is found at the first
    seen.add(id(function))
    try:
        parsed = parse_function(function)
    except Exception:  # no source: it may do anything
        return True
    node = parsed.node
    called = []
    for n in walk(node):
        kind = type(n)
        if kind in (gast.Global, gast.Nonlocal):
            return True
        if kind is gast.Attribute and type(n.ctx) in (gast.Store, gast.Del):
            return True
        if kind is gast.Call:
            func = n.func
            if type(func) is gast.Attribute and func.attr in _STATE_METHODS:
                return True
            called.append(func)
    if changed_in_place(node, parsed.resolve):
        return True
    for func in called:
        target = parsed.resolve(func) if type(func) in (gast.Name, gast.Attribute) else None
        target = getattr(target, "__func__", target)
        if (
            isinstance(target, types.FunctionType)
            and is_users_code(target)
            and _changes_state(target, seen)
        ):
            return True
    return False


# methods that change their receiver which ``changed_in_place`` does not read as such
_STATE_METHODS = frozenset(
    {"__setitem__", "__delitem__", "__setattr__", "__delattr__", "__iadd__", "__imul__"}
    | {"appendleft", "extendleft", "rotate", "setfield", "put", "itemset"}
)


def stores_on_itself(obj: Any) -> str | None:
    """``"Cell.__call__ stores self.h"`` when calling ``obj`` (a bound method, or an object
    whose class defines ``__call__`` in Python) assigns to an attribute of the object; else
    None. What a call stores there, a later call or read may use in the same computation."""
    function: Any
    if isinstance(obj, types.MethodType):
        function, owner = obj.__func__, obj.__self__
    elif obj is not NOT_FOUND and not isinstance(obj, (type, types.FunctionType)):
        calls = (vars(k)["__call__"] for k in type(obj).__mro__ if "__call__" in vars(k))
        function, owner = next(calls, None), obj
    else:
        return None
    if not isinstance(function, types.FunctionType) or isinstance(owner, types.ModuleType):
        return None
    stored = _attributes_stored_on_first_parameter(function)
    if not stored:
        return None
    return f"{function.__qualname__} stores self.{stored}"


@functools.lru_cache(maxsize=256)
def _attributes_stored_on_first_parameter(function: types.FunctionType) -> str | None:
    try:
        node = parse_function(function).node
    except S2SGradError:
        return None
    parameters = node.args.posonlyargs + node.args.args
    if not parameters:
        return None
    owner = parameters[0].id
    for part in walk(node):
        if (
            type(part) is gast.Attribute
            and type(part.ctx) is gast.Store
            and type(part.value) is gast.Name
            and part.value.id == owner
        ):
            return part.attr
    return None


_VALUE_CONTROLS = ("stop_gradient", "without_derivative")  # of s2sgrad.controls: a value


def is_library_function(function: Any) -> bool:
    """Whether ``function`` is NumPy's, ``math``'s, a builtin or a helper of generated
    code (not a class): code that reads no object's attributes but those of what it is
    given.

    Example::

        is_library_function(np.sin), is_library_function(print)  # True, True
    """
    if isinstance(function, np.ufunc):  # NumPy 1.26's ufuncs have no __module__
        return True
    if is_reporter(function):
        return True
    module = getattr(function, "__module__", None) or ""
    if module.split(".")[0] in ("numpy", "math"):
        return not isinstance(function, type)
    if isinstance(function, types.FunctionType) and module.startswith("s2sgrad."):
        return module.startswith("s2sgrad.runtime") or function.__name__ in _VALUE_CONTROLS
    if isinstance(function, types.BuiltinFunctionType) or module == "builtins":
        return getattr(builtins, getattr(function, "__name__", ""), None) is function
    return False


def not_at_run_time(error: S2SGradError) -> S2SGradError:
    """Mark ``error`` as one that dispatching the call at run time would not avoid: the
    callee would be given a function or object whose differentiated values it cannot see,
    and would take them for constants."""
    error.not_at_run_time = True
    return error


def is_not_at_run_time(error: S2SGradError) -> bool:
    return getattr(error, "not_at_run_time", False) or getattr(error, "tape_cannot_either", False)


def tape_lacks_the_rule_too(operation) -> bool:
    """Whether a library function the transformer has no rule for fails on the tape the
    same way (the engines share one registry): a ufunc, or a NumPy function that NumPy
    dispatches to the tape's values whole. ``mode="auto"`` then reports one refusal instead
    of warning and failing again on the tape.

    Example::

        tape_lacks_the_rule_too(classify(parse_expression("np.frexp(x)"), ...))  # True
    """
    target = operation.primitive
    module = getattr(target, "__module__", None) or ""
    if isinstance(target, np.ufunc):
        return True
    return module.split(".")[0] == "numpy" and hasattr(target, "_implementation")
