"""The saves and restores of in-place writes in generated code, read from its source.

The reverse sweep saves what an item write overwrites and writes it back in the backward::

    stack.append(snapshot(w[1:3]))
    w[1:3] = t7              # the update
    ...
    w[1:3] = stack.pop()     # its restore

so a name holding ``w``'s memory before the update (``t6 = w[1:3]``) has its values back
when the backward reads it. :class:`SavedWrites` finds these statements in code
differentiated again; :mod:`.aliases_paths` follows the stack along each path to tell
which update a restore undoes.
"""

from __future__ import annotations

from typing import Any

import gast

from s2sgrad.compiler.block_walks import header_nodes, statement_blocks
from s2sgrad.compiler.passes.sharing import resolved_target
from s2sgrad.compiler.syntax import nested_statements, walk
from s2sgrad.runtime.core import shape_only, snapshot

__all__ = ["SavedWrites", "written_name"]


class SavedWrites:
    """The saves and restores of generated code: ``stack.append(snapshot(w[i]))`` just
    before ``w[i] = e`` (the update), and ``w[i] = stack.pop()`` (its restore), on a list
    that only ever is ``[]``, appended to and popped (one operation a statement).

    Example::

        saved = SavedWrites(function, resolve)
        saved.restoring[id(restore)]  # {id(update)}: the updates it may undo
    """

    def __init__(self, function: gast.FunctionDef, resolve):
        self.operations: dict[int, tuple[str, str]] = {}  # id(statement) -> (stack, op)
        self.saved: dict[int, tuple[str, gast.stmt]] = {}  # id(push) -> (stack, update)
        self.kept: dict[int, frozenset[str]] = {}  # id(update) -> names its restore needs
        self.restoring: dict[int, set[int]] = {}  # id(restore) -> ids of the updates
        # id(push) -> "name" (stack.append(t2): the value moved, not read) or "shape"
        # (stack.append(shape_only(t2)): a stand-in of its shape, sharing nothing)
        self.transfers: dict[int, str] = {}
        self.stacks = _save_stacks(function)
        if not self.stacks:
            return
        statements = list(nested_statements(function.body))
        for statement in statements:
            operations = [
                (n.func.value.id, n.func.attr)
                for n in header_nodes(statement)
                if type(n) is gast.Call and _stack_call(n, self.stacks)
            ]
            if len(operations) > 1 or (operations and statement_blocks(statement)):
                self.stacks -= {stack for stack, _ in operations}
            elif operations:
                self.operations[id(statement)] = operations[0]
                moved = _transfer(statement, resolve) if operations[0][1] == "append" else None
                if moved is not None:
                    self.transfers[id(statement)] = moved
        for block in [function.body, *_blocks(statements)]:
            for push, update in zip(block, block[1:]):
                target = _snapshot_of(push, self.stacks, resolve)
                if target is not None and _writes(update) == target:
                    stack = push.value.func.value.id
                    self.saved[id(push)] = (stack, update)
                    index = update.targets[0]
                    self.kept[id(update)] = frozenset(
                        n.id for n in walk(index) if type(n) is gast.Name
                    )
        written: dict[tuple[str, str | None], set[int]] = {}
        for stack, update in self.saved.values():
            written.setdefault((stack, _writes(update)), set()).add(id(update))
        for statement in statements:
            value: Any = getattr(statement, "value", None)
            popped = type(value) is gast.Call and _stack_call(value, self.stacks)
            if popped and value.func.attr == "pop" and _writes(statement) is not None:
                key = (value.func.value.id, _writes(statement))
                if key in written:
                    self.restoring[id(statement)] = written[key]


def _transfer(push: gast.stmt, resolve) -> str | None:
    """ "name" for ``stack.append(t2)``, "shape" for ``stack.append(shape_only(t2))``."""
    if type(push) is not gast.Expr or type(push.value) is not gast.Call:
        return None
    (pushed,) = push.value.args
    if type(pushed) is gast.Name:
        return "name"
    one = type(pushed) is gast.Call and len(pushed.args) == 1 and not pushed.keywords
    return "shape" if one and resolved_target(pushed.func, resolve) is shape_only else None


def _save_stacks(function: gast.FunctionDef) -> set[str]:
    """The names bound once, in the body's own block, to ``[]`` and otherwise only
    appended to (a statement of its own) and popped."""
    made = {
        s.targets[0].id
        for s in function.body
        if type(s) is gast.Assign
        and len(s.targets) == 1
        and type(s.targets[0]) is gast.Name
        and type(s.value) is gast.List
        and not s.value.elts
    }
    if not made:
        return set()
    nodes = walk(function)
    statements = {id(node.value) for node in nodes if type(node) is gast.Expr}
    allowed: set[int] = set()
    for node in nodes:
        stack_call = type(node) is gast.Call and _stack_call(node, made)
        if stack_call and (node.func.attr == "pop" or id(node) in statements):
            allowed.add(id(node.func.value))  # not an append inside an expression
    counts: dict[str, int] = {}
    for node in nodes:
        if type(node) is gast.Name and node.id in made:
            if type(node.ctx) is gast.Store:
                counts[node.id] = counts.get(node.id, 0) + 1
            elif id(node) not in allowed:
                made.discard(node.id)
    return {name for name in made if counts.get(name) == 1}


def _stack_call(node: gast.Call, stacks: set[str]) -> bool:
    """``stack.append(v)`` or ``stack.pop()`` of one of ``stacks``."""
    func = node.func
    if type(func) is not gast.Attribute or type(func.value) is not gast.Name:
        return False
    if func.value.id not in stacks or node.keywords:
        return False
    return (func.attr, len(node.args)) in (("append", 1), ("pop", 0))


def _blocks(statements: list[gast.stmt]):
    for statement in statements:
        yield from statement_blocks(statement)


def _snapshot_of(push: gast.stmt, stacks: set[str], resolve) -> str | None:
    """``w[i]`` (as text) for ``stack.append(snapshot(w[i]))``."""
    if type(push) is not gast.Expr or type(push.value) is not gast.Call:
        return None
    if not _stack_call(push.value, stacks) or push.value.func.attr != "append":
        return None
    saved = push.value.args[0]
    if type(saved) is not gast.Call or len(saved.args) != 1 or saved.keywords:
        return None
    if resolved_target(saved.func, resolve) is not snapshot:  # (the tape may route its code)
        return None
    target = saved.args[0]
    if type(target) is not gast.Subscript or type(target.value) is not gast.Name:
        return None
    return gast.dump(target.value) + gast.dump(target.slice)


def _writes(statement: gast.stmt) -> str | None:
    """``w[i]`` (as text) for ``w[i] = e``."""
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return None
    target = statement.targets[0]
    if type(target) is not gast.Subscript or type(target.value) is not gast.Name:
        return None
    return gast.dump(target.value) + gast.dump(target.slice)


def written_name(update: gast.stmt) -> str:
    """``w`` of the update ``w[i] = e``."""
    return update.targets[0].value.id
