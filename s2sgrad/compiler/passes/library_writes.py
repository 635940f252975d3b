"""NumPy calls that write into an array, rewritten as the item assignments they are.

``np.exp(x, out=t)`` (or ``np.exp(x, t)``) and ``np.copyto(t, v)`` become ``t[...] = np.exp(x)``
and ``t[...] = v``;
``np.add.at(t, i, v)`` becomes ``t[...] = added_at(t, i, v)`` (``np.subtract.at``: ``-v``),
``np.fill_diagonal(a, v)``, ``np.put(t, i, v)`` and ``ufunc.at(t, i, v)`` become item writes
of ``a``'s diagonal, of ``t``'s flat positions ``i`` and of ``t[i]``, so the transformer
differentiates them like any other item assignment (part of
:func:`s2sgrad.compiler.passes.desugar.desugar`). So does a chained item write
``a[i][j] = v`` (``a[i]`` a view of ``a``'s row), as ``a[chained_index(a, i, j)] = v``.
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.annotations import LIBRARY_WRITE, annotate
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.passes.sharing import container_names
from s2sgrad.compiler.passes.view_writes import ndarray_check, surely_an_array
from s2sgrad.compiler.syntax import (
    call,
    clone,
    constant,
    load,
    nested_statements,
    store,
    walk,
)
from s2sgrad.rules import get_rule

__all__ = [
    "has_call_statements",
    "scatter_adds",
    "diagonal_fills",
    "along_axis_puts",
    "put_writes",
    "ufunc_at_writes",
    "out_writes",
    "method_writes",
    "chained_item_writes",
]


def has_call_statements(body: list) -> bool:
    """Whether ``body`` or a block inside it (nested functions' too) has a statement that
    is a call (``np.add.at(t, i, v)``, ``t.fill(v)``), or a name bound to a call given
    ``out=`` (``r = a.max(axis=0, out=s)``): the only statements
    :func:`scatter_adds`, :func:`diagonal_fills`, :func:`ufunc_at_writes`,
    :func:`out_writes` and :func:`method_writes` rewrite, none of which makes one. Without
    any, the five have nothing to do (a function's statements looked at once, not five
    times).

    Example::

        has_call_statements(parse("def f(x):\n    y = np.sin(x)\n    return y").body)  # False
    """
    return any(
        isinstance(statement, gast.Expr)
        and isinstance(statement.value, gast.Call)
        or _named_out_call(statement)  # r = a.max(axis=0, out=s)
        for _, _, statement in _statements(body)
    )


def _named_out_call(statement: gast.stmt) -> bool:
    value = getattr(statement, "value", None)
    if not isinstance(value, gast.Call) or _named_result(statement) is None:
        return False
    return any(k.arg == "out" for k in value.keywords)


def scatter_adds(body: list, names: NameGenerator, resolve) -> str | None:
    """``np.add.at(t, i, v)`` → ``t[...] = added_at(t, i, v)``, in ``body`` and its blocks.

    Returns the name the new code calls :func:`s2sgrad.runtime.added_at` by, or None when
    there is no such call.
    """
    helper = None
    for block, position, statement in _statements(body):
        sign = _scatter_sign(statement, resolve)
        if sign is None:
            continue
        if helper is None:
            helper = names.claim("added_at")
        array, index, values = statement.value.args
        if sign < 0:
            values = gast.UnaryOp(op=gast.USub(), operand=values)
        updated = call(load(helper), [load(array.id), index, values])
        place = gast.Subscript(value=load(array.id), slice=constant(...), ctx=gast.Store())
        assign = gast.Assign(targets=[place], value=updated, type_comment=None)
        block[position] = gast.copy_location(assign, statement)
    return helper


def diagonal_fills(body: list, names: NameGenerator, resolve, bindings: dict) -> None:
    """``np.fill_diagonal(t, v)`` → ``t[diagonal_index(t, wrap)] = v``, an item write, in
    ``body`` and its blocks (``wrap`` a literal); the helper's name goes to ``bindings``
    (name → object). Other calls of ``np.fill_diagonal`` are refused as in-place writes.
    """
    for block, position, statement in _statements(body):
        value = getattr(statement, "value", None)
        if not (
            isinstance(statement, gast.Expr)
            and isinstance(value, gast.Call)
            and len(value.args) == 2
            and isinstance(value.args[0], gast.Name)
            and all(k.arg == "wrap" and isinstance(k.value, gast.Constant) for k in value.keywords)
            and _resolves_to(resolve, value.func, np.fill_diagonal)
        ):
            continue
        helper = _bound(runtime.diagonal_index, "diagonal_index", names, bindings)
        array, values = value.args
        wrap = value.keywords[0].value if value.keywords else constant(False)
        index = call(load(helper), [load(array.id), wrap])
        place = gast.Subscript(value=load(array.id), slice=index, ctx=gast.Store())
        block[position] = gast.copy_location(
            gast.Assign(targets=[place], value=values, type_comment=None), statement
        )


def along_axis_puts(body: list, names: NameGenerator, resolve, bindings: dict) -> None:
    """``np.put_along_axis(t, i, v, axis)`` → ``t[along_axis_index(t, i, axis)] = v``, an
    item write, in ``body`` and its blocks; the helper's name goes to ``bindings`` (name →
    object). Other calls of ``np.put_along_axis`` are refused as in-place writes."""
    for block, position, statement in _statements(body):
        value = getattr(statement, "value", None)
        if not (
            isinstance(statement, gast.Expr)
            and isinstance(value, gast.Call)
            and isinstance(value.args[0] if value.args else None, gast.Name)
            and _resolves_to(resolve, value.func, np.put_along_axis)
        ):
            continue
        keywords = {k.arg: k.value for k in value.keywords}
        parameters = ("arr", "indices", "values", "axis")
        if None in keywords or not set(keywords) <= set(parameters[len(value.args) :]):
            continue
        arguments = list(value.args) + [
            keywords[p] for p in parameters[len(value.args) :] if p in keywords
        ]
        if len(arguments) != 4:
            continue
        helper = _bound(runtime.along_axis_index, "along_axis_index", names, bindings)
        array, indices, values, axis = arguments
        index = call(load(helper), [load(array.id), clone(indices), clone(axis)])
        place = gast.Subscript(value=load(array.id), slice=index, ctx=gast.Store())
        block[position] = gast.copy_location(
            gast.Assign(targets=[place], value=values, type_comment=None), statement
        )


def put_writes(body: list, names: NameGenerator, resolve, bindings: dict) -> None:
    """``np.put(t, i, v)`` → ``t[put_index(t, i)] = np.resize(v, np.size(i))``, an item
    write (``v`` cycled over the indices, as NumPy does), in ``body`` and its blocks: only
    written ``np.put`` (``np.resize`` is read from the same module), with three arguments,
    a name for ``t`` and an index without calls (it is evaluated twice). Other calls stay
    refused as in-place writes."""
    for block, position, statement in _statements(body):
        value = getattr(statement, "value", None)
        if not (
            isinstance(statement, gast.Expr)
            and isinstance(value, gast.Call)
            and isinstance(value.func, gast.Attribute)
            and len(value.args) == 3
            and not value.keywords
            and isinstance(value.args[0], gast.Name)
            and not any(isinstance(n, gast.Call) for n in walk(value.args[1]))
            and _resolves_to(resolve, value.func, np.put)
            and getattr(resolve(value.func.value), "resize", None) is np.resize
        ):
            continue
        helper = _bound(runtime.put_index, "put_index", names, bindings)
        array, index, values = value.args
        module = value.func.value

        def numpy(name: str, module=module) -> gast.Attribute:
            return gast.Attribute(value=clone(module), attr=name, ctx=gast.Load())

        count = call(numpy("size"), [clone(index)])
        cycled = call(numpy("resize"), [values, count])
        place = gast.Subscript(
            value=load(array.id),
            slice=call(load(helper), [load(array.id), index]),
            ctx=gast.Store(),
        )
        block[position] = gast.copy_location(
            gast.Assign(targets=[place], value=cycled, type_comment=None), statement
        )


def ufunc_at_writes(body: list, names: NameGenerator, resolve, bindings: dict) -> None:
    """``np.u.at(t, i, v)`` (``u`` a ufunc with a derivative rule, other than add and subtract,
    which ``scatter_adds`` took) → ``t[i] = np.u(t[unique_index(t, i)], v)``: the same for
    indices that pick each element once, which ``unique_index`` checks when it runs. The
    helper's name goes to ``bindings`` (name → object)."""
    for block, position, statement in _statements(body):
        value = getattr(statement, "value", None)
        if not (
            isinstance(statement, gast.Expr)
            and isinstance(value, gast.Call)
            and isinstance(value.func, gast.Attribute)
            and value.func.attr == "at"
            and not value.keywords
            and len(value.args) >= 2
            and isinstance(value.args[0], gast.Name)
        ):
            continue
        try:
            ufunc = getattr(resolve(value.func), "__self__", None)
        except Exception:  # a name that does not resolve is no ufunc
            continue
        if not isinstance(ufunc, np.ufunc) or len(value.args) != 1 + ufunc.nin:
            continue
        rule = get_rule(ufunc)
        if rule is None or not rule.differentiable or _repeats_literally(value.args[1]):
            continue  # refused as an in-place write, when the function is transformed
        helper = _bound(runtime.unique_index, "unique_index", names, bindings)
        array, index, *rest = value.args
        checked = call(load(helper), [load(array.id), clone(index)])
        read = gast.Subscript(value=load(array.id), slice=checked, ctx=gast.Load())
        combined = call(value.func.value, [read, *rest])
        place = gast.Subscript(value=load(array.id), slice=index, ctx=gast.Store())
        assign = gast.Assign(targets=[place], value=combined, type_comment=None)
        block[position] = gast.copy_location(assign, statement)


