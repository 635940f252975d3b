"""A lean probe: arrays the probe's code no longer needs are let go as it runs.

The generic code keeps every forward value to the end of the backward sweep, though many
are only read for their shapes there (``unbroadcast(g, t9)``: ``t9``'s shape). In the
probe's copy, after the last statement that reads such a value's elements, the variable is
bound to a stand-in of the same shape and dtype that holds no memory
(``np.broadcast_to(np.zeros((), dtype), shape)``: what the probe records of it is the
same), and a variable nothing reads any more is deleted. The probe's result is unchanged.

Only single-assignment variables of the function's top-level statements are released, at
top-level statement boundaries. Example::

    restore = release_arrays(probed, namespace)  # in place
    function = compile(probed); restore()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.syntax import assign, call, load, node_fields, parameter_names, walk

__all__ = ["STAND_IN", "large_arguments", "release_arrays", "stand_in"]

STAND_IN = "__s2sgrad_stand_in__"
_PROBE = "__s2sgrad_probe__"
_SMALL = 1024  # elements: smaller arrays are kept (a stand-in would save nothing)
LARGE = 1 << 16  # elements of an argument from which the probe lets go of arrays


def large_arguments(args: tuple, kwargs: dict) -> bool:
    """Whether an array among the arguments (in containers too) has ``LARGE`` elements:
    only then is letting go of arrays worth its cost to the transformation."""
    pending: list = [args, kwargs]
    while pending:
        value = pending.pop()
        if isinstance(value, np.ndarray):
            if value.size >= LARGE:
                return True
        elif isinstance(value, (tuple, list)):
            pending += value
        elif isinstance(value, dict):
            pending += value.values()
    return False


def stand_in(value: Any) -> Any:
    """A large array as an array of its shape and dtype that holds no memory."""
    if type(value) is np.ndarray and value.size > _SMALL:
        return np.broadcast_to(np.zeros((), dtype=value.dtype), value.shape)
    return value


def release_arrays(node: gast.FunctionDef, namespace: dict) -> Callable[[], None]:
    """Insert, between ``node``'s top-level statements (in place), the stand-ins and
    deletions of the variables assigned once whose later reads only ask for shapes, or are
    over. Returns what undoes it (once the probe is compiled)."""
    body = node.body
    nodes = [walk(statement) for statement in body]
    everything = [child for statement_nodes in nodes for child in statement_nodes]
    if any(type(n) in _OWN_SCOPES or type(n) in _DECLARATIONS for n in everything):
        return _nothing  # a function defined inside may read any variable when called
    stores: dict[str, int] = dict.fromkeys(parameter_names(node), 1)
    for child in everything:
        if type(child) is gast.Name and type(child.ctx) is not gast.Load:
            stores[child.id] = stores.get(child.id, 0) + 1
    shape_reads = _shape_only_reads(everything, namespace)
    last_value: dict[str, int] = {}
    last_read: dict[str, int] = {}
    defined: dict[str, int] = {}
    for index, statement in enumerate(body):
        for child in nodes[index]:
            if type(child) is not gast.Name:
                continue
            if type(child.ctx) is gast.Load:
                last_read[child.id] = index
                if id(child) not in shape_reads:
                    last_value[child.id] = index
            elif type(statement) is gast.Assign and stores.get(child.id) == 1:
                defined[child.id] = index
    after: dict[int, list[gast.stmt]] = {}
    undo: list[tuple[Any, Any, gast.Name]] = []  # (fields or list, field or position, read)
    for name, index in defined.items():
        end = last_read.get(name, index)
        if end <= index:
            continue
        value_end = max(last_value.get(name, index), index)
        if end > value_end:
            after.setdefault(value_end, []).append(assign(name, call(load(STAND_IN), [load(name)])))
        elif _let_go_while_read(body[end], nodes[end], name, undo):
            continue
        if end < len(body) - 1:
            after.setdefault(end, []).append(
                gast.Delete(targets=[gast.Name(name, gast.Del(), None, None)])
            )
    if after:
        node.body = [s for index, s in enumerate(body) for s in [s, *after.get(index, ())]]

    def restore() -> None:
        node.body = body
        for holder, place, read in undo:
            holder[place] = read

    return restore


def _nothing() -> None:
    pass


def _let_go_while_read(statement: gast.stmt, nodes: list, name: str, undo: list) -> bool:
    """Make the only read of ``name`` in ``statement`` its last: ``(t3, (t3 := None))[0]``,
    so that the array goes as soon as what reads it is done (a statement such as
    ``dt2 = dt3 * 2 * t2`` then holds one array less). False if it reads ``name`` twice."""
    if type(statement) not in (gast.Assign, gast.Expr, gast.Return):
        return False
    reads = [n for n in nodes if type(n) is gast.Name and n.id == name]
    if len(reads) != 1 or type(reads[0].ctx) is not gast.Load:
        return False
    read = reads[0]
    cleared = gast.NamedExpr(
        target=gast.Name(name, gast.Store(), None, None), value=gast.Constant(None, None)
    )
    pair = gast.Tuple(elts=[gast.Name(name, gast.Load(), None, None), cleared], ctx=gast.Load())
    taken = gast.Subscript(value=pair, slice=gast.Constant(0, None), ctx=gast.Load())
    for parent in nodes:  # the read is replaced where it stands, not changed: the probe's
        state = parent.__dict__  # copy shares its names with the raw code (``probe_copy``)
        for field in node_fields(type(parent)):
            value = state.get(field)
            if value is read:
                undo.append((state, field, read))
                state[field] = taken
                return True
            if type(value) is list:
                for position, item in enumerate(value):
                    if item is read:
                        undo.append((value, position, read))
                        value[position] = taken
                        return True
    return False


_OWN_SCOPES = (
    gast.ListComp,
    gast.SetComp,
    gast.DictComp,
    gast.GeneratorExp,
    gast.Lambda,
    gast.FunctionDef,
    gast.AsyncFunctionDef,
    gast.ClassDef,
)
_DECLARATIONS = (gast.Global, gast.Nonlocal)


def _shape_only_reads(nodes: list[gast.AST], namespace: dict) -> set[int]:
    """The ids of the names read only for their shapes (and dtypes): ``x`` in
    ``unbroadcast(g, x)``, ``index_cotangent(g, x, i)``, ``np.shape(x)``, also when the
    probe calls them (``__s2sgrad_probe__(site, unbroadcast, g, x)``)."""
    found = set()
    for child in nodes:
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
