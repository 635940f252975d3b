"""Derivatives of generated code that calls a rule at run time: the rule's own code.

A rule registered with ``inline=False`` is called by generated code, not inlined:
``cotangents = vjp_call(np.einsum, g, ans, "ij,jk", a, b)`` (``jvp_call`` and ``jvp_entry``
in forward code). ``vjp_call`` looks the rule up when it runs, which a transformer cannot
follow; so a derivative of that code (``grad(grad(f))``, ``hessian``) differentiates a
stand-in instead: a function with ``vjp_call``'s parameters whose body calls the rule's
function by name. The rule's body is ordinary NumPy, transformed as a user's helper is.

Example::

    stand_in = rule_stand_in(runtime.vjp_call, np.einsum)
    stand_in(np.einsum, g, ans, "ij,jk", a, b) == vjp_call(np.einsum, g, ans, "ij,jk", a, b)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from s2sgrad import runtime
from s2sgrad.rules import get_rule
from s2sgrad.rules.registry import per_argument

__all__ = ["rule_stand_in", "calls_rule_at_run_time"]

_STAND_INS: dict[tuple[Any, Any], Callable] = {}


def calls_rule_at_run_time(function: Any) -> bool:
    """Whether ``function`` is one of the runtime's calls of a rule (``vjp_call`` ...)."""
    return any(function is f for f in (runtime.vjp_call, runtime.jvp_call, runtime.jvp_entry))


def rule_stand_in(function: Any, primitive: Any) -> Callable | None:
    """The stand-in for ``function`` (``vjp_call``, ``jvp_call`` or ``jvp_entry``) calling
    ``primitive``'s rule, with ``function``'s parameters; None without such a rule.

    Example::

        rule_stand_in(runtime.jvp_call, np.cross)(np.cross, t, ans, a, b)  # (ta x b, a x tb)
    """
    rule = get_rule(primitive)
    kind = "vjp" if function is runtime.vjp_call else "jvp"
    rule_function = None if rule is None or rule.custom is not None else getattr(rule, kind)
    if rule_function is None:
        return None
    key = (function, rule_function)
    stand_in = _STAND_INS.get(key)
    if stand_in is None:
        if function is runtime.jvp_entry:
            stand_in = _entry_stand_in(rule_function)
        else:
            stand_in = _call_stand_in(rule_function, kind)
        _STAND_INS[key] = stand_in
    return stand_in


def _call_stand_in(rule: Callable, kind: str) -> Callable:
    if kind == "vjp":

        def vjp_call(primitive, g, ans, *args, **kwargs):
            return per_argument(rule(g, ans, *args, **kwargs), len(args))

        return vjp_call

    def jvp_call(primitive, t, ans, *args, **kwargs):
        return per_argument(rule(t, ans, *args, **kwargs), len(args))

    return jvp_call


def _entry_stand_in(rule: Callable) -> Callable:
    def jvp_entry(primitive, index, t, ans, *args, **kwargs):
        entry = per_argument(rule(t, ans, *args, **kwargs), len(args))[index]
        if entry is None:
            return runtime.zeros_like_value(ans)
        return entry

    return jvp_entry
