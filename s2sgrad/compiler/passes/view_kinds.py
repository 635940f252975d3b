"""Which names hold views for certain, and how to take each anew or write it back.

A *view* here is ``name = base[index]`` with an index of integers, slices, ``...``,
``None`` and ``range`` counters, ``.T`` or ``.transpose()``, a part of ``np.split`` at
fixed positions, or a reshape (``reshape``, ``ravel``: a view of a contiguous array, which
the generated code asks as it runs), bound exactly once in the function. Used by
:mod:`.view_writes`.

Example::

    views_by_name(statements, layout, resolve)  # {"v": View("v", "t", <0>, ...)}
"""

from __future__ import annotations

from dataclasses import dataclass

import gast
import numpy as np

from s2sgrad.compiler.passes.sharing import Layout, resolved_target, updated_name
from s2sgrad.compiler.syntax import clone, constant, load, names_written, walk

__all__ = ["View", "views_by_name"]

_SPLITS = {np.split: None, np.array_split: None, np.vsplit: 0}


@dataclass
class View:
    """``name`` holds a view of ``base``: ``base[index]``, its transpose, or (when ``flag``
    says so as it runs) the reshape ``reshaped``, which is a copy of a non-contiguous base."""

    name: str
    base: str
    index: gast.expr | None  # None: the transpose, or the reshape
    binding: gast.stmt
    reads: set[str]  # names the view's expression reads besides ``base``
    reshaped: gast.expr | None = None
    flag: str | None = None  # the name of the run-time answer to "is it a view?"

    def value(self) -> gast.expr:
        """The view's expression, to take it anew."""
        if self.reshaped is not None:
            return clone(self.reshaped)
        if self.index is None:
            return gast.Attribute(value=load(self.base), attr="T", ctx=gast.Load())
        return gast.Subscript(value=load(self.base), slice=clone(self.index), ctx=gast.Load())

    def write_back(self) -> gast.stmt:
        """``base[index] = name`` (``base[...] = name.T`` for the transpose, ``base[...] =
        name.reshape(base.shape)`` for a reshape, when it is a view)."""
        if self.reshaped is not None:
            shape = gast.Attribute(value=load(self.base), attr="shape", ctx=gast.Load())
            method = gast.Attribute(value=load(self.name), attr="reshape", ctx=gast.Load())
            whole = gast.Subscript(value=load(self.base), slice=constant(...), ctx=gast.Store())
            written = gast.Call(func=method, args=[shape], keywords=[])
            back = gast.Assign(targets=[whole], value=written, type_comment=None)
            return self.when_a_view(back)
        if self.index is None:
            index: gast.expr = gast.Constant(value=Ellipsis, kind=None)
            value: gast.expr = gast.Attribute(value=load(self.name), attr="T", ctx=gast.Load())
        else:
            index, value = clone(self.index), load(self.name)
        place = gast.Subscript(value=load(self.base), slice=index, ctx=gast.Store())
        return gast.Assign(targets=[place], value=value, type_comment=None)

    def when_a_view(self, statement: gast.stmt) -> gast.stmt:
        """``statement``, under ``if flag:`` for a view that may be a copy."""
        if self.flag is None:
            return statement
        return gast.If(test=load(self.flag), body=[statement], orelse=[])


def views_by_name(statements, layout: Layout, resolve) -> dict[str, View]:
    """The names bound exactly once, to a view that is a view for certain.

    Example::

        views_by_name(statements, layout, resolve)  # {"v": View("v", "t", ...)}
    """
    made = [view for s in statements for view in _views_made(s, layout, resolve)]
    if not made:
        return {}  # the common case: no view is taken, whatever is bound how often
    bindings: dict[str, int] = {}
    for statement in statements:
        if type(statement) is gast.For:
            written = names_written(statement.target)
        elif type(statement) in (gast.If, gast.While):
            written = set()
        elif updated_name(statement) is not None and type(statement) is gast.AugAssign:
            written = set()  # x op= v: an update in place, not a new binding
        else:
            written = names_written(statement)
        for name in written:
            bindings[name] = bindings.get(name, 0) + 1
    found: dict[str, View] = {}
    for view in made:
        if bindings.get(view.name) == 1 and view.name != view.base:
            found[view.name] = view
    return found


def _views_made(statement: gast.stmt, layout: Layout, resolve) -> list[View]:
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return []
    target, value = statement.targets[0], statement.value
    if type(target) is gast.Name:
        view = _view_of(target.id, value, statement, layout, resolve)
        return [view] if view is not None else []
    if type(target) is gast.Tuple and type(value) is gast.Call:
        return _split_parts(target, value, statement, resolve)
    return []


