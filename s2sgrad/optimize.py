"""Tidy generated code until it reads like a careful hand-written gradient.

Passes, run to a fixed point on each straight-line block:

* constant folding (``2 - 1`` → ``1``, ``x ** 1`` → ``x``, ``x * 1`` → ``x``);
* copy propagation (``a = b`` and later reads of ``a`` become reads of ``b``);
* folding single-use temporaries into the one expression that reads them;
* merging accumulations (``d = e1 … d = d + e2`` → ``d = e1 + e2``);
* dead-code elimination of side-effect-free assignments nobody reads.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable

import gast

from s2sgrad.syntax import (
    COMMENT_MARK,
    clone,
    method_receiver,
    names_modified,
    names_read,
    names_written,
    string_statement,
    walk,
)

__all__ = ["optimize"]

MAX_FOLDED_SIZE = 14  # nodes in an expression folded into its single use


def drop_unneeded_saves(body: list[gast.stmt]) -> list[gast.stmt]:
    """Remove stack pushes and pops of variables that nothing reads once restored.

    The reverse transformer saves a value when backward code reads it; after
    specialisation some of those reads (shape queries) are gone.
    """
    stacks = _stacks(body)
    if not stacks:
        return body
    statements = list(_walk_with_loops(body, ()))
    removable = set()
    for stack in stacks:
        saved = {
            _pushed_name(s, stack) for s, _ in statements if _pushed_name(s, stack) is not None
        }
        for name in saved:
            if not _read_after_restore(statements, stack, name):
                removable.add((stack, name))
    if not removable:
        return body
    body = _without_saves(body, removable)
    still_pushed = {
        _pushed_name(s, stack) for s, _ in _walk_with_loops(body, ()) for stack in stacks
    }
    return [
        s
        for s in body
        if not (getattr(s, "s2s_save_init", False) and s.targets[0].id not in still_pushed)
    ]


def _stacks(body) -> set[str]:
    """The stacks the reverse transformer created (marked where they are made)."""
    return {
        s.targets[0].id
        for s in body
        if isinstance(s, gast.Assign) and getattr(s, "s2s_stack", False)
    }


def _walk_with_loops(statements, loops):
    for statement in statements:
        yield statement, loops
        inner_loops = (
            loops + (statement,) if isinstance(statement, (gast.For, gast.While)) else loops
        )
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                yield from _walk_with_loops(inner, inner_loops)


def _pushed_name(statement, stack) -> str | None:
    """``name`` for the statement ``stack.append(name)``."""
    if isinstance(statement, gast.Expr) and method_receiver(statement.value, "append") == stack:
        args = statement.value.args
        if len(args) == 1 and isinstance(args[0], gast.Name):
            return args[0].id
    return None


def _popped_name(statement, stack) -> str | None:
    """``name`` for the statement ``name = stack.pop()``."""
    if (
        isinstance(statement, gast.Assign)
        and isinstance(statement.targets[0], gast.Name)
        and method_receiver(statement.value, "pop") == stack
    ):
        return statement.targets[0].id
    return None


def _read_after_restore(statements, stack, name) -> bool:
    """Whether ``name`` is read after a pop restored it (or in a loop that restores it)."""
    popped = False
    restoring_loops = {
        id(loop) for s, loops in statements if _popped_name(s, stack) == name for loop in loops
    }
    for statement, loops in statements:
        if _popped_name(statement, stack) == name:
            popped = True
            continue
        if _pushed_name(statement, stack) == name:
            continue
        restored = popped or any(id(loop) in restoring_loops for loop in loops)
        if restored and name in _reads_of_statement_itself(statement):
            return True
    return False


def _reads_of_statement_itself(statement) -> set[str]:
    """Names a statement reads, not counting the statements nested in its body."""
    if isinstance(statement, (gast.If, gast.While)):
        return names_read(statement.test)
    if isinstance(statement, gast.For):
        return names_read(statement.iter)
    return names_read(statement)


def _without_saves(statements, removable):
    result = []
    for statement in statements:
        if any(
            _pushed_name(statement, stack) == name or _popped_name(statement, stack) == name
            for stack, name in removable
        ):
            continue
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                setattr(
                    statement,
                    field,
                    _without_saves(inner, removable) or ([gast.Pass()] if field == "body" else []),
                )
        result.append(statement)
    return result


def optimize(body: list[gast.stmt], is_pure_call: Callable[[gast.Call], bool]) -> list[gast.stmt]:
    """Optimise a function body; ``is_pure_call`` says which calls may be moved or dropped.

    Example::

        optimize(parse("t = a * 1\\nreturn t").body, lambda c: True)  # [return a]
    """
    facts = _Facts()
    for _ in range(20):
        optimizer = _Optimizer(is_pure_call, body, facts)
        body = optimizer.block(body, live_after=set(), top=True)
        if not optimizer.changed:
            break
    return body


class _Facts:
    """Names each statement reads, writes and changes, computed once per statement."""

    def __init__(self):
        self.table: dict[int, tuple[set, set, set]] = {}

    def of(self, statement):
        key = id(statement)
        facts = self.table.get(key)
        if facts is None or facts[3] is not statement:
            facts = (
                names_read(statement),
                names_written(statement),
                names_modified(statement),
                statement,
            )
            self.table[key] = facts
        return facts

    def reads(self, statement) -> set[str]:
        return self.of(statement)[0]

    def writes(self, statement) -> set[str]:
        return self.of(statement)[1]

    def modified(self, statement) -> set[str]:
        return self.of(statement)[2]

    def forget(self, statement) -> None:
        self.table.pop(id(statement), None)


class _Optimizer:
    def __init__(self, is_pure_call, function_body, facts):
        self.is_pure_call = is_pure_call
        self.function_body = function_body
        self.facts = facts
        self.changed = False
        self._purity: dict[int, tuple[bool, gast.AST]] = {}

    def counts(self, statements):
        reads, writes = Counter(), Counter()
        for statement in statements:
            for node in walk(statement):
                if isinstance(node, gast.Name):
                    (writes if isinstance(node.ctx, gast.Store) else reads)[node.id] += 1
        return reads, writes

    def block_local(self, body) -> set[str]:
        """Names a loop or branch body assigns before any use and nobody outside it uses."""
        all_reads, all_writes = self.counts(self.function_body)
        reads, writes = self.counts(body)
        first_seen: dict[str, bool] = {}
        for statement in body:
            top_writes = names_written(statement) if isinstance(statement, gast.Assign) else set()
            value = statement.value if isinstance(statement, gast.Assign) else statement
            for name in names_read(value) | (names_written(statement) - top_writes):
                first_seen.setdefault(name, False)
            for name in top_writes:
                first_seen.setdefault(name, True)
        return {
            name
            for name, written_first in first_seen.items()
            if written_first and reads[name] == all_reads[name] and writes[name] == all_writes[name]
        }

    def pure(self, node: gast.AST) -> bool:
        known = self._purity.get(id(node))
        if known is not None and known[1] is node:
            return known[0]
        verdict = True
        for child in walk(node):
            if isinstance(child, gast.Call) and not self.is_pure_call(child):
                verdict = False
                break
            if isinstance(child, (gast.Yield, gast.YieldFrom, gast.Await, gast.NamedExpr)):
                verdict = False
                break
        self._purity[id(node)] = (verdict, node)
        return verdict

    def block(self, body: list[gast.stmt], live_after: set[str], top: bool) -> list[gast.stmt]:
        folded = _fold_constant_branches(body)
        if len(folded) != len(body) or any(a is not b for a, b in zip(folded, body)):
            self.changed = True
        body = folded
        for statement in body:
            for field in ("body", "orelse"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                    setattr(statement, field, self.block(inner, set(), top=False) or [gast.Pass()])
                    if field == "orelse" and all(isinstance(s, gast.Pass) for s in inner):
                        statement.orelse = []
            folder = _ConstantFolder()
            folder.visit(statement)
            if folder.changed:
                self.changed = True
                self.facts.forget(statement)
        if not top:
            local = self.block_local(body)
            body = self.propagate_copies(body, allowed=local)
            body = self.fold_single_uses(body, allowed=local)
            return self.eliminate_unread(body)
        body = self.propagate_copies(body)
        body = self.fold_single_uses(body)
        body = self.merge_accumulations(body)
        body = self.merge_item_updates(body)
        body = self.eliminate_dead(body, live_after)
        return body

    def eliminate_unread(self, body):
        """Drop side-effect-free assignments to names the whole function never reads."""
        reads, _ = self.counts(self.function_body)
        kept = [
            s
            for s in body
            if not (
                _simple_assignment(s) and reads[_simple_assignment(s)] == 0 and self.pure(s.value)
            )
        ]
        if len(kept) != len(body):
            self.changed = True
        return kept or [gast.Pass()]

    # ---------------------------------------------------------------------------------------
    def propagate_copies(self, body, allowed=None):
        facts = self.facts
        writes = Counter(n for s in body for n in facts.writes(s))
        result = list(body)
        index = 0
        while index < len(result):
            statement = result[index]
            copy = _simple_assignment(statement)
            if allowed is not None and copy not in allowed:
                index += 1
                continue
            if copy and writes[copy] == 1 and _number(statement.value) is not None:
                for s in result[index + 1 :]:
                    if copy in facts.reads(s):
                        _replace_read(s, copy, statement.value)
                        facts.forget(s)
                del result[index]
                self.changed = True
                continue
            if copy and isinstance(statement.value, gast.Name):
                source = statement.value.id
                if _drop_copies_back(result, index, copy, source, facts):
                    self.changed = True
                later = result[index + 1 :]
                source_rewritten = any(source in facts.modified(s) for s in later)
                if writes[copy] == 1 and not source_rewritten and copy != source:
                    for s in later:
                        if copy in facts.reads(s):
                            _rename_reads(s, copy, source)
                            facts.forget(s)
                    del result[index]
                    self.changed = True
                    continue
            index += 1
        return result

    def fold_single_uses(self, body, allowed=None):
        """Fold a temporary read exactly once into the statement that reads it."""
        facts = self.facts
        result = list(body)
        writes: Counter = Counter()
        reads: Counter = Counter()
        for s in result:
            writes.update(facts.writes(s))
            for n in walk(s):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                    reads[n.id] += 1
        removed = [False] * len(result)
        for index, statement in enumerate(result):
            target = _simple_assignment(statement)
            if not target or writes[target] != 1 or reads[target] != 1:
                continue
            if (
                (allowed is not None and target not in allowed)
                or getattr(statement, "keep_apart", False)
                or getattr(statement, "keep_name", False)
            ):
                continue
            value = statement.value
            if not self.pure(value) or _size(value) > MAX_FOLDED_SIZE:
                continue
            inputs = facts.reads(statement)
            for later_index in range(index + 1, len(result)):
                if removed[later_index]:
                    continue
                later = result[later_index]
                if _is_comment(later):
                    continue
                if target in facts.reads(later):
                    if (
                        _is_compound(later)
                        or isinstance(later, gast.Return)
                        or getattr(later, "keep_apart", False)
                        or not _top_level_reads(later, target)
                    ):
                        break
                    _replace_read(later, target, value)
                    facts.forget(later)
                    removed[index] = True
                    self.changed = True
                    break
                if facts.modified(later) & inputs or not self.pure_statement(later):
                    break
        return [s for s, gone in zip(result, removed) if not gone]

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
                        target not in self.facts.reads(s) and not (self.facts.modified(s) & inputs)
                        for s in between
                    ) and not any(_is_compound(s) for s in between):
                        value.left = earlier.value
                        self.facts.forget(statement)
                        result[earlier_index] = None
                        self.changed = True
                    break
                if target in self.facts.reads(earlier) or target in self.facts.writes(earlier):
                    break
        return [s for s in result if s is not None]

    def merge_item_updates(self, body):
        """``d[i] = a … d[i] += b`` → ``d[i] = a + b`` when nothing in between touches d."""
        result = list(body)
        for index, statement in enumerate(result):
            if not (isinstance(statement, gast.AugAssign) and isinstance(statement.op, gast.Add)):
                continue
            target = statement.target
            if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)):
                continue
            name, place = target.value.id, gast.dump(target.slice)
            for earlier_index in range(index - 1, -1, -1):
                earlier = result[earlier_index]
                if earlier is None or _is_comment(earlier):
                    continue
                earlier_target = _item_target(earlier)
                if earlier_target is not None and earlier_target[0] == name:
                    if earlier_target[1] != place:
                        break
                    value = earlier.value
                    between = [s for s in result[earlier_index + 1 : index] if s is not None]
                    if any(
                        _is_compound(s) or self.facts.modified(s) & self.facts.reads(earlier)
                        for s in between
                    ) or name in names_read(statement.value):
                        break
                    combined = gast.BinOp(left=value, op=gast.Add(), right=statement.value)
                    if isinstance(earlier, gast.Assign):
                        merged = gast.Assign(targets=[target], value=combined, type_comment=None)
                    else:
                        merged = gast.AugAssign(target=target, op=gast.Add(), value=combined)
                    result[index] = gast.copy_location(merged, statement)
                    result[earlier_index] = None
                    self.changed = True
                    break
                if name in self.facts.reads(earlier) or name in self.facts.modified(earlier):
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
                    self.changed = True
                    continue
                live -= targets
                live |= names_read(statement.value)
                result.append(statement)
                continue
            live |= self.facts.reads(statement)
            result.append(statement)
        result.reverse()
        return _drop_orphan_comments(result)


def _item_target(statement):
    """(name, dumped index) of ``d[i] = …`` or ``d[i] += …``, else None."""
    if isinstance(statement, gast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
    elif isinstance(statement, gast.AugAssign) and isinstance(statement.op, gast.Add):
        target = statement.target
    else:
        return None
    if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
        return target.value.id, gast.dump(target.slice)
    return None


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


def _drop_copies_back(statements, index, target, source, facts) -> bool:
    """After ``a = b``, a later ``b = a`` (with neither changed in between) does nothing."""
    position = index + 1
    while position < len(statements):
        later = statements[position]
        if (
            _simple_assignment(later) == source
            and isinstance(later.value, gast.Name)
            and (later.value.id == target)
        ):
            del statements[position]
            return True
        if _is_compound(later) or facts.modified(later) & {target, source}:
            return False
        position += 1
    return False


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
    text = string_statement(statement)
    return text is not None and text.startswith(COMMENT_MARK)


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
    return sum(1 for _ in walk(node))


def _rename_reads(statement, old, new):
    for node in walk(statement):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and node.id == old:
            node.id = new


def _top_level_reads(statement, name) -> bool:
    """The read of ``name`` is not inside a lambda or comprehension (own scope)."""
    for node in walk(statement):
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


def _negated(node):
    """The expression ``-node`` without a double negation, or None if that is not simpler."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return node.operand
    if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Mult, gast.Div)):
        left = _negated(node.left)
        if left is not None:
            return gast.BinOp(left=left, op=node.op, right=node.right)
    return None


