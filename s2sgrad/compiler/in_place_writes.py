"""Calls that write into one of their arguments (``out=``, ``np.copyto``, ``t.sort()``).

The derivative sees an in-place write only as an item assignment; one made through a
call is refused where it would matter: the written values or array differentiated, or
the array already read by a derivative that needs its earlier value.
"""

from __future__ import annotations

from collections import abc
from dataclasses import dataclass

import gast
import numpy as np

from s2sgrad.compiler.frontend import NOT_FOUND, ParsedFunction
from s2sgrad.compiler.operations import dotted_name
from s2sgrad.compiler.passes.anf import is_function_reference
from s2sgrad.compiler.plain_values import writes_nothing
from s2sgrad.compiler.syntax import (
    load,
    method_receiver,
    names_read,
    names_written,
    nested_statements,
    walk,
)
from s2sgrad.errors import UnsupportedError

__all__ = ["InPlaceWrite", "in_place_write", "refuse_untracked_writes"]


@dataclass
class InPlaceWrite:
    """A call that changes an array (or list, dict) it was given, rather than making one."""

    written: gast.expr  # the expression naming what is written into
    description: str  # how the user wrote it: "np.copyto", ".sort()", "np.sin(..., out=...)"
    instead: str  # the functional form to suggest
    call: gast.expr | None = None  # the call, when inside the statement's value (a if c else b)


# Methods that change their receiver: arrays', then lists', dicts' and sets'.
_MUTATING_METHODS = {
    "sort": "t = np.sort(t) (or sorted(items) for a list)",
    "fill": "t = np.full_like(t, value)",
    "put": "an item assignment t[indices] = values",
    "resize": "t = np.resize(t, shape)",
    "itemset": "an item assignment t[index] = value",
    "setfield": "a new array",
    "partition": "t = np.partition(t, k)",
    "byteswap": "t = t.byteswap()",
    "extend": "items = items + more",
    "insert": "items = items[:i] + [value] + items[i:]",
    "remove": "a new list without the element",
    "clear": "a new, empty container",
    "reverse": "items = items[::-1]",
    "update": "entries written one by one (d[key] = value) into a dict this function made",
    "setdefault": "a new dict",
    "popitem": "a new dict",
    "pop": "value = items[i] and a new list without it",
    "add": "a new set",
    "discard": "a new set",
    # operator methods called by name: x.__iadd__(v) is x += v, which is differentiated
    **dict.fromkeys(
        ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__"),
        "the operator itself (x += v, x *= v, ...), which is differentiated",
    ),
    **dict.fromkeys(
        ("__ipow__", "__imatmul__", "__setitem__", "__delitem__"),
        "the operator itself (x **= v, x[i] = v, ...), which is differentiated",
    ),
}

# items.append(v) as a statement of its own is differentiated; its value (None) used is not
_APPEND_AS_VALUE = "items.append(v) as a statement of its own"

_ARRAY_MUTATORS = ("sort", "fill", "put", "resize", "setfield", "partition")

_WHERE_INSTEAD = (
    "an item assignment t[indices] = values (which is differentiated), or a new array "
    "built with np.where"
)


def _in_place_functions() -> dict:
    functions = {
        np.copyto: "t = np.broadcast_to(values, t.shape).copy(), or " + _WHERE_INSTEAD,
        np.put: _WHERE_INSTEAD,
        np.place: _WHERE_INSTEAD,
        np.putmask: "t = np.where(mask, values, t)",
        np.fill_diagonal: _WHERE_INSTEAD,
        np.put_along_axis: _WHERE_INSTEAD,
        np.random.shuffle: "t = np.random.permutation(t)",
    }
    for name in _ARRAY_MUTATORS:
        functions[getattr(np.ndarray, name)] = _MUTATING_METHODS[name]
    return functions


_IN_PLACE_FUNCTIONS = _in_place_functions()


