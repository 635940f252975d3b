"""Values the forward sweep saves before overwriting them, and the stack that holds them.

The forward sweep leaves a marker where it may push a value (``save_marker``) and the
backward sweep one where it restores it (``restore_marker``). Once the backward sweep is
written, only the saves it reads are kept (``mark_used_saves``): their markers become
``stack.append(v)`` and ``v = stack.pop()`` (``place_saves``), the others go, and so do
replayed branches and loops left with nothing to do. A list that was appended to or
popped from records its own history: the backward sweep pops or appends it back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gast

from s2sgrad.compiler.annotations import REPLAY, SAVE_INIT, STACK, annotate, annotation
from s2sgrad.compiler.reverse.context import Context
from s2sgrad.compiler.reverse.facts import range_targets
from s2sgrad.compiler.steps import Step
from s2sgrad.compiler.syntax import (
    COMMENT_MARK,
    assign,
    attribute,
    call,
    clone,
    constant,
    load,
    names_modified,
    names_read,
    names_written,
    nested_statements,
    string_statement,
    walk,
)
from s2sgrad.errors import UnsupportedError

__all__ = ["Save", "Saves", "is_marker", "has_code"]

PUSH = "__s2s_push__:"  # a marker: the save of this key is pushed here
POP = "__s2s_pop__:"  # a marker: the save of this key is restored here


@dataclass
class Save:
    """A value the forward sweep may push before overwriting it, and restore later."""

    key: int
    target: str  # the variable whose value is overwritten
    index: gast.expr | None = None  # for y[index] = v: the element(s) overwritten
    kind: str = "assign"  # assign | item | append | pop
    used: bool = False


class Saves:
    """The saves of one function, the stack's name, and the backward sweep's replays.

    Example::

        marker = saves.save_marker(saves.new_save(step, "y", "assign"))  # before y = ...
        forward, backward = saves.place_saves(forward, backward)  # y pushed, popped
    """

    def __init__(self, context: Context):
        self.context = context
        self.parsed = context.parsed
        self.names = context.names
        self.helper = context.helper
        self.saves: dict[int, Save] = {}
        # id of a backward if or loop → (it, the forward statement it replays)
        self.replays: dict[int, tuple[gast.stmt, gast.stmt]] = {}
        self.stack: str | None = None

    def new_save(self, step: Step, target: str, kind: str, index=None) -> Save:
        save = Save(key=len(self.saves), target=target, index=index, kind=kind)
        self.saves[save.key] = save
        step.saves.append(save)
        return save

    def save_marker(self, save: Save) -> gast.stmt:
        marker = gast.Expr(value=constant(f"{PUSH}{save.key}"))
        return marker

    def restore_marker(self, save: Save) -> gast.stmt:
        return gast.Expr(value=constant(f"{POP}{save.key}"))

    def replaying(self, statement, block: gast.stmt) -> gast.stmt:
        """``block``, the backward sweep's ``if`` or loop for ``statement``, marked as such.

        It has the same arms as ``statement`` whatever they hold, so that every restore
        runs on the path, and as often as, the forward sweep saved the value; only once
        the restores are placed (``expand_markers``) and the code tidied (``optimize``)
        does a replay whose arms are all empty go.
        """
        annotate(block, REPLAY)
        self.replays[id(block)] = (block, statement)
        return gast.copy_location(block, statement)

    def replayed(self, statement) -> int | None:
        """The id of the forward statement a backward ``if`` or loop replays, else None."""
        pair = self.replays.get(id(statement))
        return id(pair[1]) if pair is not None and pair[0] is statement else None

    def initial_values(self, statements, read_back: set[str]) -> list[gast.stmt]:
        """``v = None`` for values only some branches compute that the backward sweep reads.

        The backward sweep may make a zero cotangent for ``v`` on a path where ``v`` was
        never assigned; starting it at None (a zero) keeps that path well defined.
        """
        inside = set()
        for statement in statements:
            if isinstance(statement, (gast.If, gast.For, gast.While)):
                inside |= names_written(statement)
        if not inside:
            return []
        top_level = {n for s in statements if isinstance(s, gast.Assign) for n in names_written(s)}
        for loop in nested_statements(statements):  # the backward loop sets its own counter
            inside -= range_targets(loop)
        pushed = {s.target for s in self.saves.values() if s.used and s.kind == "assign"}
        names = sorted((inside & read_back) - top_level - self.context.parameters - pushed)
        return [assign(name, constant(None)) for name in names]

    def check_restores_mirror_saves(self, forward, backward) -> None:
        """Every save must be restored where the backward sweep replays the place it was
        made, in the opposite order: the stack is then right on every path. A gradient
        from a stack out of step would be wrong, so a mismatch is refused (and in
        mode='auto' the tape takes over)."""
        saves = _marker_tree(forward, PUSH, id)
        restores = _marker_tree(backward, POP, self.replayed)
        if _reversed_tree(saves) != restores:
            raise UnsupportedError(
                f"{self.parsed.location()}: internal error: the backward sweep would not "
                "restore the values the forward sweep saves in the same order; use "
                "mode='tape', and please report this function"
            )

    def mark_used_saves(self, backward, adjoints: set[str], views=None) -> set[str]:
        """Mark the saves whose values the backward sweep reads; return the names it reads.

        A replay (a backward ``if`` or loop) that would do nothing, since it holds no code
        and none of its restores is needed, goes (``expand_markers``), so what its test or
        range reads does not count; restoring one value can make another one needed.
        ``views`` maps an array changed in place to the names bound to views of it (and
        back): reading ``t1 = t[1:]`` after ``t[1:] = v`` needs ``t`` restored.
        """
        views = views or {}
        while True:
            read, indices = self.kept_reads(backward)
            needed = (read | indices) - adjoints
            needed |= set().union(*(views.get(n, ()) for n in needed))
            newly = [s for s in self.saves.values() if not s.used and s.target in needed]
            if not newly:
                return read
            for save in newly:
                save.used = True

    def drop_last_restores(self, backward, live_at_end: set[str]) -> None:
        """Forget the saves restored at the top level of ``backward`` that nothing after
        the restore reads: the value put back would never be used (``h = stack.pop()`` at
        the very end restores the value ``h`` had before the function first set it).
        ``live_at_end`` are the names read after the backward sweep (the parameters, which
        the gradients are shaped after)."""
        later = set(live_at_end)
        for statement in reversed(backward):
            key = _marker_key(statement, POP)
            if key is None:
                later |= names_read(statement)
                for inner in nested_statements([statement]):  # restores write into arrays
                    inner_key = _marker_key(inner, POP)
                    if inner_key is not None and self.saves[inner_key].used:
                        later.add(self.saves[inner_key].target)
                continue
            save = self.saves[key]
            if not save.used:
                continue
            if save.kind == "assign" and save.target not in later:
                save.used = False
                continue
            later.add(save.target)  # an item write reads the rest of the array
            if save.index is not None:
                later |= names_read(save.index)

    def kept_reads(self, statements) -> tuple[set[str], set[str]]:
        """The names ``statements`` read outside restores and replays that do nothing, and
        the names the restores needed so far read (their indices)."""
        read: set[str] = set()
        indices: set[str] = set()
        for statement in statements:
            key = _marker_key(statement, POP)
            if key is not None:
                save = self.saves[key]
                if save.used and save.index is not None:
                    indices |= names_read(save.index)
                continue
            if not annotation(statement, REPLAY, False):
                read |= names_read(statement)
                continue
            if not self.replay_kept(statement):
                continue
            header = statement.test if isinstance(statement, gast.If) else statement.iter
            read |= names_read(header)
            for inner in (statement.body, statement.orelse):
                inner_read, inner_indices = self.kept_reads(inner)
                read |= inner_read
                indices |= inner_indices
        return read, indices

    def replay_kept(self, replay) -> bool:
        """Whether a backward ``if`` or loop does something: code, or a needed restore."""
        for statement in replay.body + replay.orelse:
            key = _marker_key(statement, POP)
            if key is not None:
                if self.saves[key].used:
                    return True
            elif annotation(statement, REPLAY, False):
                if self.replay_kept(statement):
                    return True
            elif has_code([statement]):
                return True
        return False

    def recompute_in_loops(self, forward, backward) -> set[str]:
        """Instead of saving ``v = xs[t]`` every iteration of ``for t in ...``, compute it
        again at the top of the backward loop's body, where the same ``t`` comes back.

        Only where that is surely the same value: ``v`` is written once in the function
        and read, forward, only by the loop's later statements and, backward, only inside
        the backward loop; ``xs`` and the other names of the index are never written; ``t``
        only by the loop. The forward loop is then the user's code (its temporaries fold
        into one statement again), as a hand-written loop reads ``xs[t]`` twice. Returns
        the names the backward sweep no longer reads (it reads the new ones instead).
        """
        if _writes_in_place(forward):  # a write through another name (an alias) unseen
            return set()
        writes = _write_counts(forward)
        top = {n for s in forward if type(s) is gast.Assign for n in names_written(s)}
        renamed: set[str] = set()
        for backward_loop, forward_loop in self.replays.values():
            if not (type(forward_loop) is gast.For and type(backward_loop) is gast.For):
                continue
            if not _same_index(forward_loop, backward_loop, writes):
                continue
            body = forward_loop.body
            for position, statement in enumerate(body[:-1]):
                key = _marker_key(statement, PUSH)
                save = self.saves[key] if key is not None else None
                if save is None or not save.used or save.kind != "assign":
                    continue
                value = _recomputable(
                    body[position + 1], save.target, writes, forward_loop.target.id, top
                )
                target = save.target
                if value is None or target in _reads_before(body, position + 1):
                    continue
                if target in _reads_outside(forward, forward_loop) | _reads_outside(
                    backward, backward_loop
                ):
                    continue
                save.used = False
                # a name of its own, so that the forward loop's stays local to it (and folds)
                again = self.names.claim(target)
                _rename(backward_loop.body, target, again)
                backward_loop.body.insert(0, assign(again, clone(value)))
                renamed.add(target)
        return renamed

    def place_saves(self, forward, backward):
        """Turn the markers of the saves ``mark_used_saves`` found needed into pushes and
        pops, and drop the others."""
        prologue = []
        if any(s.used for s in self.saves.values()):
            self.stack = self.names.claim("stack")
            creation = assign(self.stack, gast.List(elts=[], ctx=gast.Load()))
            annotate(creation, STACK)  # lets the optimizer drop saves nobody reads
            prologue.append(creation)
            pushed = {
                s.target
                for s in self.saves.values()
                if s.used and s.kind == "assign" and s.target not in self.context.parameters
            }
            for name in sorted(pushed):
                initial = assign(name, constant(None))
                annotate(initial, SAVE_INIT)  # only there so the first push has a value
                prologue.append(initial)
        forward = self.expand_markers(forward, PUSH, self.push_code)
        backward = self.expand_markers(backward, POP, self.pop_code)
        return prologue + forward, backward

    def expand_markers(self, statements, prefix, code):
        result = []
        for statement in statements:
            key = _marker_key(statement, prefix)
            if key is not None:
                save = self.saves[key]
                generated = code(save) if save.used else None
                if generated is not None:
                    result.append(generated)
                continue
            for field in ("body", "orelse"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                    expanded = self.expand_markers(inner, prefix, code)
                    if field == "body":
                        expanded = expanded or [gast.Pass()]
                    setattr(statement, field, expanded)
            if annotation(statement, REPLAY, False) and not has_code(
                statement.body + statement.orelse
            ):
                continue  # nothing to differentiate, and none of its restores is needed
            result.append(statement)
        return _without_orphan_comments(result)

    @property
    def stack_name(self) -> str:
        """The stack's name, claimed when the first save was made."""
        if self.stack is None:
            raise ValueError("push and pop code asked for before any save")
        return self.stack

    def push_code(self, save: Save) -> gast.stmt | None:
        stack = load(self.stack_name)
        if save.kind == "item":
            value: gast.expr = call(
                self.helper("snapshot"),
                [gast.Subscript(value=load(save.target), slice=clone(save.index), ctx=gast.Load())],
            )
        elif save.kind in ("append", "pop"):
            return None  # the list itself records what the backward sweep undoes
        else:
            value = load(save.target)
        return gast.Expr(value=call(attribute(stack, "append"), [value]))

    def pop_code(self, save: Save) -> gast.stmt:
        popped = call(attribute(load(self.stack_name), "pop"))
        if save.kind == "item":
            target = gast.Subscript(
                value=load(save.target), slice=clone(save.index), ctx=gast.Store()
            )
            return gast.Assign(targets=[target], value=popped, type_comment=None)
        if save.kind == "append":
            return gast.Expr(value=call(attribute(load(save.target), "pop")))
        if save.kind == "pop":  # v = L.pop(): put v back
            return gast.Expr(
                value=call(attribute(load(save.target), "append"), [clone(save.index)])
            )
        return assign(save.target, popped)


