"""Generated code differentiated again loses its notes of the states it leaves its caller.

A backward sweep that restores arrays in place notes their states first and writes them
back at its end (``finals = final_states(out)`` ... ``put_back_final_states(finals)``,
s2sgrad/runtime/states_left.py), so that the caller finds them as the forward sweep left
them. Differentiating that code again, the write-back is not part of any value the
derivative follows; kept, it would change arrays behind the new backward sweep's back.

Example::

    drop_final_state_notes(node, parsed.resolve)  # node is a derivative's code
"""

from __future__ import annotations

import gast

from s2sgrad import runtime
from s2sgrad.runtime import states_left

__all__ = ["drop_final_state_notes"]

_NOTES = tuple(getattr(runtime, name) for name in states_left.__all__)


def drop_final_state_notes(node: gast.AST, resolve) -> bool:
    """Remove, in place, the statements of ``node`` that note or put back final states;
    whether there were any."""
    dropped = False
    for field in ("body", "orelse", "finalbody"):
        statements = getattr(node, field, None)
        if not isinstance(statements, list):
            continue
        kept = [s for s in statements if not _is_note(s, resolve)]
        for statement in kept:
            dropped |= drop_final_state_notes(statement, resolve)
            for handler in getattr(statement, "handlers", ()):
                dropped |= drop_final_state_notes(handler, resolve)
        if len(kept) != len(statements):
            statements[:] = kept or [gast.Pass()]
            dropped = True
    return dropped


def _is_note(statement: gast.stmt, resolve) -> bool:
    if not isinstance(statement, (gast.Expr, gast.Assign)):
        return False
    value = statement.value
    if type(value) is not gast.Call:
        return False
    callee = resolve(value.func)
    return any(callee is note for note in _NOTES)
