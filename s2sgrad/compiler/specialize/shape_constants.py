"""Shapes as numbers in a helper's VJP pair specialised to one signature.

A specialised pair runs only on arguments of the shapes it was made for, so a
parameter's ``kernel.shape`` is a tuple of numbers there, and what the forward function
computes from such numbers alone (``oh = x.shape[1] - kh + 1``, ``t8 = range(kh)``) is a
constant, which the backward function need not be handed in the saved tuple::

    kh, kw, _, _ = kernel.shape            (nothing)
    oh = x.shape[1] - kh + 1         ->    ...
    t8 = range(kh)                         for i in range(5):
    for i in t8: ...                       return (out, (kernel, x))
    return (out, (kernel, kw, oh, t8, x))

Only parameters that the function never rebinds, reshapes in place or hands anything to
change; only names bound once, by a statement of the function itself (not in a loop or
branch), to numbers, tuples of numbers or ``range`` of them.

Example::

    constant_shapes(forward_node, backward_node, signature_of_the_forward_call)
"""

from __future__ import annotations

import builtins
from collections import Counter

import gast

from s2sgrad.compiler.optimize import fold_constants
from s2sgrad.compiler.optimize.paired_saves import saved_pair
from s2sgrad.compiler.syntax import clone, constant, walk

__all__ = ["constant_shapes"]

_RESHAPING = {"resize", "shape"}  # ``x.resize(...)``, ``x.shape = ...``


def constant_shapes(
    forward: gast.FunctionDef, backward: gast.FunctionDef, key: tuple, namespace: dict
) -> bool:
    """Write the shapes of ``forward``'s array parameters (from ``key``, its signature)
    as numbers in both functions, fold what follows, and drop from the saved tuple the
    entries that became constants; say whether anything changed."""
    if namespace.get("range", builtins.range) is not builtins.range:
        return False
    shapes = _parameter_shapes(forward, key)
    changed = _write_shapes(forward, shapes)
    changed |= _propagate(forward)
    if not changed:
        return False
    _constant_saves_into(forward, backward)
    _propagate(backward)
    return True


def _parameter_shapes(forward: gast.FunctionDef, key: tuple) -> dict[str, tuple]:
    """The shapes of the parameters the signature says are arrays and the code leaves be."""
    names = [a.id for a in forward.args.args]
    if forward.args.vararg or forward.args.kwonlyargs or len(key) != len(names):
        return {}
    rebound = _rebound_or_reshaped(forward)
    shapes = {}
    for name, entry in zip(names, key):
        if (
            type(entry) is tuple
            and len(entry) == 3
            and type(entry[0]) is tuple
            and name not in rebound
        ):
            shapes[name] = entry[0]
    return shapes


def _rebound_or_reshaped(function) -> set[str]:
    """Parameters bound again, or whose shape may change in place."""
    stores = _stores(function)
    found = {a.id for a in function.args.args if stores[a.id] != 1}  # the parameter's own
    for node in walk(function):
        if (
            type(node) is gast.Attribute
            and type(node.value) is gast.Name
            and node.attr in _RESHAPING
            and type(node.ctx) is not gast.Load
        ):
            found.add(node.value.id)
        elif (
            type(node) is gast.Call
            and type(node.func) is gast.Attribute
            and type(node.func.value) is gast.Name
            and node.func.attr == "resize"
        ):
            found.add(node.func.value.id)
    return found


def _stores(function) -> Counter[str]:
    """How many times each name is bound in ``function`` (a parameter counts once), in one
    walk: asked name by name, each ``t = None`` before a loop walked the whole function."""
    return Counter(
        node.id
        for node in walk(function)
        if type(node) is gast.Name and type(node.ctx) is not gast.Load
    )


