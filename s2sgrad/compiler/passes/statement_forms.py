"""Two Python forms written with plainer statements before the sweeps see them.

A loop's ``else`` clause runs when the loop ends without ``break``::

    for t in items:                 broke1 = False
        if t > 0:                   for t in items:
            break          ->           if t > 0:
    else:                                   broke1 = True
        y = y * 2                           break
                                    if not broke1:
                                        y = y * 2

An assignment expression evaluated first in its statement (``if (n := len(x)) > 2:``,
``y = (t := np.tanh(x)) * t``) becomes an assignment before it; in a ``while`` test it
is evaluated again before each test::

    while (k := k + 1) < n:        while True:
        body               ->          k = k + 1
                                       if not k < n:
                                           break
                                       body

An assignment expression anywhere else (after another operand, in a branch of ``and``,
``or`` or ``x if c else y``, in a comprehension or a lambda) is left for the refusal that
names it (``desugar._refuse_hidden_writes``): moving it would change what is evaluated
first.
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import assign, constant, load, located

__all__ = ["plain_statement_forms"]

_LOOPS = (gast.For, gast.While)


def plain_statement_forms(node: gast.FunctionDef, names: NameGenerator) -> bool:
    """Rewrite ``node``'s loops with ``else`` clauses and its leading assignment
    expressions in place (see the module's docstring); whether there was any.

    Example::

        plain_statement_forms(parse("def f(x):\\n    if (n := x) > 0:\\n        return n"), names)
        # def f(x):
        #     n = x
        #     if n > 0:
        #         return n
    """
    changes: list[gast.stmt] = []
    node.body = _block(node.body, names, changes)
    return bool(changes)


def _block(statements: list[gast.stmt], names: NameGenerator, changes: list) -> list[gast.stmt]:
    result: list[gast.stmt] = []
    for statement in statements:
        result.extend(_statement(statement, names, changes))
    return result


def _statement(statement: gast.stmt, names: NameGenerator, changes: list) -> list[gast.stmt]:
    """``statement`` and the statements written for it (``changes`` gets each rewritten)."""
    if isinstance(statement, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
        return [statement]  # a scope of its own
    before: list[gast.stmt] = []
    if isinstance(statement, _LOOPS) and statement.orelse:
        changes.append(statement)
        broke = names.fresh("broke")
        statement.body = _flag_breaks(statement.body, broke)
        orelse, statement.orelse = statement.orelse, []
        before.append(located(assign(broke, constant(False)), statement))
        after = gast.If(
            test=gast.UnaryOp(op=gast.Not(), operand=load(broke)),
            body=_block(orelse, names, changes),
            orelse=[],
        )
        return [*before, *_statement(statement, names, changes), located(after, statement)]
    if isinstance(statement, gast.While):
        hoisted = _leading_named(statement, "test")
        if hoisted:
            changes.append(statement)
            stop = gast.If(
                test=gast.UnaryOp(op=gast.Not(), operand=statement.test),
                body=[gast.Break()],
                orelse=[],
            )
            statement.test = constant(True)
            statement.body = [*hoisted, stop, *statement.body]
            for made in (*hoisted, stop):
                located(made, statement)
    elif isinstance(statement, (gast.If, gast.Assign, gast.Expr, gast.Return)):
        field = "test" if isinstance(statement, gast.If) else "value"
        if getattr(statement, field) is not None:
            before = [located(s, statement) for s in _leading_named(statement, field)]
            changes.extend(before)
    for block in ("body", "orelse", "finalbody"):
        inner = getattr(statement, block, None)
        if inner:
            setattr(statement, block, _block(inner, names, changes))
    if isinstance(statement, gast.Try):
        for handler in statement.handlers:
            handler.body = _block(handler.body, names, changes)
    return [*before, statement]


def _leading_named(holder: gast.AST, field: str) -> list[gast.Assign]:
    """The assignments of the assignment expressions ``holder.field`` evaluates first,
    each replaced there by its name, in the order they run (``(a := (b := f(x)) + 1)``:
    ``b`` then ``a``)."""
    hoisted: list[gast.Assign] = []
    while True:
        place = _first_evaluated(holder, field)
        if place is None:
            return hoisted
        parent, key, named = place
        hoisted.append(assign(named.target.id, named.value))
        _put(parent, key, load(named.target.id))


def _first_evaluated(parent, key):
    """``(parent, key, node)``: the assignment expression at ``parent[key]`` (a list's
    entry or a node's field) that runs before anything else there, if there is one."""
    current = _get(parent, key)
    while True:
        if isinstance(current, gast.NamedExpr):
            if not isinstance(current.target, gast.Name):
                return None
            return _first_evaluated(current, "value") or (parent, key, current)
        if isinstance(current, (gast.BinOp, gast.Compare)):
            parent, key = current, "left"
        elif isinstance(current, gast.UnaryOp):
            parent, key = current, "operand"
        elif isinstance(current, gast.BoolOp):
            parent, key = current.values, 0
        elif isinstance(current, gast.IfExp):
            parent, key = current, "test"
        elif isinstance(current, (gast.Subscript, gast.Attribute)):
            parent, key = current, "value"
        elif isinstance(current, gast.Call) and current.args and _plain_callee(current.func):
            parent, key = current.args, 0
        elif isinstance(current, (gast.Tuple, gast.List)) and current.elts:
            parent, key = current.elts, 0
        else:
            return None
        current = _get(parent, key)


def _get(parent, key):
    return parent[key] if isinstance(parent, list) else getattr(parent, key)


def _put(parent, key, value) -> None:
    if isinstance(parent, list):
        parent[key] = value
    else:
        setattr(parent, key, value)


def _plain_callee(func: gast.expr) -> bool:
    """``f`` or ``np.linalg.norm``: naming the function evaluates nothing else."""
    while isinstance(func, gast.Attribute):
        func = func.value
    return isinstance(func, gast.Name)


def _flag_breaks(body: list[gast.stmt], broke: str) -> list[gast.stmt]:
    """``body`` with each ``break`` of its loop (not of a loop inside it) preceded by
    ``broke = True``."""
    result: list[gast.stmt] = []
    for statement in body:
        if isinstance(statement, gast.Break):
            result.append(located(assign(broke, constant(True)), statement))
            result.append(statement)
            continue
        if not isinstance(statement, (*_LOOPS, gast.FunctionDef, gast.AsyncFunctionDef)):
            for block in ("body", "orelse", "finalbody"):
                inner = getattr(statement, block, None)
                if inner:
                    setattr(statement, block, _flag_breaks(inner, broke))
            if isinstance(statement, gast.Try):
                for handler in statement.handlers:
                    handler.body = _flag_breaks(handler.body, broke)
        elif isinstance(statement, _LOOPS) and statement.orelse:  # its else is this loop's
            statement.orelse = _flag_breaks(statement.orelse, broke)
        result.append(statement)
    return result
