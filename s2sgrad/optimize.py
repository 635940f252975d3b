"""Tidy generated code until it reads like a careful hand-written gradient.

Passes, run to a fixed point on each straight-line block:

* constant folding (``2 - 1`` → ``1``, ``x ** 1`` → ``x``, ``x * 1`` → ``x``);
* copy propagation (``a = b`` and later reads of ``a`` become reads of ``b``);
* folding single-use temporaries into the one expression that reads them;
* merging accumulations (``d = e1 … d = d + e2`` → ``d = e1 + e2``);
* dead-code elimination of side-effect-free assignments nobody reads.
"""

from __future__ import annotations

import ast
import operator
from collections import Counter
from collections.abc import Callable

import gast

from s2sgrad.syntax import COMMENT_MARK, clone, names_modified, names_read, names_written

__all__ = ["optimize"]

MAX_FOLDED_SIZE = 14  # nodes in an expression folded into its single use


def optimize(body: list[gast.stmt], is_pure_call: Callable[[gast.Call], bool]) -> list[gast.stmt]:
    """Optimise a function body; ``is_pure_call`` says which calls may be moved or dropped.

    Example::

        optimize(parse("t = a * 1\\nreturn t").body, lambda c: True)  # [return a]
    """
    for _ in range(20):
        before = _dump(body)
        body = _Optimizer(is_pure_call).block(body, live_after=set(), top=True)
        if _dump(body) == before:
            break
    return body


def _dump(body):
    return [gast.dump(s) for s in body]


class _Optimizer:
    def __init__(self, is_pure_call):
        self.is_pure_call = is_pure_call

    def pure(self, node: gast.AST) -> bool:
        for child in gast.walk(node):
            if isinstance(child, gast.Call) and not self.is_pure_call(child):
                return False
            if isinstance(child, (gast.Yield, gast.YieldFrom, gast.Await, gast.NamedExpr)):
                return False
        return True

    def block(self, body: list[gast.stmt], live_after: set[str], top: bool) -> list[gast.stmt]:
        body = _fold_constant_branches(body)
        for statement in body:
            for field in ("body", "orelse"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                    setattr(statement, field, self.block(inner, set(), top=False) or [gast.Pass()])
                    if field == "orelse" and all(isinstance(s, gast.Pass) for s in inner):
                        statement.orelse = []
            _ConstantFolder().visit(statement)
        if not top:
            return body
        body = self.propagate_copies(body)
        body = self.fold_single_uses(body)
        body = self.merge_accumulations(body)
        body = self.eliminate_dead(body, live_after)
        return body

    # ---------------------------------------------------------------------------------------
    def propagate_copies(self, body):
        writes = Counter(n for s in body for n in names_written(s))
        result = list(body)
        index = 0
        while index < len(result):
            statement = result[index]
            copy = _simple_assignment(statement)
            if copy and writes[copy] == 1 and _number(statement.value) is not None:
                for s in result[index + 1 :]:
                    _replace_read(s, copy, statement.value)
                del result[index]
                continue
            if copy and isinstance(statement.value, gast.Name):
                target, source = copy, statement.value.id
                later = result[index + 1 :]
                source_rewritten = any(source in names_modified(s) for s in later)
                if writes[target] == 1 and not source_rewritten and target != source:
                    for s in later:
                        _rename_reads(s, target, source)
                    del result[index]
                    continue
            index += 1
        return result

    def fold_single_uses(self, body):
        result = list(body)
        writes = Counter(n for s in result for n in names_written(s))
        changed = True
        while changed:
            changed = False
            reads = Counter()
            for s in result:
                for n in gast.walk(s):
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                        reads[n.id] += 1
            for index, statement in enumerate(result):
                target = _simple_assignment(statement)
                if not target or writes[target] != 1 or reads[target] != 1:
                    continue
                if getattr(statement, "keep_apart", False):
                    continue
                value = statement.value
                if not self.pure(value) or _size(value) > MAX_FOLDED_SIZE:
                    continue
                inputs = names_read(value)
                for later_index in range(index + 1, len(result)):
                    later = result[later_index]
                    if _is_comment(later):
                        continue
                    if target in names_read(later):
                        if (
                            _is_compound(later)
                            or isinstance(later, gast.Return)
                            or getattr(later, "keep_apart", False)
                            or not _top_level_reads(later, target)
                        ):
                            break
                        _replace_read(later, target, value)
                        del result[index]
                        changed = True
                        break
                    if names_modified(later) & inputs or not self.pure_statement(later):
                        break
                if changed:
                    break
        return result

    def pure_statement(self, statement):
        return isinstance(statement, gast.Assign) and self.pure(statement.value)

    def merge_accumulations(self, body):
        result = list(body)
        for index, statement in enumerate(result):
            if statement is None:
                continue
            target = _simple_assignment(statement)
            value = getattr(statement, "value", None)
            if not (
                target
                and isinstance(value, gast.BinOp)
                and isinstance(value.op, gast.Add)
                and isinstance(value.left, gast.Name)
                and value.left.id == target
                and target not in names_read(value.right)
            ):
                continue
            for earlier_index in range(index - 1, -1, -1):
                earlier = result[earlier_index]
                if earlier is None:
                    continue
                if _simple_assignment(earlier) == target:
                    between = [s for s in result[earlier_index + 1 : index] if s is not None]
                    inputs = names_read(earlier.value)
                    if all(
                        target not in names_read(s) and not (names_modified(s) & inputs)
                        for s in between
                    ) and not any(_is_compound(s) for s in between):
                        value.left = earlier.value
                        result[earlier_index] = None
                    break
                if target in names_read(earlier) or target in names_written(earlier):
                    break
        return [s for s in result if s is not None]

    def eliminate_dead(self, body, live_after):
        live = set(live_after)
        result = []
        for statement in reversed(body):
            if _is_comment(statement):
                result.append(statement)
                continue
            if isinstance(statement, gast.Assign) and all(
                isinstance(t, gast.Name) for t in _flat_targets(statement.targets[0])
            ):
                targets = {t.id for t in _flat_targets(statement.targets[0])}
                if not targets & live and self.pure(statement.value):
                    continue
                live -= targets
                live |= names_read(statement.value)
                result.append(statement)
                continue
            live |= names_read(statement)
            result.append(statement)
        result.reverse()
        return _drop_orphan_comments(result)


def _fold_constant_branches(body):
    result = []
    for statement in body:
        if isinstance(statement, gast.If):
            _ConstantFolder().visit(statement.test)
            if isinstance(statement.test, gast.Constant):
                branch = statement.body if statement.test.value else statement.orelse
                result.extend(s for s in branch if not isinstance(s, gast.Pass))
                continue
        result.append(statement)
    return result


def _drop_orphan_comments(body):
    result = []
    for index, statement in enumerate(body):
        if _is_comment(statement):
            following = body[index + 1] if index + 1 < len(body) else None
            if following is None or _is_comment(following):
                continue
        result.append(statement)
    return result


def _is_comment(statement) -> bool:
    return (
        isinstance(statement, gast.Expr)
        and isinstance(statement.value, gast.Constant)
        and isinstance(statement.value.value, str)
        and statement.value.value.startswith(COMMENT_MARK)
    )


def _is_compound(statement) -> bool:
    return isinstance(statement, (gast.If, gast.For, gast.While, gast.With, gast.Try))


def _flat_targets(target):
    if isinstance(target, (gast.Tuple, gast.List)):
        return [e for t in target.elts for e in _flat_targets(t)]
    return [target]


def _simple_assignment(statement) -> str | None:
    if (
        isinstance(statement, gast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], gast.Name)
    ):
        return statement.targets[0].id
    return None


