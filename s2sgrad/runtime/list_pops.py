"""``items.pop(i)`` as generated code computes it: ``value = items[i]`` and the rest of the
list (or of the dict, for ``d.pop(key)``) as a new one, :func:`without_entry`, whose
cotangent puts a zero back in the entry's place (:func:`with_zero_entry`). Each is the
other's derivative, so both differentiate to any order.

Example::

    without_entry([1.0, 2.0, 3.0], 0)  # [2.0, 3.0]
"""

from __future__ import annotations

import operator
from typing import Any

from s2sgrad.errors import UnsupportedError
from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.runtime.core import CotangentDict, CotangentList, zeros_like_value

__all__ = ["without_entry", "with_zero_entry"]


def without_entry(items: Any, index: Any) -> Any:
    """A new list of ``items`` without the entry at ``index``: what ``items`` holds after
    ``items.pop(index)`` (an ``IndexError`` where ``pop`` raises one).

    Example::

        without_entry([1.0, 2.0, 3.0], -1)  # [1.0, 2.0]
    """
    if isinstance(items, dict):  # d.pop(key) of a dict the function holds alone
        remaining = dict(items)
        if isinstance(items, CotangentDict):
            remaining.pop(index, None)  # an entry nothing flowed into is left out already
            return CotangentDict(remaining)
        del remaining[index]  # the KeyError pop raises
        return remaining
    if not isinstance(items, list):
        raise UnsupportedError(
            f".pop(index) of a {type(items).__name__} is differentiated here as a list's; "
            "use mode='tape'"
        )
    rest = list(items)
    rest.pop(operator.index(index))  # the IndexError pop raises
    return CotangentList(rest) if isinstance(items, CotangentList) else rest


def with_zero_entry(g: Any, items: Any, index: Any) -> CotangentList | CotangentDict:
    """The cotangent of ``items`` from ``g``, that of ``without_entry(items, index)``: a
    zero of the popped entry's shape put back in its place.

    Example::

        with_zero_entry([2.0, 3.0], [1.0, 2.0, 3.0], 0)  # [0.0, 2.0, 3.0]
    """
    if isinstance(items, dict):  # the popped entry left out: a zero (CotangentDict)
        return CotangentDict(g or {})
    position = range(len(items))[operator.index(index)]
    entries = list(g)
    entries.insert(position, zeros_like_value(items[position]))
    return CotangentList(entries)


@vjp_rule(without_entry)
def _without_entry_vjp(g, ans, items, index):
    return with_zero_entry(g, items, index), None


@jvp_rule(without_entry)
def _without_entry_jvp(t, ans, items, index):
    return without_entry(t, index), None


@vjp_rule(with_zero_entry)
def _with_zero_entry_vjp(g, ans, g_in, items, index):
    cotangent = CotangentDict(g) if isinstance(g, dict) else CotangentList(g)
    return without_entry(cotangent, index), None, None


@jvp_rule(with_zero_entry)
def _with_zero_entry_jvp(t, ans, g_in, items, index):
    return with_zero_entry(t, items, index), None, None
