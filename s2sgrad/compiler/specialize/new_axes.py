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

import gast
import numpy as np

from s2sgrad.compiler.annotations import NEW_AXES, annotate, annotation
from s2sgrad.compiler.specialize.rewrites import has_axes, specialises
from s2sgrad.compiler.syntax import constant, walk

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
    numbers) and some name (a literal is a number)."""
    if any(type(n) is gast.Call and NEW_AXES in n.__dict__ for n in walk(function)):
        _Indexing(numbers).visit(function)  # rebuilding every node's fields costs a walk's 4x


class _Indexing(gast.NodeTransformer):
    def __init__(self, numbers: frozenset):
        self.numbers = numbers

    def visit_Call(self, node):
        self.generic_visit(node)
        noted = annotation(node, NEW_AXES)
        if noted is None or not node.args:
            return node
        names = {n.id for n in walk(node.args[0]) if type(n) is gast.Name}
        if not names or names & self.numbers:
            return node
        new, rank = noted
        index = [
            constant(None) if d in new else gast.Slice(lower=None, upper=None, step=None)
            for d in range(rank)
        ]
        return gast.Subscript(
            value=node.args[0], slice=gast.Tuple(elts=index, ctx=gast.Load()), ctx=gast.Load()
        )
