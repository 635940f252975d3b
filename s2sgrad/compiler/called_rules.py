"""Derivatives of generated code that calls a rule at run time: the rule's own code.

A rule registered with ``inline=False`` is called by generated code, not inlined:
``cotangents = vjp_call(np.einsum, g, ans, "ij,jk", a, b)``. ``vjp_call`` looks the rule up
when it runs, which a transformer cannot follow; so a derivative of that code
(``grad(grad(f))``) differentiates a stand-in instead: a function with ``vjp_call``'s
parameters whose body calls the rule's function by name, with the call's arguments spelled
out, so that the rule's body (ordinary NumPy) is transformed with the code that calls it,
as a user's helper is. (Forward mode over that code dispatches ``vjp_call`` when it runs
and transforms the rule's code then: ``runtime/dispatch.py``.)

Example::

    stand_in = rule_stand_in(np.einsum, (False, True, True), {"optimize": False})
    # def vjp_call(primitive, g, ans, *args, **kwargs):
    #     return per_argument(rule(g, ans, constant_argument(args[0]), args[1], args[2],
    #                              optimize=constant_argument(kwargs['optimize'])), 3)
"""

from __future__ import annotations

import itertools
import linecache
from collections.abc import Callable
from typing import Any

from s2sgrad.rules import get_rule
from s2sgrad.rules.registry import nondifferentiable, per_argument

__all__ = ["rule_stand_in", "constant_argument"]

_STAND_INS: dict[tuple, Callable] = {}
_numbers = itertools.count()


def constant_argument(x: Any) -> Any:
    """``x``, declared without a derivative: a stand-in's argument the caller holds constant.

    Example::

        constant_argument(3)  # 3
    """
    return x


nondifferentiable(constant_argument)


def rule_stand_in(primitive: Any, varied: tuple[bool, ...], keywords: dict) -> Callable | None:
    """A function that computes ``vjp_call(primitive, g, ans, *args, **kwargs)`` for one
    positional ``args`` entry per ``varied`` flag and the ``keywords`` (name: varied flag),
    calling ``primitive``'s VJP rule by name; None when ``primitive`` has no such rule.
    Entries the caller does not vary are constants to the transformer (``constant_argument``):
    a rule reads its integer arguments (axes, counts) as such.

    Example::

        rule_stand_in(np.cross, (True, True), {})(np.cross, g, ans, a, b)  # (b x g, g x a)
    """
    rule = get_rule(primitive)
    if rule is None or rule.custom is not None or rule.vjp is None:
        return None
    key = (rule.vjp, varied, tuple(keywords.items()))
    stand_in = _STAND_INS.get(key)
    if stand_in is None:
        stand_in = _STAND_INS[key] = _written(rule.vjp, varied, keywords)
    return stand_in


def _written(rule: Callable, varied: tuple[bool, ...], keywords: dict) -> Callable:
    """The stand-in's source, kept in ``linecache`` for the transformer to read."""

    def spelled(value: str, flag: bool) -> str:
        return value if flag else f"constant_argument({value})"

    count = len(varied)
    arguments = [spelled(f"args[{i}]", flag) for i, flag in enumerate(varied)]
    arguments += [f"{k}={spelled(f'kwargs[{k!r}]', flag)}" for k, flag in keywords.items()]
    filename = f"<s2sgrad stand-in for the rule {rule.__qualname__} {next(_numbers)}>"
    source = (
        "def vjp_call(primitive, g, ans, *args, **kwargs):\n"
        f"    return per_argument(rule(g, ans, {', '.join(arguments)}), {count})\n"
    )
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {
        "rule": rule,
        "per_argument": per_argument,
        "constant_argument": constant_argument,
    }
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (our own source)
    return namespace["vjp_call"]
