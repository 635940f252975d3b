"""``np.expand_dims(a, (2, 4))`` on an array of 4 dimensions is the view
``a[:, :, None, :, None, :]``: the same array, without the several µs ``np.expand_dims``
spends in Python.

The probe sees the call's axes and its result's rank; its specialiser only notes them on
the call (``NEW_AXES``), because broadcast stripping and uniform cotangents read
``expand_dims`` calls by name. :func:`index_new_axes`, after those passes, writes the
calls still there as indexing.

Example::

    index_new_axes(function)  # np.expand_dims(p, (2, 4)) → p[:, :, None, :, None, :]
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.annotations import NEW_AXES, annotate, annotation
from s2sgrad.compiler.specialize.rewrites import has_axes, specialises
from s2sgrad.compiler.syntax import constant, node_fields, walk

__all__ = ["index_new_axes"]


@specialises(np.expand_dims)
def _expand_dims(node, args, result, namespace):
    """Note on the call the axes it adds to an array (the rewrite comes later)."""
    if len(node.args) != 2 or node.keywords or not has_axes(args[0]) or result.kind != "array":
        return None
    axis = args[1].value if args[1].kind in ("int", "tuple") else None
    if axis is None:
        return None
    axes = (axis,) if type(axis) is int else tuple(axis)
    rank = len(result.shape)
    new = frozenset(a % rank for a in axes)
    if len(new) == len(axes) == rank - len(args[0].shape):
        annotate(node, NEW_AXES, (new, rank))
    return None


def index_new_axes(function: gast.FunctionDef, numbers: frozenset = frozenset()) -> None:
    """Write, in place, every ``expand_dims`` call of ``function`` noted by the probe as
    indexing with ``None`` (see the module's docstring), unless later passes may have made
    its argument a number: it reads none of ``numbers`` (uniform cotangents kept as
    numbers) and some name (a literal is a number).

    The noted calls are found with where each stands, in one walk, and only those places
    are rewritten: inner calls first, as a rewrite of every node bottom-up would (so a
    call's argument is final when it is looked at)."""
    places = _noted_places(function)
    if not places:
        return
    calls: dict[int, tuple[gast.Call, list]] = {}  # each call and the places holding it
    for holder, key, call in places:
        calls.setdefault(id(call), (call, []))[1].append((holder, key))
    # a call's nodes outnumber those of any call inside it: the fewest first is inner first
    for call, held in sorted(calls.values(), key=lambda entry: len(walk(entry[0]))):
        replace = _indexing(call, numbers)
        if replace is None:
            continue
        for holder, key in held:
            if type(holder) is list:
                holder[key] = replace()
            else:
                setattr(holder, key, replace())


def _noted_places(root: gast.AST) -> list[tuple]:
    """Each place (list and index, or node and field) that holds a call noted ``NEW_AXES``
    in the tree of ``root`` (the fields a node transformer visits), once."""
    places = []
    seen: set[tuple[int, Any]] = set()
    stack = [root]
    pop, push = stack.pop, stack.append
    call_kind, leaves = gast.Call, (gast.Name, gast.Constant)
    while stack:
        node = pop()
        state = node.__dict__
        for field in node_fields(type(node)):
            value = state.get(field)
            if type(value) is list:
                items = enumerate(value)
                holder: Any = value
            elif isinstance(value, gast.AST):
                items = ((field, value),)  # type: ignore[assignment]
                holder = node
            else:
                continue
            for key, item in items:
                kind = type(item)
                if (
                    kind is call_kind
                    and NEW_AXES in item.__dict__
                    and (id(holder), key) not in seen
                ):
                    seen.add((id(holder), key))  # a node held twice is walked twice
                    places.append((holder, key, item))
                if kind in leaves:
                    if kind is gast.Name and item.annotation is not None:
                        push(item)
                elif isinstance(item, gast.AST):
                    push(item)
    return places


def _indexing(node: gast.Call, numbers: frozenset):
    """How to make each place holding ``node`` index its argument, or None to keep it."""
    noted = annotation(node, NEW_AXES)
    if noted is None or not node.args:
        return None
    names = {n.id for n in walk(node.args[0]) if type(n) is gast.Name}
    if not names or names & numbers:
        return None
    new, rank = noted
    value = node.args[0]

    def indexed() -> gast.Subscript:  # a new index each place, as each visit made one
        index = [
            constant(None) if d in new else gast.Slice(lower=None, upper=None, step=None)
            for d in range(rank)
        ]
        return gast.Subscript(
            value=value, slice=gast.Tuple(elts=index, ctx=gast.Load()), ctx=gast.Load()
        )

    return indexed
