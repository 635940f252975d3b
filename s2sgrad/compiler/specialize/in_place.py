"""Cotangents accumulated in place: ``dW = dW + h.T @ dt`` becomes ``dW += h.T @ dt``, as
a person writes a loop's weight gradients, when that is surely the same array.

``+=`` writes the sum into ``dW``'s own array instead of a new one, which is only the same
when the sum has ``dW``'s shape and dtype (else ``+=`` would cast it, or fail) and when no
other name can see ``dW``'s array. The probe tells the first: each accumulation ``d = d +
e`` of the raw code is a probed site (:func:`accumulation_sums`), and :func:`note_sum`
records on it whether the sum, every time it ran, had ``d``'s shape and dtype. The second
is read from the finished code (:func:`accumulate_in_place`): ``d`` is not a parameter,
every other binding of ``d`` makes a new array (zeros, arithmetic) or a number, and ``d`` is
read only by its accumulations and by the ``return``.

Example::

    sums = accumulation_sums(assignments)  # as the probe is instrumented
    note_sum(binop, left, right, result)  # where the probe's sites are specialised
    accumulate_in_place(function, namespace)  # once the optimiser is done
"""

from __future__ import annotations

from collections import Counter

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.annotations import ACCUMULATION, annotate, annotation
from s2sgrad.compiler.specialize.broadcasts import resolve
from s2sgrad.compiler.specialize.seen import Seen
from s2sgrad.compiler.syntax import names_read, nested_statements, parameter_names, walk

__all__ = [
    "accumulate_in_place",
    "accumulation_sums",
    "is_accumulation",
    "mark_accumulation",
    "note_sum",
]

_FRESH_CALLS = (runtime.zeros_like_value, np.zeros, np.zeros_like)  # a new array each call


def accumulation_sums(assignments: list[gast.Assign]) -> set[int]:
    """The ids of the sums ``d + e`` of the statements ``d = d + e`` (``e`` not reading
    ``d``) among ``assignments``: the probe looks at each (:func:`mark_accumulation`)."""
    return {id(s.value) for s in assignments if _accumulated(s) is not None}


def mark_accumulation(node: gast.BinOp) -> None:
    """Mark the probe's copy of such a sum: not known to keep ``d``'s kind yet."""
    annotate(node, ACCUMULATION, False)


def is_accumulation(node: gast.BinOp) -> bool:
    """Whether the probe looks at this sum (:func:`mark_accumulation` marked it)."""
    return annotation(node, ACCUMULATION) is not None


def note_sum(node: gast.AST, left: Seen, right: Seen, result: Seen) -> None:
    """Record on a marked sum whether it kept its left operand's shape and dtype."""
    if type(node) is not gast.BinOp or not is_accumulation(node):
        return
    kept = (
        left.kind == result.kind == "array"
        and left.shape == result.shape
        and left.dtype == result.dtype
        and left.dtype is not None
    )
    annotate(node, ACCUMULATION, kept)


def accumulate_in_place(function: gast.FunctionDef, namespace: dict) -> bool:
    """Write ``d += e`` for each ``d = d + e`` the probe saw keep ``d``'s shape and dtype,
    where no other name can see ``d``'s array; True if any was. In place.

    Example::

        accumulate_in_place(function, namespace)  # dW = dW + h.T @ dt  ->  dW += h.T @ dt
    """
    statements = list(nested_statements(function.body))
    candidates: dict[str, list[gast.Assign]] = {}
    for statement in statements:
        value = getattr(statement, "value", None)  # the probe's mark first: most have none
        if type(value) is not gast.BinOp or annotation(value, ACCUMULATION) is not True:
            continue
        name = _accumulated(statement)
        if name is not None:
            candidates.setdefault(name, []).append(statement)
    if not candidates:
        return False
    parameters = parameter_names(function)
    uses = _Uses(statements)
    changed = False
    for name, accumulations in candidates.items():
        if name in parameters or not _private(name, accumulations, uses, namespace):
            continue
        for statement in accumulations:
            update = gast.AugAssign(
                target=statement.targets[0], op=gast.Add(), value=statement.value.right
            )
            _become(statement, gast.copy_location(update, statement))
            changed = True
    return changed