def out_writes(body: list, resolve) -> None:
    """``f(..., out=t)`` → ``t[...] = f(...)`` for a NumPy function ``f`` with a derivative
    rule, ``u(x, t)`` → ``t[...] = u(x)`` for a ufunc ``u``, ``np.copyto(t, v)`` → ``t[...] =
    v``, ``np.copyto(t, v, where=m)`` → ``t[...] = np.where(m, v, t)`` and ``np.putmask(t, m,
    v)`` → ``t[...] = np.where(m, np.resize(v, np.shape(t)), t)``, in ``body`` and its
    blocks: the same values written, by an item assignment the transformer differentiates.
    A call whose value is used, or with ``casting=`` or ``dtype=`` (or a ufunc's
    ``where=``, which keeps entries out of the function), is left alone (and refused as an
    in-place write if it matters)."""
    results: list[tuple[list, gast.stmt, gast.stmt]] = []  # (block, write, r = s)
    for block, position, statement in _statements(body):
        value = getattr(statement, "value", None)
        if not isinstance(value, gast.Call):
            continue
        named = _named_result(statement)  # r = a.max(axis=0, out=s): r is s
        if not isinstance(statement, gast.Expr) and named is None:
            continue
        place: Any
        found = _written_by_call(value, resolve)
        if found is not None:
            array, written = found
            place = gast.Subscript(value=load(array), slice=constant(...), ctx=gast.Store())
        else:
            by_method = _written_by_method(value)
            if by_method is None:
                continue
            place, written = by_method
        assign = gast.Assign(targets=[place], value=written, type_comment=None)
        annotate(assign, LIBRARY_WRITE)
        block[position] = gast.copy_location(assign, statement)
        if named is not None:  # NumPy returns out itself: r = s, after the walk
            whole = type(place.slice) is gast.Constant and place.slice.value is Ellipsis
            result = clone(place.value) if whole else clone(place)
            result.ctx = gast.Load()
            bound = gast.Assign(targets=[store(named)], value=result, type_comment=None)
            results.append((block, block[position], gast.copy_location(bound, statement)))
    for block, write, bound in results:
        at = next(i for i, s in enumerate(block) if s is write)
        block.insert(at + 1, bound)


