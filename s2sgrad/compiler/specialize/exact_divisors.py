"""Division by a power of two that the shapes fix, written as the multiplication it equals.

``t5 = np.sqrt(X.shape[1]); scores = t2 / t5`` divides a whole array by a number that,
once specialised to ``X``'s shape, is a constant (8.0). For a divisor ``c = ±2**k`` with
``0 <= k <= 1023``, ``1 / c`` is exact in float64 and ``x / c`` and ``x * (1 / c)`` are the
same real number for every ``x``, rounded once the same way: the same bits, subnormal
results, ``inf``, ``nan`` and signed zeros included (and no overflow, as ``|1 / c| <= 1``).
So ``scores = t2 * 0.125``, which is cheaper.

Only where the dividend is known to be float64 (a float64 array or NumPy scalar, seen by
the probe or a parameter's, or computed from such by ``+ - * / @``), or a Python float
divided by a Python number: then the float literal ``0.125`` gives the result the same type
``c``'s own type would (NumPy 2's promotion and NumPy 1's value-based casting alike). A
complex dividend is left alone (complex division and multiplication differ in zeros' signs).

Runs on the specialised code before the optimiser, whose names are still those the
probe saw.

Example::

    divide_exactly(function, probing)  # t2 / t5 → t2 * 0.125 where t5 is 8.0
"""

from __future__ import annotations

import builtins
import copy
import math
import operator
from collections.abc import Callable, Iterable
from itertools import chain

import gast
import numpy as np

from s2sgrad.compiler.optimize.facts import FactsCache
from s2sgrad.compiler.specialize.broadcasts import resolve
from s2sgrad.compiler.syntax import constant, walk

__all__ = ["divide_exactly", "observed_kinds"]

_FLOAT64 = "float64"  # a float64 array or NumPy scalar
_FLOAT = "float"  # a Python float
_INT = "int"  # a Python int (a literal)

_OPERATIONS = {
    gast.Add: operator.add,
    gast.Sub: operator.sub,
    gast.Mult: operator.mul,
    gast.Div: operator.truediv,
    gast.FloorDiv: operator.floordiv,
    gast.Pow: operator.pow,
}
_FUNCTIONS = {id(np.sqrt), id(math.sqrt), id(float), id(int), id(len), id(abs)}
_UNKNOWN = object()
_LARGE = 2**1100  # integers beyond any float's range: not followed further


def divide_exactly(function: gast.FunctionDef, probing, kept: FactsCache | None = None) -> bool:
    """Rewrite ``x / c`` as ``x * (1 / c)`` where that is exact (see the module); say
    whether any division was. ``kept``, the optimiser's facts of the body, when given,
    forgets each statement changed (the rest stay true: a division made a product
    changes no target, and links no names).

    Example::

        divide_exactly(function, probing, facts)  # t2 / t5 → t2 * 0.125 where t5 is 8.0
    """
    walks = [walk(statement) for statement in function.body]
    binop, div = gast.BinOp, gast.Div  # (locals: the loop runs over every node)
    divisions = [  # (the statement of the function's body it is in, the division)
        (position, node)
        for position, nodes in enumerate(walks)
        for node in nodes
        if type(node) is binop and type(node.op) is div
    ]
    if not divisions:
        return False
    outside = copy.copy(function)  # the function without its body: a shallow copy
    outside.body = []
    facts = _Facts(function, probing, chain(walk(outside), *walks))
    changed = False
    with np.errstate(all="ignore"):  # once for every divisor computed (``_Facts.value``)
        for position, division in divisions:
            divisor = facts.value(division.right, position)
            if divisor is _UNKNOWN or not _power_of_two(divisor):
                continue
            dividend = facts.kind_of_operand(division)
            if dividend == _FLOAT64 or (dividend == _FLOAT and type(divisor) in (int, float)):
                division.op = gast.Mult()
                division.right = constant(1.0 / float(divisor))
                changed = True
                if kept is not None:
                    kept.forget_all(function.body[position])
    return changed


def observed_kinds(
    probing, parameters: dict[str, object], once: Callable[[str], bool]
) -> dict[str, str | None]:
    """What each name bound once (``once(name)``) held where the probe saw it as an
    argument (an operand or a call's argument), or a parameter's value (``parameters``):
    float64, a Python float, or None (something else, or two kinds).

    Example::

        kinds = observed_kinds(probing, {"x": x}, lambda name: True)  # {"x": "float64", ...}
    """
    kinds: dict[str, str | None] = {}
    for name, value in parameters.items():
        kinds[name] = _kind_of_value(value)
    for site, (_, site_node, target) in enumerate(probing.sites):
        seen = probing.probe.seen(site)
        if seen is None:
            continue
        arguments, _ = seen
        if target is None:
            nodes, arguments = [site_node.left, site_node.right], arguments[1:]
        else:
            nodes = site_node.args
        for node, argument in zip(nodes, arguments):
            if type(node) is gast.Name and once(node.id):
                kind = _kind_of_seen(argument)
                if kinds.setdefault(node.id, kind) != kind:
                    kinds[node.id] = None
    return kinds


