"""Code for Python numbers: when every argument of a call is a Python ``float`` or ``int``
and every operation of the code is one on numbers, ``np.sin(x)`` becomes ``math.sin(x)``
and the runtime's helpers what they amount to for numbers (``unbroadcast(g, x)`` is
``g``), as a person writes scalar code: a NumPy function on a number costs about twenty
times ``math``'s.

The values of such code are Python numbers whatever the branches taken (arguments,
literals, ``math`` and arithmetic make nothing else), so no probe is needed: only the
argument types, which the signature keeps. ``math`` differs from NumPy where NumPy gives
``inf`` or ``nan`` (``math.log(-1.0)`` raises, ``np.log`` warns): the code catches those
errors and runs the generic code for that call instead, which gives NumPy's value. Results
agree with the generic code's to the last bit or two: ``math.exp`` and ``np.exp`` may
round differently.

Example::

    if scalar_arguments(args, kwargs) and scalar_code(node, namespace):
        ...  # tidy it
        falling_back(node, namespace, generic_function)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import gast
import numpy as np

from s2sgrad import runtime
from s2sgrad.compiler.specialize.broadcasts import resolve
from s2sgrad.compiler.syntax import assign, attribute, call, comment, constant, load, walk

__all__ = ["falling_back", "scalar_arguments", "scalar_code"]

# NumPy functions of one number and their math equivalents (same value, to rounding)
_MATH = {
    np.sin: "sin",
    np.cos: "cos",
    np.tan: "tan",
    np.arcsin: "asin",
    np.arccos: "acos",
    np.arctan: "atan",
    np.sinh: "sinh",
    np.cosh: "cosh",
    np.tanh: "tanh",
    np.exp: "exp",
    np.expm1: "expm1",
    np.log: "log",
    np.log1p: "log1p",
    np.log2: "log2",
    np.log10: "log10",
    np.sqrt: "sqrt",
}
_MATH_BY_ID = {id(f): name for f, name in _MATH.items()}

# what each helper amounts to for numbers, given the node of its call
_HELPERS = {
    id(runtime.unbroadcast): lambda node: node.args[0],  # numbers: g has x's shape
    id(runtime.zeros_like_value): lambda node: constant(0.0),
    id(runtime.shape_only): lambda node: node.args[0],  # numbers are kept as they are
    id(runtime.as_gradient): lambda node: _float(node.args[0]),
    id(runtime.seed_cotangent): lambda node: constant(1.0),
}
_BUILTINS = {"range", "reversed", "len", "float"}
_NUMBERS = (int, float, bool, str, type(None))
_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow)
_ERRORS = ("ArithmeticError", "ValueError")


def scalar_arguments(args: tuple, kwargs: dict) -> bool:
    """Whether every argument is a Python ``float`` or ``int`` (not a bool), one a float."""
    values = [*args, *kwargs.values()]
    return any(type(v) is float for v in values) and all(type(v) in (float, int) for v in values)


def scalar_code(function: gast.FunctionDef, namespace: dict) -> bool:
    """Rewrite ``function`` (called with numbers only) into code on Python numbers, in
    place; False (and ``function`` unchanged) unless every operation is one on numbers.
    :func:`falling_back` must then wrap it, once tidied."""
    parameters = function.args
    if parameters.vararg or parameters.kwarg or parameters.posonlyargs:
        return False
    lists = _stack_names(function)
    if lists is None:
        return False
    local = {a.id for a in parameters.args + parameters.kwonlyargs}
    local = local.union(*map(_written, function.body))
    rewrites: dict[int, Callable[[gast.AST], gast.expr]] = {}
    for statement in function.body:
        for node in walk(statement):
            if not _allowed(node, namespace, local, lists, rewrites):
                return False
    for statement in function.body:
        _rewrite_inside(statement, rewrites)
    namespace.setdefault("math", math)
    return True


def _rewrite_inside(node: gast.AST, rewrites: dict) -> None:
    """Apply ``rewrites`` below ``node``, inner nodes first."""
    for field, value in gast.iter_fields(node):
        if isinstance(value, list):
            setattr(node, field, [_rewritten(v, rewrites) for v in value])
        elif isinstance(value, gast.AST):
            setattr(node, field, _rewritten(value, rewrites))


def _rewritten(node, rewrites):
    if not isinstance(node, gast.AST):
        return node
    _rewrite_inside(node, rewrites)
    rewrite = rewrites.get(id(node))
    return node if rewrite is None else rewrite(node)


def _stack_names(function) -> set[str] | None:
    """The names bound to lists (``stack = []``); None when one is used other than by
    ``append`` and ``pop``."""
    lists = set()
    for node in walk(function):
        if type(node) is gast.Assign and type(node.value) is gast.List:
            if node.value.elts or type(node.targets[0]) is not gast.Name:
                return None
            lists.add(node.targets[0].id)
    uses = {name: 0 for name in lists}
    receivers = {name: 0 for name in lists}
    for node in walk(function):
        if type(node) is gast.Name and node.id in uses and type(node.ctx) is gast.Load:
            uses[node.id] += 1
        elif (
            type(node) is gast.Attribute
            and type(node.value) is gast.Name
            and node.value.id in lists
            and node.attr in ("append", "pop")
        ):
            receivers[node.value.id] += 1
    return lists if uses == receivers else None


def _written(function) -> set[str]:
    return {n.id for n in walk(function) if type(n) is gast.Name and type(n.ctx) is not gast.Load}


def _allowed(node, namespace, local, lists, rewrites) -> bool:
    """Whether ``node`` computes on numbers only (recording the rewrite of a call)."""
    kind = type(node)
    if kind is gast.Constant:
        return type(node.value) in _NUMBERS
    if kind is gast.Name:
        if node.id in local or node.id in _BUILTINS or _is_module(node.id, namespace):
            return True
        value = id(namespace.get(node.id))
        return value in _HELPERS or value in _MATH_BY_ID
    if kind is gast.Call:
        return _allowed_call(node, namespace, lists, rewrites)
    if kind is gast.BinOp:
        if type(node.op) is gast.Pow and not _integer_literal(node.right):
            rewrites[id(node)] = _math_pow  # raises where NumPy gives nan, ** complex numbers
        return type(node.op) in _ARITHMETIC
    if kind is gast.Attribute:
        base = node.value
        return type(base) is gast.Name and (base.id in lists or _is_module(base.id, namespace))
    return kind in _STRUCTURE


_STRUCTURE = frozenset(
    {
        gast.Assign,
        gast.AugAssign,
        gast.Expr,
        gast.Return,
        gast.For,
        gast.While,
        gast.If,
        gast.Pass,
        gast.Break,
        gast.Continue,
        gast.Tuple,
        gast.List,
        gast.UnaryOp,
        gast.BoolOp,
        gast.Compare,
        gast.IfExp,
        gast.Load,
        gast.Store,
        gast.UAdd,
        gast.USub,
        gast.Not,
        gast.And,
        gast.Or,
        gast.Eq,
        gast.NotEq,
        gast.Lt,
        gast.LtE,
        gast.Gt,
        gast.GtE,
        gast.Is,
        gast.IsNot,
        *_ARITHMETIC,
    }
)


def _integer_literal(node) -> bool:
    """An integer written in the code (``2``, ``-1``, ``2 - (2 != 0)``): ``**`` stays."""
    if type(node) is gast.UnaryOp and type(node.op) is gast.USub:
        return _integer_literal(node.operand)
    if type(node) is gast.BinOp and type(node.op) in (gast.Add, gast.Sub, gast.Mult):
        return _integer_literal(node.left) and _integer_literal(node.right)
    if type(node) is gast.Compare:  # True or False, which count as 1 and 0
        return all(_integer_literal(v) for v in (node.left, *node.comparators))
    return type(node) is gast.Constant and type(node.value) is int


def _is_module(name: str, namespace: dict) -> bool:
    return namespace.get(name) is np or namespace.get(name) is math


def _allowed_call(node, namespace, lists, rewrites) -> bool:
    if node.keywords or any(type(a) is gast.Starred for a in node.args):
        return False
    func = node.func
    if type(func) is gast.Attribute and type(func.value) is gast.Name and func.value.id in lists:
        return func.attr in ("append", "pop")
    if type(func) is gast.Name and func.id in _BUILTINS and func.id not in namespace:
        return True
    target = resolve(func, namespace)
    name = _MATH_BY_ID.get(id(target))
    if name is not None and len(node.args) == 1:
        rewrites[id(node)] = lambda n: call(attribute(load("math"), name), n.args)
        return True
    helper = _HELPERS.get(id(target))
    if helper is not None and node.args:
        rewrites[id(node)] = helper
        return True
    return False


def _float(gradient: gast.expr) -> gast.expr:
    """``as_gradient(g, x)`` of a number ``x``: ``float(g)``, and ``0.0`` for no gradient."""
    if type(gradient) is gast.Constant and gradient.value is None:
        return constant(0.0)
    return call(load("float"), [gradient])


def _math_pow(node: gast.BinOp) -> gast.expr:
    return call(attribute(load("math"), "pow"), [node.left, node.right])


def falling_back(function: gast.FunctionDef, namespace: dict, generic: Callable) -> None:
    """Wrap the body of ``function`` (made by :func:`scalar_code`) in ``try: <body> except
    (ArithmeticError, ValueError): return generic(<arguments>)``, in place."""
    name = _fresh(f"{function.name}_generic", function, namespace)
    namespace[name] = functools.partial(generic)  # not listed as the code's callee
    parameters = [a.id for a in function.args.args + function.args.kwonlyargs]
    rebound = set().union(*map(_written, function.body)) & set(parameters)
    given = {p: _fresh(f"{p}_given", function, namespace) for p in sorted(rebound)}
    keep = [assign(given[p], load(p)) for p in sorted(rebound)]  # the arguments, for generic
    values = [load(given.get(p, p)) for p in parameters]
    positional = len(function.args.args)
    keywords = dict(zip(parameters[positional:], values[positional:]))
    again = call(load(name), values[:positional], keywords)
    errors = gast.Tuple(elts=[load(e) for e in _ERRORS], ctx=gast.Load())
    handler = gast.ExceptHandler(
        type=errors,
        name=None,
        body=[comment("math raised where NumPy gives inf or nan"), gast.Return(value=again)],
    )
    attempt = gast.Try(body=function.body, handlers=[handler], orelse=[], finalbody=[])
    function.body = [*keep, attempt]


def _fresh(name: str, function: gast.FunctionDef, namespace: dict) -> str:
    taken = {n.id for n in walk(function) if type(n) is gast.Name} | set(namespace)
    while name in taken:
        name += "_"
    return name
