"""Item writes on the tape: ``t[index] = v`` makes a new *version* of ``t``.

A tape value is what recorded steps refer to, and the name ``t`` keeps referring to the
same object after ``t[index] = v``. So a write moves the value ``t`` had into a fresh tape
value (the *old version*), records ``with_item(old, index, v)`` with ``t`` itself as its
output, and gives ``t`` the new array. Steps recorded before the write still name ``t``;
:func:`versions_apart` (run once per backward pass, only on a recording that holds writes)
renames them to the version they saw, walking the recording backwards. The derivative is
NumPy's: the overwritten elements of ``t`` get no cotangent, and ``v`` gets the cotangent of
the elements it wrote, where it was the last write to them (``assigned_cotangent``).

Example::

    y = x.copy()
    y[0] = 2.0 * x[1]      # recorded as y = with_item(y_old, 0, 2.0 * x[1])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from s2sgrad.rules.registry import complex_ready, get_rule, jvp_rule, vjp_rule
from s2sgrad.runtime.core import unbroadcast
from s2sgrad.runtime.shapes import assigned_cotangent

__all__ = ["with_item", "versions_apart", "WITH_ITEM"]


def with_item(t: Any, index: Any, v: Any) -> np.ndarray:
    """A new array: ``t`` with ``v`` written at ``index`` (what ``t[index] = v`` leaves).

    Example::

        with_item(np.zeros(3), 1, 5.0)  # array([0., 5., 0.])
    """
    out = np.array(t, copy=True)
    out[index] = v
    return out


@vjp_rule(with_item)
def _with_item_vjp(g, ans, t, index, v):
    return with_item(g, index, 0.0), None, unbroadcast(assigned_cotangent(g, index), v)


@jvp_rule(with_item)
def _with_item_jvp(t_dot, ans, t, index, v):
    return with_item(t_dot, index, 0.0), None, with_item(np.zeros_like(ans), index, t_dot)


complex_ready(with_item)  # moves values and cotangents only (docs/complex.md)

#: the rule recorded for an item write (its entries are the ones that make versions)
WITH_ITEM = get_rule(with_item)


def versions_apart(entries: list, sources: list, tape_value: type) -> tuple[list, list]:
    """The entries and sources with each step naming the version of a written tape value
    that it saw (see the module docstring); the same lists when nothing was written.

    Example::

        entries, sources = versions_apart(tape._entries, sources, TapeValue)
    """
    if not any(entry[0] is WITH_ITEM for entry in entries):
        return entries, sources
    older: dict[int, Any] = {}  # id(a written value) -> its version before the write
    renamed = []
    for rule, args, kwargs, out in reversed(entries):
        if rule is WITH_ITEM and type(out) is tape_value:
            written = out
            out = older.get(id(written), written)
            renamed.append((rule, _renamed(args, older), kwargs, out))
            older[id(written)] = args[0]
            continue
        renamed.append((rule, _renamed(args, older), kwargs, _renamed(out, older)))
    renamed.reverse()
    return renamed, [older.get(id(s), s) if s is not None else None for s in sources]


def _renamed(value: Any, older: dict[int, Any]) -> Any:
    """``value`` with each written tape value replaced by its version in ``older``."""
    if not older:
        return value
    kind = type(value)
    if kind is tuple or kind is list:
        return kind(_renamed(v, older) for v in value)
    if kind is dict:
        return {k: _renamed(v, older) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return kind(*(_renamed(v, older) for v in value))
    return older.get(id(value), value)
