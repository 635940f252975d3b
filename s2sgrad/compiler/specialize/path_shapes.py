"""Branches and loops on values whose shapes do not depend on the path taken.

``while np.linalg.norm(b) < 1000: b = b * 2`` runs a number of times set by values, and
``if b.sum() > 0: c = b else: c = 100 * b`` picks a branch by values, yet every array has
the same shape (and kind) whichever way they go: code specialised to the shapes of one call
stays right for the next. :func:`fixed_shapes` says so for one such region, strictly:

* its statements are assignments to names (and ``pass``, ``break``, ``continue``, pushes
  of the derivative's saves onto a list, nested ``if``/``while`` held to the same rules);
* each assignment either updates a name by an integer constant (``b = b * 2``,
  ``k = k + 1``: the shape is the one the name had), or gives a name the same shape in every
  assignment it has anywhere in the function: a *stable* name (assigned once, then only
  updated so) optionally times an integer constant, or one and the same scalar test
  (``t = np.linalg.norm(b)``, ``t = t1 > 0``) of stable names.

Anything else (a call, a subscript, a float constant that could turn integers into floats)
leaves the function generic.

Example::

    fixed_shapes(while_node, body, resolve)  # True for the D2L loop above
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.annotations import SAVE_PUSH, annotation
from s2sgrad.compiler.syntax import names_read, node_fields, walk

__all__ = ["assigned_values", "fixed_shapes", "names_assigned_in"]

_UPDATES = (gast.Add, gast.Sub, gast.Mult)
_REDUCTIONS = (np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.any, np.all)
_REDUCING_METHODS = {"sum", "mean", "prod", "max", "min", "any", "all"}


def names_assigned_in(
    region: gast.If | gast.While, known: dict[int, frozenset[str]] | None = None
) -> set[str]:
    """The names a branch's or loop's body assigns (their values may depend on the path).

    ``known`` keeps each region's answer (by ``id``) for the regions around it to reuse:
    asked of every region of 90 nested ifs, each body is walked once, not once per
    region around it.

    Example::

        names_assigned_in(parse("if a:\n    b = 1").body[0])  # {"b"}
    """
    known = {} if known is None else known
    found: set[str] = set()
    for statement in [*region.body, *region.orelse]:
        found |= _stored_names(statement, known)
    return found


def _stored_names(node: gast.AST, known: dict[int, frozenset[str]]) -> frozenset[str]:
    """The names stored anywhere in ``node`` (nested functions included), remembering
    those of each branch or loop in ``known``."""
    if type(node) in _REGIONS and id(node) in known:
        return known[id(node)]
    found: set[str] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if current is not node and type(current) in _REGIONS:
            found |= _stored_names(current, known)
            continue
        if type(current) is gast.Name:
            if type(current.ctx) is gast.Store:
                found.add(current.id)
            if current.annotation is not None:
                pending.append(current.annotation)
            continue
        for field in node_fields(type(current)):
            value = current.__dict__.get(field)
            if type(value) is list:
                pending += [item for item in value if isinstance(item, gast.AST)]
            elif isinstance(value, gast.AST):
                pending.append(value)
    answer = frozenset(found)
    if type(node) in _REGIONS:
        known[id(node)] = answer
    return answer


_REGIONS = (gast.If, gast.While)


def fixed_shapes(
    region: gast.If | gast.While,
    body: list[gast.stmt],
    resolve: Callable[[gast.expr], Any],
    everywhere: dict[str, list[gast.expr | None]] | None = None,
) -> bool:
    """Whether every name ``region`` assigns has one shape whichever path runs (the rules
    in the module's docstring); ``body`` is the whole function's, in A-normal form, and
    ``everywhere`` its :func:`assigned_values` when the caller has them already."""
    inside: list[gast.Assign] = []
    if everywhere is None:
        everywhere = assigned_values([node for statement in body for node in walk(statement)])
    if not _plain(region.body + region.orelse, inside):
        return False
    for statement in inside:
        name = statement.targets[0].id
        if _updates(statement.value, name):
            continue
        key = _key(statement.value, resolve)
        if key is None:
            return False
        read = names_read(statement.value)
        if not all(_stable(n, everywhere) for n in read):  # one shape each, wherever read
            return False
        others = [v for v in everywhere.get(name, []) if not _updates(v, name)]
        if any(_key(v, resolve) != key for v in others):
            return False
    return True


def _plain(statements: list[gast.stmt], found: list[gast.Assign]) -> bool:
    for statement in statements:
        kind = type(statement)
        if kind in (gast.Pass, gast.Break, gast.Continue) or annotation(
            statement, SAVE_PUSH, False
        ):
            continue
        if kind is gast.Assign:
            if len(statement.targets) != 1 or type(statement.targets[0]) is not gast.Name:
                return False
            found.append(statement)
        elif kind in (gast.If, gast.While):
            if not _plain(statement.body + statement.orelse, found):
                return False
        else:
            return False
    return True


def assigned_values(nodes: list[gast.AST]) -> dict[str, list[gast.expr | None]]:
    """Each name's assigned values among ``nodes``, every node of a body (None: written
    other than by ``name = ...``)."""
    values: dict[str, list[gast.expr | None]] = {}
    plain: set[int] = set()
    for node in nodes:
        if type(node) is gast.Assign and len(node.targets) == 1:
            target = node.targets[0]
            if type(target) is gast.Name:
                values.setdefault(target.id, []).append(node.value)
                plain.add(id(target))
    for node in nodes:
        if type(node) is gast.Name and type(node.ctx) is not gast.Load and id(node) not in plain:
            values.setdefault(node.id, []).append(None)
    return values


def _integer(node: gast.expr) -> bool:
    return type(node) is gast.Constant and type(node.value) is int


def _updates(value: gast.expr | None, name: str) -> bool:
    """``name op k`` or ``k op name`` with an integer ``k`` (shape kept, dtype too but bool)."""
    if not isinstance(value, gast.BinOp) or type(value.op) not in _UPDATES:
        return False
    left, right = value.left, value.right
    if type(left) is gast.Name and left.id == name and _integer(right):
        return True
    return type(right) is gast.Name and right.id == name and _integer(left)


def _stable(name: str, everywhere: dict[str, list[gast.expr | None]]) -> bool:
    """Assigned at most once other than by :func:`_updates` (a parameter: never)."""
    values = everywhere.get(name, [])
    return sum(1 for v in values if not _updates(v, name)) <= 1


def _key(value: gast.expr | None, resolve) -> tuple | None:
    """What sets the shape of ``value``: ``("like", name)`` or ``("scalar", text)``; None
    when the rules do not cover it."""
    if value is None:
        return None
    if type(value) is gast.Name:
        return ("like", value.id)
    if type(value) is gast.BinOp and type(value.op) in _UPDATES:
        left, right = value.left, value.right
        if type(left) is gast.Name and _integer(right):
            return ("like", left.id)
        if type(right) is gast.Name and _integer(left):
            return ("like", right.id)
        return None
    if _scalar_test(value, resolve):
        return ("scalar", gast.dump(value))
    return None


def _scalar_test(value: gast.expr, resolve) -> bool:
    """A whole-array reduction of a name, or a comparison of names and constants."""
    if type(value) is gast.Compare:
        operands = [value.left, *value.comparators]
        return all(type(o) in (gast.Name, gast.Constant) for o in operands)
    if type(value) is not gast.Call or value.keywords:
        return False
    func, args = value.func, value.args
    if type(func) is gast.Attribute and not args and type(func.value) is gast.Name:
        return func.attr in _REDUCING_METHODS
    if len(args) != 1 or type(args[0]) is not gast.Name:
        return False
    try:
        target = resolve(func)
    except Exception:
        return False
    return target is np.linalg.norm or any(target is r for r in _REDUCTIONS)
