"""Say what one A-normal-form right-hand side computes: which primitive, on which operands.

Both the reverse and forward transformers ask this module, so that ``x * y``,
``np.multiply(x, y)``, ``x.sum(axis=0)`` and ``x[i]`` are all seen as calls of one
registered primitive with a list of operand expressions.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import operator
import types
from dataclasses import dataclass, field
from typing import Any

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.frontend import NOT_FOUND, ParsedFunction
from s2sgrad.compiler.passes.anf import is_function_reference
from s2sgrad.compiler.syntax import (
    BINARY_OPERATORS,
    UNARY_OPERATORS,
    attribute,
    literal_keys,
    load,
    names_read,
    names_written,
    nested_statements,
    walk,
)
from s2sgrad.errors import UnsupportedError
from s2sgrad.naming import library_name
from s2sgrad.rules import get_rule

__all__ = [
    "Operation",
    "classify",
    "index_expression",
    "InPlaceWrite",
    "in_place_write",
    "refuse_untracked_writes",
    "refuse_differentiated_keywords",
    "keeps_arguments_inside",
]


@dataclass
class Operation:
    """What a right-hand side does.

    ``kind`` is one of: ``copy`` (a name), ``constant``, ``primitive`` (a registered rule
    or a declared non-differentiable function), ``call`` (a user function to differentiate
    in turn), ``pack`` (a tuple, list or dict literal), ``comparison``, ``unknown`` (anything the
    transformer cannot see through), ``no rule`` (a library function with no derivative
    rule), ``list pop`` (``items.pop()`` on a list used as working storage), ``iterator``
    (``map``, ``zip``, ``iter``, ``next``…: values made only as they are read).
    """

    kind: str
    primitive: Any = None
    args: list[gast.expr] = field(default_factory=list)
    keywords: dict[str, gast.expr] = field(default_factory=dict)
    description: str = ""
    callee: gast.expr | None = None  # for calls: the expression that names the function
    keys: list | None = None  # for a dict literal: its keys, one per argument
    advice: str = ""  # for "no rule": what to do instead, where better than a custom rule

    @property
    def rule(self):
        return get_rule(self.primitive) if self.kind == "primitive" else None

    @property
    def differentiable(self) -> bool:
        if self.kind in ("copy", "pack", "call", "unknown", "list pop", "iterator"):
            return True
        rule = self.rule
        return rule is None or rule.differentiable  # no rule: an error when differentiated


def classify(value: gast.expr, parsed: ParsedFunction, local_names: set[str]) -> Operation:
    """Describe the A-normal-form expression ``value``.

    Example::

        classify(parse_expression("np.sin(t1)"), parsed, {"t1"})
        # Operation(kind='primitive', primitive=np.sin, args=[t1])
    """
    if isinstance(value, gast.Name):
        return Operation("copy", args=[value])
    if isinstance(value, gast.Constant) or (
        isinstance(value, gast.UnaryOp) and isinstance(value.operand, gast.Constant)
    ):
        return Operation("constant")
    if isinstance(value, gast.BinOp):
        return _primitive(BINARY_OPERATORS[type(value.op)], [value.left, value.right])
    if isinstance(value, gast.UnaryOp):
        return _primitive(UNARY_OPERATORS[type(value.op)], [value.operand])
    if isinstance(value, (gast.Compare, gast.BoolOp)):
        return Operation("comparison")
    if isinstance(value, (gast.Tuple, gast.List)):
        return Operation("pack", args=list(value.elts))
    if isinstance(value, gast.Dict):
        if not literal_keys(value):
            return Operation("unknown", description="a dict whose keys are not distinct literals")
        return Operation("pack", args=list(value.values), keys=[k.value for k in value.keys])
    if isinstance(value, gast.Subscript):
        trick = _index_trick(value, parsed, local_names)
        if trick is not None:
            return trick
        return _primitive(operator.getitem, [value.value, index_expression(value.slice)])
    if isinstance(value, gast.Attribute):
        if is_function_reference(value, local_names):
            return Operation("constant")
        descriptor = getattr(np.ndarray, value.attr, None)
        if descriptor is not None and get_rule(descriptor) is not None:
            return _primitive(descriptor, [value.value])
        return Operation("unknown", description=f"attribute .{value.attr}")
    if isinstance(value, gast.Call):
        return _call(value, parsed, local_names)
    return Operation("unknown", description=type(value).__name__)


# builtins whose values are made as they are read: a loop or comprehension over them is
# rewritten first (passes/loops.py), and what is left cannot be replayed backwards
_ITERATORS = (map, filter, zip, enumerate, reversed, iter, next)


def _primitive(primitive, args, keywords=None) -> Operation:
    return Operation("primitive", primitive, list(args), dict(keywords or {}))


def _call(node: gast.Call, parsed: ParsedFunction, local_names: set[str]) -> Operation:
    keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
    if any(k.arg is None for k in node.keywords):
        if sum(k.arg is None for k in node.keywords) == 1 and node.keywords[-1].arg is None:
            # f(*args, **kwargs), a wrapper's call: which parameters the keywords fill is
            # known when it runs, so it is dispatched then (keywords must be constant)
            keywords[None] = node.keywords[-1].value
            target = (
                parsed.resolve(node.func) if is_function_reference(node.func, local_names) else None
            )
            description = f"{_dotted(node.func)}(..., **...)"
            return Operation("unknown", target, list(node.args), keywords, description, node.func)
        return Operation("unknown", description="a call with **keyword arguments")
    func = node.func
    if is_function_reference(func, local_names):
        target = parsed.resolve(func)
        if target is NOT_FOUND:
            return Operation("unknown", description=f"the undefined name {_dotted(func)}")
        if _is_custom_derivative_code(target):
            return Operation("higher-order custom", target, [], keywords, _dotted(func), func)
        rule = get_rule(target)
        args = list(node.args)
        if any(target is lazy for lazy in _ITERATORS) or inspect.isgeneratorfunction(target):
            return Operation("iterator", target, args, keywords, f"{_dotted(func)}(...)")
        if rule is not None and rule.custom is not None:
            return Operation("call", target, args, keywords, _dotted(func), func)
        if rule is not None:
            return _primitive(target, *_keywords_in_position(rule, list(node.args), keywords))
        if _is_library(target):
            named = library_name(target) or f"{_dotted(func)} (from NumPy)"
            return Operation("no rule", target, args, keywords, named)
        if getattr(target, "__module__", None) in ("math", "cmath"):
            return _scalar_math(target, args, keywords, func)
        if isinstance(target, types.MethodType) and isinstance(func, gast.Attribute):
            # obj.method(x) is method(obj, x): the receiver is read where the call is
            method = target.__func__
            receiver = func.value
            return Operation("call", method, [receiver, *args], keywords, _dotted(func), func)
        if callable(target) and hasattr(target, "__code__"):
            return Operation("call", target, args, keywords, _dotted(func), func)
        return Operation("unknown", target, args, keywords, _dotted(func), func)
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
        if func.attr == "pop" and not node.args and not keywords:
            return Operation("list pop", None, [func.value], {}, "list.pop()")
        method = getattr(np.ndarray, func.attr, None)
        if method is not None and get_rule(method) is not None:
            receiver_and_args = [func.value, *node.args]
            return _primitive(
                method, *_keywords_in_position(get_rule(method), receiver_and_args, keywords)
            )
        return Operation(
            "unknown", None, list(node.args), keywords, f"the method .{func.attr}()", func
        )
    return Operation(
        "unknown", None, list(node.args), keywords, "a call of a computed function", func
    )


_INDEX_TRICKS = (
    type(np.r_).__mro__[1],  # AxisConcatenator: np.r_, np.c_
    type(np.mgrid).__mro__[1],  # nd_grid: np.mgrid, np.ogrid
    type(np.s_),  # IndexExpression: np.s_, np.index_exp
)


def _index_trick(node: gast.Subscript, parsed, local_names) -> Operation | None:
    """``np.r_[a, b]`` and ``np.c_[a, b]`` as calls of a primitive on the items; the other
    objects NumPy indexes to build arrays (``np.mgrid[a:b]``) as unknown operations."""
    if not is_function_reference(node.value, local_names):
        return None
    obj = parsed.resolve(node.value)
    if not isinstance(obj, _INDEX_TRICKS):
        return None
    name = _dotted(node.value)
    items = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
    instead = "write np.concatenate, np.stack or np.column_stack instead"
    if isinstance(obj, type(np.s_)) and all(isinstance(i, gast.Slice) for i in items):
        return None  # np.s_[1:, ::2] (as generated code writes indices) builds only slices
    if obj is not np.r_ and obj is not np.c_:
        return Operation("unknown", description=f"{name}[...]; {instead}")
    if items and isinstance(items[0], gast.Constant) and isinstance(items[0].value, str):
        return Operation("unknown", description=f"{name}[...] with a string directive; {instead}")
    args = []
    for item in items:
        if isinstance(item, gast.Slice):
            bounds = [b for b in (item.lower, item.upper, item.step) if b is not None]
            if not all(_is_literal(b) for b in bounds):
                return Operation(
                    "unknown", description=f"{name}[...] with a computed range; {instead}"
                )
            item = index_expression(item)
        args.append(item)
    return _primitive(obj, args)


def _is_literal(node: gast.expr) -> bool:
    if isinstance(node, gast.UnaryOp):
        node = node.operand
    return isinstance(node, gast.Constant)


def _keywords_in_position(rule, args: list, keywords: dict) -> tuple[list, dict]:
    """Computed values passed by keyword (``np.full(shape=3, fill_value=v)``), moved to
    their positions: a rule returns cotangents for positional arguments only.

    The gaps take the rule's defaults; a value the rule has no position for stays a keyword.
    """
    computed = [k for k, v in keywords.items() if not isinstance(v, gast.Constant)]
    function = rule.vjp or rule.jvp
    if not computed or function is None:
        return args, keywords
    try:
        parameters = list(inspect.signature(function).parameters.values())[2:]
    except (TypeError, ValueError):
        return args, keywords
    positional = []
    for parameter in parameters:
        if parameter.kind is not parameter.POSITIONAL_OR_KEYWORD:
            break
        positional.append(parameter)
    last = max((i for i, p in enumerate(positional) if p.name in computed), default=-1)
    if last < len(args):
        return args, keywords
    moved, left = list(args), dict(keywords)
    for parameter in positional[len(args) : last + 1]:
        if parameter.name in left:
            moved.append(left.pop(parameter.name))
        elif parameter.default is not parameter.empty and _is_plain(parameter.default):
            moved.append(gast.Constant(value=parameter.default, kind=None))
        else:  # a gap with no default to write: leave the call as it is
            return args, keywords
    return moved, left


def refuse_differentiated_keywords(operation: Operation, is_active, location: str) -> None:
    """A differentiated value left as a keyword argument (keyword-only, or with no position
    in the rule) would get no derivative: refuse it.

    Example::

        refuse_differentiated_keywords(operation, sweeps.is_active_expression, "f.py:3")
    """
    for name, value in operation.keywords.items():
        if is_active(value):
            raise UnsupportedError(
                f"{location}: the differentiated value passed as '{name}=' has no derivative "
                "rule in that position; pass it by position, or use mode='tape'"
            )


def _is_plain(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def keeps_arguments_inside(target: Any) -> bool:
    """Whether calling ``target`` makes an object that holds on to its arguments rather
    than data: ``functools.partial``, a lazy ``map``/``filter``, an instance of a class
    that is not a tuple, list, dict or dataclass. Cotangents cannot flow back through it.

    Example::

        keeps_arguments_inside(functools.partial)  # True
    """
    if target in (functools.partial, map, filter):
        return True
    if not isinstance(target, type) or target.__module__ in ("builtins", "numpy"):
        return False
    return not (issubclass(target, (tuple, list, dict)) or dataclasses.is_dataclass(target))


def _scalar_math(target, args, keywords, func) -> Operation:
    """``math.sin(x)``: Python's math module works on floats, and drops the derivative."""
    name = getattr(target, "__name__", "")
    twin = getattr(np, name, None)
    instead = f"use np.{name}, which is differentiated" if callable(twin) else "use NumPy"
    description = f"{_dotted(func)} (Python's {target.__module__} module, for plain floats)"
    return Operation("no rule", target, args, keywords, description, func, advice=instead)


