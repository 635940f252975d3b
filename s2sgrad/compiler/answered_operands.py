"""Which operands of ``c < x`` or ``round(c)`` to check, as the code runs, for a class that
answers the comparison or rounding with code of the user's (see
:mod:`s2sgrad.runtime.answering_objects`).

A comparison's result is taken for a flag and ``round``'s for an integer, with no
derivative; that is right for numbers and arrays, and wrong for an object whose ``__lt__``
returns a value computed from a differentiated one. Where an operand's class is known only
as the code runs (a parameter, a name bound by a call of a class given as one), generated
code calls ``answered_plainly(c, x)`` before the statement.

Example::

    checked_operands(parse_expr("c < x"), resolve, varied={"x"})  # ['c', 'x']
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Container
from typing import Any

import gast

__all__ = ["checked_operands"]

# the calls whose answer is an object's own method, taken for an integer by the sweeps
_ROUNDINGS = (builtins.round, math.floor, math.ceil, math.trunc)


def _operands(value: gast.expr, resolve: Callable[[gast.expr], Any]) -> list[gast.expr]:
    """The operands of a comparison, or the arguments of ``round``/``math.floor`` ...;
    nothing for any other expression."""
    if type(value) is gast.Compare:
        return [value.left, *value.comparators]
    if type(value) is gast.Call and value.args:
        try:
            callee = resolve(value.func)
        except Exception:  # an expression the resolver does not follow: not a rounding
            return []
        if any(callee is rounding for rounding in _ROUNDINGS):
            return list(value.args[:1])
    return []


def checked_operands(
    value: gast.expr,
    resolve: Callable[[gast.expr], Any],
    varied: Container[str],
    plain: Container[str] = (),
) -> list[str]:
    """The names among ``value``'s operands (a comparison's, or ``round``'s argument) to
    check as the code runs: every name but those in ``plain`` (surely numbers or arrays),
    when one of them is in ``varied`` (the result could depend on a differentiated value);
    none otherwise.

    Example::

        checked_operands(compare_node, parsed.resolve, {"x"})  # ['c', 'x'] for c < x
    """
    names = [o.id for o in _operands(value, resolve) if type(o) is gast.Name]
    if not any(name in varied for name in names):
        return []
    return list(dict.fromkeys(name for name in names if name not in plain))