def _named_result(statement: gast.stmt) -> str | None:
    """``r`` of ``r = call(...)``, a name bound to a call's result, else None."""
    if type(statement) is not gast.Assign or len(statement.targets) != 1:
        return None
    target = statement.targets[0]
    return target.id if type(target) is gast.Name else None


def method_writes(body: list, names: NameGenerator, locate, resolve, bindings: dict) -> None:
    """``t.fill(v)`` → ``t[...] = v`` and ``t.sort()`` (``axis`` a literal) → ``t[...] =
    np.sort(t, axis)``, in ``body`` and its blocks: the same values written, by an item
    assignment. Unless every binding of ``t`` surely makes an array, a run-time check that
    ``t`` holds one (a list's ``sort`` is the list's) comes first, naming the line. The
    helpers' names go to ``bindings`` (name → object).

    Example::

        # buffer.fill(0.0)  ->  buffer[...] = 0.0
    """
    statements: list[gast.stmt] | None = None  # listed at the first method write found
    lists: set[str] = set()
    for block, position, statement in _statements(body):
        found = _method_write(statement, names, bindings)
        if found is None:
            continue
        if statements is None:
            statements = list(nested_statements(body))
            lists = container_names(statements)
        if found[0] in lists:
            continue
        array, index, written = found
        place = gast.Subscript(value=load(array), slice=index, ctx=gast.Store())
        assign = gast.copy_location(
            gast.Assign(targets=[place], value=written, type_comment=None), statement
        )
        new = [assign]
        if not surely_an_array(array, statements, resolve):
            helper = _bound(runtime.refuse_unless_ndarray, "refuse_unless_ndarray", names, bindings)
            method = f"{array}.{statement.value.func.attr}(...)"
            what = f"'{method}' is written as an item write, but '{array}' holds no NumPy array"
            check = ndarray_check(helper, array, locate, what)
            new.insert(0, gast.copy_location(check(statement), statement))
        block[position : position + 1] = new


