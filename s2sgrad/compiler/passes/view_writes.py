"""Writes through views made plain: ``v = t[0]; v[:] = e`` changes ``t`` too.

Basic indexing, ``.T`` and the parts ``np.split`` returns are views: NumPy's in-place update
of one changes the array it views, and an update of that array changes the view. The
transformer follows values, where ``v[:] = e`` makes a new ``v`` and leaves ``t`` alone. So
after each in-place update of an array in such a *family*, this pass adds what NumPy does
implicitly: the changed view is written back into what it views (``t[0] = v``, which at run
time stores the same values where they already are) and the family's other views that are
read later are taken anew (``w = t[1:]``). Every value the transformer follows is then
NumPy's, whether or not the arrays share memory.

Only views that are views for certain are followed: an index of integers, slices, ``...``
and ``None`` (a name only when a ``range`` loop binds it), ``.T``, ``.transpose()`` and the
parts of ``np.split`` at fixed positions. A view that may be a copy (``t[i]`` with ``i`` of
unknown kind, ``t.reshape(-1)``), a name bound twice, or a base or index rebound between
the view and the update leave the update as it was: :mod:`.aliases` then refuses it, with
its advice. An update made plain here is annotated ``SYNCED``, which tells :mod:`.aliases`
that no name read afterwards still holds a stale value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.passes.fresh_results import fresh_result
from s2sgrad.compiler.passes.mutation import changed_by
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.passes.sharing import (
    Layout,
    Sharing,
    container_names,
    resolved_target,
    updated_name,
)
from s2sgrad.compiler.syntax import (
    call,
    clone,
    constant,
    load,
    names_written,
    nested_statements,
    store,
    walk,
)

__all__ = ["ndarray_check", "surely_an_array", "write_back_views"]

_SPLITS = {np.split: None, np.array_split: None, np.vsplit: 0}


@dataclass
class _View:
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


def write_back_views(
    function: gast.FunctionDef, names: NameGenerator, locate, resolve
) -> dict[str, Any]:
    """Rewrite, in place, each family of views whose every in-place update can be followed
    (see the module docstring): after each update, the changed views are written back and
    the family's other views read later are taken anew; then each view is bound to a copy,
    so that no name shares memory any more and both orders of NumPy's semantics agree.

    Example::

        # v = t[0]; v[:] = e; r = t[1]  ->  v = t[0].copy(); v[:] = e; t[0] = v; r = t[1]

    Returns the names the new code calls helpers by, each with the object to bind it to
    (``refuse_unless_ndarray``, checking each family's array before a view is taken).
    """
    statements = list(nested_statements(function.body))
    layout = Layout(function.body, statements)
    views = _views(statements, layout, resolve)
    if not views:
        return {}
    sharing = Sharing(statements, resolve, container_names(statements), _parameters(function))
    position = {id(s): i for i, s in enumerate(statements)}
    loops = [
        (position[id(s)], max(position[id(n)] for n in nested_statements([s])))
        for s in statements
        if type(s) in (gast.For, gast.While)
    ]
    copied = _copied_first(function, resolve)
    local = {
        n
        for n in _bound_here(statements) - _parameters(function)
        if _made_anew(n, statements, resolve)
    }
    local |= copied
    roots = {_root(name, views) for name in views}
    containers = container_names(statements)
    check: list[str] = []
    rank_helper: list[str] = []
    asked: list[str] = []
    for view in views.values():
        if view.reshaped is not None:
            if not asked:
                asked.append(names.claim("is_view_of"))
            view.flag = names.fresh(f"{view.name}_is_view")
    for root in sorted((roots & local) - containers):
        family = {root} | {name for name in views if _root(name, views) == root}
        plans = []
        for statement in statements:
            changed = changed_by(statement, resolve) & family
            if not changed:
                continue
            updated = updated_name(statement)
            added = None
            if updated is not None and changed == {updated}:
                added = _plain_update(statement, updated, views, statements, layout, sharing, loops)
                ranks = _ranks_to_check(statement, updated, views)
                if added is not None and ranks is not None:
                    if not rank_helper:
                        rank_helper.append(names.claim("ndim"))
                    base = views[updated].base
                    added[0] = _when_more_dimensions(rank_helper[0], base, ranks, added[0])
            if added is None:
                break  # one update it cannot follow: the family is left to .aliases
            plans.append((statement, added))
        else:
            if plans:
                checked = None
                if not surely_an_array(root, statements, resolve):
                    if not check:
                        check.append(names.claim("refuse_unless_ndarray"))
                    checked = ndarray_check(check[0], root, locate)
                _apply(plans, family, views, layout, checked, asked[0] if asked else "")
    helpers: dict[str, Any] = {check[0]: runtime.refuse_unless_ndarray} if check else {}
    if rank_helper:
        helpers[rank_helper[0]] = np.ndim
    if asked:
        helpers[asked[0]] = runtime.is_view_of
    return helpers


def _when_more_dimensions(ndim: str, base: str, ranks: int, write: gast.stmt) -> gast.stmt:
    """``if ndim(base) > ranks: write``: the write back of a row changed by ``x op= v``."""
    test = gast.Compare(
        left=call(load(ndim), [load(base)]), ops=[gast.Gt()], comparators=[constant(ranks)]
    )
    return gast.If(test=test, body=[write], orelse=[])


_ARRAY_MAKERS = frozenset(
    {np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like}
    | {np.full_like, np.array, np.copy, np.eye, np.outer, np.stack, np.concatenate}
)


def surely_an_array(root: str, statements, resolve) -> bool:
    """Whether every binding of ``root`` makes a NumPy array: a ufunc's result, an array
    maker's, or arithmetic with one."""
    bindings = [
        s
        for s in statements
        if root in names_written(s.target if type(s) is gast.For else s)
        and type(s) not in (gast.If, gast.While)
        and updated_name(s) != root
    ]
    return bool(bindings) and all(
        type(s) is gast.Assign
        and len(s.targets) == 1
        and type(s.targets[0]) is gast.Name
        and _makes_an_array(s.value, resolve)
        for s in bindings
    )


def _makes_an_array(value: gast.expr, resolve) -> bool:
    if type(value) is gast.BinOp:
        return _makes_an_array(value.left, resolve) or _makes_an_array(value.right, resolve)
    if type(value) is gast.UnaryOp:
        return _makes_an_array(value.operand, resolve)
    if type(value) is not gast.Call:
        return False
    made = resolved_target(value.func, resolve)
    try:
        return isinstance(made, np.ufunc) or made in _ARRAY_MAKERS
    except TypeError:  # an unhashable callable
        return False


_VIEW_WRITTEN = (
    "a view of '{root}' is written into, but '{root}' holds no NumPy array here (a list's "
    "slice is a new list, not a view)"
)


def ndarray_check(helper: str, root: str, locate, what: str = _VIEW_WRITTEN):
    """A function of a statement giving the statement to put before it that refuses,
    naming its line, ``what`` is done when ``root`` holds no NumPy array (a list's slice is
    a new list, a tuple's entries cannot be stored).

    Example::

        ndarray_check("refuse_unless_ndarray", "t", locate)(binding)  # refuse_unless_...(t, ...)
    """

    def before(binding: gast.stmt) -> gast.stmt:
        message = (
            f"{locate(binding)}: {what.format(root=root)}; make the changed value a new "
            "one, or use mode='tape'"
        )
        return gast.Expr(value=call(load(helper), [load(root), constant(message)]))

    return before


def _ranks_to_check(update: gast.stmt, updated: str, views: dict[str, _View]) -> int | None:
    """For ``x op= v`` on ``x = t[i, j]`` (integers only), the number of integers: the
    update is in place when ``t`` has more dimensions (a row), while an element is a number,
    which ``x op= v`` rebinds. None for every other update (the family's array is checked to
    be a NumPy array, so its slices, parts and transpose are arrays too)."""
    if type(update) is not gast.AugAssign or type(update.target) is not gast.Name:
        return None
    view = views.get(updated)
    if view is None or view.index is None:
        return None
    parts = view.index.elts if type(view.index) is gast.Tuple else [view.index]
    if any(
        type(p) is gast.Slice or (type(p) is gast.Constant and p.value in (None, Ellipsis))
        for p in parts
    ):
        return None
    return len(parts)


def _apply(plans, family: set[str], views, layout: Layout, check, is_view_of: str) -> None:
    """Insert the statements each update needs, then bind each view of ``family`` to a
    copy (a binding by ``np.split`` becomes one copy per part), each view of the family's
    array after ``check(binding)``, which makes sure it is an array."""
    for update, added in plans:
        block = layout.block_of[id(update)]
        at = next(i for i, s in enumerate(block) if s is update)
        for statement in added:
            gast.copy_location(statement, update)
        block[at + 1 : at + 1] = added
    made = {id(views[n].binding): views[n].binding for n in family if n in views}
    for binding in made.values():
        parts = [views[n] for n in family if n in views and views[n].binding is binding]
        parts.sort(key=lambda view: _order_in(binding, view.name))
        copies = [_copied(view) for view in parts]
        for view in parts:
            if view.flag is not None:
                asked = call(load(is_view_of), [view.value(), load(view.base)])
                copies.insert(
                    0, gast.Assign(targets=[store(view.flag)], value=asked, type_comment=None)
                )
        if parts[0].base not in views and check is not None:
            copies.insert(0, check(binding))
        for statement in copies:
            gast.copy_location(statement, binding)
        block = layout.block_of[id(binding)]
        at = next(i for i, s in enumerate(block) if s is binding)
        block[at : at + 1] = copies


def _order_in(binding: gast.Assign, name: str) -> int:
    target = binding.targets[0]
    if type(target) is gast.Name:
        return 0
    return next(i for i, e in enumerate(target.elts) if type(e) is gast.Name and e.id == name)


def _copied(view: _View) -> gast.Assign:
    """``name = <view>.copy()``."""
    method = gast.Attribute(value=view.value(), attr="copy", ctx=gast.Load())
    value = gast.Call(func=method, args=[], keywords=[])
    return gast.Assign(targets=[store(view.name)], value=value, type_comment=None)


def _made_anew(name: str, statements, resolve) -> bool:
    """Whether every binding of ``name`` makes a new array (arithmetic, a list, a copy, a
    call known to return a new array), not a view of something else."""
    for statement in statements:
        kind = type(statement)
        if kind in (gast.If, gast.While) or updated_name(statement) == name:
            continue
        written = names_written(statement.target if kind is gast.For else statement)
        if name not in written:
            continue
        if kind is not gast.Assign or type(statement.targets[0]) is not gast.Name:
            return False
        value = statement.value
        if type(value) in (gast.BinOp, gast.UnaryOp, gast.List):
            continue
        if type(value) is not gast.Call:
            return False
        method = value.func
        if type(method) is gast.Attribute and method.attr == "copy" and not value.args:
            continue
        if not fresh_result(resolved_target(method, resolve), value):
            return False
    return True


def _bound_here(statements) -> set[str]:
    """Names an assignment of the function binds."""
    return {
        name
        for s in statements
        if type(s) is gast.Assign
        for target in s.targets
        for name in names_written(target)
    }


def _copied_first(function: gast.FunctionDef, resolve) -> set[str]:
    """The parameters the body starts by binding to a private copy (``x = owned(x)``, put
    there for a function that updates its argument: :mod:`..argument_updates`)."""
    copied = set()
    for statement in function.body:
        if type(statement) is not gast.Assign or len(statement.targets) != 1:
            break
        target, value = statement.targets[0], statement.value
        if type(target) is not gast.Name or type(value) is not gast.Call:
            break
        arguments = value.args
        if resolved_target(value.func, resolve) is not runtime.owned or len(arguments) != 1:
            break
        if type(arguments[0]) is not gast.Name or arguments[0].id != target.id:
            break
        copied.add(target.id)
    return copied & _parameters(function)


def _parameters(function: gast.FunctionDef) -> set[str]:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return {a.id for a in every if type(a) is gast.Name}


def _views(statements, layout: Layout, resolve) -> dict[str, _View]:
    """The names bound exactly once, to a view that is a view for certain."""
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
    found: dict[str, _View] = {}
    for statement in statements:
        for view in _views_made(statement, layout, resolve):
            if bindings.get(view.name) == 1 and view.name != view.base:
                found[view.name] = view
    return found


def _views_made(statement: gast.stmt, layout: Layout, resolve) -> list[_View]:
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return []
    target, value = statement.targets[0], statement.value
    if type(target) is gast.Name:
        view = _view_of(target.id, value, statement, layout, resolve)
        return [view] if view is not None else []
    if type(target) is gast.Tuple and type(value) is gast.Call:
        return _split_parts(target, value, statement, resolve)
    return []


def _view_of(name: str, value: gast.expr, statement, layout: Layout, resolve) -> _View | None:
    kind = type(value)
    reshaped = _reshaped(value, resolve)
    if reshaped is not None:
        reads = {n.id for a in value.args for n in walk(a) if type(n) is gast.Name} - {reshaped}
        return _View(name, reshaped, None, statement, reads, reshaped=value)
    if kind is gast.Subscript and type(value.value) is gast.Name:
        counters = _range_counters(statement, layout)
        if _certain_basic(value.slice, counters):
            reads = {n.id for n in walk(value.slice) if type(n) is gast.Name}
            return _View(name, value.value.id, value.slice, statement, reads)
    if kind is gast.Attribute and value.attr == "T" and type(value.value) is gast.Name:
        return _View(name, value.value.id, None, statement, set())
    if kind is gast.Call and not value.args and not value.keywords:
        method = value.func
        transposed = type(method) is gast.Attribute and method.attr == "transpose"
        if transposed and type(method.value) is gast.Name:
            return _View(name, method.value.id, None, statement, set())
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


def _split_parts(target: gast.Tuple, call: gast.Call, statement, resolve) -> list[_View]:
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
        parts.append(_View(name.id, base, index, statement, set()))
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


def _plain_update(update, updated, views, statements, layout, sharing, loops):
    """The statements to add after ``update`` (of ``updated``), or None when the family
    cannot be followed there."""
    chain = [updated]
    while chain[-1] in views:
        chain.append(views[chain[-1]].base)
        if len(chain) > len(views) + 1:
            return None  # a cycle of names: not a family of views
    root = chain[-1]
    family = {root} | {name for name in views if _root(name, views) == root}
    later = _read_after(update, statements, loops)
    shared = set().union(*(sharing.with_(name) for name in chain))
    if (shared - family) & later:
        return None  # another name (a list, a plain alias) may see the change
    anew = []
    for name in views:
        if name not in family or name in chain or name not in later:
            continue
        binding = views[name].binding
        if _after_in_block(binding, update, layout):
            if name in _read_between(update, binding, layout):
                return None  # read before it is bound anew: the old view, changed
            continue
        anew.append(name)
    for name in list(anew):  # a view taken anew needs its base's new value
        base = views[name].base
        while base in views and base not in chain and base not in anew:
            anew.append(base)
            base = views[base].base
    for name in [*chain[:-1], *anew]:
        if not _still_viewing(views[name], update, layout):
            return None
    added = [views[name].write_back() for name in chain[:-1]]
    order = {id(s): i for i, s in enumerate(statements)}
    for name in sorted(anew, key=lambda n: order[id(views[n].binding)]):
        added.append(views[name].when_a_view(_copied(views[name])))
    return added


def _after_in_block(binding: gast.stmt, update: gast.stmt, layout: Layout) -> bool:
    """Whether ``binding`` comes after ``update`` in the same block."""
    block = layout.block_of[id(update)]
    if layout.block_of[id(binding)] is not block:
        return False
    at = {id(s): i for i, s in enumerate(block)}
    return at[id(binding)] > at[id(update)]


def _read_between(first: gast.stmt, last: gast.stmt, layout: Layout) -> set[str]:
    """Names read by the statements of the block after ``first`` and before ``last``."""
    block = layout.block_of[id(first)]
    at = {id(s): i for i, s in enumerate(block)}
    inner = nested_statements(block[at[id(first)] + 1 : at[id(last)]])
    return {
        n.id for s in inner for n in walk(s) if type(n) is gast.Name and type(n.ctx) is gast.Load
    }


def _root(name: str, views: dict[str, _View]) -> str:
    seen = set()
    while name in views and name not in seen:
        seen.add(name)
        name = views[name].base
    return name


def _read_after(update, statements, loops) -> set[str]:
    """Names read by the statements that may run after ``update`` (the loops around it run
    it again after all of their statements)."""
    index = next(i for i, s in enumerate(statements) if s is update)
    after = set(range(index + 1, len(statements)))
    for first, last in loops:
        if first <= index <= last:
            after |= set(range(first, last + 1))
    after.discard(index)
    names = set()
    for position in after:
        statement = statements[position]
        kind = type(statement)
        own = (
            statement.iter
            if kind is gast.For
            else statement.test
            if kind in (gast.If, gast.While)
            else statement
        )
        names |= {n.id for n in walk(own) if type(n) is gast.Name and type(n.ctx) is gast.Load}
    return names


def _still_viewing(view: _View, update: gast.stmt, layout: Layout) -> bool:
    """Whether ``view``'s binding runs before ``update`` each time (it is in the same block
    or one around it) and nothing in between rebinds the view, its base or its index."""
    between = _between(view.binding, update, layout)
    if between is None:
        return False
    watched = {view.name, view.base} | view.reads
    for statement in between:
        kind = type(statement)
        if kind is gast.For:
            written = names_written(statement.target)
        elif kind in (gast.If, gast.While):
            written = set()
        elif type(statement) is gast.AugAssign and updated_name(statement) in (
            view.name,
            view.base,
        ):
            written = names_written(statement) & view.reads  # an update, not a new binding
        else:
            written = names_written(statement)
        if written & watched:
            return False
    return True


def _between(first: gast.stmt, last: gast.stmt, layout: Layout) -> list[gast.stmt] | None:
    """The statements that may run after ``first`` and before ``last`` when ``first`` is in
    ``last``'s block or a block around it (earlier); None otherwise. A loop around ``last``
    that ``first`` is outside of may run all of its statements in between."""
    found: list[gast.stmt] = []
    statement, block = last, layout.block_of[id(last)]
    while True:
        at = next(i for i, s in enumerate(block) if s is statement)
        start = next((i for i, s in enumerate(block[:at]) if s is first), None)
        if start is not None:
            return found + list(nested_statements(block[start + 1 : at]))
        found += nested_statements(block[:at])
        if id(block) not in layout.owner:
            return None
        statement, block = layout.owner[id(block)]
        if type(statement) in (gast.For, gast.While):
            found += [statement, *nested_statements(statement.body)]
