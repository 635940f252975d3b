"""Which names may see the memory of an array the code changes in place: its views.

The normal form reads ``t1 = t[1:]`` before ``t[1:] = t1 * s``; the backward sweep reads
``t1`` after that write, and restores ``t`` in place. A read of ``t1`` therefore depends on
``t``'s restores, which the saves and the optimiser must both respect.
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.optimize.simple_statements import without_blocks
from s2sgrad.compiler.syntax import every_statement

__all__ = ["arrays_updated_in_place", "views_of_updated_arrays"]

# what an array's view is taken with, besides indexing: attributes and methods
_VIEW_ATTRIBUTES = frozenset({"T", "mT", "real", "imag", "flat"})
_VIEW_METHODS = frozenset({"reshape", "ravel", "transpose", "swapaxes", "squeeze", "view"})


def views_of_updated_arrays(
    body: list[gast.stmt], updated: set[str] | None = None
) -> dict[str, frozenset[str]]:
    """For each array ``body`` changes in place (``t[i] = v``), and each name bound to a view
    of it (``t6 = t[:]``, ``u = t.T``), the other names of that group: the backward sweep
    restores ``t`` in place, and a read of ``t6`` must not move past that. ``updated``, when
    given, is what :func:`arrays_updated_in_place` says of ``body``.

    Example::

        views_of_updated_arrays(parse("t6 = t[:]\nt[:] = s").body)  # {t: {t6}, t6: {t}}
    """
    statements = body if without_blocks(body) else every_statement(body)
    if updated is None:
        updated = _updated(statements)
    return _views(statements, updated)


def arrays_updated_in_place(body: list[gast.stmt]) -> set[str]:
    """The arrays ``body`` changes in place (``t[i] = v``, ``t.T[0] += v``), told by the
    targets of its assignments alone: without one, no name shares memory with an array
    written in place, whatever the values assigned.

    Example::

        arrays_updated_in_place(parse("t[1:] = s\nu = t").body)  # {"t"}
    """
    return _updated(body if without_blocks(body) else every_statement(body))


def _updated(statements: list[gast.stmt]) -> set[str]:
    updated = set()
    Assign, AugAssign, Subscript = gast.Assign, gast.AugAssign, gast.Subscript
    for statement in statements:
        kind = type(statement)
        if kind is Assign:
            targets = statement.targets
        elif kind is AugAssign:
            targets = [statement.target]
        else:
            continue
        for target in targets:
            if type(target) is Subscript:
                base = _view_base(target)
                if base is not None:
                    updated.add(base)
    return updated


def _views(statements: list[gast.stmt], updated: set[str]) -> dict[str, frozenset[str]]:
    if not updated:  # no array is changed in place: no group, whatever the views
        return {}
    links = []
    for statement in statements:
        if type(statement) is gast.Assign and len(statement.targets) == 1:
            target, base = statement.targets[0], _view_base(statement.value)
            if type(target) is gast.Name and base is not None:
                links.append((target.id, base))
            links.extend(_rebuilt_together(statement))
    groups = {name: {name} for name in updated}
    changed = True
    while changed:  # views of views
        changed = False
        for view, base in links:
            if (base in groups) == (view in groups) and groups.get(base) is groups.get(view):
                continue  # neither updated, or already together
            group = groups.get(base, set()) | groups.get(view, set()) | {base, view}
            for name in group:
                groups[name] = group
            changed = True
    return {name: frozenset(group - {name}) for name, group in groups.items() if len(group) > 1}


def _view_base(node: gast.expr) -> str | None:
    """``t`` for an expression that may be a view of the array ``t``."""
    while True:
        viewed = type(node) is gast.Attribute and node.attr in _VIEW_ATTRIBUTES
        if type(node) is gast.Subscript or viewed:
            node = node.value
        elif (
            type(node) is gast.Call
            and type(node.func) is gast.Attribute
            and node.func.attr in _VIEW_METHODS
        ):
            node = node.func.value
        else:
            break
    return node.id if type(node) is gast.Name else None


def _rebuilt_together(statement: gast.Assign) -> list[tuple[str, str]]:
    """``a_, v_ = owned_together((a,), (v,))`` (a VJP's backward sweep: a private copy of
    ``a`` and its view ``v`` rebuilt over it) links ``v_`` to ``a_``."""
    target, value = statement.targets[0], statement.value
    if not (
        type(target) is gast.Tuple
        and type(value) is gast.Call
        and type(value.func) is gast.Name
        and value.func.id.startswith("owned_together")
        and all(type(e) is gast.Name for e in target.elts)
        and target.elts
    ):
        return []
    first = target.elts[0].id
    return [(element.id, first) for element in target.elts[1:]]
