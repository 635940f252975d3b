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
from s2sgrad.errors import UnsupportedError
from s2sgrad.running import statement_origin
from s2sgrad.runtime import states_left

__all__ = ["drop_final_state_notes", "refuse_outside_final_states"]

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


def refuse_outside_final_states(node: gast.FunctionDef, parsed) -> None:
    """Refuse differentiating again generated code whose notes name a value from outside
    the function (``final_states(STATE)``: a global dict, list or array the user's code
    updates in place, a call counter ``STATE['calls'] += 1``): without the notes, which
    :func:`drop_final_state_notes` must drop, the backward sweep's restores leave it as it
    was before the call, so each call of the second derivative sees the same state, where
    the function sees what the calls before it left (a silently wrong derivative).

    Example::

        refuse_outside_final_states(node, parsed)  # UnsupportedError naming the user's line
    """
    stored = {
        n.id for n in gast.walk(node) if type(n) is gast.Name and type(n.ctx) is not gast.Load
    }
    stored |= {a.id for a in node.args.args + node.args.posonlyargs + node.args.kwonlyargs}
    outside = set()
    for statement in gast.walk(node):
        if isinstance(statement, gast.Assign) and _is_note(statement, parsed.resolve):
            outside |= {
                a.id for a in statement.value.args if type(a) is gast.Name and a.id not in stored
            }
    if not outside:
        return
    name = sorted(outside)[0]
    location = None
    for statement in gast.walk(node):
        if isinstance(statement, gast.Assign) and any(
            type(t) is gast.Subscript and type(t.value) is gast.Name and t.value.id == name
            for t in statement.targets
        ):
            location = statement_origin(parsed.filename, parsed.line_offset + statement.lineno)
            break
    raise UnsupportedError(
        f"{location or parsed.location()}: this changes '{name}', which belongs to the code "
        "around the function, in place; a derivative of its derivative (sg.hvp, sg.hessian, "
        "grad of grad) by source transformation would leave it as it was before each call. "
        "Keep that state outside the differentiated function (update it after the call), "
        "or use mode='tape'"
    )
