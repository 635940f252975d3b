"""Branches and replayed loops that only work on a number (a uniform cotangent, see
``uniform.py``) say so in one statement each::

    if t2:                                  db = 1.0 if t2 else 100.0
        db = 1.0                     ─►
    else:
        db = 100.0
    for _ in range(iterations1):            db = times_power_of_two(db, iterations1)
        db = db * 2

A loop is rewritten only when it replays a ``while`` loop (its count is a counter of
iterations, ``0`` then ``+ 1``, so never negative) and multiplies by a power of two, which
``times_power_of_two`` (the runtime's ``ldexp``: ``math.ldexp`` on a Python float) does
exactly (overflowing to ``inf`` as the multiplications would).

Example::

    simplify_number_flow(function, {"db"}, namespace)
"""

from __future__ import annotations

import math

import gast

from s2sgrad import runtime
from s2sgrad.compiler.annotations import REPLAY, annotation
from s2sgrad.compiler.optimize.statements import is_comment
from s2sgrad.compiler.specialize.path_shapes import assigned_values
from s2sgrad.compiler.syntax import assign, call, constant, load, names_read, parameter_names, walk

__all__ = ["simplify_number_flow"]

HELPER = "times_power_of_two"


def simplify_number_flow(function: gast.FunctionDef, numbers: set[str], namespace: dict) -> bool:
    """Rewrite, in place, the branches and loops of ``function`` that only pick or scale
    one of ``numbers`` (names that hold a Python or NumPy number); whether any changed.
    ``namespace`` (the code's globals) gets the runtime helper it calls."""
    counters = _counters(function)
    changed = False
    for node in walk(function):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if type(block) is not list:
                continue
            for index, statement in enumerate(block):
                new = _picked(statement, numbers) or _doubled(statement, numbers, counters)
                if new is not None:
                    if type(new.value) is gast.Call:
                        namespace[HELPER] = runtime.times_power_of_two
                    block[index] = gast.copy_location(new, statement)
                    changed = True
    return changed


def _code(block: list[gast.stmt]) -> list[gast.stmt]:
    return [s for s in block if not is_comment(s)]


def _number_assignment(block: list[gast.stmt], numbers: set[str]) -> gast.Assign | None:
    code = _code(block)
    if len(code) != 1 or type(code[0]) is not gast.Assign or len(code[0].targets) != 1:
        return None
    target = code[0].targets[0]
    return code[0] if type(target) is gast.Name and target.id in numbers else None


def _picked(statement: gast.stmt, numbers: set[str]) -> gast.Assign | None:
    """``if c: x = a`` / ``else: x = b`` with numbers or names ``a``, ``b``."""
    if type(statement) is not gast.If:
        return None
    first = _number_assignment(statement.body, numbers)
    second = _number_assignment(statement.orelse, numbers)
    if first is None or second is None or first.targets[0].id != second.targets[0].id:
        return None
    atoms = (gast.Constant, gast.Name)
    if type(first.value) not in atoms or type(second.value) not in atoms:
        return None
    choice = gast.IfExp(test=statement.test, body=first.value, orelse=second.value)
    return assign(first.targets[0].id, choice)


def _doubled(statement: gast.stmt, numbers: set[str], counters: set[str]) -> gast.Assign | None:
    """A replayed ``for _ in range(n): x = x * 2 ** k`` with a counter ``n``."""
    if type(statement) is not gast.For or statement.orelse:
        return None
    if not annotation(statement, REPLAY, False) or type(statement.target) is not gast.Name:
        return None
    loop = statement.iter
    if not (
        type(loop) is gast.Call
        and type(loop.func) is gast.Name
        and loop.func.id == "range"
        and len(loop.args) == 1
        and not loop.keywords
        and type(loop.args[0]) is gast.Name
        and loop.args[0].id in counters
    ):
        return None
    update = _number_assignment(statement.body, numbers)
    if update is None or statement.target.id in names_read(update):
        return None
    name = update.targets[0].id
    exponent = _power_of_two_factor(update.value, name)
    if exponent is None:
        return None
    count: gast.expr = load(loop.args[0].id)
    if exponent != 1:
        count = gast.BinOp(left=constant(exponent), op=gast.Mult(), right=count)
    return assign(name, call(HELPER, [load(name), count]))


def _power_of_two_factor(value: gast.expr, name: str) -> int | None:
    """``k`` when ``value`` is ``name * 2 ** k`` (or the factor first), else None."""
    if type(value) is not gast.BinOp or type(value.op) is not gast.Mult:
        return None
    left, right = value.left, value.right
    if type(left) is gast.Name and left.id == name:
        factor = right
    elif type(right) is gast.Name and right.id == name:
        factor = left
    else:
        return None
    if type(factor) is not gast.Constant or type(factor.value) not in (int, float):
        return None
    number = factor.value
    if not (number > 0 and math.isfinite(number)):
        return None
    mantissa, exponent = math.frexp(number)
    return exponent - 1 if mantissa == 0.5 and exponent != 1 else None


def _counters(function: gast.FunctionDef) -> set[str]:
    """Names assigned only ``n = 0`` and ``n = n + 1``: never negative."""
    parameters = parameter_names(function)  # an argument may start below zero
    return {
        name
        for name, assigned in assigned_values(walk(function)).items()
        if name not in parameters and all(v is not None and _counts(v, name) for v in assigned)
    }


def _counts(value: gast.expr, name: str) -> bool:
    if type(value) is gast.Constant:
        return type(value.value) is int and value.value == 0
    return (
        type(value) is gast.BinOp
        and type(value.op) is gast.Add
        and type(value.left) is gast.Name
        and value.left.id == name
        and type(value.right) is gast.Constant
        and type(value.right.value) is int
        and value.right.value == 1
    )
