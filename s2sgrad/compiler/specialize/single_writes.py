"""An accumulation into zeros that reaches each element once is an assignment::

    dkernel = np.zeros((5, 5, 3, 6))            dkernel = np.zeros((5, 5, 3, 6))
    for i in reversed(range(5)):                for i in reversed(range(5)):
        for j in reversed(range(5)):      →         for j in reversed(range(5)):
            dkernel[i, j] += dt13                       dkernel[i, j] = dt13

``0 + e`` is ``e`` (a zero's sign aside), so ``=`` writes the same values without reading
the item back (the hand-written ``dkernel[i, j] = ...``). Only when ``d`` is bound once, to
``np.zeros`` of a literal shape, and changed only by this one statement, directly in a nest
of loops over ``range(n)`` of literal ``n`` (forwards or reversed) that is not inside
another loop of ``d``'s block; its index is the loop variables, one per axis, in distinct
loops, each ``n`` at most the axis's length (distinct, non-negative indices: distinct
items), none rebound in the loops; and ``d`` is read nowhere else (only the ``return``).

Example::

    assign_single_writes(function)  # dkernel[i, j] += dt13 → dkernel[i, j] = dt13
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.optimize.simple_statements import without_blocks
from s2sgrad.compiler.syntax import call_bound_to_a_name, every_statement, walk

__all__ = ["assign_single_writes"]


def assign_single_writes(function: gast.FunctionDef) -> bool:
    """Rewrite the accumulations of ``function`` (and of functions in it) that the module
    describes as assignments, in place; True if any changed."""
    if without_blocks(function.body):
        return False  # no loop, and no function with one: no update in a nest of loops
    if all(_zeros_shape(s) is None for s in every_statement(function.body)):
        return False  # no buffer of zeros (looked for among statements: no walk)
    changed = False
    for node in walk(function):
        if type(node) is gast.FunctionDef:
            changed |= _function(node)
    return changed


def _function(function: gast.FunctionDef) -> bool:
    changed = False
    for block in _blocks(function.body):
        for statement in block:
            shape = _zeros_shape(statement)
            if shape is None:
                continue
            name = statement.targets[0].id
            update = _single_update(function, name)
            if update is None:
                continue
            loops = _enclosing_loops(block, update)
            if (
                loops is not None
                and _one_item_each(update, loops, shape)
                and block.index(loops[0]) > block.index(statement)
            ):
                _become_assignment(update)
                changed = True
    return changed


def _blocks(body):
    yield body
    for statement in body:
        if type(statement) in (gast.FunctionDef, gast.ClassDef):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if type(inner) is list:
                yield from _blocks(inner)


def _zeros_shape(statement) -> tuple | None:
    """The literal shape of ``d = np.zeros((5, 5, 3, 6))``, or None."""
    value = call_bound_to_a_name(statement)
    if value is None:
        return None
    if not (
        type(value.func) is gast.Attribute
        and value.func.attr == "zeros"
        and type(value.func.value) is gast.Name
        and value.func.value.id == "np"
        and len(value.args) == 1
        and not value.keywords
        and type(value.args[0]) is gast.Tuple
    ):
        return None
    sizes = [e.value for e in value.args[0].elts if type(e) is gast.Constant]
    if len(sizes) != len(value.args[0].elts) or not all(type(n) is int for n in sizes):
        return None
    return tuple(sizes)


def _single_update(function: gast.FunctionDef, name: str) -> gast.AugAssign | None:
    """The one statement ``name[i, j] += e`` when every other use of ``name`` in
    ``function`` is its binding and reads in the ``return``; else None."""
    updates = []
    stores = 0
    allowed: set[int] = set()
    for node in walk(function):
        if type(node) is gast.AugAssign and type(node.target) is gast.Subscript:
            base = node.target.value
            if type(base) is gast.Name and base.id == name:
                updates.append(node)
                allowed.add(id(base))
        elif type(node) is gast.Return and node.value is not None:
            allowed.update(id(n) for n in walk(node.value) if type(n) is gast.Name)
    for node in walk(function):
        if type(node) is gast.Name and node.id == name:
            if type(node.ctx) is gast.Load:
                if id(node) not in allowed:
                    return None
            else:
                stores += 1
    if stores != 1 or len(updates) != 1 or type(updates[0].op) is not gast.Add:
        return None
    update = updates[0]
    if any(type(n) is gast.Name and n.id == name for n in walk(update.value)):
        return None
    return update


def _enclosing_loops(block, update) -> list[gast.For] | None:
    """The loops of ``block`` around ``update``, outermost first, each a statement of the
    one around it, ``update`` a statement of the innermost; None otherwise."""
    for statement in block:
        if type(statement) is gast.For:
            path = _path(statement, update)
            if path is not None:
                return path
    return None


def _path(loop: gast.For, update) -> list[gast.For] | None:
    if loop.orelse:
        return None
    if any(statement is update for statement in loop.body):
        return [loop]
    for statement in loop.body:
        if type(statement) is gast.For:
            inner = _path(statement, update)
            if inner is not None:
                return [loop, *inner]
    return None


def _one_item_each(update: gast.AugAssign, loops: list[gast.For], shape: tuple) -> bool:
    """Whether the index of ``update`` is its loops' variables over ranges no longer than
    the axes, so that each run of the nest writes each item once."""
    index = update.target.slice
    names = index.elts if type(index) is gast.Tuple else [index]
    if not all(type(n) is gast.Name for n in names) or len(names) > len(shape):
        return False
    lengths = {}
    for loop in loops:
        length = _range_length(loop.iter)
        if type(loop.target) is not gast.Name or length is None:
            return False
        lengths[loop.target.id] = length
    ids = [n.id for n in names]
    if len(set(ids)) != len(ids) or len(lengths) != len(loops) or set(ids) != set(lengths):
        return False
    for loop in loops:  # the loop variables are not rebound inside the nest
        for node in walk(loop):
            if (
                type(node) is gast.Name
                and node.id in lengths
                and type(node.ctx) is not gast.Load
                and not any(node is other.target for other in loops)
            ):
                return False
    return all(lengths[i] <= size for i, size in zip(ids, shape))


def _range_length(sequence) -> int | None:
    """``n`` of ``range(n)`` or ``reversed(range(n))`` with a literal ``n >= 0``."""
    if (
        type(sequence) is gast.Call
        and type(sequence.func) is gast.Name
        and sequence.func.id == "reversed"
        and len(sequence.args) == 1
    ):
        sequence = sequence.args[0]
    if not (
        type(sequence) is gast.Call
        and type(sequence.func) is gast.Name
        and sequence.func.id == "range"
        and len(sequence.args) == 1
        and not sequence.keywords
        and type(sequence.args[0]) is gast.Constant
        and type(sequence.args[0].value) is int
        and sequence.args[0].value >= 0
    ):
        return None
    return sequence.args[0].value


def _become_assignment(update: gast.AugAssign) -> None:
    """Make ``update`` (``d[i] += e``), where it stands, the assignment ``d[i] = e``."""
    assignment = gast.Assign(targets=[update.target], value=update.value, type_comment=None)
    gast.copy_location(assignment, update)
    update.__class__ = gast.Assign
    update.__dict__ = dict(assignment.__dict__)
