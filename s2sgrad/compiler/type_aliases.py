"""The refusal of a ``type`` statement (Python 3.12 on) naming a type made of values being
differentiated: ``type V = x`` binds ``V`` to an alias whose ``V.__value__`` is ``x``,
evaluated only when read, which neither sweep follows (read as a constant, everything
computed from it had no derivative). An alias of a type (``type Vec = list[float]``) is a
statement without derivatives, kept as it is.

Example::

    refuse_alias_of_varied(statement, {"x"}, "model.py:3")  # raises for 'type V = x'
"""

from __future__ import annotations

from collections.abc import Set

import gast

from s2sgrad.compiler.syntax import names_read
from s2sgrad.errors import UnsupportedError

__all__ = ["refuse_alias_of_varied"]


def refuse_alias_of_varied(statement: gast.stmt, varied: Set[str], location: str) -> None:
    """Raise ``UnsupportedError`` if ``statement`` is a ``type`` alias whose value reads a
    name in ``varied``; anything else passes.

    Example::

        refuse_alias_of_varied(statement, activity.varied, parsed.location(statement))
    """
    if not isinstance(statement, gast.TypeAlias):
        return
    read = sorted(names_read(statement.value) & varied)
    if read:
        raise UnsupportedError(
            f"{location}: 'type {statement.name.id} = ...' names a value made of "
            f"differentiated values ({', '.join(read)}), read through its __value__, which "
            "source transformation does not follow; use the values directly, or use "
            "mode='tape'"
        )
