"""A factor common to both sides of a sum of products, taken out, in code on numbers.

The backward sweep adds the contributions of each use of a value one by one, so the
derivative of ``x = math.sin(x) * a + b * x`` becomes ``dx = dx * b + dx * a *
math.cos(x)``: three multiplications where a person writes two, ``dx = dx * (b + a *
math.cos(x))``. On Python numbers (``scalars.py``) each operation is a large part of the
cost, so a common name is taken out of every ``+`` and ``-`` whose sides are both
products containing it. The value is the same to rounding, as for ``math`` against NumPy.

Only in the statements that compute cotangents (the names computed from the seed:
:func:`cotangent_names`, read before the seed becomes ``1.0``), so the forward sweep
computes the user's values as the user wrote them. Only where every value is a number:
code with a tuple, list or string value (whose ``*`` repeats and ``+`` concatenates) is
left as it is.

Example::

    cotangents = cotangent_names(function, namespace)  # before scalars.scalar_code
    take_out_common_factors(function, cotangents)  # dx * b + dx * a * c -> dx * (b + a * c)
"""

from __future__ import annotations

import gast

from s2sgrad import runtime
from s2sgrad.compiler.annotations import KEEP_APART, annotation
from s2sgrad.compiler.specialize.broadcasts import resolve
from s2sgrad.compiler.syntax import (
    names_read,
    names_written,
    nested_statements,
    string_statement,
    walk,
)

__all__ = ["cotangent_names", "take_out_common_factors"]


def cotangent_names(function: gast.FunctionDef, namespace: dict) -> frozenset[str]:
    """The names of ``function`` bound to the seed (``seed_cotangent(...)``, or what the
    probe made of it: the statement marked to stand apart) and to values computed from
    them: the cotangents, which the forward sweep never reads.

    Example::

        cotangent_names(function, namespace)  # {"dx", "dt3", "da", ...}
    """
    assignments = [s for s in nested_statements(function.body) if type(s) in _ASSIGNMENTS]
    found = {
        name
        for s in assignments
        if type(s) is gast.Assign and _is_seed(s, namespace)
        for name in names_written(s)
    }
    readers: dict[str, list[gast.stmt]] = {}  # name -> the assignments reading it
    for s in assignments:
        for name in names_read(s):
            readers.setdefault(name, []).append(s)
    waiting = list(found)
    while waiting:
        for s in readers.get(waiting.pop(), ()):
            for name in names_written(s):
                if name not in found:
                    found.add(name)
                    waiting.append(name)
    return frozenset(found)


_ASSIGNMENTS = (gast.Assign, gast.AugAssign)


def _is_seed(statement: gast.Assign, namespace) -> bool:
    if annotation(statement, KEEP_APART, False):
        return True
    value = statement.value
    return type(value) is gast.Call and resolve(value.func, namespace) is runtime.seed_cotangent


def take_out_common_factors(function: gast.FunctionDef, cotangents: frozenset[str]) -> bool:
    """Rewrite, in place, each sum of products with a name common to both sides in the
    statements of the code on numbers ``function`` that compute ``cotangents``; True if
    any was.

    Example::

        take_out_common_factors(function, {"dx"})  # dx * b + dx * a * c -> dx * (b + a * c)
    """
    if not cotangents or not _numbers_only(function):
        return False
    rewriter = _Factoring()
    for statement in nested_statements(function.body):
        if type(statement) in _ASSIGNMENTS and names_written(statement) <= cotangents:
            statement.value = rewriter.visit(statement.value)
    return rewriter.changed


def _numbers_only(function) -> bool:
    """No value of ``function`` can be a sequence or a string: its only lists are empty
    stacks, its tuples are stored to or returned, its strings are comments."""
    allowed: set[int] = set()
    for node in walk(function):
        if type(node) is gast.Return and node.value is not None:
            allowed.update(id(n) for n in walk(node.value))
        elif string_statement(node) is not None or _empty_list(node):
            allowed.add(id(node.value))
    for node in walk(function):
        kind = type(node)
        if kind in (gast.Tuple, gast.List) and type(node.ctx) is gast.Load:
            if id(node) not in allowed:
                return False
        elif kind is gast.Constant and not isinstance(node.value, (int, float)):
            if node.value is not None and id(node) not in allowed:
                return False
        elif kind in (gast.Starred, gast.Subscript, gast.JoinedStr):
            return False
    return True


def _empty_list(statement) -> bool:
    """``stack = []``."""
    return (
        type(statement) is gast.Assign
        and type(statement.value) is gast.List
        and not (statement.value.elts)
    )


class _Factoring(gast.NodeTransformer):
    def __init__(self):
        self.changed = False

    def visit_BinOp(self, node: gast.BinOp) -> gast.expr:
        self.generic_visit(node)
        if type(node.op) not in (gast.Add, gast.Sub):
            return node
        left, right = _factors(node.left), _factors(node.right)
        if len(left) < 2 or len(right) < 2:
            return node
        for factor in left:
            if type(factor) is not gast.Name:
                continue
            match = next((f for f in right if type(f) is gast.Name and f.id == factor.id), None)
            if match is None:
                continue
            rest = gast.BinOp(
                left=_product([f for f in left if f is not factor]),
                op=node.op,
                right=_product([f for f in right if f is not match]),
            )
            self.changed = True
            return gast.BinOp(left=factor, op=gast.Mult(), right=rest)
        return node


def _factors(node: gast.expr) -> list[gast.expr]:
    """The operands of a chain of multiplications, left to right (``[node]`` for others)."""
    if type(node) is gast.BinOp and type(node.op) is gast.Mult:
        return _factors(node.left) + _factors(node.right)
    return [node]


def _product(factors: list[gast.expr]) -> gast.expr:
    product = factors[0]
    for factor in factors[1:]:
        product = gast.BinOp(left=product, op=gast.Mult(), right=factor)
    return product