def _write_counts(statements) -> dict[str, int]:
    """How often each name is rebound or written in place, loop headers included."""
    counts: dict[str, int] = {}
    for statement in nested_statements(statements):
        if isinstance(statement, gast.For):
            written = names_written(statement.target)
        elif isinstance(statement, (gast.If, gast.While)):
            continue
        else:
            written = names_modified(statement)
        for name in written:
            counts[name] = counts.get(name, 0) + 1
    return counts


def _writes_in_place(statements) -> bool:
    """Whether a statement may change a value in place: an item or attribute store, ``+=``,
    a mutating method, or a call whose result is dropped (the markers are strings)."""
    for statement in nested_statements(statements):
        if isinstance(statement, (gast.AugAssign, gast.Delete)):
            return True
        if isinstance(statement, gast.Expr) and string_statement(statement) is None:
            return True
        if isinstance(statement, gast.Assign) and names_modified(statement) - names_written(
            statement
        ):
            return True
    return False


def _same_index(forward_loop: gast.For, backward_loop: gast.For, writes) -> bool:
    """Whether the backward loop runs the forward loop's index (a name only it sets)."""
    target = forward_loop.target
    return (
        type(target) is gast.Name
        and type(backward_loop.target) is gast.Name
        and backward_loop.target.id == target.id
        and writes.get(target.id) == 1
    )


