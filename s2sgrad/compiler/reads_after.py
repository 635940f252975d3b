"""Which local names a function cannot read again once a call it is running returns: what
the tape asks before it refuses a helper's in-place write into memory that a caller's name
shares (see :mod:`s2sgrad.tape.helper_writes`).

NumPy changes every array sharing the memory a helper writes into, while the tape changes
only the value written. The two agree when no name sharing that memory is read again, as
in D2L's ``X = sequence_mask(X.reshape(-1, n), lens)`` (``X`` is bound anew) or a caller's
``weights = masked_softmax(scores, lens)`` with ``scores`` not read after. A name counts as
unread when the statement running the call reads it only before the call (inside the
call's own expression) and either binds it anew, or no statement after it, nor any loop
around it, reads it.

Example::

    names_unread_after_call(f, line=7, columns=(8, 60))  # frozenset({'X'})
"""

from __future__ import annotations

import linecache
import types
from typing import Any

import gast

from s2sgrad.compiler.frontend import parse_function
from s2sgrad.compiler.syntax import nested_statements
from s2sgrad.errors import S2SGradError

__all__ = ["names_unread_after_call"]

# calls that read a frame's names by their text
_READING_BY_NAME = frozenset({"locals", "vars", "eval", "exec", "globals", "dir"})
_SIMPLE = (gast.Assign, gast.AnnAssign, gast.Expr, gast.Return)
_LOOPS = (gast.For, gast.While, gast.AsyncFor)


def names_unread_after_call(
    function: Any, lines: tuple[int, int], columns: tuple[int, int] | None
) -> frozenset[str]:
    """The local names of ``function`` whose values it cannot read again once the call
    written at ``lines`` (first and last, in its file) and ``columns`` (where the call
    starts on its first line and ends on its last; None on Python 3.10, which has no
    columns: the statement's one call of a Python function) returns; empty when that
    cannot be told (no source, the call not found, a call of ``locals()`` or ``eval``).

    Example::

        names_unread_after_call(masked_softmax, (18, 18), (8, 70))  # frozenset({'X'})
    """
    try:
        parsed = parse_function(function)
    except S2SGradError:
        return frozenset()
    node = parsed.node
    if any(
        type(n) is gast.Name and n.id in _READING_BY_NAME for n in gast.walk(node)
    ):  # fmt: skip
        return frozenset()
    first, last = (line - parsed.line_offset for line in lines)
    statement, loops = _running_statement(node.body, first, last)
    if statement is None:
        return frozenset()
    calls = [n for n in gast.walk(statement) if type(n) is gast.Call]
    if columns is not None:
        indent = _indent(parsed.filename, parsed.line_offset + node.lineno)
        start, end = (column - indent for column in columns)
        span = (first, last, start, end)
        calls = [
            n for n in calls if (n.lineno, n.end_lineno, n.col_offset, n.end_col_offset) == span
        ]
    else:  # Python 3.10 tells no columns: the one call of a Python function there
        calls = [n for n in calls if isinstance(_resolved(parsed, n.func), types.FunctionType)]
    if len(calls) != 1:
        return frozenset()
    call = calls[0]
    before_the_call = {id(n) for n in gast.walk(call)}
    read_in_statement = {
        n.id for n in _reads(statement) if id(n) not in before_the_call
    }  # fmt: skip
    rebound = (
        {t.id for t in statement.targets if type(t) is gast.Name}
        if type(statement) is gast.Assign
        else set()
    )
    later = _reads_after(node, statement, loops)
    candidates = {n.id for n in gast.walk(node) if type(n) is gast.Name}
    return frozenset(
        name
        for name in candidates
        if name not in read_in_statement and (name in rebound or name not in later)
    )


def _resolved(parsed: Any, func: gast.expr) -> Any:
    try:
        return parsed.resolve(func)
    except Exception:  # a name the function binds itself, or an expression
        return None


def _indent(filename: str, line: int) -> int:
    """How far the source of the function is indented in its file (a method's is)."""
    text = linecache.getline(filename, line)
    return len(text) - len(text.lstrip())


def _running_statement(body: list, first: int, last: int) -> tuple[Any, list]:
    """The simple statement spanning lines ``first`` to ``last`` (None when it is not a
    simple statement, or several share them), and the loops around it, outermost first."""
    found: list = []

    def visit(block: list, loops: list) -> None:
        for statement in block:
            if statement.lineno > last or statement.end_lineno < first:
                continue
            if isinstance(statement, _SIMPLE):
                found.append((statement, loops))
                continue
            inner = loops + [statement] if isinstance(statement, _LOOPS) else loops
            for field in ("body", "orelse", "finalbody"):
                visit(getattr(statement, field, None) or [], inner)
            for handler in getattr(statement, "handlers", None) or []:
                visit(handler.body, inner)
            for case in getattr(statement, "cases", None) or []:
                visit(case.body, inner)

    visit(body, [])
    if len(found) != 1:
        return None, []
    return found[0]


def _reads(tree: gast.AST):
    """The names ``tree`` reads: loads, and the targets of ``x op= v``."""
    for n in gast.walk(tree):
        if type(n) is gast.Name and type(n.ctx) is gast.Load:
            yield n
        elif type(n) is gast.AugAssign and type(n.target) is gast.Name:
            yield n.target


def _reads_after(function: gast.FunctionDef, statement: gast.stmt, loops: list) -> set[str]:
    """The names read by statements that may run after ``statement``: those after it in
    the text, and, when it is in a loop, any in the outermost loop around it."""
    names: set[str] = set()
    end = (statement.end_lineno, statement.end_col_offset)
    for other in nested_statements(function.body):
        if (other.lineno, other.col_offset) > end:
            names.update(n.id for n in _own_reads(other))
    if loops:  # the next round reads again what the loop reads, the call's own too
        names.update(n.id for n in _reads(loops[0]))
    return names


def _own_reads(statement: gast.stmt):
    """The names a statement reads in its own expressions, not in the blocks it holds."""
    blocks = {
        id(inner)
        for field in ("body", "orelse", "finalbody", "handlers", "cases")
        for block in [getattr(statement, field, None) or []]
        for inner in block
    }
    stack = [statement]
    while stack:
        node = stack.pop()
        if type(node) is gast.Name and type(node.ctx) is gast.Load:
            yield node
        elif type(node) is gast.AugAssign and type(node.target) is gast.Name:
            yield node.target
        stack.extend(c for c in gast.iter_child_nodes(node) if id(c) not in blocks)
