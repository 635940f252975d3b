"""Entry updates of a shallow copy of a list or dict, whose entries the original still holds.

``q = ps.copy()`` (or ``list(ps)``, ``dict(ps)``, ``ps[:]``, ``copy.copy(ps)``, ``{**ps}``,
``[*ps]``) makes a new container holding the same entries: ``q[0] += 1.0`` then changes
in place the array that ``ps[0]`` holds too (for a number it rebinds ``q``'s entry alone),
and ``q[0][1] = v`` writes into it. The sharing analysis (:mod:`.sharing`) takes such a
copy for a new value, right for the container and not for its entries, so an update of an
entry of either, followed by a read of the other, is found here and refused (an
augmented update as the code runs, when the entry is an array), rather than
differentiated as if the two were apart.

Example::

    # q = ps.copy(); q[0] += 1.0; return ps[0]  ->  {id(q[0] += 1.0): "...: ..."}
    shallow_copy_entry_updates(statements, updates, loops, locate)
"""

from __future__ import annotations

from collections.abc import Callable

import gast

__all__ = ["EntryOfACopy", "shallow_copy_entry_updates"]


class EntryOfACopy(str):
    """The message refusing ``q[i] op= v`` where ``q`` shares its entries with another
    container read afterwards: refused as the code runs when the entry is an array (a
    number's update rebinds the entry alone, as the transformer does). ``container`` names
    ``q``: the tape, which refuses by line, leaves the update alone when ``q`` holds an array
    (``rhs = v.copy(); rhs[0] += p``: its rows are its own)."""

    container: str = ""


def shallow_copy_entry_updates(
    statements: list[gast.stmt],
    updates: list[tuple[int, gast.stmt, str]],
    read_after: Callable[[int, set[str]], tuple[str | None, int | None]],
    locate: Callable[[gast.AST], str],
) -> dict[int, str]:
    """For each ``(index, update, name)`` of ``updates`` that changes an entry of ``name``
    (``q[i] op= v``, ``q[i][j] = v``) where ``name`` and another name hold shallow copies of
    one container, read afterwards (``read_after(index, names)`` gives ``(name, position)``
    of the first read, or ``(None, None)``): the message refusing it, by ``id``."""
    partners = _copy_partners(statements)
    containers = _containers(statements)
    found: dict[int, str] = {}
    for index, update, updated in updates:
        if updated not in partners or not _changes_an_entry(update):
            continue
        if type(update) is not gast.AugAssign and not ({updated} | partners[updated]) & containers:
            continue  # b = a.copy(); b[0][1] = v: an array's copy, as far as it is known
        read, later = read_after(index, partners[updated])
        if read is None or later is None:
            continue
        message = (
            f"{locate(update)}: this changes the value held in an entry of '{updated}' in "
            f"place, and '{read}', read afterwards ({locate(statements[later])}), is a "
            f"shallow copy sharing that entry (or '{updated}' is one of it), so it sees the "
            f"change when the entry is an array. Copy the entries too "
            f"([v.copy() for v in ...], copy.deepcopy), or write the entry anew "
            f"({updated}[i] = {updated}[i] + ...)"
        )
        if type(update) is gast.AugAssign:
            message = EntryOfACopy(message)
            message.container = updated
        found[id(update)] = message
    return found


def _changes_an_entry(update: gast.stmt) -> bool:
    """``q[i] op= v`` or ``q[i][j] = v``, ``q[i][j] op= v``: the value in an entry changes."""
    if type(update) is gast.AugAssign:
        return type(update.target) is gast.Subscript
    if type(update) is gast.Assign and len(update.targets) == 1:
        target = update.targets[0]
        return type(target) is gast.Subscript and type(target.value) is gast.Subscript
    return False


def _copy_partners(statements: list[gast.stmt]) -> dict[str, set[str]]:
    """For each name bound to a shallow copy of another (or copied so), every name sharing
    entries with it through such copies and plain bindings (``q = ps``), either way."""
    links: dict[str, set[str]] = {}
    copied: set[str] = set()
    for statement in statements:
        if type(statement) is not gast.Assign or len(statement.targets) != 1:
            continue
        target = statement.targets[0]
        if type(target) is not gast.Name:
            continue
        source = _shallow_copy_source(statement.value)
        if source is None and type(statement.value) is gast.Name:
            source = statement.value.id  # the same container
        elif source is not None:
            copied.update((source, target.id))
        if source is not None and source != target.id:
            links.setdefault(target.id, set()).add(source)
            links.setdefault(source, set()).add(target.id)
    partners: dict[str, set[str]] = {}
    for name in copied:
        found, frontier = {name}, [name]
        while frontier:
            for other in links.get(frontier.pop(), ()):
                if other not in found:
                    found.add(other)
                    frontier.append(other)
        partners[name] = found - {name}
    return partners


def _containers(statements: list[gast.stmt]) -> set[str]:
    """The names every binding of which makes a list or dict (a display, a comprehension,
    ``list(...)``, ``dict(...)``)."""
    kinds: dict[str, bool] = {}
    for statement in statements:
        if type(statement) is gast.Assign and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
            if type(target) is gast.Name:
                made = type(value) in (gast.List, gast.Dict, gast.ListComp, gast.DictComp) or (
                    type(value) is gast.Call
                    and type(value.func) is gast.Name
                    and value.func.id in ("list", "dict")
                )
                kinds[target.id] = kinds.get(target.id, True) and made
    return {name for name, made in kinds.items() if made}


def _shallow_copy_source(value: gast.expr) -> str | None:
    """``ps`` when ``value`` is a shallow copy of the container ``ps`` (see the module
    docstring), else None."""
    kind = type(value)
    if kind is gast.Call and not value.keywords and len(value.args) <= 1:
        func = value.func
        copied = type(func) is gast.Attribute and func.attr == "copy" and not value.args
        if copied and type(func.value) is gast.Name:
            return func.value.id  # ps.copy() (an array's is a new array: no entries)
        if not value.args or type(value.args[0]) is not gast.Name:
            return None
        argument = value.args[0]
        named = type(func) is gast.Name and func.id in ("list", "dict")
        module_copy = (
            type(func) is gast.Attribute
            and func.attr == "copy"
            and type(func.value) is gast.Name
            and func.value.id == "copy"
        )
        return argument.id if named or module_copy else None
    if kind is gast.Subscript and type(value.value) is gast.Name:
        part = value.slice
        whole = type(part) is gast.Slice and part.lower is None and part.upper is None
        return value.value.id if whole and part.step is None else None
    if kind is gast.Dict and len(value.keys) == 1 and value.keys[0] is None:
        spread = value.values[0]
        return spread.id if type(spread) is gast.Name else None
    if kind is gast.List and len(value.elts) == 1 and type(value.elts[0]) is gast.Starred:
        spread = value.elts[0].value
        return spread.id if type(spread) is gast.Name else None
    return None
