"""Item writes in a tuple assignment, written one after another as Python runs them.

``b[:3], b[3:] = b[3:], b[:3]`` evaluates both values first (two views of ``b``), then
writes ``b[:3]`` and only then ``b[3:]``, from a view whose elements the first write has
already changed: NumPy's ``b`` ends as ``[b3, b4, b5, b3, b4, b5]``, not swapped. The
analyses of views and sharing (:mod:`.view_writes`, :mod:`.aliases`) read one write per
statement, so such a statement is split first into the steps Python takes, each value
named::

    b_item = b[3:]
    b_item_1 = b[:3]
    b[:3] = b_item
    b[3:] = b_item_1    # a view of b, read after b changed: followed or refused

A value that is not a tuple display (``b[:2], b[2:] = pair``) is unpacked into names first
(``value, value_1 = pair``). Statements keep their line, so a refusal names the user's.

An item read by integers (``b[i], b[j] = b[j], b[i]``) is a number of a vector but a view
of a row of a matrix, which NumPy writes ``b[j]`` from after ``b[i]`` changed: both rows
end as the old row ``j``. Which one only shows as the code runs, so for source
transformation (given ``locate``) such a statement, when a later value is such a read,
becomes::

    if item_reads_are_views(message, b, i):
        b_item = b[j]
        b[i] = b_item
        b[j] = b[i]          # the view, read where NumPy reads it
    else:
        b[i], b[j] = b[j], b[i]   # numbers: swapped, as written

(a later value read anew only when its array and index are names no target rebinds, else
it is split as a slice is). For the tape's analysis (no ``locate``) the reads are split as
slices are, so that a view the tape holds stale is refused.

Example::

    split_tuple_item_writes(function.body, names)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import call, clone, load, store

__all__ = ["split_tuple_item_writes"]

_BLOCKS = ("body", "orelse", "finalbody")


def split_tuple_item_writes(
    body: list[gast.stmt], names: NameGenerator, locate: Callable[[Any], str] | None = None
) -> dict[str, Any]:
    """Rewrite, in place, each ``a[i], ... = values`` in ``body`` and its nested blocks
    (not entering functions) into named values assigned one target at a time. With
    ``locate`` (source transformation), an item read by integers is read anew under a run-
    time check of whether it is a view (see the module docstring); returns the names of the
    checks the code calls, each with its function."""
    helpers: dict[str, Any] = {}
    if not _any_tuple_item_writes(body):
        return helpers
    lists = _names_of_lists(body) if locate is not None else set()
    _split_block(body, names, locate, helpers, lists)
    return helpers


def _any_tuple_item_writes(body: list[gast.stmt]) -> bool:
    """Whether a statement :func:`_split` rewrites is in ``body`` or its nested blocks
    (a walk of the statements alone: most bodies have none, and need no other walk)."""
    for statement in body:
        if isinstance(statement, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        if _writes_items_in_a_tuple(statement):
            return True
        for field in _BLOCKS:
            block = getattr(statement, field, None)
            if isinstance(block, list) and _any_tuple_item_writes(block):
                return True
        for handler in getattr(statement, "handlers", None) or []:
            if _any_tuple_item_writes(handler.body):
                return True
    return False


def _split_block(body: list[gast.stmt], names, locate, helpers: dict, lists: set[str]) -> None:
    body[:] = [
        part for statement in body for part in _split(statement, names, locate, helpers, lists)
    ]


def _split(statement: gast.stmt, names, locate, helpers: dict, lists: set[str]) -> list[gast.stmt]:
    if isinstance(statement, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
        return [statement]
    for field in _BLOCKS:
        block = getattr(statement, field, None)
        if isinstance(block, list):
            _split_block(block, names, locate, helpers, lists)
    for handler in getattr(statement, "handlers", None) or []:
        _split_block(handler.body, names, locate, helpers, lists)
    if not _writes_items_in_a_tuple(statement):
        return [statement]
    assert isinstance(statement, gast.Assign)
    value = statement.value
    values = value.elts if type(value) in (gast.Tuple, gast.List) else [value]
    reread = {k for k in _read_anew(statement) if statement.value.elts[k].value.id not in lists}
    viewed = [k for k, v in enumerate(values) if _may_be_a_slice_view(v)]
    if viewed and (locate is None or not set(viewed) <= reread):
        return _named_in_turn(statement, names, set())  # b[:3], b[3:] = b[3:], b[:3]
    if not reread - {0}:
        return [statement]  # numbers or copies read before any write: as written
    if locate is None:  # the tape's analysis: views it holds stale are refused
        return _named_in_turn(statement, names, set())
    return _checked_views(statement, names, locate, reread, helpers)


def _names_of_lists(body: list[gast.stmt]) -> set[str]:
    """The names every binding of which in ``body`` (not entering functions) makes a list
    (``L = [x, y]``, ``list(...)``, a comprehension): their items are never views."""
    kinds: dict[str, bool] = {}
    plain_targets: set[int] = set()
    for node in _walk_here(body):
        if type(node) is gast.Assign:
            value = node.value
            made = type(value) in (gast.List, gast.ListComp) or (
                type(value) is gast.Call
                and type(value.func) is gast.Name
                and value.func.id == "list"
            )
            for target in node.targets:
                if type(target) is gast.Name:
                    plain_targets.add(id(target))
                    kinds[target.id] = kinds.get(target.id, True) and made
        elif isinstance(node, (gast.Global, gast.Nonlocal)):
            kinds.update(dict.fromkeys(node.names, False))
    for node in _walk_here(body):  # bound otherwise: a loop's target, an unpacking, += ...
        stored = type(node) is gast.Name and type(node.ctx) is gast.Store
        if stored and id(node) not in plain_targets:
            kinds[node.id] = False
    return {name for name, made in kinds.items() if made}


def _walk_here(body: list[gast.stmt]):
    """The nodes of ``body``, not entering nested functions, classes or lambdas."""
    stack: list[Any] = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)):
            continue
        stack.extend(gast.iter_child_nodes(node))


def _named_in_turn(
    statement: gast.Assign, names: NameGenerator, reread: set[int]
) -> list[gast.stmt]:
    """The values named first, then each target written; the values at ``reread`` not
    named but read again where their target is written."""
    targets = statement.targets[0].elts
    value = statement.value
    displayed = isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(targets)
    parts = value.elts if displayed else [None] * len(targets)
    temps = [names.fresh(_named_after(part)) for part in parts]
    if displayed:
        first = [
            _assign(store(t), v, statement)
            for k, (t, v) in enumerate(zip(temps, value.elts))
            if k not in reread
        ]
    else:  # one value unpacked: into names first, as Python does before any write
        names_in_turn = gast.Tuple(elts=[store(t) for t in temps], ctx=gast.Store())
        first = [_assign(names_in_turn, value, statement)]
    second = [
        _assign(target, clone(parts[k]) if k in reread else load(t), statement)
        for k, (t, target) in enumerate(zip(temps, targets))
    ]
    return [*first, *second]


def _read_anew(statement: gast.Assign) -> set[int]:
    """The positions of the values after the first that are items read by integers from a
    name, which may be views of rows, each of whose array and index names no target
    rebinds (so reading it again where its target is written reads the same item); an
    empty set when there are none or one cannot be read again."""
    value = statement.value
    targets = statement.targets[0].elts
    if type(value) not in (gast.Tuple, gast.List) or len(value.elts) != len(targets):
        return set()
    rebound = {
        n.id
        for t in targets
        for n in gast.walk(t)
        if type(n) is gast.Name and type(n.ctx) is gast.Store
    }
    found = set()
    for k, part in enumerate(value.elts):
        if type(part) is not gast.Subscript:
            continue
        if type(part.value) is not gast.Name or not _plain_index(part.slice):
            if k == 0:  # read before any write: named first
                continue
            return set()
        if any(type(n) is gast.Name and n.id in rebound for n in gast.walk(part)):
            return set()
        found.add(k)
    return found


def _plain_index(index: gast.expr) -> bool:
    """An index of names, numbers and arithmetic on them (``i``, ``j + 1``, ``(i, -1)``),
    and whole axes (``b[:, i]``: a column, the same columns or apart as rows are)."""
    return all(
        isinstance(n, _PLAIN_INDEX_PARTS)
        or (type(n) is gast.Slice and n.lower is None and n.upper is None and n.step is None)
        for n in gast.walk(index)
    )


_PLAIN_INDEX_PARTS = (
    *(gast.Name, gast.Constant, gast.BinOp, gast.UnaryOp, gast.Tuple),
    *(gast.operator, gast.unaryop, gast.expr_context),
)


def _checked_views(
    statement: gast.Assign, names: NameGenerator, locate, reread: set[int], helpers: dict
) -> list[gast.stmt]:
    """``if item_reads_are_views(...): <values read anew> else: <statement>``; for a swap
    of two items of one array, ``<statement>`` then ``if item_reads_are_views(...): b[j] =
    copy(b[i])`` (the same, as its rows are one or apart; and no branch binds a name, which
    keeps the derivative's own derivative, a Hessian, as for a vector)."""
    check = names.claim("item_reads_are_views")
    helpers[check] = runtime.item_reads_are_views
    message = (
        f"{locate(statement)}: this tuple assignment reads rows of a matrix (views, which "
        "NumPy reads where each target is written, after the writes before it) together "
        "with numbers or copies; write the items one statement at a time, copying what must "
        "keep its old value (b[i].copy())"
    )
    reads: list[gast.expr] = []
    for k in sorted(reread - {0}):
        part = statement.value.elts[k]
        reads += [clone(part.value), _as_value(clone(part.slice))]
    asked = call(load(check), [gast.Constant(value=message, kind=None), *reads])
    # a comparison: the backward takes the branch the forward took, for the paths analysis
    # (aliases_paths) that a Hessian asks of this code's derivative
    test = gast.Compare(left=asked, ops=[gast.Is()], comparators=[gast.Constant(True, None)])
    if _swaps_items_of_one_array(statement, reread):
        copy = names.claim("copy_of_row")
        helpers[copy] = np.copy  # a new array: no name shares the array's memory
        last = statement.value.elts[1]
        fixed = _assign(
            clone(statement.targets[0].elts[1]), call(load(copy), [clone(last)]), statement
        )
        return [
            statement,
            gast.copy_location(gast.If(test=test, body=[fixed], orelse=[]), statement),
        ]
    as_views = _named_in_turn(clone(statement), names, reread)  # no node in both branches
    return [gast.copy_location(gast.If(test=test, body=as_views, orelse=[statement]), statement)]


def _as_value(index: gast.expr) -> gast.expr:
    """An index as a value to pass on: a whole axis ``:`` as ``slice(None)``."""
    if type(index) is gast.Slice:
        return call(load("slice"), [gast.Constant(None, None)])
    if type(index) is gast.Tuple:
        return gast.Tuple(elts=[_as_value(e) for e in index.elts], ctx=gast.Load())
    return index


def _swaps_items_of_one_array(statement: gast.Assign, reread: set[int]) -> bool:
    """``b[i], b[j] = b[j], b[i]``-like: two targets, the second an item by as many plain
    indices of the array its value reads (rows of one array are the same row or apart, so
    the second write does not change what it writes)."""
    targets = statement.targets[0].elts
    if len(targets) != 2 or reread - {0} != {1}:
        return False
    target, value = targets[1], statement.value.elts[1]
    return (
        type(target) is gast.Subscript
        and type(target.value) is gast.Name
        and target.value.id == value.value.id
        and _plain_index(target.slice)
        and _index_length(target.slice) == _index_length(value.slice)
    )


def _index_length(index: gast.expr) -> int:
    return len(index.elts) if type(index) is gast.Tuple else 1


def _named_after(value: gast.expr | None) -> str:
    """A name telling what a value read first is (``a[j]`` → ``a_item``), for messages."""
    while isinstance(value, (gast.Subscript, gast.Attribute)):
        value = value.value
    return f"{value.id}_item" if isinstance(value, gast.Name) else "value"


def _writes_items_in_a_tuple(statement: gast.stmt) -> bool:
    """``a[i], b = ...``: one tuple or list of targets, an item among them, none starred
    (whose values Python counts out first) and no values starred."""
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return False
    target = statement.targets[0]
    if type(target) not in (gast.Tuple, gast.List) or len(target.elts) < 2:
        return False
    if any(type(e) is gast.Starred for e in target.elts):
        return False
    value = statement.value
    if type(value) in (gast.Tuple, gast.List) and any(type(e) is gast.Starred for e in value.elts):
        return False
    return any(type(e) is gast.Subscript for e in target.elts)


def _may_be_a_slice_view(value: gast.expr) -> bool:
    """Whether ``value`` may be a view a slice, a transpose or a name made (``b[3:]``,
    ``b.T``, ``q``), not only an item read by integers (``a[j]``: a number of a vector,
    which the sharing analysis could not tell from a row inside a loop, and refused)."""
    if type(value) in (gast.Name, gast.Attribute, gast.Starred, gast.Call):
        return True
    if type(value) is not gast.Subscript:
        return False
    parts = value.slice.elts if type(value.slice) is gast.Tuple else [value.slice]
    chained = type(value.value) is not gast.Name and _may_be_a_slice_view(value.value)
    return chained or any(
        type(p) is gast.Slice or (type(p) is gast.Constant and p.value in (None, Ellipsis))
        for p in parts
    )


def _assign(target: gast.expr, value: gast.expr, like: gast.stmt) -> gast.Assign:
    new = gast.Assign(targets=[target], value=value, type_comment=None)
    return gast.copy_location(new, like)