def _recomputable(statement, target: str, writes, index: str, top) -> gast.expr | None:
    """The value of ``target = base[...]`` when it can be computed again later: the
    statement is the only write of ``target``; ``base`` and the names in the brackets
    other than the loop's ``index`` are never written, or only once, by a statement of the
    function's own body (in no loop or branch: it holds that value whenever it is read)."""
    if not (
        type(statement) is gast.Assign
        and type(statement.targets[0]) is gast.Name
        and statement.targets[0].id == target
        and writes.get(target) == 1
    ):
        return None
    value = statement.value
    if type(value) is not gast.Subscript or type(value.value) is not gast.Name:
        return None
    if not _plain_index(value.slice) or target in names_read(value):
        return None

    def fixed(name):
        return not writes.get(name) or (writes[name] == 1 and name in top)

    if not fixed(value.value.id):
        return None
    if not all(fixed(name) or name == index for name in names_read(value.slice)):
        return None
    return value


def _plain_index(node) -> bool:
    if type(node) in (gast.Name, gast.Constant):
        return True
    if type(node) is gast.Tuple:
        return all(_plain_index(e) for e in node.elts)
    if type(node) is gast.Slice:
        return all(p is None or _plain_index(p) for p in (node.lower, node.upper, node.step))
    return False


def _rename(statements, old: str, new: str) -> None:
    for statement in statements:
        for node in walk(statement):
            if type(node) is gast.Name and node.id == old:
                node.id = new