def _size(node) -> int:
    return sum(1 for _ in gast.walk(node))


def _rename_reads(statement, old, new):
    for node in gast.walk(statement):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and node.id == old:
            node.id = new


def _top_level_reads(statement, name) -> bool:
    """The read of ``name`` is not inside a lambda or comprehension (own scope)."""
    for node in gast.walk(statement):
        scoped = (gast.Lambda, gast.ListComp, gast.GeneratorExp, gast.SetComp)
        if isinstance(node, scoped) and name in names_read(node):
            return False
    return True


class _Replace(gast.NodeTransformer):
    def __init__(self, name, value):
        self.name = name
        self.value = value

    def visit_Name(self, node):
        if node.id == self.name and isinstance(node.ctx, gast.Load):
            return clone(self.value)
        return node


def _replace_read(statement, name, value):
    _Replace(name, value).visit(statement)


_FOLDABLE = {
    gast.Add: operator.add,
    gast.Sub: operator.sub,
    gast.Mult: operator.mul,
    gast.Div: operator.truediv,
    gast.Pow: operator.pow,
}


def _number(node):
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


def _number_node(value):
    node = gast.Constant(value=abs(value), kind=None)
    if value < 0:
        return gast.UnaryOp(op=gast.USub(), operand=node)
    return node


class _ConstantFolder(gast.NodeTransformer):
    def visit_BinOp(self, node):
        self.generic_visit(node)
        left, right = _number(node.left), _number(node.right)
        op = type(node.op)
        if left is not None and right is not None and op in _FOLDABLE:
            try:
                value = _FOLDABLE[op](left, right)
            except (ZeroDivisionError, OverflowError):
                return node
            if isinstance(value, (int, float)) and abs(value) < 1e15:
                return _number_node(value)
        if op is gast.Pow and right == 1 and type(right) is int:
            return node.left
        if op is gast.Mult and right == 1 and type(right) is int:
            return node.left
        if op is gast.Mult and left == 1 and type(left) is int:
            return node.right
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        index = node.slice
        if (
            isinstance(node.value, gast.Tuple)
            and isinstance(index, gast.Constant)
            and type(index.value) is int
            and -len(node.value.elts) <= index.value < len(node.value.elts)
            and isinstance(node.ctx, gast.Load)
        ):
            return node.value.elts[index.value]
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if (
            len(node.ops) == 1
            and isinstance(node.ops[0], (gast.Is, gast.IsNot))
            and isinstance(node.left, gast.Constant)
            and isinstance(node.comparators[0], gast.Constant)
            and node.comparators[0].value is None
        ):
            same = node.left.value is None
            return gast.Constant(value=same if isinstance(node.ops[0], gast.Is) else not same, kind=None)
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        return node


_ = ast