def in_place_write(
    value: gast.expr, parsed: ParsedFunction, local_names: set[str]
) -> InPlaceWrite | None:
    """What the call ``value`` writes into in place, or None for a call that does not.

    Example::

        in_place_write(parse_expression("np.sin(x, out=t)"), parsed, {"x", "t"}).written  # t
    """
    if not isinstance(value, gast.Call):
        return None
    func = value.func
    if (
        isinstance(func, gast.Attribute)
        and isinstance(func.value, gast.Name)
        and func.value.id in local_names
        and func.attr in _MUTATING_METHODS
    ):
        if func.attr == "pop" and not value.args:
            return None  # items.pop(): the reverse sweep puts the value back
        if func.attr == "byteswap" and not _keyword_is_true(value, "inplace"):
            return None
        return InPlaceWrite(func.value, f".{func.attr}()", _MUTATING_METHODS[func.attr])
    if isinstance(func, gast.Attribute) and func.attr in _ARRAY_MUTATORS:
        root = _receiver_root(func.value)  # y[1:].sort(), y.T.fill(v): into y, by a view
        if root is not None and root.id in local_names:
            return InPlaceWrite(
                root,
                f".{func.attr}() of part of '{root.id}' (a view such as {root.id}[1:] or "
                f"{root.id}.T)",
                f"an item assignment of that part ({root.id}[index] = new values)",
            )
    if not is_function_reference(func, local_names):
        return None
    target = parsed.resolve(func)
    if target is NOT_FOUND:
        return None
    out = _out_argument(value, target)
    if out is not None:
        name = dotted_name(func)
        return InPlaceWrite(out, f"{name}(..., out=...)", f"t = {name}(...) without out=")
    try:
        instead = _IN_PLACE_FUNCTIONS.get(target)
    except TypeError:  # unhashable
        instead = None
    if instead is None and _is_ufunc_method(target, "at"):
        instead = "np.add.at or np.subtract.at (which are differentiated), or " + _WHERE_INSTEAD
    if instead is not None and value.args:
        return InPlaceWrite(value.args[0], dotted_name(func), instead)
    return None


def _receiver_root(node: gast.expr) -> gast.Name | None:
    """The variable a method's receiver is taken from: ``y`` for ``y[1:]``, ``y.T``,
    ``y.reshape(2, 3)[0]``."""
    while True:
        if isinstance(node, (gast.Subscript, gast.Attribute)):
            node = node.value
        elif isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute):
            node = node.func.value
        else:
            return node if isinstance(node, gast.Name) else None


# Attributes through which an assignment changes an array: ``t.flat = v``, ``t.shape = s``.
_ARRAY_ATTRIBUTES = {"flat", "real", "imag", "shape", "dtype", "strides", "data"}


def _array_attribute_write(target: gast.expr, local_names: set[str]) -> InPlaceWrite | None:
    """``t.flat = v``, ``t.flat[i] = v``, ``t.real[...] = v``: writes into ``t``."""
    node = target
    while isinstance(node, gast.Subscript):
        node = node.value
    if not (
        isinstance(node, gast.Attribute)
        and node.attr in _ARRAY_ATTRIBUTES
        and isinstance(node.value, gast.Name)
        and node.value.id in local_names
    ):
        return None
    name = node.value.id
    instead = _ATTRIBUTE_INSTEAD.get(
        node.attr, "an item assignment {0}[...] = values, which is differentiated"
    )
    return InPlaceWrite(node.value, f"'{name}.{node.attr} = ...'", instead.format(name))


# what to write instead of assigning an attribute that changes the array's layout
_ATTRIBUTE_INSTEAD = {
    "shape": "{0} = {0}.reshape(...), which is differentiated",
    "dtype": "{0} = {0}.astype(...) for a conversion",
    "strides": "np.lib.stride_tricks.sliding_window_view or an index array",
}


def _keyword_is_true(node: gast.Call, keyword: str) -> bool:
    for k in node.keywords:
        if k.arg == keyword:
            return not (isinstance(k.value, gast.Constant) and not k.value.value)
    return False


def _out_argument(node: gast.Call, target) -> gast.expr | None:
    """The ``out=`` argument of a call, by keyword or (for a ufunc) by position."""
    for k in node.keywords:
        if k.arg == "out":
            if isinstance(k.value, gast.Constant) and k.value.value is None:
                return None
            return k.value
    if isinstance(target, np.ufunc) and len(node.args) > target.nin:
        return gast.Tuple(elts=list(node.args[target.nin :]), ctx=gast.Load())
    return None


def _is_ufunc_method(target, name: str) -> bool:
    return getattr(target, "__name__", None) == name and isinstance(
        getattr(target, "__self__", None), np.ufunc
    )


def written_names(write: InPlaceWrite) -> set[str]:
    """The variables whose values an in-place write changes (``t`` for ``out=t[0]``)."""
    written = write.written
    nodes = written.elts if isinstance(written, gast.Tuple) else [written]
    names = set()
    for node in nodes:
        while isinstance(node, (gast.Subscript, gast.Attribute)):
            node = node.value
        if isinstance(node, gast.Name):
            names.add(node.id)
    return names


