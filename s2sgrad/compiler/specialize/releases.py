"""A lean probe: arrays the probe's code no longer needs are let go as it runs.

The generic code keeps every forward value to the end of the backward sweep, though many
are only read for their shapes there (``unbroadcast(g, t9)``: ``t9``'s shape). In the
probe's copy, after the last statement that reads such a value's elements, the variable is
bound to a stand-in of the same shape and dtype that holds no memory
(``np.broadcast_to(np.zeros((), dtype), shape)``: what the probe records of it is the
same), and a variable nothing reads any more is deleted. The probe's result is unchanged.

Only single-assignment variables of the function's top-level statements are released, at
top-level statement boundaries. Example::

    release_arrays(probe_copy, namespace)  # in place, before compiling the probe
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.syntax import assign, call, load, parameter_names, walk

__all__ = ["STAND_IN", "release_arrays", "stand_in"]

STAND_IN = "__s2sgrad_stand_in__"
_PROBE = "__s2sgrad_probe__"
_SMALL = 1024  # elements: smaller arrays are kept (a stand-in would save nothing)


def stand_in(value: Any) -> Any:
    """A large array as an array of its shape and dtype that holds no memory."""
    if type(value) is np.ndarray and value.size > _SMALL:
        return np.broadcast_to(np.zeros((), dtype=value.dtype), value.shape)
    return value


def release_arrays(node: gast.FunctionDef, namespace: dict) -> None:
    """Insert, between ``node``'s top-level statements, the stand-ins and deletions of
    the variables assigned once whose later reads only ask for shapes, or are over."""
    body = node.body
    if any(type(n) in (gast.FunctionDef, gast.Lambda) and n is not node for n in walk(node)):
        return  # a function defined inside may read any variable when it is called
    stores = _stores(node)
    parameters = parameter_names(node)
    shape_reads = _shape_only_reads(node, namespace)
    last_value: dict[str, int] = {}
    last_read: dict[str, int] = {}
    defined: dict[str, int] = {}
    for index, statement in enumerate(body):
        for child in walk(statement):
            if type(child) is not gast.Name:
                continue
            if type(child.ctx) is gast.Load:
                last_read[child.id] = index
                if id(child) not in shape_reads:
                    last_value[child.id] = index
            elif type(statement) is gast.Assign and stores.get(child.id) == 1:
                defined[child.id] = index
    after: dict[int, list[gast.stmt]] = {}
    for name, index in defined.items():
        if name in parameters or name not in last_read or last_read[name] <= index:
            continue
        value_end = max(last_value.get(name, index), index)
        if last_read[name] > value_end:
            after.setdefault(value_end, []).append(assign(name, call(load(STAND_IN), [load(name)])))
        end = last_read[name]
        if end == value_end and _let_go_while_read(body[end], name):
            continue
        if end < len(body) - 1:
            after.setdefault(end, []).append(
                gast.Delete(targets=[gast.Name(name, gast.Del(), None, None)])
            )
    if not after:
        return
    released = []
    for index, statement in enumerate(body):
        released.append(statement)
        released += after.get(index, [])
    node.body = released


def _let_go_while_read(statement: gast.stmt, name: str) -> bool:
    """Make the only read of ``name`` in ``statement`` its last: ``(t3, (t3 := None))[0]``,
    so that the array goes as soon as what reads it is done (a statement such as
    ``dt2 = dt3 * 2 * t2`` then holds one array less). False if it reads ``name`` twice."""
    if type(statement) not in (gast.Assign, gast.Expr, gast.Return):
        return False
    reads = [n for n in walk(statement) if type(n) is gast.Name and n.id == name]
    if len(reads) != 1 or type(reads[0].ctx) is not gast.Load:
        return False
    if any(type(n) in _OWN_SCOPES for n in walk(statement)):
        return False
    read = reads[0]
    cleared = gast.NamedExpr(
        target=gast.Name(name, gast.Store(), None, None), value=gast.Constant(None, None)
    )
    pair = gast.Tuple(elts=[gast.Name(name, gast.Load(), None, None), cleared], ctx=gast.Load())
    taken = gast.Subscript(value=pair, slice=gast.Constant(0, None), ctx=gast.Load())
    read.__class__ = gast.Subscript  # in place: the read's parent is not at hand
    read.__dict__ = dict(taken.__dict__)
    return True


_OWN_SCOPES = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp, gast.Lambda)


def _stores(node: gast.FunctionDef) -> dict[str, int]:
    counts: dict[str, int] = {}
    for child in walk(node):
        if type(child) is gast.Name and type(child.ctx) is not gast.Load:
            counts[child.id] = counts.get(child.id, 0) + 1
        elif type(child) in (gast.Global, gast.Nonlocal):
            for name in child.names:
                counts[name] = 2
    return counts


def _shape_only_reads(node: gast.FunctionDef, namespace: dict) -> set[int]:
    """The ids of the names read only for their shapes (and dtypes): ``x`` in
    ``unbroadcast(g, x)``, ``index_cotangent(g, x, i)``, ``np.shape(x)``, also when the
    probe calls them (``__s2sgrad_probe__(site, unbroadcast, g, x)``)."""
    found = set()
    for child in walk(node):
        if type(child) is not gast.Call or child.keywords:
            continue
        function, arguments = child.func, child.args
        if type(function) is gast.Name and function.id == _PROBE and len(arguments) >= 2:
            function, arguments = arguments[1], arguments[2:]
        try:
            position = _SHAPE_ONLY.get(_resolve(function, namespace))
        except TypeError:  # not hashable: not one of them
            continue
        if position is not None and position < len(arguments):
            argument = arguments[position]
            if type(argument) is gast.Name:
                found.add(id(argument))
    return found


def _resolve(function: gast.expr, namespace: dict) -> Any:
    if type(function) is gast.Name:
        return namespace.get(function.id)
    if type(function) is gast.Attribute and type(function.value) is gast.Name:
        return getattr(namespace.get(function.value.id), function.attr, None)
    return None


_SHAPE_ONLY = {
    runtime.unbroadcast: 1,
    runtime.index_cotangent: 1,
    np.shape: 0,
}
