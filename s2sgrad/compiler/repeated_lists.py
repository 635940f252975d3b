"""A list or tuple of differentiated values repeated by ``*`` is refused.

``[h] * 2`` is sequence repetition, but both sweeps differentiate ``*`` as a product of
arrays: the cotangent of ``[h]`` came out as twice the sum of its copies', and forward mode
dropped the tangent of a copy (a silent wrong derivative). Until the sweeps differentiate
repetition, the transformer refuses it where it can see it: a list or tuple made in the
function, repeated by an integer literal or a variable that only holds integers.

Example::

    def f(h):
        s = [h] * 2  # refused: write [h for _ in range(2)], or use mode='tape'
        return s[0] * s[1]
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.frontend import ParsedFunction
from s2sgrad.compiler.reverse.facts import integer_names, list_names
from s2sgrad.compiler.syntax import names_read, nested_statements
from s2sgrad.errors import UnsupportedError

__all__ = ["refuse_repeated_lists"]


def refuse_repeated_lists(statements: list[gast.stmt], parsed: ParsedFunction, varied) -> None:
    """Refuse ``s = t * n`` (or ``n * t``) where ``t`` is a list or tuple made here that
    holds values ``varied`` with the differentiated arguments, and ``n`` an integer.

    Example::

        refuse_repeated_lists(node.body, parsed, activity.varied)
    """
    sequences = list_names(statements) | _tuple_names(statements)
    integers = integer_names(statements)
    for statement in nested_statements(statements):
        if not isinstance(statement, gast.Assign) or not isinstance(statement.value, gast.BinOp):
            continue
        product = statement.value
        if not isinstance(product.op, gast.Mult):
            continue
        for sequence, count in ((product.left, product.right), (product.right, product.left)):
            if (
                _is_sequence(sequence, sequences)
                and _is_integer(count, integers)
                and names_read(sequence) & varied
            ):
                raise UnsupportedError(
                    f"{parsed.location(statement)}: a list of differentiated values repeated "
                    "with * cannot be differentiated by source transformation; build it with "
                    "a comprehension ([h for _ in range(n)]), or use mode='tape'"
                )


def _tuple_names(statements) -> set[str]:
    return {
        s.targets[0].id
        for s in nested_statements(statements)
        if isinstance(s, gast.Assign)
        and isinstance(s.targets[0], gast.Name)
        and isinstance(s.value, gast.Tuple)
    }


def _is_sequence(node: gast.expr, sequences: set[str]) -> bool:
    if isinstance(node, (gast.List, gast.Tuple)):
        return True
    return isinstance(node, gast.Name) and node.id in sequences


def _is_integer(node: gast.expr, integers: set[str]) -> bool:
    if isinstance(node, gast.Constant):
        return type(node.value) is int
    return isinstance(node, gast.Name) and node.id in integers
