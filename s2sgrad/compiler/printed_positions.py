"""The user's statement behind each line of generated code that ``ast.unparse`` printed.

``source_writer`` records, as it prints, the line of the user's statement each printed
line starts (``running.POSITIONS``). Code it leaves to ``ast.unparse`` (a nested function,
an f-string in an inlined refusal) has no such record; :func:`positions_by_reparsing`
finds it when a refusal asks for it: the printed text parsed again has the same
statements in the same order as the tree printed (less the ``# grad of:`` markers, which
became comments), so pairing the two gives each printed line its statement's ``lineno``.

Example::

    positions_by_reparsing(node, source)  # array('i', [0, 2, 3, 0, 3])
"""

from __future__ import annotations

import ast
from array import array

import gast

from s2sgrad.compiler.block_walks import header_nodes
from s2sgrad.compiler.syntax import COMMENT_MARK

__all__ = ["positions_by_reparsing"]


def positions_by_reparsing(function: gast.FunctionDef, source: str) -> array | None:
    """At each line of ``source`` (``function`` printed; index 0 is the ``def`` line) the
    ``lineno`` ``function``'s statement starting there carries, 0 where none starts or it
    has none; None when the two do not pair up.

    Example::

        positions_by_reparsing(node, to_source(node))  # array('i', [0, 2, 3])
    """
    try:
        printed = ast.parse(source).body
    except SyntaxError:
        return None
    if len(printed) != 1 or not isinstance(printed[0], ast.FunctionDef):
        return None
    positions = array("i", [0]) * (len(source.splitlines()) + 1)
    if not _pair(function.body, printed[0].body, positions):
        return None
    return positions


def _pair(made: list, printed: list, positions: array) -> bool:
    """Pair the statements of one block, recording each one's line; False where the two
    blocks differ."""
    made = [s for s in made if not _comment(s)]
    if len(made) != len(printed):
        return False
    for statement, text in zip(made, printed):
        if type(statement).__name__ != type(text).__name__:
            return False
        line = getattr(text, "lineno", 0)
        if 0 < line <= len(positions):
            positions[line - 1] = _line_of(statement)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not _pair(inner, getattr(text, field, []), positions):
                return False
        handlers = getattr(statement, "handlers", None) or []
        for handler, printed_handler in zip(handlers, getattr(text, "handlers", [])):
            if not _pair(handler.body, printed_handler.body, positions):
                return False
    return True


def _line_of(statement: gast.stmt) -> int:
    """``statement``'s ``lineno``; where the calls outside its blocks all carry one other
    line (the optimiser moved them there from another statement), that one; 0 where they
    carry several (as ``source_writer`` records it)."""
    line = statement.__dict__.get("lineno") or 0
    calls = {n.__dict__.get("lineno") or 0 for n in header_nodes(statement) if type(n) is gast.Call}
    calls.discard(0)
    if calls and calls != {line}:
        return calls.pop() if len(calls) == 1 else 0
    return line


def _comment(statement: gast.stmt) -> bool:
    """A ``# grad of:`` marker, printed as a comment."""
    if type(statement) is not gast.Expr or type(statement.value) is not gast.Constant:
        return False
    value = statement.value.value
    return isinstance(value, str) and value.startswith(COMMENT_MARK)