def _is_custom_derivative_code(target) -> bool:
    """A user's derivative, as generated code calls it (differentiating it again)."""
    owner = getattr(target, "__self__", target)
    return isinstance(owner, (runtime.custom_vjp, runtime.custom_jvp_call))


def _is_library(target) -> bool:
    module = getattr(target, "__module__", None) or ""
    return isinstance(target, np.ufunc) or module.split(".")[0] == "numpy"


def index_expression(index: gast.expr) -> gast.expr:
    """An index as an ordinary expression: slices become ``np.s_[...]``."""
    if any(isinstance(n, gast.Slice) for n in walk(index)):
        return gast.Subscript(value=attribute(load("np"), "s_"), slice=index, ctx=gast.Load())
    return index


def _dotted(node: gast.expr) -> str:
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "<expression>"


# ---------------------------------------------------------------------------------------
# Calls that write into one of their arguments


@dataclass
class InPlaceWrite:
    """A call that changes an array (or list, dict) it was given, rather than making one."""

    written: gast.expr  # the expression naming what is written into
    description: str  # how the user wrote it: "np.copyto", ".sort()", "np.sin(..., out=...)"
    instead: str  # the functional form to suggest


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
    "update": "a new dict ({**d, **more})",
    "setdefault": "a new dict",
    "popitem": "a new dict",
    "pop": "value = items[i] and a new list without it",
    "add": "a new set",
    "discard": "a new set",
}

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
    if not is_function_reference(func, local_names):
        return None
    target = parsed.resolve(func)
    if target is NOT_FOUND:
        return None
    name = _dotted(func)
    out = _out_argument(value, target)
    if out is not None:
        return InPlaceWrite(out, f"{name}(..., out=...)", f"t = {name}(...) without out=")
    try:
        instead = _IN_PLACE_FUNCTIONS.get(target)
    except TypeError:  # unhashable
        instead = None
    if instead is None and _is_ufunc_method(target, "at"):
        instead = "np.add.at or np.subtract.at (which are differentiated), or " + _WHERE_INSTEAD
    if instead is not None and value.args:
        return InPlaceWrite(value.args[0], name, instead)
    return None


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
    return InPlaceWrite(
        node.value,
        f"'{node.value.id}.{node.attr} = ...'",
        f"an item assignment {node.value.id}[...] = values, which is differentiated",
    )


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
    bases = _view_bases(body)
    _check_block(body, parsed, local_names, activity, bases, set())


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
    write = None
    if isinstance(statement, (gast.Assign, gast.Expr)):
        write = in_place_write(statement.value, parsed, local_names)
    if write is None and isinstance(statement, gast.Assign):
        write = _array_attribute_write(statement.targets[0], local_names)
    if write is None:
        return
    roots = {bases.get(n, n) for n in written_names(write)}  # t for a view t2 = t[0]
    written = roots | written_names(write)
    arguments = names_read(statement.value)
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
