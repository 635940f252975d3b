"""Entries generated code stores into a dict the caller gave the function (running
statistics): the plain value, as the function itself stores it; the derivative follows a
variable of the generated code instead (:mod:`s2sgrad.compiler.caller_dict_entries`).

Example::

    stats = {}
    store_entry(stats, "mean", np.ones(2), (x,))  # stats == {'mean': array([1., 1.])}
"""

from __future__ import annotations

import types
from typing import Any

from s2sgrad.errors import UnsupportedError
from s2sgrad.rules.registry import nondifferentiable
from s2sgrad.running import running_origin
from s2sgrad.runtime.hooks import value_of

__all__ = ["store_entry"]


def store_entry(entries: Any, key: str, value: Any, others: tuple = ()) -> None:
    """``entries[key] = value`` with ``value``'s plain value, ``entries`` being a dict that
    none of ``others`` (the function's other arguments) holds: read through one of them,
    the entry would be taken for a constant.

    Example::

        store_entry(bn_param, "running_mean", t3, (x, gamma, beta))
    """
    if not isinstance(entries, dict):
        raise UnsupportedError(
            f"{running_origin('the differentiated function')}: stores the entry '{key}' into "
            f"a {type(entries).__qualname__} it is given, which source transformation "
            "follows only for a dict; pass a dict, or use mode='tape'"
        )
    if any(_holds(other, entries) for other in others):
        raise UnsupportedError(
            f"{running_origin('the differentiated function')}: stores the entry '{key}' into "
            "a dict that another of its arguments holds as well, where the entry would be "
            "read as a constant; pass the dict once, or use mode='tape'"
        )
    entries[key] = value_of(value)


_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)

# containers looked into before a holder is assumed (refused, not read as a constant)
_LOOK_AT_MOST = 100_000


def _holds(value: Any, target: dict) -> bool:
    """Whether ``value`` is ``target`` or holds it, at any depth: in a list, tuple or dict,
    or as an attribute of an object (each container looked at once; past
    ``_LOOK_AT_MOST`` of them, assumed to)."""
    pending, seen = [value], set()
    while pending:
        current = pending.pop()
        if current is target:
            return True
        if isinstance(current, dict):
            children: Any = current.values()
        elif isinstance(current, (list, tuple)):
            children = current
        elif hasattr(current, "__dict__") and not isinstance(current, _OPAQUE):
            children = vars(current).values()
        else:
            continue
        if id(current) in seen:
            continue
        seen.add(id(current))
        if len(seen) > _LOOK_AT_MOST:
            return True
        pending.extend(children)
    return False


nondifferentiable(store_entry)
