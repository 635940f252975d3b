"""Writes through views made plain: ``v = t[0]; v[:] = e`` changes ``t`` too.

NumPy's in-place update of a view changes the array it views, and an update of that array
changes the view. The transformer follows values, where ``v[:] = e`` makes a new ``v`` and
leaves ``t`` alone. So when every in-place change of a *family* (an array the function
made anew, or an argument it copies first, and the names bound once to views of it,
:mod:`.view_kinds`) can be followed, this pass adds after each update what NumPy does
implicitly: the changed view is written back into what it views (``t[0] = v``) and the
family's other views read later are taken anew (``w = t[1:]``); then every view is bound
to a copy, so that no name shares memory and the values are NumPy's either way.

A reshape is written back only where ``is_view_of`` said, when it was made, that it is a
view; ``v op= e`` on ``v = t[i]`` (integers only) only where ``t`` has more dimensions (an
element is a number, which ``op=`` rebinds). The family's array is checked to be a NumPy
array (a list's slice is a new list). A family with one change the pass cannot follow is
left as it was, and :mod:`.aliases` refuses it with its advice.
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.passes.aliases import loop_spans, run_after
from s2sgrad.compiler.passes.fresh_results import fresh_result
from s2sgrad.compiler.passes.mutation import changed_by
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.passes.sharing import (
    Layout,
    Sharing,
    container_names,
    resolved_target,
    updated_name,
    with_local_functions,
)
from s2sgrad.compiler.passes.view_kinds import View, views_by_name
from s2sgrad.compiler.syntax import (
    call,
    clone,
    constant,
    load,
    names_written,
    nested_statements,
    parameter_names,
    store,
    walk,
)

__all__ = ["ndarray_check", "surely_an_array", "write_back_views"]


def write_back_views(
    function: gast.FunctionDef,
    names: NameGenerator,
    locate,
    resolve,
    rewritten: list[str] | None = None,
) -> dict[str, Any]:
    """Rewrite, in place, each family of views whose every in-place update can be followed
    (see the module docstring): after each update, the changed views are written back and
    the family's other views read later are taken anew; then each view is bound to a copy,
    so that no name shares memory any more and both orders of NumPy's semantics agree.

    Example::

        # v = t[0]; v[:] = e; r = t[1]  ->  v = t[0].copy(); v[:] = e; t[0] = v; r = t[1]

    Returns the names the new code calls helpers by, each with the object to bind it to
    (``refuse_unless_ndarray``, checking each family's array before a view is taken).
    ``rewritten``, when given, gets the root of each family whose code was changed (the
    tree is unchanged while it stays empty).
    """
    statements = list(nested_statements(function.body))
    # a closure may return a view; the code is changed only once views are found
    resolve = with_local_functions(statements, resolve, unchanged=True)
    layout = Layout(function.body, statements)
    views = views_by_name(statements, layout, resolve)
    if not views:
        return {}
    resolve.bound  # noqa: B018 (found now, before the code changes)
    resolve.ndims  # noqa: B018 (and these, with the integers)
    sharing = Sharing(statements, resolve, container_names(statements), parameter_names(function))
    loops = loop_spans(statements)
    copied = _copied_first(function, resolve)
    bindings = _bindings(statements)
    local = {
        n
        for n in _bound_here(statements) - parameter_names(function)
        if _made_anew(n, bindings.get(n, []), resolve)
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
            for k, retaken in enumerate(added):  # v = t[-1] of a vector: a number, kept
                ranks = _retaken_element(retaken, views)
                if ranks is not None:
                    if not rank_helper:
                        rank_helper.append(names.claim("ndim"))
                    base = views[retaken.targets[0].id].base
                    added[k] = _when_more_dimensions(rank_helper[0], base, ranks, retaken)
            plans.append((statement, added))
        else:
            if plans:
                checked = None
                if not surely_an_array(root, statements, resolve):
                    if not check:
                        check.append(names.claim("refuse_unless_ndarray"))
                    checked = ndarray_check(check[0], root, locate)
                layouts = _layout_names(family, views, names)
                if root in copied and len(bindings.get(root, ())) == 1:
                    _ask_the_callers_array(function, root, family, views, names, layouts)
                _apply(plans, family, views, layout, checked, asked[0] if asked else "", layouts)
                if rewritten is not None:
                    rewritten.append(root)
    helpers: dict[str, Any] = {check[0]: runtime.refuse_unless_ndarray} if check else {}
    if rank_helper:
        helpers[rank_helper[0]] = np.ndim
    if asked:
        helpers[asked[0]] = runtime.is_view_of
    return helpers


def _retaken_element(statement: gast.stmt, views: dict[str, View]) -> int | None:
    """For ``x = t[i, j].copy()``, a view taken anew after its array changed, with integers
    only: their number (``x`` is taken anew only where ``t`` has more, and is then a row;
    an element read before the change keeps its value, as NumPy's number does)."""
    if type(statement) is not gast.Assign or type(statement.targets[0]) is not gast.Name:
        return None
    view = views.get(statement.targets[0].id)
    return None if view is None else _integer_ranks(view)


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


def _ranks_to_check(update: gast.stmt, updated: str, views: dict[str, View]) -> int | None:
    """For ``x op= v`` on ``x = t[i, j]`` (integers only), the number of integers: the
    update is in place when ``t`` has more dimensions (a row), while an element is a number,
    which ``x op= v`` rebinds. None for every other update (the family's array is checked to
    be a NumPy array, so its slices, parts and transpose are arrays too)."""
    if type(update) is not gast.AugAssign or type(update.target) is not gast.Name:
        return None
    view = views.get(updated)
    return None if view is None else _integer_ranks(view)


def _integer_ranks(view: View) -> int | None:
    """For ``x = t[i, j]`` (integers only), the number of integers: ``x`` is a view (a row)
    when ``t`` has more dimensions, else an element, a number of its own. None for every
    other view."""
    if view.index is None:
        return None
    parts = view.index.elts if type(view.index) is gast.Tuple else [view.index]
    if any(
        type(p) is gast.Slice or (type(p) is gast.Constant and p.value in (None, Ellipsis))
        for p in parts
    ):
        return None
    return len(parts)


def _layout_names(family: set[str], views, names: NameGenerator) -> dict[str, str]:
    """A name for the uncopied view of each view of ``family`` that a reshape asked "is it
    a view?" of (``B = A.T; C = B.ravel()``) is taken from, or that such a view is taken
    from: the copy that ``B`` becomes is contiguous where ``A.T`` is not, and the answer
    depends on the layout."""
    needed = {v.base for v in views.values() if v.name in family and v.flag and v.base in views}
    found: dict[str, str] = {}
    while needed:
        name = needed.pop()
        if name not in found and name in family:
            found[name] = names.fresh(f"{name}_layout")
            if views[name].base in views:
                needed.add(views[name].base)
    return found


def _ask_the_callers_array(function, root: str, family, views, names, layouts) -> None:
    """Make a reshape of the argument ``root``, which the body copies first (``x =
    owned(x)``), ask whether it is a view of the caller's array: the copy is contiguous
    where the caller's ``x[:, ::2]`` is not, and NumPy's ``x.ravel()`` is then a copy."""
    if not any(views[name].flag is not None for name in family if name in views):
        return
    layouts[root] = names.fresh(f"{root}_layout")
    function.body.insert(
        0, gast.Assign(targets=[store(layouts[root])], value=load(root), type_comment=None)
    )


def _with_layouts(node: gast.expr, layouts: dict[str, str]) -> gast.expr:
    """``node`` reading each view of ``layouts`` as its uncopied view."""
    node = clone(node)
    for name in walk(node):
        if type(name) is gast.Name and name.id in layouts:
            name.id = layouts[name.id]
    return node


def _apply(plans, family: set[str], views, layout: Layout, check, is_view_of: str, layouts) -> None:
    """Insert the statements each update needs, then bind each view of ``family`` to a
    copy (a binding by ``np.split`` becomes one copy per part), each view of the family's
    array after ``check(binding)``, which makes sure it is an array; a reshape asks
    whether it is a view of the uncopied views (``layouts``), whose layout NumPy's answer
    depends on."""
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
                taken = _with_layouts(view.value(), layouts)
                asked = call(load(is_view_of), [taken, _with_layouts(load(view.base), layouts)])
                copies.insert(
                    0, gast.Assign(targets=[store(view.flag)], value=asked, type_comment=None)
                )
            if view.name in layouts:
                uncopied = _with_layouts(view.value(), layouts)
                copies.insert(
                    0,
                    gast.Assign(
                        targets=[store(layouts[view.name])], value=uncopied, type_comment=None
                    ),
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


def _copied(view: View) -> gast.Assign:
    """``name = <view>.copy()``."""
    method = gast.Attribute(value=view.value(), attr="copy", ctx=gast.Load())
    value = gast.Call(func=method, args=[], keywords=[])
    return gast.Assign(targets=[store(view.name)], value=value, type_comment=None)


def _bindings(statements) -> dict[str, list[gast.stmt]]:
    """The statements that bind each name, in order (a branch or a ``while`` binds none
    itself: its blocks' statements are listed; a ``for``, its target), found in one pass
    for :func:`_made_anew` (one pass per name made the pass quadratic)."""
    found: dict[str, list[gast.stmt]] = {}
    for statement in statements:
        kind = type(statement)
        if kind in (gast.If, gast.While):
            continue
        for name in names_written(statement.target if kind is gast.For else statement):
            found.setdefault(name, []).append(statement)
    return found


def _made_anew(name: str, bindings: list[gast.stmt], resolve) -> bool:
    """Whether every binding of ``name`` (the statements :func:`_bindings` lists for it)
    makes a new array (arithmetic, a list, a copy, a call known to return a new array), not
    a view of something else."""
    for statement in bindings:
        if updated_name(statement) == name:
            continue
        if type(statement) is not gast.Assign or type(statement.targets[0]) is not gast.Name:
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
        copy = resolved_target(value.func, resolve)
        if copy not in (runtime.owned, runtime.owned_argument) or len(arguments) != 1:
            break
        if type(arguments[0]) is not gast.Name or arguments[0].id != target.id:
            break
        copied.add(target.id)
    return copied & parameter_names(function)


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


def _root(name: str, views: dict[str, View]) -> str:
    seen = set()
    while name in views and name not in seen:
        seen.add(name)
        name = views[name].base
    return name


def _read_after(update, statements, loops) -> set[str]:
    """Names read by the statements that may run after ``update`` (the loops around it run
    it again after all of their statements; a compound statement counts its header)."""
    index = next(i for i, s in enumerate(statements) if s is update)
    names: set[str] = set()
    for position in run_after(index, statements, loops):
        statement = statements[position]
        kind = type(statement)
        own = (
            statement.iter if kind is gast.For else statement.test if kind in _BLOCKS else statement
        )
        names |= {n.id for n in walk(own) if type(n) is gast.Name and type(n.ctx) is gast.Load}
    return names


_BLOCKS = (gast.If, gast.While)


def _still_viewing(view: View, update: gast.stmt, layout: Layout) -> bool:
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
