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

from s2sgrad.compiler.annotations import (
    REPLAY,
    SAVE_INIT,
    SAVE_PUSH,
    STACK,
    annotate,
    annotation,
)
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
    names_read,
    names_written,
    nested_statements,
    string_statement,
)
from s2sgrad.errors import UnsupportedError

__all__ = [
    "PUSH",
    "POP",
    "Save",
    "Saves",
    "is_marker",
    "has_code",
    "marker_key",
    "statement_reads",
]

_SIMPLE = (gast.Assign, gast.Expr, gast.AugAssign)  # statements without blocks
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
        # the names of arrays and lists the backward sweep restores in place, and the name
        # of the states they had when it started (``with_final_states_kept``)
        self.restored_in_place: list[str] = []
        self.finals = ""
        # id of a backward if or loop → (it, the forward statement it replays)
        self.replays: dict[int, tuple[gast.stmt, gast.stmt]] = {}
        self.stack: str | None = None
        self.shape_only: set[str] = set()  # pushed as shape_only(v): read for the shape

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

    def restored(self, statement) -> str | None:
        """The variable ``statement`` restores, if it is the marker of a needed save of
        an assigned value."""
        key = marker_key(statement, POP)
        if key is None:
            return None
        save = self.saves[key]
        return save.target if save.used and save.kind == "assign" else None

    def initial_values(self, statements, read_back: set[str]) -> list[gast.stmt]:
        """``v = None`` for values only some branches compute that the backward sweep reads.

        The backward sweep may make a zero cotangent for ``v`` on a path where ``v`` was
        never assigned; starting it at None (a zero) keeps that path well defined.
        """
        inside = set()
        for statement in statements:
            if isinstance(statement, (gast.If, gast.For, gast.While, gast.With)):
                inside |= names_written(statement)
        if not inside:
            return []
        top_level = _always_bound(statements)
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

    def mark_used_saves(
        self, backward, adjoints: set[str], views=None, reads: dict | None = None
    ) -> set[str]:
        """Mark the saves whose values the backward sweep reads; return the names it reads.

        A replay (a backward ``if`` or loop) that would do nothing, since it holds no code
        and none of its restores is needed, goes (``expand_markers``), so what its test or
        range reads does not count; restoring one value can make another one needed.
        ``views`` maps an array changed in place to the names bound to views of it (and
        back): reading ``t1 = t[1:]`` after ``t[1:] = v`` needs ``t`` restored.
        ``reads`` remembers what each statement reads (see :func:`statement_reads`): the
        search restarts until nothing more is needed, and the statements do not change.
        """
        views = views or {}
        reads = {} if reads is None else reads
        while True:
            read, indices = self.kept_reads(backward, reads=reads)
            needed = (read | indices) - adjoints
            needed |= set().union(*(views.get(n, ()) for n in needed))
            newly = [s for s in self.saves.values() if not s.used and s.target in needed]
            if not newly:
                return read
            for save in newly:
                save.used = True

    def drop_last_restores(
        self, backward, live_at_end: set[str], reads: dict | None = None
    ) -> None:
        """Forget the saves restored at the top level of ``backward`` that nothing after
        the restore reads: the value put back would never be used (``h = stack.pop()`` at
        the very end restores the value ``h`` had before the function first set it).
        ``live_at_end`` are the names read after the backward sweep (the parameters, which
        the gradients are shaped after); ``reads`` as for :meth:`mark_used_saves`."""
        later = set(live_at_end)
        for statement in reversed(backward):
            key = marker_key(statement, POP)
            if key is None:
                later |= statement_reads(statement, reads)
                if type(statement) in _SIMPLE:
                    continue  # no restore inside
                for inner in nested_statements([statement]):  # restores write into arrays
                    inner_key = marker_key(inner, POP)
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

    def kept_reads(self, statements, kept=None, reads=None) -> tuple[set[str], set[str]]:
        """The names ``statements`` read outside restores and replays that do nothing, and
        the names the restores needed so far read (their indices). ``kept`` remembers
        :meth:`replay_kept` by replay, within one call (nested replays: once each);
        ``reads`` what statements read, while they do not change."""
        kept = {} if kept is None else kept
        read: set[str] = set()
        indices: set[str] = set()
        for statement in statements:
            key = marker_key(statement, POP)
            if key is not None:
                save = self.saves[key]
                if save.used and save.index is not None:
                    indices |= names_read(save.index)
                continue
            if not annotation(statement, REPLAY, False):
                read |= statement_reads(statement, reads)
                continue
            if not self.replay_kept(statement, kept):
                continue
            header = statement.test if isinstance(statement, gast.If) else statement.iter
            read |= names_read(header)
            for inner in (statement.body, statement.orelse):
                inner_read, inner_indices = self.kept_reads(inner, kept, reads)
                read |= inner_read
                indices |= inner_indices
        return read, indices

    def replay_kept(self, replay, kept: dict | None = None) -> bool:
        """Whether a backward ``if`` or loop does something: code, or a needed restore
        (``kept``: the answers for replays already asked, by id)."""
        if kept is not None:
            known = kept.get(id(replay))
            if known is not None and known[0] is replay:
                return known[1]
        answer = self._replay_kept(replay, kept)
        if kept is not None:
            kept[id(replay)] = (replay, answer)
        return answer

    def _replay_kept(self, replay, kept: dict | None) -> bool:
        for statement in replay.body + replay.orelse:
            key = marker_key(statement, POP)
            if key is not None:
                if self.saves[key].used:
                    return True
            elif annotation(statement, REPLAY, False):
                if self.replay_kept(statement, kept):
                    return True
            elif has_code([statement]):
                return True
        return False

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
        if not self.saves and not self.replays and not _has_blocks(forward + backward):
            # straight-line code without saves: no marker to expand, no replay to drop
            return prologue + _without_orphan_comments(forward), _without_orphan_comments(backward)
        self.restored_in_place = sorted(
            {s.target for s in self.saves.values() if s.used and s.kind in _IN_PLACE}
        )
        if self.restored_in_place and not self.finals:
            self.finals = self.names.claim("finals")
        local = set(self.restored_in_place) & self.context.local_names  # not a global array
        unbound = local - _always_bound(forward) - self.context.parameters
        prologue.extend(assign(name, constant(None)) for name in sorted(unbound))
        forward = self.expand_markers(forward, PUSH, self.push_code)
        backward = self.expand_markers(backward, POP, self.pop_code)
        return prologue + forward, self.with_final_states_kept(backward)

    def with_final_states_kept(self, backward: list[gast.stmt]) -> list[gast.stmt]:
        """``backward``, between noting the state of each array or list it restores in place
        (``out[i] = stack.pop()``, ``hs.pop()``) and writing those states back: the caller
        may hold them (an auxiliary result, ``self.cache = out``, ``history.append(row)``),
        and the user's code left them written (s2sgrad/runtime/states_left.py)."""
        if not self.restored_in_place:
            return backward
        noted = call(self.helper("final_states"), [load(n) for n in self.restored_in_place])
        put_back = call(self.helper("put_back_final_states"), [load(self.finals)])
        return [assign(self.finals, noted), *backward, gast.Expr(value=put_back)]

    def expand_markers(self, statements, prefix, code):
        result = []
        for statement in statements:
            key = marker_key(statement, prefix)
            if key is not None:
                save = self.saves[key]
                generated = code(save) if save.used else None
                if isinstance(generated, list):
                    result.extend(generated)
                elif generated is not None:
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
        if save.kind == "item" and self._outer_entry(save):  # the entry may not be there yet
            value: gast.expr = call(
                self.helper("entry_snapshot"), [load(save.target), clone(save.index)]
            )
        elif save.kind == "item":
            value = call(
                self.helper("snapshot"),
                [gast.Subscript(value=load(save.target), slice=clone(save.index), ctx=gast.Load())],
            )
        elif save.kind in ("append", "pop"):
            return None  # the list itself records what the backward sweep undoes
        elif save.target in self.shape_only:
            value = call(self.helper("shape_only"), [load(save.target)])
        else:
            value = load(save.target)
        push = gast.Expr(value=call(attribute(stack, "append"), [value]))
        annotate(push, SAVE_PUSH)  # lets specialisation see that it sets no shape
        return push

    def _outer_entry(self, save: Save) -> bool:
        """``d["k"] = v`` or ``d[key] = v`` into a dict of the code around the function (a
        module's cache keyed by shape), which may not hold the entry before the first
        write (``entry_snapshot`` of a list or an array is the item's snapshot)."""
        outer = save.target not in self.context.local_names | self.context.parameters
        return outer and (_string_key(save.index) or isinstance(save.index, gast.Name))

    def pop_code(self, save: Save) -> gast.stmt | list[gast.stmt]:
        popped = call(attribute(load(self.stack_name), "pop"))
        if save.kind == "item" and self._outer_entry(save):  # deleted again if it was absent
            put_back = call(
                self.helper("put_back_entry"),
                [load(save.target), clone(save.index), popped],
            )
            return gast.Expr(value=put_back)
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
        restore = assign(save.target, popped)
        if save.target not in self.restored_in_place:
            return restore
        # an earlier array of the name, whose items the backward sweep restores next
        keep = call(self.helper("keep_final_state"), [load(self.finals), load(save.target)])
        return [restore, gast.Expr(value=keep)]


