"""Split expressions nested deeper than ``DEEPEST`` into statements, in evaluation order.

Every pass recurses into expressions, and a sum of 1,000 terms is a left-nested tree 1,000
deep: its parts are bound to names first, so that no pass recurses with a function's size.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable
from typing import Any

from s2sgrad.errors import UnsupportedError

__all__ = ["DEEPEST", "split_deep_expressions", "statement_lists", "may_be_deep"]

# Expressions deeper than this are split into statements (the passes recurse into
# expressions; a sum of 1,000 terms is a left-nested tree 1,000 deep).
DEEPEST = 48
# statements whose expressions are evaluated once, before anything else they do
_SPLIT_STATEMENTS = (
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Return,
    ast.Expr,
    ast.If,
    ast.For,
)
_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


def split_deep_expressions(tree: ast.AST, location: Callable[[int], str]) -> None:
    """Bind the parts of expressions nested deeper than ``DEEPEST`` to names first, in
    the order Python evaluates them, so that no pass recurses with a function's size.

    ``a + b + c + …`` (1,000 terms) becomes ``t = a + b + … (48 terms)``,
    ``t = t + …``: the same operations in the same order. An expression that cannot be
    split that way (its deep part inside a loop condition, a lambda, a comprehension, or
    after a call it must not run before) is refused, naming ``location(line)``.

    Example::

        split_deep_expressions(ast.parse(source), lambda line: f"model.py:{line}")
    """
    counter = itertools.count()
    for statements in statement_lists(tree):
        if not any(map(may_be_deep, statements)):
            continue
        split: list[ast.stmt] = []
        for statement in statements:
            if may_be_deep(statement):
                split.extend(_split_statement(statement, counter, location))
            else:
                split.append(statement)
        statements[:] = split
    if next(counter):  # parts were bound to names
        ast.fix_missing_locations(tree)


def statement_lists(tree: ast.AST) -> list[list[ast.stmt]]:
    """Every list of statements in ``tree`` (bodies, else and finally blocks, handlers and
    cases), found without recursion and without visiting expressions."""
    found, owners = [], [tree]
    while owners:
        owner = owners.pop()
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            items = getattr(owner, name, None)
            if not isinstance(items, list):
                continue
            owners.extend(i for i in items if isinstance(i, _BLOCKS))
            if name not in ("handlers", "cases"):
                found.append(items)
    return found


def may_be_deep(statement: ast.stmt) -> bool:
    """Whether an expression of ``statement`` may be too deep: each level of nesting takes
    a character at least, and the passes cope with twice ``DEEPEST``, so an expression on
    one line that is shorter than that is not looked at (most are, and it is quicker)."""
    if type(statement) not in _DECORATED and _short_line(statement):
        return False  # its expressions lie within it (a definition's decorators do not)
    child: Any  # a node with a location (expressions, keywords)
    for child in ast.iter_child_nodes(statement):
        if isinstance(child, _BLOCKS) or getattr(child, "end_lineno", None) is None:
            continue
        if (
            child.end_lineno != child.lineno
            or child.end_col_offset - child.col_offset > 2 * DEEPEST
        ):
            return True
    return False


_DECORATED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _short_line(node: Any) -> bool:
    """Whether ``node`` lies on one line, within ``2 * DEEPEST`` characters."""
    end = getattr(node, "end_lineno", None)
    return (
        end is not None
        and end == node.lineno
        and node.end_col_offset - node.col_offset <= 2 * DEEPEST
    )


def _heights(statement: ast.stmt) -> tuple[dict[int, int], dict[int, bool]]:
    """The height of every node of ``statement``'s expressions, and whether it is plain
    (names, constants, attributes and arithmetic only), both by id, without recursion."""
    order: list[ast.AST] = []
    stack = [c for c in ast.iter_child_nodes(statement) if not isinstance(c, _BLOCKS)]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(ast.iter_child_nodes(node))
    heights: dict[int, int] = {}
    plain: dict[int, bool] = {}
    for node in reversed(order):  # children come after their parents in order
        _measure(node, heights, plain)
    return heights, plain


def _measure(node: ast.AST, heights: dict[int, int], plain: dict[int, bool]) -> None:
    """Set ``node``'s height and plainness from its children's."""
    children = list(ast.iter_child_nodes(node))
    heights[id(node)] = 1 + max((heights.get(id(c), 0) for c in children), default=0)
    plain[id(node)] = isinstance(node, _PLAIN_NODES) and all(plain.get(id(c)) for c in children)


def _split_statement(statement, counter, location) -> list[ast.stmt]:
    heights, plain = _heights(statement)
    deep = [c for c in ast.iter_child_nodes(statement) if heights.get(id(c), 0) > DEEPEST]
    if not deep:
        return [statement]
    if not isinstance(statement, _SPLIT_STATEMENTS):
        raise _too_deep(statement, location)
    before: list[ast.stmt] = []
    for root in deep:  # each turn replaces a subtree DEEPEST // 2 high by a name: it ends
        while heights[id(root)] > DEEPEST:
            try:
                path = _path_to_height(root, heights, plain, DEEPEST // 2)
            except _Unsplittable:
                raise _too_deep(statement, location) from None
            part = path[-1]
            name = f"_s2s_part{next(counter)}"
            before.append(
                ast.copy_location(ast.Assign([ast.Name(name, ast.Store())], part), statement)
            )
            parent, field, index = path[-2]
            replacement = ast.copy_location(ast.Name(name, ast.Load()), part)
            if index is None:
                setattr(parent, field, replacement)
            else:
                getattr(parent, field)[index] = replacement
            heights[id(replacement)], plain[id(replacement)] = 1, True
            for node, _, _ in reversed(path[:-1]):  # the heights above it shrink
                _measure(node, heights, plain)
    return [*before, statement]


def _path_to_height(root, heights, plain, height) -> list:
    """From ``root`` down its deepest branch to a node of ``height``: ``[(node, field,
    index), …, part]``, refusing a branch Python would not evaluate first."""
    path: list = []
    node = root
    while heights[id(node)] > height:
        child, field, index = _deepest_child(node, heights, plain)
        path.append((node, field, index))
        node = child
    return [*path, node]


def _deepest_child(node, heights, plain):
    """The deepest child of ``node``, if computing it first is safe: it is evaluated
    first, or only names and constants are evaluated before it, and always."""
    evaluated_before_are_plain = True
    best = None
    for name, value in ast.iter_fields(node):
        items = value if isinstance(value, list) else [value]
        for index, child in enumerate(items):
            if not isinstance(child, ast.AST):
                continue
            if best is None or heights.get(id(child), 0) > heights[id(best[0])]:
                best = (child, name, index if isinstance(value, list) else None)
                safe = evaluated_before_are_plain
            if not plain.get(id(child), _is_plain_leaf(child)):
                evaluated_before_are_plain = False
    child, field, index = best
    conditional = (
        (isinstance(node, ast.BoolOp) and index != 0)
        or (isinstance(node, ast.IfExp) and field != "test")
        or (isinstance(node, ast.Compare) and field == "comparators" and index != 0)
    )
    if not safe or conditional or isinstance(node, _OWN_SCOPES):
        raise _Unsplittable
    return child, field, index


_OWN_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _is_plain_leaf(node: ast.AST) -> bool:
    """Whether a node without recorded plainness (an operator, a context) is plain."""
    return isinstance(node, _PLAIN_NODES)


# Names, constants, attributes of names (``np.sum``) and arithmetic on them: what may be
# evaluated after a later part of an expression without a visible difference.

_PLAIN_NODES = (
    ast.Name,
    ast.Constant,
    ast.Attribute,
    ast.BinOp,
    ast.UnaryOp,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.expr_context,
)


class _Unsplittable(Exception):
    pass


def _too_deep(node, location) -> UnsupportedError:
    return UnsupportedError(
        f"{location(node.lineno)}: an expression nested more than {DEEPEST} deep that "
        "cannot be split into statements without changing what runs first; bind its parts to "
        "names, or use "
        "mode='tape'"
    )