def _reads_before(body, position: int) -> set[str]:
    read: set[str] = set()
    for statement in body[:position]:
        read |= names_read(statement)
    return read


def _reads_outside(statements, skipped) -> set[str]:
    """Names ``statements`` read, leaving out the statement ``skipped`` (its header too)."""
    read: set[str] = set()
    for statement in statements:
        if statement is skipped:
            continue
        blocks = [getattr(statement, f, None) for f in ("body", "orelse", "finalbody")]
        blocks = [b for b in blocks if isinstance(b, list)]
        if not blocks or isinstance(statement, gast.FunctionDef):
            read |= names_read(statement)
            continue
        for field, value in gast.iter_fields(statement):
            if field in ("body", "orelse", "finalbody"):
                continue
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, gast.AST):
                    read |= names_read(item)
        for block in blocks:
            read |= _reads_outside(block, skipped)
    return read


def _marker_key(statement, prefix: str) -> int | None:
    text = string_statement(statement)
    if text is not None and text.startswith(prefix):
        return int(text[len(prefix) :])
    return None


def _marker_tree(statements, prefix: str, origin: Callable) -> list:
    """The keys of the markers in ``statements`` in order and, in their place, for each
    statement holding some, ``(origin(statement), [(field, its tree), ...])``."""
    tree: list = []
    for statement in statements:
        key = _marker_key(statement, prefix)
        if key is not None:
            tree.append(key)
            continue
        if isinstance(statement, gast.FunctionDef):
            continue
        arms = []
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                inner_tree = _marker_tree(inner, prefix, origin)
                if inner_tree:
                    arms.append((field, inner_tree))
        if arms:
            tree.append((origin(statement), arms))
    return tree


def _reversed_tree(tree: list) -> list:
    """``tree`` in the order the backward sweep must restore it."""
    return [
        item if isinstance(item, int) else (item[0], [(f, _reversed_tree(t)) for f, t in item[1]])
        for item in reversed(tree)
    ]


def _without_orphan_comments(statements: list[gast.stmt]) -> list[gast.stmt]:
    """``statements`` without the ``# grad of:`` comments whose code went."""
    kept = []
    for index, statement in enumerate(statements):
        if _is_comment(statement):
            following = statements[index + 1] if index + 1 < len(statements) else None
            if following is None or _is_comment(following):
                continue
        kept.append(statement)
    return kept


def _is_comment(statement) -> bool:
    text = string_statement(statement)
    return text is not None and text.startswith(COMMENT_MARK)


def is_marker(statement) -> bool:
    text = string_statement(statement)
    return text is not None and text.startswith((POP, PUSH))


def has_code(statements) -> bool:
    """Whether ``statements`` do anything: not only ``pass``, comments and markers."""
    return any(not isinstance(s, gast.Pass) and string_statement(s) is None for s in statements)