def _string_key(index: gast.expr | None) -> bool:
    """Whether ``index`` is a string literal: a dict's key, whose entry a first write adds."""
    return isinstance(index, gast.Constant) and isinstance(index.value, str)


_IN_PLACE = ("item", "append", "pop")  # the saves the backward sweep undoes in place


def _always_bound(statements) -> set[str]:
    """The names every path through ``statements`` binds: assignments, and the names both
    arms of an ``if`` bind (``if t: c = b`` / ``else: c = 100 * b`` binds c). A loop may
    run no iteration, so it binds nothing for sure."""
    bound: set[str] = set()
    for statement in statements:
        if isinstance(statement, gast.Assign):
            bound |= names_written(statement)
        elif isinstance(statement, gast.If):
            bound |= _always_bound(statement.body) & _always_bound(statement.orelse)
        elif isinstance(statement, gast.With):  # (transparent) its body runs once
            bound |= _always_bound(statement.body)
    return bound


def marker_key(statement, prefix: str) -> int | None:
    """The key of the save whose marker (``prefix``: PUSH or POP) ``statement`` is, else None."""
    text = string_statement(statement)
    if text is not None and text.startswith(prefix):
        return int(text[len(prefix) :])
    return None


def _marker_tree(statements, prefix: str, origin: Callable) -> list:
    """The keys of the markers in ``statements`` in order and, in their place, for each
    statement holding some, ``(origin(statement), [(field, its tree), ...])``."""
    tree: list = []
    for statement in statements:
        key = marker_key(statement, prefix)
        if key is not None:
            tree.append(key)
            continue
        if isinstance(statement, gast.FunctionDef):
            continue
        if type(statement) is gast.With:  # transparent: the backward replays its body inline
            tree.extend(_marker_tree(statement.body, prefix, origin))
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


