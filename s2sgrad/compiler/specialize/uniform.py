"""Cotangents that are one number everywhere stay one number until they are returned.

The cotangent of ``np.sum(c)`` is ``np.broadcast_to(1.0, S)``: the same number in every
element. Copied, or multiplied by constants (``db = dc * 100``, ``db = db * 2`` in a loop),
it stays so; computing it on the number and filling an array of shape ``S`` once, where it
is returned, gives the same values (the same float64 operations, once instead of once per
element)::

    dc = np.broadcast_to(1.0, (100,))          dc = 1.0
    db = dc * 100                        ─►    db = dc * 100
    return db                                  return np.full((100,), db)

Only in code specialised to shapes (the shape is a constant there), and only for names
every one of whose assignments has that form (with one shape) and that are read nowhere
else but in ``return``.

Example::

    numbers = uniform_cotangents(function, namespace)
"""

from __future__ import annotations

import gast
import numpy as np

from s2sgrad.compiler.specialize.broadcasts import resolve
from s2sgrad.compiler.specialize.rewrites import numpy_name
from s2sgrad.compiler.syntax import call, constant, every_statement, load, walk

__all__ = ["uniform_cotangents"]

_SCALINGS = (gast.Mult,)


def uniform_cotangents(function: gast.FunctionDef, namespace: dict) -> set[str]:
    """Rewrite the uniform cotangents of ``function`` in place (see the module's
    docstring); the names that hold numbers now (none: nothing changed)."""
    if not any(  # no shape to start from (looked for among statements: no walk)
        type(s) is gast.Assign and _filled_shape(s.value, namespace) is not None
        for s in every_statement(function.body)
    ):
        return set()
    nodes = walk(function)
    assigned: dict[str, list[gast.Assign]] = {}
    plain: set[int] = set()
    for node in nodes:
        if type(node) is gast.Assign and len(node.targets) == 1:
            target = node.targets[0]
            if type(target) is gast.Name:
                assigned.setdefault(target.id, []).append(node)
                plain.add(id(target))
    written_otherwise = {
        n.id
        for n in nodes
        if type(n) is gast.Name and type(n.ctx) is not gast.Load and id(n) not in plain
    }
    filled = {  # np.broadcast_to(1.0, (100,)): its shape
        id(s): shape
        for statements in assigned.values()
        for s in statements
        if (shape := _filled_shape(s.value, namespace)) is not None
    }
    if not filled:  # no shape to start from: nothing can turn uniform
        return set()
    uniform: dict[str, tuple | None] = {  # copies and scalings of them, to a fixpoint
        name: None for name in assigned if name not in written_otherwise
    }
    changed = True
    while changed:
        changed = False
        for name in list(uniform):
            uniform_values, shape = _shape_of(assigned[name], name, uniform, filled)
            if not uniform_values:
                del uniform[name]
                changed = True
            elif uniform[name] != shape:
                uniform[name] = shape
                changed = True
        for name in _read_elsewhere(nodes, uniform, assigned):
            uniform.pop(name, None)
            changed = True
    uniform = {name: shape for name, shape in uniform.items() if shape is not None}
    if not uniform:
        return set()
    np_name = numpy_name(namespace)
    for name in uniform:
        for statement in assigned[name]:
            if id(statement) in filled:
                statement.value = statement.value.args[0]
    for node in walk(function):
        if type(node) is gast.Return and node.value is not None:
            node.value = _filled(node.value, uniform, np_name)
    return set(uniform)


def _filled_shape(value: gast.expr, namespace: dict) -> tuple | None:
    """The shape of ``np.broadcast_to(<float constant>, <constant shape>)``, else None."""
    if type(value) is not gast.Call or len(value.args) != 2 or value.keywords:
        return None
    if resolve(value.func, namespace) is not np.broadcast_to:
        return None
    number, shape = value.args
    if type(number) is not gast.Constant or type(number.value) is not float:
        return None
    if type(shape) is not gast.Tuple:
        return None
    if not all(type(e) is gast.Constant and type(e.value) is int for e in shape.elts):
        return None
    return tuple(e.value for e in shape.elts)


def _shape_of(
    statements: list[gast.Assign], name: str, uniform: dict, filled: dict[int, tuple]
) -> tuple[bool, tuple | None]:
    """Whether every value assigned to ``name`` is uniform, all of one shape, and that
    shape (None while none of their shapes is known yet)."""
    found: set[tuple] = set()
    for statement in statements:
        if id(statement) in filled:
            found.add(filled[id(statement)])
            continue
        source = _scaled_name(statement.value)
        if source is None or source not in uniform:
            return False, None
        if source != name and uniform[source] is not None:
            found.add(uniform[source])
    if len(found) > 1:
        return False, None
    return True, (found.pop() if found else None)


def _scaled_name(value: gast.expr) -> str | None:
    """``x``, ``x * k`` or ``k * x`` with a number ``k``: the name ``x``."""
    if type(value) is gast.Name:
        return value.id
    if type(value) is not gast.BinOp or type(value.op) not in _SCALINGS:
        return None
    left, right = value.left, value.right
    if type(left) is gast.Name and _number(right):
        return left.id
    if type(right) is gast.Name and _number(left):
        return right.id
    return None


def _number(node: gast.expr) -> bool:
    return type(node) is gast.Constant and type(node.value) in (int, float)


def _read_elsewhere(nodes: list[gast.AST], uniform: dict, assigned: dict) -> set[str]:
    """Uniform names read other than by a uniform assignment or a ``return`` of names;
    ``nodes`` are the function's (its walk)."""
    allowed: set[int] = set()
    for name in uniform:
        for statement in assigned[name]:
            allowed.update(id(n) for n in walk(statement.value) if type(n) is gast.Name)
    for node in nodes:
        if type(node) is gast.Return and node.value is not None:
            parts = node.value.elts if type(node.value) is gast.Tuple else [node.value]
            allowed.update(id(p) for p in parts if type(p) is gast.Name)
    return {
        n.id
        for n in nodes
        if type(n) is gast.Name
        and type(n.ctx) is gast.Load
        and n.id in uniform
        and id(n) not in allowed
    }


def _filled(value: gast.expr, uniform: dict, np_name: str) -> gast.expr:
    def fill(node: gast.expr) -> gast.expr:
        if type(node) is gast.Name and node.id in uniform:
            shape = gast.Tuple(elts=[constant(n) for n in uniform[node.id]], ctx=gast.Load())
            return call(
                gast.Attribute(value=load(np_name), attr="full", ctx=gast.Load()), [shape, node]
            )
        return node

    if type(value) is gast.Tuple:
        value.elts = [fill(e) for e in value.elts]
        return value
    return fill(value)
