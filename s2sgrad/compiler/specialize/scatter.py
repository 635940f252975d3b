"""One buffer for a sum of index cotangents: ``d = index_cotangent(a, x, i) +
index_cotangent(b, x, j)`` becomes ``d = np.zeros_like(x); d[i] = a; d[j] += b``, as a
person would write it (the specialiser of ``index_cotangent`` marks the terms that may).
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.annotations import SCATTER, UNCOVERED, annotation
from s2sgrad.compiler.optimize.facts import FactsCache
from s2sgrad.compiler.specialize.rewrites import numpy_name
from s2sgrad.compiler.syntax import (
    attribute,
    call,
    clone,
    constant,
    load,
    names_modified,
    names_read,
)

__all__ = ["scatter_sums"]


def scatter_sums(
    function: gast.FunctionDef, namespace: dict, kept: FactsCache | None = None
) -> None:
    """``d = index_cotangent(a, x, i) + index_cotangent(b, x, j) + e`` → one buffer.

    Becomes ``d = np.zeros_like(x); d[i] += a; d[j] += b; d = d + e``: one array instead
    of one per term, as a person would write it. ``kept``, the optimiser's facts of the
    body, when given, forgets each statement whose blocks changed (a statement rewritten
    is replaced by new ones, unknown to it, made of its own nodes).

    Example::

        scatter_sums(function, namespace, facts)
    """
    npn = numpy_name(namespace)

    def rewrite(statements):
        result = []
        buffers: set[str] = set()  # names holding a private zeros buffer, not read since
        for statement in statements:
            for field in ("body", "orelse"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                    rewritten = rewrite(inner)
                    setattr(statement, field, rewritten)
                    if kept is not None and not _same_statements(rewritten, inner):
                        kept.forget_all(statement)
            lines = _scatter_statement(statement, npn, buffers)
            if lines is None:
                if buffers:
                    buffers -= names_read(statement) | names_modified(statement)
                lines = [statement]
            result.extend(lines)
        return result

    function.body = rewrite(function.body)


def _same_statements(new: list[gast.stmt], old: list[gast.stmt]) -> bool:
    return len(new) == len(old) and all(a is b for a, b in zip(new, old))


def _scatter_statement(statement, npn, buffers: set[str]):
    if not (isinstance(statement, gast.Assign) and isinstance(statement.targets[0], gast.Name)):
        return None
    target = statement.targets[0].id
    terms = _sum_terms(statement.value)
    existing = bool(terms) and isinstance(terms[0], gast.Name) and terms[0].id == target
    if existing:
        if target not in buffers:
            return None
        terms = terms[1:]
    scatters = [t for t in terms if annotation(t, SCATTER, False)]
    if not scatters:
        return None
    base = scatters[0].args[1]
    if not isinstance(base, gast.Name):
        return None
    scatters = [t for t in scatters if isinstance(t.args[1], gast.Name) and t.args[1].id == base.id]
    rest = [t for t in terms if all(t is not u for u in scatters)]
    if any(target in names_read(t) for t in terms):
        return None
    lines = []
    # where the first part does not write, a fresh buffer needs zeros: all of it, or just
    # the rest of the first axis when the first part is one slice of it
    uncovered = None if existing else annotation(scatters[0], UNCOVERED)
    if not existing:
        create = "zeros_like" if uncovered is None else "empty_like"
        lines.append(
            gast.Assign(
                targets=[
                    gast.Name(id=target, ctx=gast.Store(), annotation=None, type_comment=None)
                ],
                value=call(attribute(load(npn), create), [clone(base)]),
                type_comment=None,
            )
        )
        for part in uncovered or ():
            rest_of_axis = gast.Subscript(value=load(target), slice=part, ctx=gast.Store())
            lines.append(
                gast.Assign(targets=[rest_of_axis], value=constant(0.0), type_comment=None)
            )
    for position, term in enumerate(scatters):
        index = _index_syntax(term.args[2])
        place = gast.Subscript(value=load(target), slice=index, ctx=gast.Store())
        if position == 0 and not existing:  # a fresh buffer: the first part is written
            lines.append(gast.Assign(targets=[place], value=term.args[0], type_comment=None))
        else:
            lines.append(gast.AugAssign(target=place, op=gast.Add(), value=term.args[0]))
    if rest:
        total = load(target)
        for term in rest:
            total = gast.BinOp(left=total, op=gast.Add(), right=term)
        lines.append(
            gast.Assign(
                targets=[
                    gast.Name(id=target, ctx=gast.Store(), annotation=None, type_comment=None)
                ],
                value=total,
                type_comment=None,
            )
        )
    for line in lines:
        gast.copy_location(line, statement)
    if rest:
        buffers.discard(target)  # d = d + e made a new array
    else:
        buffers.add(target)
    return lines


def _sum_terms(node):
    if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Add):
        return _sum_terms(node.left) + _sum_terms(node.right)
    return [node]


def _index_syntax(index: gast.expr) -> gast.expr:
    """``np.s_[1:]`` back to the subscript ``1:`` it was written as."""
    if (
        isinstance(index, gast.Subscript)
        and isinstance(index.value, gast.Attribute)
        and index.value.attr == "s_"
    ):
        return index.slice
    return index
