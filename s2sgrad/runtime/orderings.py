"""Orders and lengths that generated code asks for where the user's code sorts or zips.

Source transformation turns ``sorted(xs, key=f)`` into element reads in an order decided
at run time, ``[items[i] for i in sorted_order(items, f)]``: the order is a branch (a
permutation of positions, integers with no derivative), and the elements read are
differentiated as any element read is. ``zip(*rows)`` becomes a loop over
``range(zipped_length(rows))`` that reads the ``j``-th element of each row.

Example::

    sorted_order([0.5, -1.0, 2.0], key=abs)  # [0, 1, 2]
    zipped_length([np.ones(3), np.ones(2)])  # 2
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from s2sgrad.rules.registry import nondifferentiable

__all__ = ["sorted_order", "zipped_length"]


def sorted_order(
    items: list, key: Callable[[Any], Any] | None = None, reverse: bool = False
) -> list[int]:
    """The positions of ``items`` in the order ``sorted(items, key=key, reverse=reverse)``
    gives them (stable as ``sorted`` is: ``key`` is called once per item, in order).

    Example::

        sorted_order([3.0, 1.0, 2.0])  # [1, 2, 0]
    """
    keys = list(items) if key is None else [key(item) for item in items]
    return sorted(range(len(keys)), key=keys.__getitem__, reverse=reverse)


def zipped_length(rows: Any) -> int:
    """How many tuples ``zip(*rows)`` makes: the length of the shortest row (0 for none).

    Example::

        zipped_length([[1.0, 2.0], [3.0]])  # 1
    """
    return min((len(row) for row in rows), default=0)


nondifferentiable(sorted_order, zipped_length)
