"""Calls of library functions written in Python, which NumPy's protocols do not show the tape.

A ufunc or a NumPy function reaches the tape through ``__array_ufunc__`` or
``__array_function__``. ``scipy.special.logsumexp``, ``scipy.linalg.sqrtm`` and
``scipy.stats.norm.logpdf`` are Python functions that convert their arguments with
``np.asarray``, which the tape refuses (so does NumPy's ``as_strided``). So when a tape
starts recording, every such function that has a rule in an optional rule set
(``rules.registry.OPTIONAL_RULE_MODULES``), ``as_strided`` and ``np.polynomial``'s
``polyval``, ``chebval``, ... get their code replaced by a router, once: unless a
recording tape tracks an argument, the router runs the original code; otherwise it
computes the function on plain values and records its rule, as for a ufunc. Replacing the
code (not the module's attribute) reaches every reference to the function, ``from
scipy.linalg import sqrtm`` made earlier included.

A rule for a method of a library object (``scipy.stats.norm.logpdf``, keyed by the bound
method) routes the method's function, which every object of the class shares
(``rv_continuous.logpdf``). On the tape the rule serves every object of that class, so a
frozen distribution (``stats.norm(0, 2).logpdf(x)``, which calls a copy of ``stats.norm``)
is differentiated too; a call on an object of a class with no rule for that method
(``scipy.stats.cauchy.logpdf``) is refused at the user's line.

Example::

    route_library_calls()  # called by GradientTape when it starts recording
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, TypeGuard

import numpy as np

from s2sgrad.errors import NonDifferentiableError
from s2sgrad.naming import library_name
from s2sgrad.rules.polynomials import IN_A_BASIS
from s2sgrad.rules.registry import OPTIONAL_RULE_MODULES, get_rule, registered_primitives
from s2sgrad.rules.scipy_common import users_location
from s2sgrad.tape.rerouting import reroute
from s2sgrad.tape.values import TapeValue, apply_rule, is_recorded, value_of

__all__ = ["route_library_calls"]

_ROUTE_PARAMETER = "__s2sgrad_route__"
_LIBRARIES = frozenset(library.split(".")[0] for library in OPTIONAL_RULE_MODULES)
# NumPy's Python functions with a rule that NumPy does not dispatch to the tape (the
# polynomial package's polyval, chebval, ... test isinstance(x, np.ndarray): run on tape
# values, their code would broadcast where NumPy takes an outer product)
_UNDISPATCHED_NUMPY: frozenset[Any] = frozenset((np.lib.stride_tricks.as_strided, *IN_A_BASIS))
_seen = 0  # how many registry entries have been looked at
# (class, function) -> the bound method a rule is registered for: every object of the class
# shares it (a frozen distribution calls a copy of its distribution object)
_BY_CLASS: dict[tuple[type, Callable], types.MethodType] = {}


def route_library_calls() -> None:
    """Route the calls of the optional libraries' Python functions that have rules and are
    not routed yet (see the module's docstring); quick when there are none.

    Example::

        route_library_calls()
    """
    global _seen
    primitives = registered_primitives()  # loads the rule sets of libraries imported so far
    if len(primitives) == _seen:
        return
    for primitive in primitives[_seen:]:
        if isinstance(primitive, types.MethodType):
            if _is_library_function(primitive.__func__):
                _BY_CLASS[type(primitive.__self__), primitive.__func__] = primitive
                _route(primitive.__func__, _method_router)
        elif _is_library_function(primitive):
            _route(primitive, _function_router)
    _seen = len(primitives)


def _is_library_function(function: Any) -> TypeGuard[types.FunctionType]:
    module = getattr(function, "__module__", None) or ""
    if not isinstance(function, types.FunctionType):
        return False
    return module.split(".")[0] in _LIBRARIES or function in _UNDISPATCHED_NUMPY


def _function_router(function: Callable, original: Callable) -> Callable:
    def route(args: tuple, kwargs: dict) -> Any:
        if not is_recorded(args, kwargs):
            return original(*_untaped(args), **_untaped(kwargs))
        return apply_rule(function, original, args, kwargs)

    return route


def _method_router(function: Callable, original: Callable) -> Callable:
    def route(args: tuple, kwargs: dict) -> Any:
        if not args or not is_recorded(args[1:], kwargs):
            return original(*_untaped(args), **_untaped(kwargs))
        owner, rest = args[0], args[1:]
        method = _BY_CLASS.get((type(owner), function))
        if method is None or get_rule(method) is None:
            called = types.MethodType(function, owner)
            name = library_name(called) or f"{type(owner).__name__}.{function.__name__}"
            raise NonDifferentiableError(
                f"{users_location()}: {name} has no derivative rule, so the tape cannot "
                f"differentiate through it. Register one with @s2sgrad.derivative(of={name}), "
                "or wrap its input in s2sgrad.stop_gradient(...) if no derivative should flow "
                "through this call."
            )
        return apply_rule(method, types.MethodType(original, owner), rest, kwargs)

    return route


def _untaped(values: Any) -> Any:
    """``values`` (a tuple of arguments, or a dict of keywords) with the tape values no
    recording tape tracks as their plain values: a rule's body, run again by the tape's
    forward mode on the values a finished tape recorded, handed NumPy's Python code
    (``chebval``, which tests ``isinstance(x, np.ndarray)``) objects it does not know, and
    it broadcast a coefficient matrix where it takes an outer product."""
    items = values.values() if isinstance(values, dict) else values
    if not any(_holds_tape_values(v) for v in items):
        return values
    return value_of(values)


def _holds_tape_values(value: Any) -> bool:
    if isinstance(value, TapeValue):
        return True
    if type(value) in (list, tuple):
        return any(_holds_tape_values(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_tape_values(v) for v in value.values())
    return False


def _route(function: types.FunctionType, router: Callable) -> None:
    """Replace ``function``'s code by a call of ``router(function, original)(args, kwargs)``,
    where ``original`` runs the code ``function`` had (``tape/rerouting.py``)."""
    reroute(function, lambda original: router(function, original), _ROUTE_PARAMETER)