class _ConstantFolder(gast.NodeTransformer):
    def __init__(self):
        self.changed = False

    def visit(self, node):
        result = super().visit(node)
        if result is not node:
            self.changed = True
        return result

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if (
            isinstance(func, gast.Attribute)
            and func.attr == "sum"
            and isinstance(func.value, gast.UnaryOp)
            and isinstance(func.value.op, gast.USub)
        ):  # (-e).sum(...) → -e.sum(...): negate the smaller array
            func.value = func.value.operand
            return gast.UnaryOp(op=gast.USub(), operand=node)
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, gast.USub):
            simpler = _negated(node.operand)
            if simpler is not None:
                return simpler
            operand = node.operand
            if (
                isinstance(operand, gast.BinOp)
                and isinstance(operand.op, (gast.Mult, gast.Div))
                and _number(operand.left) is not None
            ):  # -(2 * e) → -2 * e
                return gast.BinOp(
                    left=_number_node(-_number(operand.left)), op=operand.op, right=operand.right
                )
        return node

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
        if op in (gast.Mult, gast.Div):
            # move a negation into a constant factor: (-a) * 2 → a * -2
            if (
                right is not None
                and isinstance(node.left, gast.UnaryOp)
                and isinstance(node.left.op, gast.USub)
            ):
                return gast.BinOp(left=node.left.operand, op=node.op, right=_number_node(-right))
            if left is not None and op is gast.Mult:
                negated = _negated(node.right)
                if negated is not None:
                    return gast.BinOp(left=_number_node(-left), op=node.op, right=negated)
        if op is gast.Add:
            negated = _negated(node.right)
            if negated is not None:  # a + -b → a - b
                return gast.BinOp(left=node.left, op=gast.Sub(), right=negated)
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
            return gast.Constant(
                value=same if isinstance(node.ops[0], gast.Is) else not same, kind=None
            )
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        return node
