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

Example::

    split_tuple_item_writes(function.body, names)
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import load, store

__all__ = ["split_tuple_item_writes"]

_BLOCKS = ("body", "orelse", "finalbody")


def split_tuple_item_writes(body: list[gast.stmt], names: NameGenerator) -> None:
    """Rewrite, in place, each ``a[i], ... = values`` in ``body`` and its nested blocks
    (not entering functions) into named values assigned one target at a time."""
    body[:] = [part for statement in body for part in _split(statement, names)]


def _split(statement: gast.stmt, names: NameGenerator) -> list[gast.stmt]:
    if isinstance(statement, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
        return [statement]
    for field in _BLOCKS:
        block = getattr(statement, field, None)
        if isinstance(block, list):
            split_tuple_item_writes(block, names)
    for handler in getattr(statement, "handlers", None) or []:
        split_tuple_item_writes(handler.body, names)
    if not _writes_items_in_a_tuple(statement):
        return [statement]
    assert isinstance(statement, gast.Assign)
    targets = statement.targets[0].elts
    value = statement.value
    displayed = isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(targets)
    parts = value.elts if displayed else [None] * len(targets)
    temps = [names.fresh(_named_after(part)) for part in parts]
    if displayed:
        first = [_assign(store(t), v, statement) for t, v in zip(temps, value.elts)]
    else:  # one value unpacked: into names first, as Python does before any write
        names_in_turn = gast.Tuple(elts=[store(t) for t in temps], ctx=gast.Store())
        first = [_assign(names_in_turn, value, statement)]
    second = [_assign(target, load(t), statement) for t, target in zip(temps, targets)]
    return [*first, *second]


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
    if not any(type(e) is gast.Subscript for e in target.elts):
        return False
    values = value.elts if type(value) in (gast.Tuple, gast.List) else [value]
    return any(_may_be_a_slice_view(v) for v in values)


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
