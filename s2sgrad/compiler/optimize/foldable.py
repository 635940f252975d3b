"""Whether the constant folder (``folding.ConstantFolder``) simplifies a node as it is, its
children left as they are: what lets the optimiser skip statements it has nothing to fold.

Each condition mirrors the folder's ``visit_`` method for the kind (some a little wider):
a node none of them accepts is left alone by it. A new fold in the folder needs its
condition here; ``tests/test_optimize.py`` checks the two on random expressions.

Example::

    binop_folds(parse_expression("x * 1"))  # True
"""

from __future__ import annotations

import gast

__all__ = [
    "binop_folds",
    "compare_folds",
    "is_negation",
    "literal_number",
    "negatable",
    "subscript_folds",
    "unaryop_folds",
]


def literal_number(node) -> int | float | None:
    """The number a literal ``2``, ``0.5`` or ``-2`` stands for, else None.

    Example::

        literal_number(parse_expression("-2"))  # -2
    """
    if isinstance(node, gast.Constant) and type(node.value) in (int, float):
        return node.value
    if (
        isinstance(node, gast.UnaryOp)
        and isinstance(node.op, gast.USub)
        and isinstance(node.operand, gast.Constant)
        and type(node.operand.value) in (int, float)
    ):
        return -node.operand.value
    return None


def negatable(node) -> bool:
    """Whether ``-node`` can be written without a negation (``-a`` → ``a``, ``(-a) * b`` →
    ``a * b``): whether ``s2sgrad.compiler.optimize.folding._negated(node)`` is not None."""
    while isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Mult, gast.Div)):
        node = node.left
    return isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub)


def is_negation(node) -> bool:
    """Whether ``node`` is ``-e``."""
    return isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub)


_FOLDER_LOOKS_FOR = (gast.Constant, gast.UnaryOp, gast.BinOp)
_FOLDABLE_OPERATORS = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow)


def binop_folds(node: gast.BinOp) -> bool:
    """Whether the folder simplifies this binary operation as it is."""
    if not (isinstance(node.left, _FOLDER_LOOKS_FOR) or isinstance(node.right, _FOLDER_LOOKS_FOR)):
        return False  # every condition below wants a literal, a negation or a product there
    op = type(node.op)
    left, right = literal_number(node.left), literal_number(node.right)
    if left is not None and right is not None and op in _FOLDABLE_OPERATORS:
        return True  # two numbers (unless the arithmetic fails)
    if (left is not None or right is not None) and (_truth(node.left) or _truth(node.right)):
        return op in (gast.Add, gast.Sub, gast.Mult, gast.Pow)  # 2 - True
    if op is gast.Mult or op is gast.Div:
        if right is not None and is_negation(node.left):
            return True  # (-a) * 2
        if left is not None and op is gast.Mult and negatable(node.right):
            return True  # 2 * -a
    if op is gast.Add:
        term = node.left
        other = node.right
        if (  # c * x + c * x (without looking whether the x are alike)
            type(term) is gast.BinOp
            and type(term.op) is gast.Mult
            and type(literal_number(term.left)) is float
            and type(other) is gast.BinOp
            and type(other.op) is gast.Mult
            and literal_number(other.left) == literal_number(term.left)
        ):
            return True
        if negatable(node.right):
            return True  # a + -b
    if op is gast.Sub and negatable(node.right):
        return True  # a - -b
    if (op is gast.Pow or op is gast.Mult) and right == 1 and type(right) is int:
        return True  # x ** 1, x * 1
    return op is gast.Mult and left == 1 and type(left) is int  # 1 * x


def _truth(node) -> bool:
    return type(node) is gast.Constant and type(node.value) is bool


def unaryop_folds(node: gast.UnaryOp) -> bool:
    """Whether the folder simplifies this unary operation as it is."""
    if not isinstance(node.op, gast.USub):
        return False
    operand = node.operand
    if negatable(operand):
        return True  # -(-a)
    return (  # -(2 * e)
        isinstance(operand, gast.BinOp)
        and isinstance(operand.op, (gast.Mult, gast.Div))
        and literal_number(operand.left) is not None
    )


def subscript_folds(node: gast.Subscript) -> bool:
    """Whether the folder simplifies this subscript as it is: ``(a, b)[0]``."""
    return isinstance(node.value, gast.Tuple)  # (a, b)[0]


def compare_folds(node: gast.Compare) -> bool:
    """Whether the folder may simplify this comparison: ``None is None``, ``3 > 0``."""
    return isinstance(node.left, gast.Constant)  # None is None