def _method_write(statement: gast.stmt, names: NameGenerator, bindings: dict):
    """``(array name, index written, value written)`` for ``t.fill(v)`` and
    ``t.sort(axis)`` (index ``...``), or for ``t[1:].fill(v)`` and ``t[:, 0:2].sort(axis)``
    (a basic index: the part a view of ``t``, so the method writes into ``t``), else None."""
    value = getattr(statement, "value", None)
    if not isinstance(statement, gast.Expr) or not isinstance(value, gast.Call):
        return None
    method = value.func
    if not isinstance(method, gast.Attribute):
        return None
    receiver = method.value
    if isinstance(receiver, gast.Name):
        index: gast.expr = constant(...)
    elif (
        isinstance(receiver, gast.Subscript)
        and isinstance(receiver.value, gast.Name)
        and _surely_a_view_index(receiver.slice)
    ):
        index, receiver = receiver.slice, receiver.value
    else:
        return None
    array = receiver.id
    part = (
        load(array)
        if _is_ellipsis(index)
        else gast.Subscript(load(array), clone(index), gast.Load())
    )
    if method.attr == "fill" and len(value.args) == 1 and not value.keywords:
        return array, index, value.args[0]
    if method.attr != "sort":
        return None
    axes = [*value.args, *(k.value for k in value.keywords if k.arg == "axis")]
    if len(axes) > 1 or any(k.arg != "axis" for k in value.keywords):
        return None  # kind=, order=: left alone (and refused as an in-place write)
    axis = axes[0] if axes else constant(-1)
    if not (isinstance(axis, gast.Constant) and type(axis.value) is int):
        return None
    helper = _bound(np.sort, "np_sort", names, bindings)
    return array, index, call(load(helper), [part, axis])


def _is_ellipsis(index: gast.expr) -> bool:
    return isinstance(index, gast.Constant) and index.value is Ellipsis


