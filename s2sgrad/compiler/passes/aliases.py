"""The in-place updates that sharing makes ambiguous, with the messages that refuse them.

``x += v`` changes an array in place, while the ``x = x + v`` that the transformer works
with makes a new one. The two differ only when another name sees the same memory (``w =
x``, a view such as ``x[0]``, ``x.T`` or ``np.flip(x)``, a list holding ``x``) and is read
after the update: NumPy's answer then depends on the sharing, and neither engine records
it. Such code is refused with a message that says how to write it, rather than
differentiated wrongly: an item update at once (only arrays and lists have items), and
``x op= v`` when it runs with an array in ``x`` (with a number it means ``x = x op v``).

Which names may share memory is :mod:`.sharing`'s analysis, deliberately simple and erring
on the side of refusing; which calls make new arrays is :mod:`.fresh_results`' closed list.
Names that only trade new arrays among themselves (``u, new = new, u``), and a list's entry
stored back after a loop updated it (:mod:`.list_entries`), share nothing here.
``fresh_result``, ``mutated_parameters`` and ``refuse_mutating_calls`` are importable from
here as well as from their modules.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import gast

from s2sgrad.compiler.annotations import SYNCED, annotation
from s2sgrad.compiler.passes.aliases_paths import changed_memory_reads
from s2sgrad.compiler.passes.attribute_updates import attribute_updates_seen_elsewhere
from s2sgrad.compiler.passes.fresh_results import fresh_result
from s2sgrad.compiler.passes.mutation import mutated_parameters, refuse_mutating_calls
from s2sgrad.compiler.passes.shallow_copies import shallow_copy_entry_updates
from s2sgrad.compiler.passes.sharing import (
    Layout,
    Sharing,
    container_names,
    makes_container,
    sources_of,
    updated_name,
    with_local_functions,
)
from s2sgrad.compiler.syntax import (
    names_written,
    nested_statements,
    parameter_names,
    walk,
)

__all__ = [
    "shared_list_changes",
    "ListCopyRead",
    "mark_list_copies",
    "copy_where_made",
    "private_lists",
    "loop_spans",
    "run_after",
    "shared_in_place_updates",
    "fresh_result",
    "mutated_parameters",
    "refuse_mutating_calls",
]


def shared_in_place_updates(
    function: gast.FunctionDef, locate: Callable[[gast.AST], str], resolve=None
) -> dict[int, str]:
    """The in-place updates (``x op= v``, ``x[i] = v``) of ``function`` after which a name
    that may share ``x``'s memory is read, by ``id`` of the statement, each with the message
    that explains it (see the module docstring).

    ``resolve`` maps a function reference to its object (None: judge by name alone).

    Example::

        # w = x; x += 1.0; return np.sum(w)   ->  {id(x += 1.0): "...: 'x += ...' ..."}
    """
    statements = list(nested_statements(function.body))
    updates = [(i, s, name) for i, s in enumerate(statements) if (name := updated_name(s))]
    if not updates and not any(_updates_an_attribute(s) for s in statements):
        return {}
    resolve = with_local_functions(statements, resolve)  # a closure may return a view
    containers = container_names(statements)
    everywhere = Sharing(statements, resolve, containers, parameter_names(function))
    layout = Layout(function.body, statements)
    loops = loop_spans(statements)
    buffers = _swapped_buffers(function, statements, resolve)
    synced = {
        s.targets[0].id: annotation(s, SYNCED)
        for s in statements
        if annotation(s, SYNCED) and type(s.targets[0]) is gast.Name
    }
    private = private_lists(function, statements)
    repeating = _may_repeat_entries(statements)
    found = {}
    doubted = []  # (update, name, the names that may share it): refused unless the paths tell
    for index, update, updated in updates:
        if annotation(update, SYNCED):
            continue  # items[i] = g: the list gets back the array it holds
        if updated in private and _slot_store(update):
            continue  # a2[i] = v replaces an entry of a list no other name can see
        since = layout.made_since(update, updated, index, resolve)
        if since is None:
            sharing = everywhere.with_(updated)
        else:  # only what was made from the new array since can share it
            made = statements[since[0] : since[1]]
            sharing = Sharing(made, resolve, containers, {updated}).with_(updated)
        sharing -= buffers.get(updated, frozenset())  # each holds an array of its own
        if updated in containers and _slot_store(update):  # entries replaced, none changed
            sharing -= _entries_and_keys(statements, updated)
            sharing -= _displays_of_others(statements, sharing | {updated})
            sharing -= private  # a copy (old = dict(params)) only its own name holds
        sharing.discard(synced.get(updated))  # the list's entry, stored back after the loop body
        read, later = _read_after(index, statements, loops, sharing)
        if read is None and updated in repeating and _entry_update(update):
            # the array in one entry may be in another too ([v] * n, appended twice)
            read, later = _read_after(index, statements, loops, {updated})
            if read is not None and later is not None:
                found[id(update)] = (
                    f"{locate(update)}: {_what_changes(update, updated)}, and '{updated}', "
                    f"read afterwards ({locate(statements[later])}), may hold that array in "
                    f"another entry too ([v] * n, dict.fromkeys, v appended twice), which "
                    f"sees the change. Build '{updated}' of distinct arrays (v.copy() each "
                    f"time), or write the entry anew ({_target_text(update)} = "
                    f"{_target_text(update)} {_operator(update)} ...)"
                )
                continue
        if read is None or later is None:
            continue
        doubted.append((update, updated, sharing))
        where = f"{locate(update)}: {_what_changes(update, updated)}"
        if updated in containers and _slot_store(update):  # a list's or dict's entry
            found[id(update)] = (
                f"{where}, and '{read}', read afterwards ({locate(statements[later])}), holds "
                f"the same list or dict, so it sees the change, which source transformation "
                f"does not follow. Give '{read}' a copy of its own ({read} = dict({updated}) "
                f"or list({updated})), or write the entries before '{read}' takes it"
            )
            continue
        found[id(update)] = (
            f"{where}, and '{read}', read afterwards ({locate(statements[later])}), may share "
            f"memory with it, so the result depends on that sharing. "
            f"{_instead(update, updated)}, or {_copy_advice(statements, updated, read)}"
        )
    asked = [(update, updated) for update, updated, _ in doubted]
    stale = changed_memory_reads(function, asked, resolve, containers) if asked else None
    for update, _, sharing in doubted:
        if stale is not None and not stale[id(update)] & sharing:
            del found[id(update)]  # along the paths, no name read later holds the change
    found.update(  # layer.W -= v changes the array W, given to Layer(W), holds
        attribute_updates_seen_elsewhere(
            statements,
            everywhere.with_,
            lambda index, names: _read_after(index, statements, loops, names),
            locate,
        )
    )
    updates_left = [(i, s, name) for i, s, name in updates if id(s) not in found]
    found.update(  # q = ps.copy(); q[0] += v changes the array ps[0] holds
        shallow_copy_entry_updates(
            statements,
            updates_left,
            lambda index, names: _read_after(index, statements, loops, names),
            locate,
        )
    )
    return found


def _updates_an_attribute(statement: gast.stmt) -> bool:
    """``obj.name op= v`` (see :mod:`.attribute_updates`)."""
    return type(statement) is gast.AugAssign and type(statement.target) is gast.Attribute


# the methods that change a list or dict in place: the transformer follows them only
# through the name they are called on
_CHANGING_METHODS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem"}
)


def shared_list_changes(
    function: gast.FunctionDef, locate: Callable[[gast.AST], str], resolve=None
) -> dict[int, str]:
    """``b.append(v)`` (or another method changing a list or dict in place) after which
    another name holding the same list (``b = a``) is read: by ``id`` of the statement,
    the message refusing it, since the transformer sees only ``b`` change. Deliberately
    narrow, refusing no more: straight-line code of one block, a plain copy (``b = a``,
    either way) earlier in it with neither name bound again in between, and a read of the
    copy later in it (anywhere inside its later statements) before it is bound again.

    Example::

        # b = a; b.append(v); return a[1]  ->  {id(b.append(v)): "...: 'a' ... holds ..."}
    """
    found: dict[int, str] = {}
    for block in _blocks(function.body):
        for k, change in enumerate(block):
            changed = _changed_list(change)
            if changed is None:
                continue
            copy = _copy_before(block, k, changed)
            if copy is None:
                continue
            later = _read_later(block, k, copy)
            if later is None:
                continue
            method = change.value.func.attr
            found[id(change)] = (
                f"{locate(change)}: '{changed}.{method}(...)' changes {changed} in place, "
                f"and '{copy}', read afterwards ({locate(later)}), holds the same list or "
                f"dict, so it sees the change, which source transformation does not follow. "
                f"Give '{copy}' a copy of its own ({copy} = list({changed}) or "
                f"dict({changed})), or change and read the same name"
            )
    return found


def _blocks(body: list[gast.stmt]):
    """Every block of statements in ``body`` (not inside nested functions), itself first."""
    yield body
    for statement in body:
        if isinstance(statement, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                yield from _blocks(inner)
        for handler in getattr(statement, "handlers", None) or ():
            yield from _blocks(handler.body)


def _changed_list(statement: gast.stmt) -> str | None:
    if (
        type(statement) is gast.Expr
        and type(statement.value) is gast.Call
        and type(statement.value.func) is gast.Attribute
        and statement.value.func.attr in _CHANGING_METHODS
        and type(statement.value.func.value) is gast.Name
    ):
        return statement.value.func.value.id
    return None


def _copy_before(block: list[gast.stmt], k: int, changed: str) -> str | None:
    """The other name of the last plain copy ``a = b`` of ``changed`` before ``block[k]``,
    if neither name is bound again between it and ``block[k]``."""
    for j in range(k - 1, -1, -1):
        statement = block[j]
        if (
            type(statement) is gast.Assign
            and len(statement.targets) == 1
            and type(statement.targets[0]) is gast.Name
            and type(statement.value) is gast.Name
            and changed in (statement.targets[0].id, statement.value.id)
        ):
            pair = {statement.targets[0].id, statement.value.id} - {changed}
            if not pair:
                return None
            copy = pair.pop()
            if any(names_written(s) & {copy, changed} for s in block[j + 1 : k]):
                return None
            return copy
        if changed in names_written(statement):
            return None
    return None


def _read_later(block: list[gast.stmt], k: int, name: str) -> gast.stmt | None:
    """The first statement after ``block[k]`` reading ``name`` before binding it again."""
    for statement in block[k + 1 :]:
        for node in walk(statement):
            if type(node) is gast.Name and type(node.ctx) is gast.Load and node.id == name:
                return statement
        if name in names_written(statement):
            return None
    return None


class ListCopyRead(str):
    """The message of ``b += v`` after which a plain copy of ``b`` (``a = b``) is read: if
    ``b`` holds a list (or a dict, for ``|=``), ``+=`` extends it in place, which ``a``
    sees; the run-time check refuses a list then too."""


def mark_list_copies(function: gast.FunctionDef, shared: dict[int, str]) -> None:
    """Mark (as :class:`ListCopyRead`) the messages in ``shared`` of ``x op= v`` statements
    after which a plain copy of ``x`` is read."""
    statements = list(nested_statements(function.body))
    copies = _name_copies(statements)
    loops = loop_spans(statements)
    for index, statement in enumerate(statements):
        if id(statement) not in shared or type(statement) is not gast.AugAssign:
            continue
        if type(statement.target) is not gast.Name:
            continue
        sharing = _copies_of(statement.target.id, copies) - {statement.target.id}
        read, later = _read_after(index, statements, loops, sharing)
        if read is not None and later is not None:
            shared[id(statement)] = ListCopyRead(shared[id(statement)])


def _name_copies(statements: list[gast.stmt]) -> dict[str, set[str]]:
    """For each name, the names bound to it by a plain copy (``b = a``), either way."""
    copies: dict[str, set[str]] = {}
    for statement in statements:
        if (
            type(statement) is gast.Assign
            and len(statement.targets) == 1
            and type(statement.targets[0]) is gast.Name
            and type(statement.value) is gast.Name
        ):
            a, b = statement.targets[0].id, statement.value.id
            copies.setdefault(a, set()).add(b)
            copies.setdefault(b, set()).add(a)
    return copies


def _copies_of(name: str, copies: dict[str, set[str]]) -> set[str]:
    found, frontier = {name}, [name]
    while frontier:
        for other in copies.get(frontier.pop(), ()):
            if other not in found:
                found.add(other)
                frontier.append(other)
    return found


# calls that read a list's entries without keeping the list
_ENTRY_READERS = frozenset({"len", "sum", "min", "max", "sorted", "tuple", "enumerate", "zip"})
# s2sgrad's run-time helpers in generated code (differentiated again) that read a list's
# structure or entries, by the position of the list among their arguments
_STRUCTURE_READERS = {
    "index_cotangent": 1,
    "unpack_cotangent": 1,
    "items_cotangent": 1,
    "as_gradient": 1,
    "zeros_like_value": 0,
    "zeros_like_structure": 0,
    "for_items": 0,
    "snapshot": 0,
    "shape_only": 0,
}
_OWN_METHODS = frozenset({"append", "extend", "insert", "pop", "index", "count"})


def private_lists(function: gast.FunctionDef, statements: list[gast.stmt]) -> set[str]:
    """The names always bound to a list or dict made here (``[...]``, ``list(...)``, a
    comprehension) and read only for their entries (``a[i]``, ``len(a)``, ``f(*a)``,
    ``x, y = a``, ``for v in a``, ``a.append(v)``, ``while a``): no other name can hold
    the same list, so storing an entry (``a[i] = v``) changes what nothing else sees."""
    fresh_targets = {
        id(s.targets[0]): s.targets[0].id
        for s in statements
        if type(s) is gast.Assign
        and len(s.targets) == 1
        and type(s.targets[0]) is gast.Name
        and makes_container(s.value)
    }
    candidates = set(fresh_targets.values()) - parameter_names(function)
    if not candidates:
        return set()
    entry_reads: set[int] = set()
    for node in walk(function):
        kind = type(node)
        if kind is gast.Subscript or kind is gast.Starred:
            entry_reads.add(id(node.value))
        elif kind is gast.For or kind is gast.comprehension:
            entry_reads.add(id(node.iter))
        elif kind is gast.Assign and all(type(t) in (gast.Tuple, gast.List) for t in node.targets):
            entry_reads.add(id(node.value))  # a, b = entries
        elif kind is gast.Call:
            entry_reads.update(_entries_read_by_call(node))
        elif kind in (gast.If, gast.While, gast.IfExp, gast.Assert):
            entry_reads.update(map(id, _tested(node.test)))  # while items: its length
    for node in walk(function):
        if type(node) is not gast.Name or node.id not in candidates:
            continue
        if type(node.ctx) is gast.Store:
            private = id(node) in fresh_targets  # every binding makes a new list
        else:
            private = type(node.ctx) is gast.Load and id(node) in entry_reads
        if not private:
            candidates.discard(node.id)
    return candidates


def _tested(test: gast.expr) -> list[gast.expr]:
    """The parts of a condition read only for their truth (``a`` in ``not a or b``)."""
    if type(test) is gast.UnaryOp and type(test.op) is gast.Not:
        return _tested(test.operand)
    if type(test) is gast.BoolOp:
        return [part for value in test.values for part in _tested(value)]
    return [test]


def _entries_read_by_call(call: gast.Call) -> list[int]:
    """The ids of the arguments (or receiver) of ``call`` that it reads only for entries."""
    func = call.func
    if type(func) is gast.Name and func.id in _ENTRY_READERS:
        return list(map(id, call.args))
    if type(func) is gast.Name and func.id in _STRUCTURE_READERS:
        position = _STRUCTURE_READERS[func.id]
        return [id(call.args[position])] if position < len(call.args) else []
    if type(func) is gast.Attribute and func.attr in _OWN_METHODS:
        return [id(func.value)]
    return []


def _entries_and_keys(statements: list[gast.stmt], container: str) -> set[str]:
    """The names bound only to entries or keys of the list or dict ``container`` (``for k
    in d``, ``for k, v in d.items()``, ``v = d[k]``, ``v = d.get(k, default)``), or else to
    new values (``v = m * v + u``): replacing an entry changes none of what they hold."""
    bound: dict[str, bool] = {}
    for statement in statements:
        if type(statement) is gast.For:
            target, source = statement.target, statement.iter
            if (
                type(source) is gast.Call
                and type(source.func) is gast.Attribute
                and source.func.attr in ("items", "keys", "values")
                and not source.args
            ):
                source = source.func.value
            entries = type(source) is gast.Name and source.id == container
        elif type(statement) is gast.Assign and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
            entries = (
                (
                    type(value) is gast.Subscript
                    and type(value.value) is gast.Name
                    and value.value.id == container
                )
                or _entry_lookup(value, container)
                or not sources_of(value, None)  # a new value (arithmetic): shares nothing
            )
        else:
            continue
        for name in names_written(target):
            bound[name] = bound.get(name, True) and entries
    return {name for name, only_entries in bound.items() if only_entries}


def _displays_of_others(statements: list[gast.stmt], held: set[str]) -> set[str]:
    """The names of ``held`` bound only to constants and to tuples of names and constants,
    none of their names in ``held`` (but the ones found here): ``cache = (mean, eps)`` of
    an entry ``eps`` holds the entries, not the dict whose entry is replaced."""
    displays: dict[str, list] = {}
    for statement in statements:
        if type(statement) in (gast.If, gast.While, gast.Try):
            continue  # binds nothing itself: its blocks' statements come in turn
        written = names_written(statement) & held
        if written:
            parts = _display_parts(statement)
            for name in written:
                displays.setdefault(name, []).append(parts)
    candidates = {n: v for n, v in displays.items() if None not in v}
    freed: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, bindings in candidates.items():
            names = {p.id for parts in bindings for p in parts if type(p) is gast.Name}
            if name not in freed and not names & (held - freed):
                freed.add(name)
                changed = True
    return freed


def _display_parts(statement: gast.stmt) -> list[gast.expr] | None:
    """The names and constants of ``name = (a, b, c)``, none of ``name = c``; None for any
    other statement. A tuple cannot change, so it holds what its names held."""
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return None
    if type(statement.targets[0]) is not gast.Name:
        return None
    value = statement.value
    if type(value) is gast.Constant:
        return []
    if type(value) is gast.Tuple and all(type(p) in (gast.Name, gast.Constant) for p in value.elts):
        return value.elts
    return None


def _entry_lookup(value: gast.expr, container: str) -> bool:
    """``d.get(k)`` or ``d.get(k, default)`` of the dict ``container``: an entry, or a
    default that is no part of it either."""
    if type(value) is not gast.Call or type(value.func) is not gast.Attribute:
        return False
    func = value.func
    return (
        func.attr == "get"
        and type(func.value) is gast.Name
        and func.value.id == container
        and 1 <= len(value.args) <= 2
        and not value.keywords
    )


def _slot_store(update: gast.stmt) -> bool:
    """``a[i] = v``: an entry replaced (not ``a[i][j] = v`` or ``a[i] += v``, which change
    the array held in the entry)."""
    if type(update) is not gast.Assign or len(update.targets) != 1:
        return False
    target = update.targets[0]
    return type(target) is gast.Subscript and type(target.value) is gast.Name


def _copy_advice(statements: list[gast.stmt], updated: str, read: str) -> str:
    """Which copy separates the two: of what ``updated`` is bound to where it is made
    (``g = dE(x, w).copy()``, ``row = y[0].copy()``) when it is bound once, else of ``read``."""
    return copy_where_made(statements, updated) or f"give '{read}' a copy (.copy())"


def copy_where_made(statements: list[gast.stmt], name: str, calls_only=False) -> str | None:
    """Advice to copy what ``name`` is bound to where it is made, when ``statements`` bind it
    once to a call, a name or an item (``copy what dE returns where 'g' is made ('g =
    dE(...).copy()')``); None otherwise. ``calls_only``: only a call's result (in normal
    form, where other values are temporaries the user did not write).

    Example::

        copy_where_made(parse("g = dE(x, w)").body, "g")  # "copy what dE returns ..."
    """
    bindings = [
        s
        for s in nested_statements(statements)
        if type(s) is gast.Assign
        and len(s.targets) == 1
        and type(s.targets[0]) is gast.Name
        and s.targets[0].id == name
    ]
    if len(bindings) != 1 or type(bindings[0].value) not in (gast.Call, gast.Name, gast.Subscript):
        return None
    value = bindings[0].value
    if calls_only and type(value) is not gast.Call:
        return None
    if type(value) is gast.Call:
        shown = f"{_shown(value.func)}(...)"
        made = f"what {_shown(value.func)} returns"
    else:
        shown = made = _shown(value)
    return f"copy {made} where '{name}' is made ('{name} = {shown}.copy()')"


def _shown(node: gast.expr) -> str:
    """``node`` as the user wrote it (short)."""
    text = ast.unparse(gast.gast_to_ast(node))
    return text if len(text) <= 40 else text[:37] + "..."


def _what_changes(update: gast.stmt, updated: str) -> str:
    """What the in-place ``update`` of ``updated`` does, in the user's terms."""
    if type(update) is gast.AugAssign and type(update.target) is gast.Subscript:
        symbol = _SYMBOLS.get(type(update.op), "?=")
        return f"'{updated}[...] {symbol} ...' changes {updated} (or the array in it) in place"
    if type(update) is gast.AugAssign:
        symbol = _SYMBOLS.get(type(update.op), "?=")
        return f"'{updated} {symbol} ...' changes the array {updated} in place"
    return f"'{updated}[...] = ...' changes {updated} in place"


def _instead(update: gast.stmt, updated: str) -> str:
    """How to write ``update`` without changing the shared array."""
    if type(update) is gast.AugAssign and type(update.target) is not gast.Subscript:
        symbol = _SYMBOLS.get(type(update.op), "?=")
        return (
            f"Write '{updated} = {updated} {symbol[:-1]} ...' to make a new array "
            f"(what the code means if {updated} is a number)"
        )
    return f"Make the changed {updated} a new array (np.where, np.concatenate)"


def _swapped_buffers(function: gast.FunctionDef, statements, resolve) -> dict[str, set[str]]:
    """Names that only ever hold arrays made anew and trade them among themselves
    (``u, new = new, u``), each mapped to the others of its group: at any moment each holds
    an array none of the others holds, so updating one in place changes none of the others.

    Example::

        # u = x.copy(); new = np.empty_like(u); ...; u, new = new, u  ->  {"u": {"new"}, ...}
    """
    swaps = {id(s): names for s in statements if (names := _swapped(s)) is not None}
    if not swaps or any(type(n) is gast.Nonlocal for n in walk(function)):
        return {}
    groups: dict[str, set[str]] = {}
    for names in swaps.values():
        merged = set(names).union(*(groups.get(n, set()) for n in names))
        for name in merged:
            groups[name] = merged
    spoiled = parameter_names(function)  # bound otherwise than to a new array or by a swap
    for statement in statements:
        kind = type(statement)
        if id(statement) in swaps or kind in (gast.If, gast.While):
            continue
        single = kind is gast.Assign and len(statement.targets) == 1
        if single and type(statement.targets[0]) is gast.Name:
            if not sources_of(statement.value, resolve):
                continue  # a new array (or number)
            spoiled.add(statement.targets[0].id)
        elif kind is gast.For:
            spoiled |= names_written(statement.target)
        else:
            spoiled |= names_written(statement)
    return {n: group - {n} for n, group in groups.items() if not group & spoiled}


def _swapped(statement: gast.stmt) -> list[str] | None:
    """The names ``a, b = b, a`` (any permutation of distinct names) trades."""
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return None
    target, value = statement.targets[0], statement.value
    if type(target) is not gast.Tuple or type(value) is not gast.Tuple:
        return None
    if not all(type(e) is gast.Name for e in [*target.elts, *value.elts]):
        return None
    stored = [e.id for e in target.elts]
    loaded = [e.id for e in value.elts]
    if len(set(stored)) != len(stored) or sorted(stored) != sorted(loaded):
        return None
    return stored


_SYMBOLS = {
    gast.Add: "+=",
    gast.Sub: "-=",
    gast.Mult: "*=",
    gast.Div: "/=",
    gast.FloorDiv: "//=",
    gast.Mod: "%=",
    gast.Pow: "**=",
    gast.MatMult: "@=",
}


def loop_spans(statements: list[gast.stmt]) -> list[tuple[int, int]]:
    """``(first, last)`` positions in ``statements`` of each loop and what it contains."""
    position = {id(s): i for i, s in enumerate(statements)}
    spans = []
    for statement in statements:
        if type(statement) in (gast.For, gast.While):
            inside = [position[id(s)] for s in nested_statements([statement])]
            spans.append((min(inside), max(inside)))
    return spans


def run_after(index: int, statements: list, loops: list[tuple[int, int]]) -> list[int]:
    """Positions of the statements that may run after the one at ``index``: those after it,
    and everything in a loop around it (the next iteration)."""
    after = set(range(index + 1, len(statements)))
    for first, last in loops:
        if first <= index <= last:
            after |= set(range(first, last + 1))
    after.discard(index)
    return sorted(after)


def _read_after(index: int, statements: list, loops, names: set[str]):
    """``(name, position)`` of the first statement run after ``statements[index]`` that
    reads a name of ``names``, or ``(None, None)``."""
    for later in run_after(index, statements, loops):
        read = _first_read(statements[later], names)
        if read is not None:
            return read, later
    return None, None


def _entry_update(update: gast.stmt) -> bool:
    """``a[i] op= v`` or ``a[i][j] = v``: a change of the array held in an entry of ``a``."""
    if type(update) is gast.AugAssign:
        return type(update.target) is gast.Subscript
    if type(update) is gast.Assign and len(update.targets) == 1:
        target = update.targets[0]
        return type(target) is gast.Subscript and type(target.value) is gast.Subscript
    return False


def _target_text(update: gast.stmt) -> str:
    target = update.target if type(update) is gast.AugAssign else update.targets[0]
    try:
        return ast.unparse(gast.gast_to_ast(target))
    except Exception:  # a node gast cannot convert alone: say it generally
        return "x[i]"


def _operator(update: gast.stmt) -> str:
    return _SYMBOLS.get(type(getattr(update, "op", None)), "op=")[:-1]


def _may_repeat_entries(statements: list[gast.stmt]) -> set[str]:
    """The lists and dicts made here that may hold one array in two entries: bound to a
    repetition (``[v] * n``), ``dict.fromkeys``, a literal or comprehension naming one
    value twice (``[v, v]``, ``[v for _ in range(n)]``), or appended the same name twice
    (or in a loop that does not bind it anew)."""
    repeating: set[str] = set()
    appended: dict[str, list] = {}
    for statement in statements:
        if type(statement) is gast.Assign and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
            if type(target) is gast.Name and _repeats(value):
                repeating.add(target.id)
        call: Any = statement.value if type(statement) is gast.Expr else None
        if (
            type(call) is gast.Call
            and type(call.func) is gast.Attribute
            and call.func.attr == "append"
            and type(call.func.value) is gast.Name
            and len(call.args) == 1
            and type(call.args[0]) is gast.Name
        ):
            appended.setdefault(call.func.value.id, []).append((statement, call.args[0].id))
    for name, appends in appended.items():
        values = [value for _, value in appends]
        if len(values) != len(set(values)) or any(
            _in_loop_not_binding(statement, value, statements) for statement, value in appends
        ):
            repeating.add(name)
    return repeating


def _repeats(value: gast.expr) -> bool:
    if type(value) is gast.BinOp and type(value.op) is gast.Mult:  # [0.0] * n: numbers
        return any(
            type(side) in (gast.List, gast.Tuple) and not _constants(side.elts)
            for side in (value.left, value.right)
        )
    if (
        type(value) is gast.Call
        and type(value.func) is gast.Attribute
        and value.func.attr == "fromkeys"
        and len(value.args) == 2
    ):
        return not _constants(value.args[1:])
    if type(value) in (gast.List, gast.Tuple):
        names = [e.id for e in value.elts if type(e) is gast.Name]
        return len(names) != len(set(names))
    if type(value) in (gast.ListComp, gast.DictComp):
        element = value.elt if type(value) is gast.ListComp else value.value
        bound = {n.id for g in value.generators for n in walk(g.target) if type(n) is gast.Name}
        return type(element) is gast.Name and element.id not in bound
    return False


def _constants(nodes: list) -> bool:
    """Whether every node is a literal number, string or None (which no update changes)."""
    return all(type(n) is gast.Constant for n in nodes)


def _in_loop_not_binding(append: gast.stmt, value: str, statements: list[gast.stmt]) -> bool:
    """Whether ``append`` runs in a loop whose body does not bind ``value`` anew."""
    for loop in statements:
        if type(loop) not in (gast.For, gast.While):
            continue
        inside = list(nested_statements(loop.body))
        if any(s is append for s in inside):
            bound = set().union(*map(names_written, inside))
            if type(loop) is gast.For:
                bound |= names_written(loop.target)
            if value not in bound:
                return True
    return False


def _first_read(statement: gast.stmt, names: set[str]) -> str | None:
    """A name of ``names`` that ``statement`` itself reads (for a loop or branch, its
    header: the statements inside are looked at on their own)."""
    kind = type(statement)
    own = statement.iter if kind is gast.For else statement.test if kind in _BLOCKS else statement
    for node in walk(own):
        if type(node) is gast.Name and type(node.ctx) is gast.Load and node.id in names:
            return node.id
    return None


_BLOCKS = (gast.If, gast.While)
