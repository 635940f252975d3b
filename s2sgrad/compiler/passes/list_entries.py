"""Make a loop's in-place updates of a list's arrays plain: ``items[i] = g`` after each.

``for g in grads: g[:] *= 0.5`` changes the arrays the list holds; written as ``for i in
range(len(grads)): g = grads[i]; ...; grads[i] = g`` the change to the list's entry is a
statement both engines see (at run time it stores the same array back).
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.annotations import SYNCED, annotate
from s2sgrad.compiler.passes.sharing import (
    base_of,
    links_of,
    sources_of,
    updated_name,
    with_local_functions,
)
from s2sgrad.compiler.syntax import (
    load,
    names_written,
    nested_statements,
    parameter_names,
    walk,
)

__all__ = ["index_list_loops"]


def index_list_loops(function: gast.FunctionDef, names, resolve) -> None:
    """Rewrite, in place, ``for g in items:`` whose body updates ``g`` in place (``g[:] *=
    s``, the book's gradient clipping) into ``for i in range(len(items)): g = items[i]; ...;
    items[i] = g``, when ``items`` is a list of distinct new arrays that nothing else holds:
    then the update changes the list's entry, which the store makes plain to both engines
    (at run time it stores the same array). Both statements are annotated ``SYNCED``
    (with ``items``).

    Example::

        # for g in grads: g[:] *= 0.5  ->  for i in range(len(grads)): g = grads[i]; ...
    """
    statements = list(nested_statements(function.body))
    if not any(type(s) is gast.For for s in statements):
        return  # no loop to rewrite (the commonest case)
    resolve = with_local_functions(statements, resolve)  # a closure may return a view
    for loop in statements:
        if not _updates_its_entries(loop):
            continue
        items, entry = loop.iter.id, loop.target.id
        if not _owns_distinct_arrays(function, statements, items, loop, resolve):
            continue
        index = names.fresh("index")
        length = gast.Call(func=load("len"), args=[load(items)], keywords=[])
        loop.iter = gast.Call(func=load("range"), args=[length], keywords=[])
        loop.target = gast.Name(id=index, ctx=gast.Store(), annotation=None, type_comment=None)
        read = gast.Assign(
            targets=[gast.Name(id=entry, ctx=gast.Store(), annotation=None, type_comment=None)],
            value=gast.Subscript(value=load(items), slice=load(index), ctx=gast.Load()),
            type_comment=None,
        )
        place = gast.Subscript(value=load(items), slice=load(index), ctx=gast.Store())
        back = gast.Assign(targets=[place], value=load(entry), type_comment=None)
        for statement in (read, back):
            gast.copy_location(statement, loop)
            annotate(statement, SYNCED, items)
        loop.body = [read, *loop.body, back]


def _updates_its_entries(loop: gast.stmt) -> bool:
    """``for g in items:`` (no ``else``, ``break`` or ``continue``) whose body updates ``g``
    by item and never rebinds it."""
    if type(loop) is not gast.For or loop.orelse:
        return False
    if type(loop.target) is not gast.Name or type(loop.iter) is not gast.Name:
        return False
    entry = loop.target.id
    inner = list(nested_statements(loop.body))
    if any(type(n) in (gast.Break, gast.Continue) for s in loop.body for n in walk(s)):
        return False
    if any(
        entry in names_written(s.target if type(s) is gast.For else s)
        for s in inner
        if type(s) not in (gast.If, gast.While)
    ):
        return False
    return any(
        updated_name(s) == entry and type(base_of(_target_of(s))) is gast.Name for s in inner
    )


def _target_of(statement: gast.stmt) -> gast.expr:
    return statement.target if type(statement) is gast.AugAssign else statement.targets[0]


def _owns_distinct_arrays(function, statements, items: str, loop, resolve) -> bool:
    """Whether every value ``items`` holds is a list, written out, of new arrays (each its
    own), and no name but ``loop``'s variable takes them out of it: no other loop over it,
    no alias, entry read into a name, store, or call given the list."""
    if items in parameter_names(function) or {"len", "range"} & names_written(function):
        return False
    for statement in statements:
        if statement is loop:
            continue
        kind = type(statement)
        if kind is gast.Assign and items in names_written(statement):
            value = statement.value
            copy = type(value) is gast.Name and value.id == items
            written = type(value) is gast.List and not any(
                sources_of(e, resolve) for e in value.elts
            )
            if not (copy or written) or len(statement.targets) != 1:
                return False
        else:
            header = statement.target if kind is gast.For else statement
            if (kind is gast.For or kind not in _PLAIN) and items in names_written(header):
                return False  # bound by a loop, a with, an unpacking ...
        copy = kind is gast.Assign and type(statement.value) is gast.Name
        for target, sources in links_of(statement, resolve, {items}):
            if items in sources and target != items:
                return False  # an entry taken out of the list, or the list into another
            if target == items and sources and not copy:
                return False  # an array put in that may be held elsewhere, or twice
        if any(_given(node, items) for node in walk(statement)):
            return False
    return True


_PLAIN = (gast.If, gast.For, gast.While, gast.Assign, gast.Expr, gast.Return)


def _given(node: gast.AST, items: str) -> bool:
    """Whether ``node`` is a call, other than ``len``, given the list ``items``."""
    if type(node) is not gast.Call or (type(node.func) is gast.Name and node.func.id == "len"):
        return False
    return any(type(a) is gast.Name and a.id == items for a in node.args)
