"""NumPy calls that write into an array, rewritten as the item assignments they are.

``np.add.at(t, i, v)`` becomes ``t[...] = added_at(t, i, v)`` (``np.subtract.at``: ``-v``),
``np.fill_diagonal(a, v)`` and ``ufunc.at(t, i, v)`` become item writes of ``a``'s diagonal
and of ``t[i]``, so the transformer differentiates them like any other item assignment
(part of :func:`s2sgrad.compiler.passes.desugar.desugar`).
"""

from __future__ import annotations

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import (
    call,
    clone,
    constant,
    load,
)

__all__ = ["scatter_adds", "diagonal_fills", "ufunc_at_writes"]


def scatter_adds(body: list, names: NameGenerator, resolve, helper: str | None = None):
    """``np.add.at(t, i, v)`` → ``t[...] = added_at(t, i, v)``, in ``body`` and its blocks.

    Returns the name the new code calls :func:`s2sgrad.runtime.added_at` by (``helper``
    when it was claimed already), or None when there is no such call.
    """
    for position, statement in enumerate(body):
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                helper = scatter_adds(inner, names, resolve, helper)
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
        body[position] = gast.copy_location(assign, statement)
    return helper


def diagonal_fills(body: list, names: NameGenerator, resolve, bindings: dict) -> None:
    """``np.fill_diagonal(t, v)`` → ``t[diagonal_index(t, wrap)] = v``, an item write, in
    ``body`` and its blocks (``wrap`` a literal); the helper's name goes to ``bindings``
    (name → object). Other calls of ``np.fill_diagonal`` are refused as in-place writes.
    """
    for position, statement in enumerate(body):
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                diagonal_fills(inner, names, resolve, bindings)
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
        helper = next((n for n, f in bindings.items() if f is runtime.diagonal_index), None)
        if helper is None:
            helper = names.claim("diagonal_index")
            bindings[helper] = runtime.diagonal_index
        array, values = value.args
        wrap = value.keywords[0].value if value.keywords else constant(False)
        index = call(load(helper), [load(array.id), wrap])
        place = gast.Subscript(value=load(array.id), slice=index, ctx=gast.Store())
        body[position] = gast.copy_location(
            gast.Assign(targets=[place], value=values, type_comment=None), statement
        )


def ufunc_at_writes(body: list, names: NameGenerator, resolve, bindings: dict) -> None:
    """``np.u.at(t, i, v)`` (``u`` a ufunc with a derivative rule, other than add and subtract,
    which ``scatter_adds`` took) → ``t[i] = np.u(t[unique_index(t, i)], v)``: the same for
    indices that pick each element once, which ``unique_index`` checks when it runs. The
    helper's name goes to ``bindings`` (name → object)."""
    from s2sgrad.rules import get_rule

    for position, statement in enumerate(body):
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, gast.FunctionDef):
                ufunc_at_writes(inner, names, resolve, bindings)
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
        helper = next((n for n, f in bindings.items() if f is runtime.unique_index), None)
        if helper is None:
            helper = names.claim("unique_index")
            bindings[helper] = runtime.unique_index
        array, index, *rest = value.args
        checked = call(load(helper), [load(array.id), clone(index)])
        read = gast.Subscript(value=load(array.id), slice=checked, ctx=gast.Load())
        combined = call(value.func.value, [read, *rest])
        place = gast.Subscript(value=load(array.id), slice=index, ctx=gast.Store())
        assign = gast.Assign(targets=[place], value=combined, type_comment=None)
        body[position] = gast.copy_location(assign, statement)


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
