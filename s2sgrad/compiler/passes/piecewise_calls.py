"""``np.piecewise(x, condlist, funclist)`` as the item writes NumPy does, each piece's
function called on its piece's values (part of :func:`.desugar.desugar`)::

    y = np.piecewise(x, [x < 0, x >= 0], [lambda t: t**2, np.sin])

becomes ::

    pw_x = x
    pw_c = piecewise_conditions([x < 0, x >= 0], 2, ndim(pw_x))  # truth values, as NumPy's
    pw = zeros_like(pw_x)
    pw_f = lambda t: t**2                                      # inlined where it is called
    if any_entry(pw_c[0]):
        pw[pw_c[0]] = pw_f(pw_x[pw_c[0]])
    if any_entry(pw_c[1]):
        pw[pw_c[1]] = np.sin(pw_x[pw_c[1]])
    y = pw

so the transformer differentiates each of the user's functions on its piece (the tape
runs NumPy's algorithm the same way, ``runtime/piecewise.py``). Only a call with three
arguments whose ``funclist`` is a list or tuple written out, of lambdas, functions named
and numbers, is rewritten, and only where it is the first thing of its statement to call
anything (what else the statement calls runs after it: calls around it); any other stays
as it is, refused.
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import call, constant, load, store, walk
from s2sgrad.runtime.piecewise import any_entry, piecewise_conditions

__all__ = ["mentions_piecewise", "piecewise_calls"]

_BLOCKS = ("body", "orelse", "finalbody")
_EVALUATED_BEFORE = (gast.Call, gast.Lambda, gast.NamedExpr, gast.Await, gast.Yield)


def mentions_piecewise(node: gast.AST) -> bool:
    """Whether ``node`` names ``piecewise`` anywhere (a cheap look before the rewrite)."""
    return any(
        (type(n) is gast.Attribute and n.attr == "piecewise")
        or (type(n) is gast.Name and n.id == "piecewise")
        for n in walk(node)
    )


def piecewise_calls(body: list, names: NameGenerator, resolve) -> dict[str, Any]:
    """Rewrite, in place, the qualifying ``np.piecewise`` calls of ``body`` and its blocks
    (see the module docstring); returns the helpers' names, each with its object."""
    bindings: dict[str, Any] = {}
    body[:] = _block(body, names, resolve, bindings)
    return bindings


def _block(block: list, names: NameGenerator, resolve, bindings: dict) -> list:
    result: list = []
    for statement in block:
        for field in _BLOCKS:
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and inner:
                setattr(statement, field, _block(inner, names, resolve, bindings))
        for handler in getattr(statement, "handlers", None) or []:
            handler.body = _block(handler.body, names, resolve, bindings)
        found = _qualifying_call(statement, resolve)
        if found is None:
            result.append(statement)
            continue
        parent, field, index, piecewise = found
        name = names.claim("pw")
        result.extend(_pieces(piecewise, name, names, resolve, bindings, statement))
        replacement = load(name)
        if index is None:
            setattr(parent, field, replacement)
        else:
            getattr(parent, field)[index] = replacement
        result.append(statement)
    return result


def _qualifying_call(statement: gast.stmt, resolve):
    """``(parent, field, index, call)`` of the ``np.piecewise`` call to rewrite in
    ``statement``, or None."""
    if type(statement) not in (gast.Assign, gast.Return, gast.Expr) or statement.value is None:
        return None
    calls = [n for n in walk(statement.value) if type(n) is gast.Call]
    found = [c for c in calls if _is_piecewise(c, resolve)]
    if len(found) != 1 or not _qualifies(found[0], resolve):
        return None
    piecewise = found[0]
    inside = {id(n) for n in walk(piecewise)}  # its arguments: evaluated first, in order
    around = _ancestors(statement.value, piecewise)
    others = [n for n in walk(statement.value) if id(n) not in inside and id(n) not in around]
    if any(type(n) in _EVALUATED_BEFORE for n in others):
        return None  # another call (or a lambda, a walrus) may come before it
    if statement.value is piecewise:
        return statement, "value", None, piecewise
    for node in walk(statement.value):
        for field, value in gast.iter_fields(node):
            if value is piecewise:
                return node, field, None, piecewise
            if isinstance(value, list):
                for index, item in enumerate(value):
                    if item is piecewise:
                        return node, field, index, piecewise
    return None


