"""``try`` statements as the path on which the body raises nothing.

A ``try`` whose body the function runs to its end runs no handler, then its ``else`` and
its ``finally`` clauses: that path is straight-line code, differentiated as such. The body
goes into a ``with nothing_raised(...)`` block (``runtime/unraised.py``), which the sweeps
differentiate as the enclosing block's statements (``transparent_blocks.py``); should the
body raise what a handler catches, that block refuses the path at the user's line, and
mode "auto" differentiates the whole function on the tape::

    try:                                   with nothing_raised(ValueError, where="f.py:3"):
        y = np.log(x)                          y = np.log(x)
    except ValueError:             →       y = y * 2.0
        y = x                              y = y * x
    else:
        y = y * 2.0
    finally:
        y = y * x

A ``try`` without handlers is its body, then its ``finally`` clause. An exception no
handler catches leaves the function as it would have (the ``finally`` clause, whose
derivative would not be needed, does not run first). The body ends with
``body_reached(...)`` of the names it binds, a call the optimiser keeps (``purity.py``), so
that no statement of the body that may raise is dropped as unread. A ``try`` with a jump
(``return``, ``break``, ``continue``, ``yield``) in it, a handler naming its classes with
anything but names and attributes, and ``try``/``except*`` stay as they are (refused by
the sweeps where they compute differentiated values).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import gast

from s2sgrad import runtime
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import call, constant, load, located, names_written, walk

__all__ = ["straighten_try_statements"]

_JUMPS = (gast.Return, gast.Break, gast.Continue, gast.Yield, gast.YieldFrom, gast.Await)


def straighten_try_statements(
    node: gast.FunctionDef,
    names: NameGenerator,
    locate: Callable[[gast.AST], str],
    resolve: Callable[[gast.expr], Any] | None = None,
) -> dict[str, Any]:
    """Rewrite each ``try`` of ``node``'s body (see the module's example) in place; returns
    the helper the new code calls, by name (empty when there was none to rewrite).

    Example::

        straighten_try_statements(function, names, parsed.location)  # {'nothing_raised': ...}
    """
    helper: list[str] = []
    node.body = _block(node.body, names, locate, helper, resolve) or [gast.Pass()]
    if not helper:
        return {}
    return {helper[0]: runtime.nothing_raised, helper[1]: runtime.body_reached}


def _block(statements, names, locate, helper: list[str], resolve=None) -> list[gast.stmt]:
    result: list[gast.stmt] = []
    for statement in statements:
        if isinstance(statement, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            result.append(statement)  # a nested scope keeps its own statements
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and inner:
                setattr(statement, field, _block(inner, names, locate, helper, resolve))
        suppressed = _suppressed(statement, resolve)
        if suppressed is not None:  # with contextlib.suppress(E): try: ... except E: pass
            handler = gast.ExceptHandler(
                type=gast.Tuple(elts=suppressed, ctx=gast.Load()), name=None, body=[gast.Pass()]
            )
            attempt = located(
                gast.Try(body=statement.body, handlers=[handler], orelse=[], finalbody=[]),
                statement,
            )
            statement = attempt if _straight(attempt) else statement
        if type(statement) is gast.Try and _straight(statement):
            result.extend(_straightened(statement, names, locate, helper))
        else:
            result.append(statement)
    return result


def _suppressed(statement: gast.stmt, resolve) -> list[gast.expr] | None:
    """The classes ``with contextlib.suppress(...):`` (its only item, without ``as``)
    names, each a name or an attribute; else None."""
    if type(statement) is not gast.With or resolve is None or len(statement.items) != 1:
        return None
    item = statement.items[0]
    made = item.context_expr
    if item.optional_vars is not None or not isinstance(made, gast.Call) or made.keywords:
        return None
    if resolve(made.func) is not contextlib.suppress or not made.args:
        return None
    if not all(_plain_name(a) for a in made.args):
        return None
    return list(made.args)


def _straight(statement: gast.Try) -> bool:
    """Whether the ``try`` has no jump in its body or clauses, and its handlers name their
    classes plainly (``except (ValueError, np.linalg.LinAlgError):``, or none)."""
    for block in (statement.body, statement.orelse, statement.finalbody):
        for inner in block:
            if any(isinstance(n, _JUMPS) for n in walk(inner)):
                return False
    for handler in statement.handlers:
        for part in handler.body:
            if any(isinstance(n, (gast.Yield, gast.YieldFrom, gast.Await)) for n in walk(part)):
                return False
        kinds = handler.type
        if kinds is None:
            continue
        listed = kinds.elts if isinstance(kinds, gast.Tuple) else [kinds]
        if not all(_plain_name(k) for k in listed):
            return False
    return True


def _plain_name(node: gast.expr) -> bool:
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name)


def _straightened(statement: gast.Try, names, locate, helper: list[str]) -> list[gast.stmt]:
    if not statement.handlers:  # try/finally: an exception leaves the function anyway
        return [*statement.body, *statement.orelse, *statement.finalbody]
    if not helper:
        helper.extend([names.claim("nothing_raised"), names.claim("body_reached")])
    caught: list[gast.expr] = []
    for handler in statement.handlers:
        if handler.type is None:  # a bare except: whatever the body raises
            caught = [load("BaseException")]
            break
        kinds = handler.type
        caught.extend(kinds.elts if isinstance(kinds, gast.Tuple) else [kinds])
    guard = call(load(helper[0]), caught, {"where": constant(locate(statement))})
    bound = sorted(set().union(*(names_written(s) for s in statement.body)))
    reached = located(gast.Expr(value=call(load(helper[1]), [load(n) for n in bound])), statement)
    block = gast.With(
        items=[gast.withitem(context_expr=guard, optional_vars=None)],
        body=[*statement.body, reached],
        type_comment=None,
    )
    return [located(block, statement), *statement.orelse, *statement.finalbody]