def _has_blocks(statements: list[gast.stmt]) -> bool:
    """Whether a statement of ``statements`` holds blocks (``expand_markers`` goes into
    them): anything but the simple statements the sweeps emit most."""
    return any(type(s) not in _SIMPLE for s in statements)


def _without_orphan_comments(statements: list[gast.stmt]) -> list[gast.stmt]:
    """``statements`` without the ``# grad of:`` comments whose code went."""
    kept = []
    following_is_comment = True  # nothing follows the last statement
    for statement in reversed(statements):
        is_comment = (
            type(statement) is gast.Expr  # string_statement's test, the commonest failing first
            and type(statement.value) is gast.Constant
            and _is_comment(statement)
        )
        if not (is_comment and following_is_comment):
            kept.append(statement)
        following_is_comment = is_comment
    kept.reverse()
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


def statement_reads(statement: gast.stmt, reads: dict | None) -> set[str]:
    """``names_read(statement)``, remembered in ``reads`` (by id, with the statement) when
    given: for passes over statements that do not change meanwhile. Not to be changed.

    Example::

        reads: dict = {}
        statement_reads(statement, reads) is statement_reads(statement, reads)  # True
    """
    if reads is None:
        return names_read(statement)
    known = reads.get(id(statement))
    if known is None or known[0] is not statement:
        known = reads[id(statement)] = (statement, names_read(statement))
    return known[1]