def _is_piecewise(node: gast.Call, resolve) -> bool:
    try:
        return resolve(node.func) is np.piecewise
    except Exception:  # a name that does not resolve is not np.piecewise
        return False


def _qualifies(node: gast.Call, resolve) -> bool:
    if len(node.args) != 3 or node.keywords:
        return False
    if any(type(a) is gast.Starred for a in node.args):
        return False
    functions = node.args[2]
    if type(functions) not in (gast.List, gast.Tuple):
        return False
    return all(_piece_function(f, resolve) is not None for f in functions.elts)


def _piece_function(node: gast.expr, resolve) -> str | None:
    """ "call" for a lambda or a function named, "value" for a number; None otherwise."""
    if type(node) is gast.Lambda:
        return "call"
    if type(node) is gast.Constant and isinstance(node.value, (int, float, complex)):
        return "value" if not isinstance(node.value, bool) else None
    if type(node) in (gast.Name, gast.Attribute):
        try:
            found = resolve(node)
        except Exception:
            return None
        return "call" if callable(found) and not isinstance(found, type) else None
    return None


def _ancestors(root: gast.AST, target: gast.AST) -> set[int]:
    """The ids of the nodes on the way from ``root`` down to ``target``."""
    path: list = []

    def down(node) -> bool:
        if node is target:
            return True
        for child in gast.iter_child_nodes(node):
            path.append(id(node))
            if down(child):
                return True
            path.pop()
        return False

    down(root)
    return set(path)


def _pieces(piecewise: gast.Call, name: str, names, resolve, bindings, where) -> list:
    x, conditions, functions = piecewise.args
    helper = _bound(piecewise_conditions, "piecewise_conditions", names, bindings)
    zeros = _bound(np.zeros_like, "zeros_like", names, bindings)
    ndim = _bound(np.ndim, "ndim", names, bindings)
    present = _bound(any_entry, "any_entry", names, bindings)
    x_name, c_name = names.claim(f"{name}_x"), names.claim(f"{name}_c")
    count = constant(len(functions.elts))
    statements: list = [
        gast.Assign(targets=[store(x_name)], value=x, type_comment=None),
        gast.Assign(
            targets=[store(c_name)],
            value=call(load(helper), [conditions, count, call(load(ndim), [load(x_name)])]),
            type_comment=None,
        ),
        gast.Assign(
            targets=[store(name)], value=call(load(zeros), [load(x_name)]), type_comment=None
        ),
    ]
    for position, function in enumerate(functions.elts):

        def condition(position=position):
            return gast.Subscript(value=load(c_name), slice=constant(position), ctx=gast.Load())

        piece = gast.Subscript(value=load(name), slice=condition(), ctx=gast.Store())
        if _piece_function(function, resolve) == "value":
            statements.append(gast.Assign(targets=[piece], value=function, type_comment=None))
            continue
        if type(function) is gast.Lambda:
            function_name = names.claim(f"{name}_f")
            statements.append(
                gast.Assign(targets=[store(function_name)], value=function, type_comment=None)
            )
            function = load(function_name)
        values = gast.Subscript(value=load(x_name), slice=condition(), ctx=gast.Load())
        write = gast.Assign(targets=[piece], value=call(function, [values]), type_comment=None)
        statements.append(gast.If(test=call(load(present), [condition()]), body=[write], orelse=[]))
    for statement in statements:  # the user's line for what the rewrite made
        for node in walk(statement):
            if (
                "lineno" in getattr(node, "_attributes", ())
                and getattr(node, "lineno", None) is None
            ):
                gast.copy_location(node, where)
    return statements


def _bound(function: Any, stem: str, names: NameGenerator, bindings: dict) -> str:
    helper = next((n for n, f in bindings.items() if f is function), None)
    if helper is None:
        helper = names.claim(stem)
        bindings[helper] = function
    return helper
