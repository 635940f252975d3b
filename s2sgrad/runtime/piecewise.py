"""``np.piecewise(x, condlist, funclist)`` written with indexing and item writes.

NumPy fills a zero array piece by piece: each condition's entries get the function of
that piece applied to ``x``'s entries there (or a constant), a later piece over an
earlier one, and one function more than conditions covers where none holds. Written so,
each of the user's functions runs on the values of its piece, which a differentiating
engine records like any other code (``x[cond]``, the function's operations,
``y[cond] = ...``), so that the derivative of each piece is that of its function.

Example::

    piecewise_by_pieces(x, [x < 0, x >= 0], [lambda t: t**2, np.sin])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from s2sgrad.runtime.hooks import value_of

__all__ = ["any_entry", "piecewise_by_pieces", "piecewise_conditions", "pieces_into"]


def piecewise_by_pieces(x: Any, condlist: Any, funclist: list, *args: Any, **kw: Any) -> Any:
    """What ``np.piecewise(x, condlist, funclist, *args, **kw)`` returns, computed by
    indexing and item writes, each function applied to its piece's values."""
    return pieces_into(np.zeros_like(x), x, condlist, funclist, args, kw)


def pieces_into(result: Any, x: Any, condlist: Any, funclist: list, args: tuple, kw: dict) -> Any:
    """:func:`piecewise_by_pieces` writing into ``result``, zeros of ``x``'s shape and
    dtype (the tape gives one it follows the writes into)."""
    conditions = piecewise_conditions(condlist, len(funclist), np.ndim(value_of(x)))
    for condition, function in zip(conditions, funclist):
        if not callable(function):
            result[condition] = function
            continue
        values = x[condition]
        if np.size(values) > 0:
            result[condition] = function(values, *args, **kw)
    return result


def piecewise_conditions(condlist: Any, count: int, ndim: int) -> Any:
    """The truth values of ``np.piecewise``'s pieces, one row per function (``count``), as
    NumPy reads ``condlist`` for an ``x`` of ``ndim`` dimensions: one condition alone taken
    as a list of it, and one function more than conditions for where none holds. Truth
    values, which carry no derivative (given only those, it has none to follow).

    Example::

        piecewise_conditions([x < 0], 2, x.ndim)  # [x < 0, ~(x < 0)]
    """
    if np.isscalar(condlist) or (not isinstance(condlist[0], (list, np.ndarray)) and ndim != 0):
        condlist = [condlist]
    conditions = np.asarray([np.asarray(value_of(c), dtype=bool) for c in condlist])
    if len(conditions) == count - 1:  # the last function: where no condition holds
        otherwise = ~np.any(conditions, axis=0, keepdims=True)
        conditions = np.concatenate([conditions, otherwise], axis=0)
    elif len(conditions) != count:
        raise ValueError(
            f"with {len(conditions)} condition(s), either {len(conditions)} or "
            f"{len(conditions) + 1} functions are expected"
        )
    return conditions


def any_entry(condition: Any) -> bool:
    """Whether a piece has any entry (NumPy calls its function only then)."""
    return bool(np.any(condition))