def _surely_a_view_index(index: gast.expr) -> bool:
    """Whether ``index`` is basic indexing with a slice or ``...`` in it (``1:``, ``:, 0``),
    whose bounds are names or literals: of an array, a view (never a copy or a number), and
    reading the index again has no effect."""
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    if not any(isinstance(p, gast.Slice) or _is_ellipsis(p) for p in parts):
        return False
    for part in parts:
        if isinstance(part, gast.Slice):
            bounds = [b for b in (part.lower, part.upper, part.step) if b is not None]
            if not all(_plain_bound(b) for b in bounds):
                return False
        elif not (_is_ellipsis(part) or _is_integer_literal(part)):
            return False
    return True


def _plain_bound(bound: gast.expr) -> bool:
    if isinstance(bound, gast.UnaryOp) and isinstance(bound.op, gast.USub):
        bound = bound.operand  # y[-n:]
    return isinstance(bound, gast.Name) or _is_integer_literal(bound)


def _is_integer_literal(node: gast.expr) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        node = node.operand
    return isinstance(node, gast.Constant) and type(node.value) is int


def _written_by_call(value: gast.Call, resolve) -> tuple[str, gast.expr] | None:
    """``(name of the array written, the value written)`` for a call that only writes its
    result into an array, else None."""
    try:
        function = resolve(value.func)
    except Exception:  # a name that does not resolve is no NumPy function
        return None
    if function is np.copyto:
        if len(value.args) != 2 or not isinstance(value.args[0], gast.Name):
            return None
        if not value.keywords:
            return value.args[0].id, value.args[1]
        return _copy_where(value, resolve)
    if function is np.putmask:
        return _put_mask(value, resolve)
    rule = get_rule(function) if callable(function) else None
    if rule is None or not rule.differentiable:
        return None
    if any(k.arg in ("where", "casting", "dtype", None) for k in value.keywords):
        return None
    out = [k for k in value.keywords if k.arg == "out"]
    args = list(value.args)
    if out:
        target = out[0].value
        if isinstance(target, gast.Tuple) and len(target.elts) == 1:
            target = target.elts[0]
    elif isinstance(function, np.ufunc) and function.nout == 1 and len(args) == function.nin + 1:
        target = args.pop()
    else:
        return None
    if not isinstance(target, gast.Name):
        return None
    keywords = [k for k in value.keywords if k.arg != "out"]
    return target.id, gast.Call(func=value.func, args=args, keywords=keywords)


# ndarray methods that take out= and compute what the NumPy function of the same name does
# ndarray methods that take out= and have a derivative (round, argmax, all ...: none)
_OUT_METHODS = frozenset(
    {"sum", "mean", "prod", "max", "min", "std", "var", "cumsum", "cumprod", "dot", "clip"}
    | {"take", "trace", "compress"}
)


def _written_by_method(value: gast.Call) -> tuple[gast.expr, gast.expr] | None:
    """``a.sum(axis=0, out=t)`` (a statement of its own) → ``(t[...], a.sum(axis=0))``, and
    ``out=b[0]`` → ``(b[0], ...)``: the method writes its result there, which the
    transformer did not see (a zero derivative). Only the methods of ``_OUT_METHODS``,
    ``out=`` a name or an item of one, as the place to assign."""
    func = value.func
    if type(func) is not gast.Attribute or func.attr not in _OUT_METHODS:
        return None
    if any(k.arg in ("where", "casting", "dtype", None) for k in value.keywords):
        return None
    out = [k.value for k in value.keywords if k.arg == "out"]
    if len(out) != 1:
        return None
    keywords = [k for k in value.keywords if k.arg != "out"]
    written = gast.Call(func=func, args=list(value.args), keywords=keywords)
    if type(out[0]) is gast.Name:
        place = gast.Subscript(value=load(out[0].id), slice=constant(...), ctx=gast.Store())
        return place, written
    if type(out[0]) is gast.Subscript and type(out[0].value) is gast.Name:
        place = clone(out[0])
        place.ctx = gast.Store()
        return place, written
    return None