def _view_of(name: str, value: gast.expr, statement, layout: Layout, resolve) -> View | None:
    kind = type(value)
    reshaped = _reshaped(value, resolve)
    if reshaped is not None:
        reads = {n.id for a in value.args for n in walk(a) if type(n) is gast.Name} - {reshaped}
        return View(name, reshaped, None, statement, reads, reshaped=value)
    if kind is gast.Subscript and type(value.value) is gast.Name:
        counters = _range_counters(statement, layout)
        if _certain_basic(value.slice, counters):
            reads = {n.id for n in walk(value.slice) if type(n) is gast.Name}
            return View(name, value.value.id, value.slice, statement, reads)
    if kind is gast.Attribute and value.attr == "T" and type(value.value) is gast.Name:
        return View(name, value.value.id, None, statement, set())
    if kind is gast.Call and not value.args and not value.keywords:
        method = value.func
        transposed = type(method) is gast.Attribute and method.attr == "transpose"
        if transposed and type(method.value) is gast.Name:
            return View(name, method.value.id, None, statement, set())
    return None


def _reshaped(value: gast.expr, resolve) -> str | None:
    """The array ``value`` reshapes (``t.reshape(...)``, ``t.ravel()``, ``np.reshape(t,
    ...)``, ``np.ravel(t)``; no ``order``), else None."""
    if type(value) is not gast.Call or value.keywords:
        return None
    method, arguments = value.func, value.args
    if type(method) is gast.Attribute and type(method.value) is gast.Name:
        reshape = method.attr == "reshape" and bool(arguments)
        if reshape or (method.attr == "ravel" and not arguments):
            return method.value.id
    function = resolved_target(method, resolve)
    if not arguments or type(arguments[0]) is not gast.Name:
        return None
    if (function is np.reshape and len(arguments) == 2) or (
        function is np.ravel and len(arguments) == 1
    ):
        return arguments[0].id
    return None
    if (
        function is np.reshape
        and len(arguments) == 2
        or function is np.ravel
        and len(arguments) == 1
    ):
        return arguments[0].id
    return None


def _split_parts(target: gast.Tuple, call: gast.Call, statement, resolve) -> list[View]:
    """``a, b = np.split(t, [2])``: ``a`` views ``t[:2]`` and ``b`` views ``t[2:]``."""
    function = resolved_target(call.func, resolve)
    try:
        known = function in _SPLITS
    except TypeError:  # an unhashable callable
        return []
    if not known or len(call.args) != 2 or type(call.args[0]) is not gast.Name:
        return []
    axis = _SPLITS[function]
    for keyword in call.keywords:
        if keyword.arg != "axis" or axis is not None or not _is_int(keyword.value):
            return []
        axis = keyword.value.value
    axis = 0 if axis is None else axis
    cuts = call.args[1]
    if type(cuts) not in (gast.List, gast.Tuple) or not all(_is_int(c) for c in cuts.elts):
        return []
    positions = [c.value for c in cuts.elts]
    if axis < 0 or any(p < 0 for p in positions) or positions != sorted(positions):
        return []
    names = target.elts
    if len(names) != len(positions) + 1 or not all(type(n) is gast.Name for n in names):
        return []
    bounds = [None, *positions, None]
    base = call.args[0].id
    parts = []
    for name, start, stop in zip(names, bounds, bounds[1:]):
        piece = gast.Slice(lower=_constant(start), upper=_constant(stop), step=None)
        whole = [gast.Slice(lower=None, upper=None, step=None) for _ in range(axis)]
        index = gast.Tuple(elts=[*whole, piece], ctx=gast.Load()) if whole else piece
        parts.append(View(name.id, base, index, statement, set()))
    return parts


def _constant(value: int | None) -> gast.expr | None:
    return None if value is None else gast.Constant(value=value, kind=None)


def _is_int(node: gast.expr) -> bool:
    return type(node) is gast.Constant and type(node.value) is int


def _certain_basic(index: gast.expr, counters: set[str]) -> bool:
    """Whether ``index`` is basic for certain: integers, slices, ``...``, ``None`` and the
    counters of ``range`` loops, alone or in a tuple."""
    if type(index) is gast.Tuple:
        return all(_certain_basic(part, counters) for part in index.elts)
    if type(index) is gast.Slice:
        return True  # its bounds must be integers (or None), whatever they are
    if type(index) is gast.Constant:
        return index.value is Ellipsis or index.value is None or type(index.value) is int
    if type(index) is gast.UnaryOp and type(index.op) is gast.USub:
        return _is_int(index.operand)
    return type(index) is gast.Name and index.id in counters


def _range_counters(statement: gast.stmt, layout: Layout) -> set[str]:
    """The counters of the ``for i in range(...)`` loops around ``statement``."""
    counters = set()
    block = layout.block_of[id(statement)]
    while id(block) in layout.owner:
        owner, block = layout.owner[id(block)]
        if type(owner) is gast.For and type(owner.target) is gast.Name:
            call = owner.iter
            if type(call) is gast.Call and type(call.func) is gast.Name and call.func.id == "range":
                counters.add(owner.target.id)
    return counters