def _power_of_two(value) -> bool:
    """``±2**k`` with ``0 <= k <= 1023``, a Python float or float64 (or an int of int64)."""
    if type(value) not in (int, float, np.float64) or (type(value) is int and abs(value) > 2**62):
        return False  # (an integer beyond int64 is an object to NumPy 1's value-based casting)
    try:
        number = float(value)
    except OverflowError:
        return False
    if not math.isfinite(number) or number == 0.0:
        return False
    mantissa, exponent = math.frexp(abs(number))
    return mantissa == 0.5 and 1 <= exponent <= 1024


class _Facts:
    """What the specialised code's names are known to hold: the values the signature fixes
    (shapes of array parameters, integer parameters, numbers computed from them) and
    which names hold float64 values."""

    def __init__(self, function: gast.FunctionDef, probing, nodes: Iterable[gast.AST]):
        """``nodes``: every node of ``function`` (``walk(function)``'s, in any order)."""
        self._namespace = probing.namespace
        self._bindings: dict[str, int] = {}
        self._definitions: dict[str, gast.expr] = {}
        self._reshaped: set[str] = set()
        bindings = self._bindings
        name_kind, load, attribute = gast.Name, gast.Load, gast.Attribute  # (locals: the
        declarations = (gast.Global, gast.Nonlocal)  # loop runs over every node)
        for node in nodes:
            kind = type(node)
            if kind is name_kind:
                if type(node.ctx) is not load:
                    bindings[node.id] = bindings.get(node.id, 0) + 1
            elif kind is attribute:
                if type(node.value) is name_kind and _reshapes(node):
                    self._reshaped.add(node.value.id)
            elif kind in declarations:
                for name in node.names:
                    bindings[name] = 2
        self._positions: dict[str, int] = {}  # where in the body a name is defined
        for position, statement in enumerate(function.body):
            if (
                type(statement) is gast.Assign
                and len(statement.targets) == 1
                and type(statement.targets[0]) is gast.Name
            ):
                self._definitions[statement.targets[0].id] = statement.value
                self._positions[statement.targets[0].id] = position
        self._parameters = self._parameter_values(function, probing)
        self._probing = probing
        # what the probe saw, by name: asked only of a dividend whose divisor is a power
        # of two (most are not), so read from the probe's sites at the first such, before
        # any division is rewritten (``kind_of_operand``)
        self._observed: dict[str, str | None] | None = None
        self._sites: dict[int, int] = {}  # see kind_of_operand
        self._probe = probing.probe
        self._values: dict[str, object] = {}

    def _once(self, name: str) -> bool:
        return self._bindings.get(name) == 1

    def _parameter_values(self, function, probing) -> dict[str, object]:
        arguments = function.args
        if arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
            return {}
        names = [a.id for a in arguments.args if type(a) is gast.Name]
        values = dict(zip(names, probing.args))
        values.update((k, v) for k, v in probing.kwargs.items() if k in names)
        return {name: value for name, value in values.items() if self._once(name)}

    # the dividend -----------------------------------------------------------------------
    def kind_of_operand(self, division: gast.BinOp) -> str | None:
        """What the left side of ``division`` holds: float64, a Python float, or None."""
        if self._observed is None:  # first asked before any division is rewritten
            self._observed = observed_kinds(self._probing, self._parameters, self._once)
            self._sites = {  # the probe call became the site, specialised, where it stands
                id(probe_call): site
                for site, (probe_call, _, target) in enumerate(self._probing.sites)
                if target is None
            }
        site = self._sites.get(id(division))
        if site is not None:
            seen = self._probe.seen(site)
            return _kind_of_seen(seen[0][1]) if seen is not None else None
        return self._kind(division.left, 0)

    def _kind(self, node: gast.expr, depth: int) -> str | None:
        if depth > 50:
            return None
        kind = type(node)
        if kind is gast.Constant:
            return {float: _FLOAT, int: _INT}.get(type(node.value))
        if kind is gast.Name:
            known = self._observed.get(node.id)  # type: ignore[union-attr]
            if known is not None or not self._once(node.id):
                return known
            definition = self._definitions.get(node.id)
            return None if definition is None else self._kind(definition, depth + 1)
        if kind is gast.UnaryOp and type(node.op) in (gast.USub, gast.UAdd):
            return self._kind(node.operand, depth + 1)
        if kind is gast.BinOp and type(node.op) in (*_OPERATIONS, gast.MatMult):
            left, right = self._kind(node.left, depth + 1), self._kind(node.right, depth + 1)
            if left is None or right is None:
                return None
            if _FLOAT64 in (left, right):
                return _FLOAT64
            if _FLOAT in (left, right) or type(node.op) is gast.Div:
                return _FLOAT
            return None  # int op int: an int
        return None

    # the divisor ------------------------------------------------------------------------
    def value(self, node: gast.expr, before: int, depth: int = 0):
        """The number or tuple ``node`` holds in every call of this signature, read in
        statement ``before`` of the body (the names it reads defined above it), or
        ``_UNKNOWN``."""
        if depth > 50:
            return _UNKNOWN
        try:  # (under ``np.errstate(all="ignore")``, which ``divide_exactly`` sets once)
            return self._value(node, before, depth)
        except (ArithmeticError, ValueError, TypeError, IndexError):
            return _UNKNOWN

    def _value(self, node: gast.expr, before: int, depth: int):
        kind = type(node)
        if kind is gast.Constant:
            return node.value if type(node.value) in (int, float) else _UNKNOWN
        if kind is gast.Name:
            return self._name_value(node.id, before, depth)
        if kind is gast.Attribute and type(node.value) is gast.Name:
            array = self._parameters.get(node.value.id)
            if (
                type(array) is np.ndarray
                and node.value.id not in self._reshaped
                and node.attr in ("shape", "ndim", "size")
            ):
                return getattr(array, node.attr)
            return _UNKNOWN
        if kind is gast.Subscript:
            whole = self.value(node.value, before, depth + 1)
            at = self.value(node.slice, before, depth + 1)
            if type(whole) is tuple and type(at) is int:
                return whole[at]
            return _UNKNOWN
        if kind is gast.UnaryOp and type(node.op) in (gast.USub, gast.UAdd):
            operand = self.value(node.operand, before, depth + 1)
            if operand is _UNKNOWN:
                return _UNKNOWN
            return -operand if type(node.op) is gast.USub else +operand
        if kind is gast.BinOp and type(node.op) in _OPERATIONS:
            left, right = (
                self.value(node.left, before, depth + 1),
                self.value(node.right, before, depth + 1),
            )
            if not (_is_number(left) and _is_number(right)) or _too_large(node.op, left, right):
                return _UNKNOWN
            result = _OPERATIONS[type(node.op)](left, right)
            return result if type(result) is not int or abs(result) < _LARGE else _UNKNOWN
        if kind is gast.Call and len(node.args) == 1 and not node.keywords:
            function = self._function(node.func)
            argument = self.value(node.args[0], before, depth + 1)
            if id(function) in _FUNCTIONS and argument is not _UNKNOWN:
                if function is len and type(argument) is not tuple:
                    return _UNKNOWN
                if function is not len and not _is_number(argument):
                    return _UNKNOWN
                return function(argument)
        return _UNKNOWN

    def _name_value(self, name: str, before: int, depth: int):
        parameter = self._parameters.get(name, _UNKNOWN)
        if type(parameter) is int:  # the signature holds an integer's value
            return parameter
        position = self._positions.get(name)
        if position is None or position >= before or not self._once(name):
            return _UNKNOWN  # not one definition above the reading statement
        if name not in self._values:
            self._values[name] = self.value(self._definitions[name], position, depth + 1)
        return self._values[name]

    def _function(self, func: gast.expr):
        found = resolve(func, self._namespace)
        if found is None and type(func) is gast.Name and func.id not in self._namespace:
            found = getattr(builtins, func.id, None)
        return found


def _too_large(op: gast.operator, left, right) -> bool:
    """``left ** right`` of integers whose result would be too long to compute at once."""
    if type(op) is not gast.Pow or not (type(left) is int and type(right) is int):
        return False
    return right < 0 or abs(left).bit_length() * right > _LARGE.bit_length()


def _reshapes(node: gast.Attribute) -> bool:
    """``x.shape = …`` or ``x.resize(…)``: ``x``'s shape may change in place."""
    return node.attr == "resize" or (node.attr == "shape" and type(node.ctx) is not gast.Load)


def _is_number(value) -> bool:
    return type(value) in (int, float, np.float64, np.int64)


def _kind_of_value(value) -> str | None:
    if type(value) is float:
        return _FLOAT
    if type(value) in (np.ndarray, np.float64) and value.dtype == np.float64:
        return _FLOAT64
    return None


def _kind_of_seen(seen) -> str | None:
    if seen.kind == "float":
        return _FLOAT
    if seen.kind in ("array", "scalar") and seen.dtype == "d":
        return _FLOAT64
    return None