def refuse_untracked_writes(
    body: list[gast.stmt], parsed: ParsedFunction, local_names: set[str], activity
) -> None:
    """Refuse in-place writes through calls (``out=``, ``np.copyto``, ``t.sort()``, ...)
    that the derivative would not see: where the written values or the written array
    depend on a differentiated argument, or where the array was already read (or, in a
    loop, is read) on a differentiated path, whose derivative needs its earlier value.

    Example::

        refuse_untracked_writes(node.body, parsed, local_names, activity)  # raises or not
    """
    if not any(_write_of(s, parsed, local_names) for s in _checked_statements(body)):
        return  # the common case, known without the reads on each path
    # acc.add(v) of an Accumulator() the function made is the user's method, not a set's
    local_names = local_names - _objects_of_users_classes(body, parsed)
    bases = _view_bases(body)
    _check_block(body, parsed, local_names, activity, bases, set())


_CONTAINERS = (abc.MutableSequence, abc.MutableSet, abc.MutableMapping, np.ndarray, bytearray)


def _objects_of_users_classes(body: list[gast.stmt], parsed: ParsedFunction) -> set[str]:
    """Names bound only by ``name = Cls(...)``, ``Cls`` a class that is no container or
    array: their methods (``acc.add(v)``) are the class's own, which the in-place writes of
    lists, sets, dicts and arrays (``.add``, ``.pop``, ``.sort``) say nothing about."""
    made, other = set(), set()
    local_classes = _plain_classes_defined(body)
    for statement in nested_statements(body):
        if _binds_a_new_object(statement, parsed, local_classes):
            made.add(statement.targets[0].id)
        else:
            other |= _own_bindings(statement)
    return made - other


def _binds_a_new_object(
    statement: gast.stmt, parsed: ParsedFunction, local_classes: frozenset[str] = frozenset()
) -> bool:
    """``name = Cls(...)``, ``Cls`` a class that is no container or array (or one of
    ``local_classes``, defined in the function with no base)."""
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return False
    target, value = statement.targets[0], statement.value
    if type(target) is not gast.Name or type(value) is not gast.Call:
        return False
    if type(value.func) is gast.Name and value.func.id in local_classes:
        return True
    cls = parsed.resolve(value.func) if isinstance(value.func, gast.Name) else None
    return isinstance(cls, type) and not issubclass(cls, _CONTAINERS)


def _plain_classes_defined(body: list[gast.stmt]) -> frozenset[str]:
    """The classes ``body`` defines with no base but ``object`` (``class Running:``), whose
    names nothing else binds: an object made of one is no container."""
    classes, bound = set(), []
    for statement in nested_statements(body):
        if type(statement) is gast.ClassDef and all(
            type(b) is gast.Name and b.id == "object" for b in statement.bases
        ):
            classes.add(statement.name)
        elif type(statement) is not gast.ClassDef:
            bound.append(_own_bindings(statement))
    return frozenset(classes.difference(*bound))