def _write_shapes(function: gast.FunctionDef, shapes: dict[str, tuple]) -> bool:
    changed = False

    def replace(node):
        nonlocal changed
        for field, value in gast.iter_fields(node):
            if isinstance(value, list):
                for index, item in enumerate(value):
                    if _is_shape_read(item, shapes):
                        value[index] = _tuple(shapes[item.value.id])
                        changed = True
                    elif isinstance(item, gast.AST):
                        replace(item)
            elif _is_shape_read(value, shapes):
                setattr(node, field, _tuple(shapes[value.value.id]))
                changed = True
            elif isinstance(value, gast.AST):
                replace(value)

    for statement in function.body:
        replace(statement)
    return changed


def _is_shape_read(node, shapes) -> bool:
    return (
        type(node) is gast.Attribute
        and node.attr == "shape"
        and type(node.ctx) is gast.Load
        and type(node.value) is gast.Name
        and node.value.id in shapes
    )


def _tuple(numbers: tuple) -> gast.Tuple:
    return gast.Tuple(elts=[constant(n) for n in numbers], ctx=gast.Load())


def _propagate(function: gast.FunctionDef) -> bool:
    """Names bound once, at the top of the function, to constants: written in their uses."""
    changed = False
    while True:
        fold_constants(function.body)
        found = _one_constant_binding(function)
        if found is None:
            return changed
        index, bindings = found
        del function.body[index]
        for statement in function.body:
            _substitute(statement, bindings)
        changed = True


def _one_constant_binding(function) -> tuple[int, dict[str, gast.expr]] | None:
    stores = None
    for index, statement in enumerate(function.body):
        if type(statement) is not gast.Assign or len(statement.targets) != 1:
            continue
        target, value = statement.targets[0], statement.value
        if type(target) is gast.Name and _is_constant(value):
            bindings = {target.id: value}
        elif (
            type(target) is gast.Tuple
            and type(value) is gast.Tuple
            and len(target.elts) == len(value.elts)
            and all(type(t) is gast.Name for t in target.elts)
            and all(_is_constant(v) for v in value.elts)
        ):
            bindings = {t.id: v for t, v in zip(target.elts, value.elts)}
        else:
            continue
        stores = _stores(function) if stores is None else stores
        if all(stores[name] == 1 for name in bindings):
            return index, bindings
    return None


def _is_constant(node) -> bool:
    if type(node) is gast.Constant:
        return type(node.value) in (int, bool) or node.value is None
    if type(node) is gast.Tuple:
        return all(_is_constant(e) for e in node.elts)
    return (
        type(node) is gast.Call
        and type(node.func) is gast.Name
        and node.func.id == "range"
        and not node.keywords
        and all(type(a) is gast.Constant and type(a.value) is int for a in node.args)
    )


def _substitute(node, bindings: dict[str, gast.expr]) -> None:
    for field, value in gast.iter_fields(node):
        if isinstance(value, list):
            for index, item in enumerate(value):
                if _is_read_of(item, bindings):
                    value[index] = clone(bindings[item.id])
                elif isinstance(item, gast.AST):
                    _substitute(item, bindings)
        elif _is_read_of(value, bindings):
            setattr(node, field, clone(bindings[value.id]))
        elif isinstance(value, gast.AST):
            _substitute(value, bindings)


def _is_read_of(node, bindings) -> bool:
    return type(node) is gast.Name and type(node.ctx) is gast.Load and node.id in bindings


def _constant_saves_into(forward, backward) -> None:
    """Saved entries that are constants now: written into the backward function instead."""
    if saved_pair(forward, backward) is None:
        return
    last, first = forward.body[-1], backward.body[0]
    entries, targets = last.value.elts[1].elts, first.targets[0].elts
    kept = []
    bindings = {}
    stores = _stores(backward)
    for entry, target in zip(entries, targets):
        if _is_constant(entry) and stores[target.id] == 1:
            bindings[target.id] = entry
        else:
            kept.append((entry, target))
    if not bindings or not kept:
        return
    last.value.elts[1].elts = [entry for entry, _ in kept]
    first.targets[0].elts = [target for _, target in kept]
    for statement in backward.body[1:]:
        _substitute(statement, bindings)
