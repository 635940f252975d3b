"""A helper's specialised forward function that saves only its arguments calls the
helper itself.

Once the backward function of a specialised pair reads nothing the forward function
computed (``paired_saves.py``, ``shape_constants.py``), the forward function is the
user's code again, plus the saved tuple of its arguments: it is written as a call of
the user's function, as a person writing the gradient by hand calls it, so that::

    def conv2d_vjp(x, kernel, bias):
        out = bias
        for i in range(5): ...
        return (out, (kernel, x))

becomes::

    def conv2d_vjp(x, kernel, bias):
        return (conv2d(x, kernel, bias), (kernel, x))

Only when every saved value is a parameter the code never binds again, the code writes
into nothing (no item or attribute stores, no augmented assignment) and calls only pure
functions, and the user's function takes exactly these parameters, by position.

Example::

    if primal_forward(forward_node, primal, namespace, is_pure):
        ...  # compile the forward function again
"""

from __future__ import annotations

import types
from collections.abc import Callable

import gast

from s2sgrad.compiler.optimize.paired_saves import returned_pair
from s2sgrad.compiler.optimize.statements import is_comment
from s2sgrad.compiler.syntax import call, load, walk

__all__ = ["primal_forward"]

_PLAIN = (gast.Assign, gast.For, gast.If, gast.Return, gast.Pass)
_UNFOLLOWED = (gast.Lambda, gast.Yield, gast.YieldFrom, gast.Await, gast.NamedExpr)


def primal_forward(
    forward: gast.FunctionDef, primal, namespace: dict, is_pure: Callable[[gast.Call], bool]
) -> bool:
    """Make ``forward`` ``return (primal(*parameters), saved)`` where that computes the
    same; say whether it did. ``namespace`` (the forward function's) gains the name."""
    parameters = _parameters(forward, primal)
    last = returned_pair(forward)
    if parameters is None or last is None:
        return False
    saved = last.value.elts[1].elts
    if not all(type(e) is gast.Name and e.id in parameters for e in saved):
        return False
    if not _computes_only(forward, parameters, is_pure):
        return False
    name = _name_for(primal, namespace)
    value = call(load(name), [load(p) for p in parameters])
    last.value.elts[0] = value
    forward.body = [last]
    return True


def _parameters(forward, primal) -> list[str] | None:
    """The forward function's parameters, if the user's function takes just these."""
    if not isinstance(primal, types.FunctionType):
        return None
    arguments = forward.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.posonlyargs:
        return None
    names = [a.id for a in arguments.args]
    code = primal.__code__
    if (
        code.co_argcount != len(names)
        or code.co_kwonlyargcount
        or code.co_posonlyargcount
        or code.co_flags & (0x04 | 0x08 | 0x20 | 0x80 | 0x100 | 0x200)  # *args **kw generators
        or list(code.co_varnames[: len(names)]) != names
    ):
        return None
    return names


def _computes_only(forward, parameters: list[str], is_pure) -> bool:
    """No statement but assignments to names, loops, branches and the return; no write
    into anything; only pure calls; the parameters never bound again."""
    for node in walk(forward):
        if node is forward:
            continue
        kind = type(node)
        if isinstance(node, gast.stmt):
            if kind not in _PLAIN and not is_comment(node):
                return False
            if kind is gast.Assign and not all(_names_only(t) for t in node.targets):
                return False
        elif (
            (kind is gast.Call and not is_pure(node))
            or kind in _UNFOLLOWED
            or (kind is gast.Name and node.id in parameters and type(node.ctx) is gast.Store)
        ):
            return False
    return True


def _names_only(target) -> bool:
    if type(target) is gast.Name:
        return True
    return type(target) in (gast.Tuple, gast.List) and all(_names_only(t) for t in target.elts)


def _name_for(primal, namespace: dict) -> str:
    """The user's name for ``primal`` where it is free in ``namespace``, else a new one."""
    base = primal.__name__ if primal.__name__.isidentifier() else "primal"
    name, number = base, 1
    while namespace.get(name, primal) is not primal:
        number += 1
        name = f"{base}_{number}"
    namespace[name] = primal
    return name