def _accumulated(statement) -> str | None:
    """``d`` for the statement ``d = d + e`` where ``e`` does not read ``d``."""
    if not (
        type(statement) is gast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is gast.Name
        and type(statement.value) is gast.BinOp
        and type(statement.value.op) is gast.Add
        and type(statement.value.left) is gast.Name
    ):
        return None
    name = statement.targets[0].id
    if statement.value.left.id != name or name in names_read(statement.value.right):
        return None
    return name


class _Uses:
    """Which statements bind each name, how often the others read it, and which ``return``
    reads it: one walk of every statement's own nodes, which each candidate then asks
    (a walk of all statements per candidate made a long loop body quadratic).

    Rewriting one candidate's accumulations as ``d += e`` changes none of this for the
    names other than ``d``, so the index stays true while the candidates are rewritten.
    """

    def __init__(self, statements) -> None:
        self.binders: dict[str, list[gast.stmt]] = {}
        self.reads: Counter[str] = Counter()  # by the statements other than a return
        self.returns: dict[str, list[gast.Return]] = {}  # the returns reading each name
        for statement in statements:
            if type(statement) is gast.Return:
                for name in _loads(statement):
                    self.returns.setdefault(name, []).append(statement)
                continue
            for name in _binds(statement):
                self.binders.setdefault(name, []).append(statement)
            self.reads.update(_loads(statement))


def _private(name, accumulations, uses: _Uses, namespace) -> bool:
    """Whether ``name`` holds an array no other name sees: bound only by its marked
    accumulations and by values that are new arrays or numbers, and read only by those
    accumulations and by the ``return``."""
    own = {id(s) for s in accumulations}
    for statement in uses.binders.get(name, ()):
        if id(statement) not in own and not _fresh_binding(statement, name, namespace):
            return False
    if uses.reads[name] != len(accumulations):  # each accumulation reads it once, on its left
        return False
    returned = uses.returns.get(name, ())
    return all(_returned_plainly(s.value, name, namespace) for s in returned)


def _binds(statement) -> set[str]:
    """The names ``statement`` binds itself (a loop's target, not its body's)."""
    if type(statement) in (gast.For, gast.While, gast.If):
        parts = [statement.target] if type(statement) is gast.For else []
        parts.append(statement.iter if type(statement) is gast.For else statement.test)
    else:
        parts = [statement]
    return {
        n.id
        for part in parts
        for n in walk(part)
        if type(n) is gast.Name and type(n.ctx) is not gast.Load
    }


def _fresh_binding(statement, name, namespace) -> bool:
    """``name = <a new array or a number>``."""
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return False
    if type(statement.targets[0]) is not gast.Name or statement.targets[0].id != name:
        return False
    value = statement.value
    if type(value) is gast.Constant:
        return type(value.value) in (int, float)
    if type(value) in (gast.BinOp, gast.UnaryOp):
        return True  # arithmetic on arrays makes a new one
    if type(value) is gast.Call:
        target = resolve(value.func, namespace)
        return any(target is f for f in _FRESH_CALLS)
    return False


def _reads(node, name) -> int:
    """How often the statements own to ``node`` (not those of its blocks) read ``name``."""
    return _loads(node)[name]


def _loads(node) -> Counter[str]:
    """How often the statements own to ``node`` (not those of its blocks) read each name."""
    if type(node) in (gast.For, gast.While, gast.If):
        parts = [node.iter if type(node) is gast.For else node.test]
    else:
        parts = [node]
    return Counter(
        n.id
        for part in parts
        for n in walk(part)
        if type(n) is gast.Name and type(n.ctx) is gast.Load
    )


def _returned_plainly(value, name, namespace) -> bool:
    """``return d``, ``return (.., d, ..)`` or ``as_gradient(d, x)`` in them."""
    if type(value) is gast.Name:
        return True
    if type(value) is gast.Tuple:
        return all(_returned_plainly(v, name, namespace) for v in value.elts if _reads(v, name))
    if type(value) is gast.Call and resolve(value.func, namespace) is runtime.as_gradient:
        first, *rest = value.args
        return type(first) is gast.Name and not any(_reads(r, name) for r in rest)
    return False


def _become(node: gast.AST, replacement: gast.AST) -> None:
    """Make ``node`` the node ``replacement`` is, where it stands in its tree."""
    node.__class__ = replacement.__class__
    node.__dict__ = dict(replacement.__dict__)