def _copy_where(value: gast.Call, resolve) -> tuple[str, gast.expr] | None:
    """``np.copyto(t, v, where=m)`` → ``(t, np.where(m, v, t))``: the entries of ``v`` where
    ``m`` holds, ``t``'s own elsewhere (``v`` is computed either way, so no entry of it
    goes through a function only the mask kept it out of). Only written ``np.copyto``
    (``np.where`` is then read from the same module) and with ``where=`` alone."""
    func = value.func
    if [k.arg for k in value.keywords] != ["where"] or not isinstance(func, gast.Attribute):
        return None
    module = resolve(func.value)
    if getattr(module, "where", None) is not np.where:
        return None
    target = value.args[0]
    where = gast.Attribute(value=clone(func.value), attr="where", ctx=gast.Load())
    chosen = call(where, [clone(value.keywords[0].value), clone(value.args[1]), load(target.id)])
    return target.id, chosen


def _put_mask(value: gast.Call, resolve) -> tuple[str, gast.expr] | None:
    """``np.putmask(t, m, v)`` → ``(t, np.where(m, np.resize(v, np.shape(t)), t))``:
    NumPy sets ``t.flat[n] = v.flat[n % v.size]`` where ``m.flat[n]``, which is ``v``
    resized to ``t``'s shape (cycled) where ``m`` holds. Only written ``np.putmask``, with
    three arguments and a name for ``t``."""
    func = value.func
    if value.keywords or len(value.args) != 3 or not isinstance(func, gast.Attribute):
        return None
    module = resolve(func.value)
    if getattr(module, "where", None) is not np.where or not isinstance(value.args[0], gast.Name):
        return None
    target, mask, values = value.args

    def numpy(name: str) -> gast.Attribute:
        return gast.Attribute(value=clone(func.value), attr=name, ctx=gast.Load())

    shape = call(numpy("shape"), [load(target.id)])
    cycled = call(numpy("resize"), [clone(values), shape])
    return target.id, call(numpy("where"), [clone(mask), cycled, load(target.id)])