def _own_bindings(statement: gast.stmt) -> set[str]:
    """The names a statement binds itself, not those its blocks bind."""
    if isinstance(statement, (gast.For, gast.AsyncFor)):
        return names_written(statement.target)
    if isinstance(statement, (gast.If, gast.While, gast.Try)):
        return set()
    if isinstance(statement, (gast.With, gast.AsyncWith)):
        found = set()
        for item in statement.items:
            if item.optional_vars is not None:
                found |= names_written(item.optional_vars)
        return found
    if isinstance(statement, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
        return {statement.name}
    return names_written(statement)


def _checked_statements(statements):
    """The statements :func:`_check_block` checks, in turn: those of loops' and ``if``s'
    blocks, not the compound statements (a stack of iterators, not nested generators: each
    statement is handed up once, not once per block around it)."""
    stack = [iter(statements)]
    while stack:
        for statement in stack[-1]:
            if isinstance(statement, (gast.For, gast.While, gast.If)):
                stack.append(iter(statement.orelse))
                stack.append(iter(statement.body))
                break
            yield statement
        else:
            stack.pop()


def _write_of(statement, parsed, local_names) -> InPlaceWrite | None:
    """The in-place write ``statement`` makes through a call or an array's attribute."""
    write = None
    if isinstance(statement, (gast.Assign, gast.Expr, gast.Return)) and statement.value:
        value = statement.value
        write = in_place_write(value, parsed, local_names)
        if write is None and type(value) not in (gast.Name, gast.Constant):
            kept = value if type(statement) is gast.Expr else None  # items.append(v): tracked
            write = _nested_write(value, parsed, local_names, kept)
    if write is None and isinstance(statement, gast.Assign):
        write = _array_attribute_write(statement.targets[0], local_names)
    return write


def _nested_write(value: gast.expr, parsed, local_names, kept) -> InPlaceWrite | None:
    """A write made by a call the normal form leaves inside an expression: in a branch of
    ``a if c else b``, an operand of ``and``/``or``, the body of a lambda called there; or
    an ``items.append(v)`` whose value is used (``t = items.append(v)``, ``print(...)``),
    which the derivative does not see as the statement ``kept`` it follows."""
    # a plain value (most of the normal form) holds no call but itself: no walk
    plain = writes_nothing(value)
    for node in walk(value) if not plain else (value,) if type(value) is gast.Call else ():
        if type(node) is not gast.Call:
            continue
        write = in_place_write(node, parsed, local_names) if node is not value else None
        receiver = method_receiver(node, "append") if node is not kept else None
        if write is None and receiver is not None and receiver in local_names:  # not np.append
            write = InPlaceWrite(load(receiver), ".append() used as a value", _APPEND_AS_VALUE)
        if write is not None:
            write.call = node
            return write
    return None


def _check_block(statements, parsed, local_names, activity, bases, read_on_path) -> None:
    for statement in statements:
        if isinstance(statement, (gast.For, gast.While)):
            # a later iteration's write comes after this iteration's reads
            inner = read_on_path | _read_on_path(statement.body, activity)
            _check_block(statement.body, parsed, local_names, activity, bases, inner)
            _check_block(statement.orelse, parsed, local_names, activity, bases, inner)
            read_on_path |= inner
            continue
        if isinstance(statement, gast.If):
            for block in (statement.body, statement.orelse):
                _check_block(block, parsed, local_names, activity, bases, read_on_path)
            continue
        _check_statement(statement, parsed, local_names, activity, bases, read_on_path)
        read_on_path |= _read_on_path([statement], activity)


def _check_statement(statement, parsed, local_names, activity, bases, read_on_path) -> None:
    write = _write_of(statement, parsed, local_names)
    if write is None:
        return
    roots = {bases.get(n, n) for n in written_names(write)}  # t for a view t2 = t[0]
    written = roots | written_names(write)
    arguments = names_read(statement.value if write.call is None else write.call)
    if (arguments | written) & activity.varied:
        reason = "which cannot be differentiated"
        tape_too = False
    elif written & read_on_path:
        reason = (
            "after a differentiated computation used it, whose derivative needs the value "
            "it had then"
        )
        tape_too = False  # the tape keeps a copy of each plain array a recorded step read
    else:
        return
    error = UnsupportedError(
        f"{parsed.location(statement)}: {write.description} writes into "
        f"{_quoted(roots)} in place, {reason}; use {write.instead}"
    )
    error.tape_cannot_either = tape_too
    raise error


def _quoted(names: set[str]) -> str:
    return " and ".join(f"'{n}'" for n in sorted(names)) or "an array"


def _read_on_path(statements, activity) -> set[str]:
    """Names read by the statements (nested too) that compute differentiated values."""
    read = set()
    for statement in nested_statements(statements):
        if isinstance(statement, gast.Return):
            read |= names_read(statement) & activity.useful
        elif isinstance(statement, gast.Assign):
            target = statement.targets[0]
            while isinstance(target, (gast.Subscript, gast.Attribute)):
                target = target.value
            if names_written(target) & activity.active:
                read |= names_read(statement.value) | names_read(statement.targets[0])
    return read


def _view_bases(body: list[gast.stmt]) -> dict[str, str]:
    """``{t2: t}`` for names bound to a part of another (``t2 = t[0]``, ``t2 = t.real``)."""
    bases: dict[str, str] = {}
    for statement in nested_statements(body):
        if not (isinstance(statement, gast.Assign) and isinstance(statement.targets[0], gast.Name)):
            continue
        value = statement.value
        while isinstance(value, (gast.Subscript, gast.Attribute)):
            value = value.value
        if isinstance(value, gast.Name) and value is not statement.value:
            bases[statement.targets[0].id] = bases.get(value.id, value.id)
    return bases
