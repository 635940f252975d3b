"""Names that surely hold numbers or arrays, never a list or a tuple.

``y = x * 2`` repeats a list x, but scales an array, whose shape it keeps: the backward
sweep may drop ``unbroadcast(dy * 2, x)`` only where x is surely no sequence. A name is
when every value it is given is: a number literal, an array parameter (not one given a
list, tuple or dict), arithmetic or a comparison of such values, an item of one, a
NumPy ufunc's or reduction's result, or an array method's.

Example::

    numeric_names(statements, {"a"}, set(), parsed.resolve, set())  # {"a", "b"}: b = a * 2
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.block_walks import header_writes
from s2sgrad.compiler.plain_values import reads_of_value
from s2sgrad.compiler.reverse.facts import writes_nothing
from s2sgrad.compiler.syntax import names_written, nested_statements

__all__ = ["numeric_names"]

# NumPy functions whose result is an array or a scalar whatever their arguments
_ARRAY_RESULTS = frozenset(
    map(
        id,
        (
            np.sum,
            np.mean,
            np.prod,
            np.max,
            np.min,
            np.amax,
            np.amin,
            np.var,
            np.std,
            np.dot,
            np.matmul,
            np.tensordot,
            np.outer,
            np.einsum,
            np.linalg.norm,
            np.clip,
            np.cumsum,
            np.cumprod,
            np.asarray,
            np.array,
            np.where,
        ),
    )
)
# array methods whose result is an array or a scalar
_ARRAY_METHODS = frozenset(
    (
        "sum", "mean", "prod", "max", "min", "var", "std", "dot", "reshape", "ravel",
        "flatten", "transpose", "copy", "astype", "clip", "cumsum", "squeeze",
    )
)  # fmt: skip
_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow, gast.MatMult, gast.FloorDiv)


def numeric_names(
    statements: list[gast.stmt],
    parameters: set[str],
    containers: set[str],
    resolve: Callable[[gast.expr], Any],
    local_names: set[str],
    nested: list | None = None,
) -> set[str]:
    """The names of ``statements`` (and ``parameters`` not in ``containers``) that hold a
    number or an array on every path: a greatest fixed point, so ``b = b * 2`` in a loop
    after ``b = a * 2`` counts. ``resolve`` maps a function reference to its object;
    ``local_names`` are the function's own (a call of one of them is unknown); ``nested``:
    ``list(nested_statements(statements))``, when the caller has it."""

    def lookup(func: gast.expr) -> Any:
        root = func
        while type(root) is gast.Attribute:
            root = root.value
        if type(root) is not gast.Name or root.id in local_names:
            return None
        try:
            return resolve(func)
        except Exception:
            return None

    values: dict[str, list[gast.expr]] = {}
    other: set[str] = set()
    for statement in nested if nested is not None else nested_statements(statements):
        if type(statement) is gast.Assign and type(statement.targets[0]) is gast.Name:
            values.setdefault(statement.targets[0].id, []).append(statement.value)
            if not writes_nothing(statement.value):
                other |= names_written(statement.value)  # a walrus inside the value
        else:
            other |= header_writes(statement)
    numeric = ((set(values) | parameters) - containers) - other
    # each name asked once first: where none is dropped, every name is numeric (the set is
    # a fixed point, and the greatest), and no name's readers need be found
    dropped = []
    for name, named in values.items():
        if name in numeric:
            for value in named:
                if not _numeric(value, numeric, lookup):
                    numeric.discard(name)
                    dropped.append(name)
                    break
    if not dropped:
        return numeric
    # a worklist: a name is asked again only when a name its values read is dropped (each
    # round over every name dropped one link of a chain: quadratic in its length). The
    # answer is the same greatest fixed point, _numeric being monotone in ``numeric``:
    # a name asked above before a name it reads was dropped is asked again
    readers: dict[str, list[str]] = {}
    gone = set(dropped)
    for name in numeric:
        for value in values.get(name, ()):
            for read in reads_of_value(value):
                if read in numeric or read in gone:
                    readers.setdefault(read, []).append(name)
    pending = [reader for name in dropped for reader in readers.get(name, ())]
    while pending:
        name = pending.pop()
        if name not in numeric:
            continue
        for value in values.get(name, ()):
            if not _numeric(value, numeric, lookup):
                numeric.discard(name)
                pending += readers.get(name, ())
                break
    return numeric


def _numeric(node: gast.expr, numeric: set[str], resolve) -> bool:
    kind = type(node)
    if kind is gast.Constant:
        return type(node.value) in (int, float, complex, bool)
    if kind is gast.Name:
        return node.id in numeric
    if kind is gast.BinOp:
        if not isinstance(node.op, _ARITHMETIC):
            return False
        left, right = node.left, node.right  # a name: looked up here, without a call
        if type(left) is gast.Name:
            if left.id not in numeric:
                return False
        elif not _numeric(left, numeric, resolve):
            return False
        if type(right) is gast.Name:
            return right.id in numeric
        return _numeric(right, numeric, resolve)
    if kind is gast.UnaryOp:
        return isinstance(node.op, (gast.USub, gast.UAdd)) and _numeric(
            node.operand, numeric, resolve
        )
    if kind is gast.Compare:
        return all(_numeric(n, numeric, resolve) for n in (node.left, *node.comparators))
    if kind is gast.Subscript:
        return _numeric(node.value, numeric, resolve)
    if kind is gast.Call:
        return _numeric_call(node, numeric, resolve)
    return False


def _numeric_call(node: gast.Call, numeric: set[str], resolve) -> bool:
    func = node.func
    if type(func) is gast.Attribute and type(func.value) is gast.Name and func.value.id in numeric:
        return func.attr in _ARRAY_METHODS  # b.sum() of an array b
    target = resolve(func)
    if isinstance(target, np.ufunc):
        return target.nout == 1
    if target is np.where:
        return len(node.args) == 3  # np.where(c) is a tuple of index arrays
    return id(target) in _ARRAY_RESULTS