def chained_item_writes(body: list, names: NameGenerator, locate, bindings: dict) -> None:
    """``a[i][j] = v`` (or ``op=``) → ``a[chained_index(a, i, j, why)] = v``, in ``body`` and
    its blocks: ``a[i]`` with an integer ``i`` is a view of ``a``'s row, so the write is
    ``a[i, j] = v``, an item assignment of ``a`` the transformer differentiates;
    ``chained_index`` checks as it runs that ``a`` is an array and ``i`` integers, and
    refuses anything else (a slice, a list of arrays) with ``why``. Deeper chains are joined
    from the inside out. The helper's name goes to ``bindings`` (name → object).

    Example::

        # out[i][j] = v  ->  out[chained_index(out, i, j, "...")] = v
    """
    containers: set[str] | None = None  # rows[0][1] = v: a list's (found when first asked)
    for _, _, statement in _statements(body):
        if isinstance(statement, gast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
        elif isinstance(statement, gast.AugAssign):
            target = statement.target
        else:
            continue
        if not (isinstance(target, gast.Subscript) and _is_chained(target.value)):
            continue
        if containers is None:
            containers = container_names(list(nested_statements(body)))
        if _chain_base(target) in containers:
            continue
        why = (
            f"{locate(statement)}: a chained item write (a[i][j] = ...) is differentiated as "
            "a[i, j] = ... for an array a and integers i; write a[i, j] = ..., or "
            "a[i][j] of a list as its own statements"
        )
        helpers = (
            _bound(runtime.chained_index, "chained_index", names, bindings),
            _bound(slice, "slice_of", names, bindings),
        )
        _join_chain(target, helpers, why)


def _is_chained(value: gast.expr) -> bool:
    """Whether ``value`` is ``name[i][...]``...: a chain from a name whose inner indices
    are expressions (``a[1:][0]`` is left to the refusal of writes into views)."""
    while isinstance(value, gast.Subscript):
        if any(isinstance(n, gast.Slice) for n in walk(value.slice)):
            return False
        value = value.value
        if isinstance(value, gast.Name):
            return True
    return False


def _chain_base(target: gast.Subscript) -> str:
    while isinstance(target, gast.Subscript):
        target = target.value
    return target.id if isinstance(target, gast.Name) else ""


def _join_chain(target: gast.Subscript, helpers: tuple[str, str], why: str) -> None:
    """Make ``target`` (``a[i][j]``, or deeper) ``a[chained_index(a, i, j, why)]``."""
    inner = target.value
    if isinstance(inner.value, gast.Subscript):
        _join_chain(inner, helpers, why)  # a[i][j][k]: a[i][j] first
    chained, slice_of = helpers
    base = inner.value
    arguments = [clone(base), inner.slice, _as_value(target.slice, slice_of), constant(why)]
    target.value, target.slice = base, call(load(chained), arguments)


def _as_value(index: gast.expr, slice_of: str) -> gast.expr:
    """An index as a value a call can take: ``1:3`` as ``slice(1, 3, None)``."""
    if isinstance(index, gast.Slice):
        parts = (index.lower, index.upper, index.step)
        return call(load(slice_of), [constant(None) if p is None else p for p in parts])
    if isinstance(index, gast.Tuple):
        return gast.Tuple(elts=[_as_value(e, slice_of) for e in index.elts], ctx=gast.Load())
    return index


def _statements(body: list):
    """``(block, position, statement)`` for each statement of ``body`` and of the blocks
    inside it, nested functions' too (inlined later, their writes must be item writes by
    then; each rewrite writes in place what the call wrote, so a function left as it is
    computes the same), a block's statements before the one holding it, so that
    ``block[position]`` can be replaced as the walk goes. A stack, not nested generators:
    each statement is handed up once, not once per block around it."""
    # entries: a block's (position, statement) iterator, or a statement whose blocks are
    # being walked, to hand up after them
    stack: list = [(body, enumerate(body))]
    while stack:
        entry = stack[-1]
        if len(entry) == 3:
            stack.pop()
            yield entry
            continue
        block, positions = entry
        for position, statement in positions:
            inner = [getattr(statement, field, None) for field in ("body", "orelse", "finalbody")]
            inner = [nested for nested in inner if isinstance(nested, list)]
            if not inner:
                yield block, position, statement
                continue
            stack.append((block, position, statement))
            stack.extend((nested, enumerate(nested)) for nested in reversed(inner))
            break
        else:
            stack.pop()


def _bound(function, stem: str, names: NameGenerator, bindings: dict) -> str:
    """The name ``bindings`` (name → object) gives ``function``, claimed on first use."""
    helper = next((n for n, f in bindings.items() if f is function), None)
    if helper is None:
        helper = names.claim(stem)
        bindings[helper] = function
    return helper


def _repeats_literally(index: gast.expr) -> bool:
    """Whether ``index`` is a list of integer literals with a repeat (``[0, 0]``)."""
    if not isinstance(index, (gast.List, gast.Tuple)):
        return False
    values = [e.value for e in index.elts if isinstance(e, gast.Constant)]
    return len(values) == len(index.elts) and len(set(values)) < len(values)


def _resolves_to(resolve, node: gast.expr, target) -> bool:
    try:
        return resolve(node) is target
    except Exception:  # a name that does not resolve is not np.fill_diagonal
        return False


def _scatter_sign(statement: gast.stmt, resolve) -> int | None:
    """1 for ``np.add.at(t, i, v)``, -1 for ``np.subtract.at``, None for anything else."""
    value = getattr(statement, "value", None)
    if not (
        isinstance(statement, gast.Expr)
        and isinstance(value, gast.Call)
        and isinstance(value.func, gast.Attribute)
        and value.func.attr == "at"
        and len(value.args) == 3
        and not value.keywords
        and isinstance(value.args[0], gast.Name)
    ):
        return None
    owner = getattr(resolve(value.func), "__self__", None)
    return {id(np.add): 1, id(np.subtract): -1}.get(id(owner))
