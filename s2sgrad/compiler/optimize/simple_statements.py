"""The statements that have no block (no ``if``, loop, replay or function): most of what
the optimiser sees, told apart by their type alone.

Example::

    without_blocks(parse("a = 1\\nreturn a").body)  # True
"""

from __future__ import annotations

import gast

__all__ = ["SIMPLE_STATEMENTS", "without_blocks"]

SIMPLE_STATEMENTS = frozenset(
    {gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.Return, gast.Pass}
)


def without_blocks(body: list[gast.stmt]) -> bool:
    """Whether every statement of ``body`` is a simple one (then ``body`` holds every
    statement there is, and walking its blocks is no use).

    Example::

        without_blocks(parse("a = 1\\nreturn a").body)  # True
    """
    return SIMPLE_STATEMENTS.issuperset(map(type, body))
