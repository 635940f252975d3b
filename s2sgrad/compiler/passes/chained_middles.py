"""The middle operands of chained comparisons, which Python evaluates once.

``lo < f(x) < hi`` is rewritten as ``lo < f(x) and f(x) < hi``, which calls ``f`` twice:
harmless for a call without effects (``np.sum(x)``), wrong for one that draws a random
number, advances an iterator or changes state (a helper of the user's may do any of these).
:func:`name_middles` names such a middle operand before its statement where that keeps
Python's order of evaluation; :func:`repeatable` tells which calls may run twice, for the
chains left (those refused by the caller).

Example::

    # y = x * (0.0 < draw(r) < 0.5)   becomes
    # compared = draw(r); y = x * (0.0 < compared < 0.5)
    before = name_middles(statement, names, resolve)
"""

from __future__ import annotations

import builtins
import math
import types
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.effects import changes_state
from s2sgrad.compiler.frontend import NOT_FOUND, parse_function
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import load, store, walk

__all__ = ["name_middles", "repeatable"]

# builtins whose call changes nothing and gives the same value again
_PLAIN_BUILTINS = frozenset(
    getattr(builtins, name)
    for name in ("abs", "float", "int", "bool", "len", "max", "min", "sum", "round", "pow")
    + ("complex", "tuple", "list", "range", "divmod", "isinstance", "hash")
)
# array methods that change their array or give a different value when run again
_CHANGING_METHODS = frozenset({"sort", "fill", "resize", "put", "itemset", "setfield"}) | {
    "partition",
    "setflags",
}
# methods of NumPy's generators (and iterators) that draw or advance
_DRAWING_METHODS = frozenset(
    name
    for kind in (np.random.Generator, np.random.RandomState)
    for name in dir(kind)
    if not name.startswith("_") and name not in ("bit_generator", "spawn")
) | {"__next__", "send"}


def repeatable(call: gast.Call, resolve, seen: frozenset = frozenset()) -> bool:
    """Whether ``call`` may run twice (or earlier) with no change to what the code computes:
    a NumPy function that draws nothing, one of ``math``'s, a plain builtin, or an array's
    method that changes nothing (``x.sum()`` of a local value), or a function of the user's
    whose source shows it changes no state and calls only such code (one that draws, advances
    an iterator, prints or changes state is not repeatable).

    Example::

        repeatable(parse_expression("np.sum(x)"), resolve)  # True
        repeatable(parse_expression("draw(r)"), resolve)  # False
    """
    func = call.func
    target: Any = NOT_FOUND
    if resolve is not None and type(func) in (gast.Name, gast.Attribute):
        target = resolve(func)
    if target is NOT_FOUND or target is None:  # rng.normal() or x.sum() of a local value
        return type(func) is gast.Attribute and _array_method_repeatable(func.attr)
    if isinstance(target, np.ufunc):
        return True
    owner = getattr(target, "__self__", None)
    if isinstance(owner, (np.random.Generator, np.random.RandomState)):
        return False
    if isinstance(owner, (np.ndarray, np.generic)):  # W.sum() of a global array
        return _array_method_repeatable(getattr(target, "__name__", ""))
    if any(target is plain for plain in _PLAIN_BUILTINS):
        return True
    module = getattr(target, "__module__", None) or ""
    if module.startswith("numpy.random"):
        return False
    if module == "math" or getattr(math, getattr(target, "__name__", ""), None) is target:
        return True
    if isinstance(getattr(target, "__func__", target), types.FunctionType):
        return _users_function_repeatable(getattr(target, "__func__", target), seen)
    return module.startswith("numpy") and callable(target) and not isinstance(target, type)


def _array_method_repeatable(name: str) -> bool:
    return (
        name not in _DRAWING_METHODS and name not in _CHANGING_METHODS and hasattr(np.ndarray, name)
    )


def _users_function_repeatable(function: types.FunctionType, seen: frozenset) -> bool:
    if id(function) in seen:
        return True  # a call to itself: the first call answers
    try:
        parsed = parse_function(function)
    except Exception:  # no source to read: it may do anything
        return False
    if changes_state(function):
        return False
    seen = seen | {id(function)}
    for node in walk(parsed.node):
        kind = type(node)
        if kind in (gast.Yield, gast.YieldFrom, gast.Await):
            return False
        if kind is gast.Call and not repeatable(node, parsed.resolve, seen):
            return False
    return True


def name_middles(statement: gast.stmt, names: NameGenerator, resolve) -> list[gast.stmt]:
    """``t = f(x)`` for each chain ``lo < f(x) < hi`` of ``statement`` that Python evaluates
    whenever the statement runs (not in a branch of ``a if c else b``, a later operand of
    ``and``/``or``, a comprehension or a lambda), with the chain then reading ``t``. Only
    where running ``f(x)`` first keeps what the statement computes: nothing evaluated
    before it calls code that is not :func:`repeatable`, and, when ``f(x)`` itself is not,
    nothing but names, literals and reads of their attributes and items is evaluated before
    it (nothing whose value it may change as it runs).
    The chains' later middle operands, evaluated only if the comparison before holds, are
    left as they are."""
    roots = _evaluated_once(statement)
    if not roots:
        return []
    finder = _Finder(resolve)
    for root in roots:
        finder.visit(root, conditional=False)
    named = []
    for chain in finder.found:
        name = names.fresh("compared")
        middle = chain.comparators[0]
        chain.comparators[0] = load(name)
        assignment = gast.Assign(targets=[store(name)], value=middle, type_comment=None)
        named.append(gast.copy_location(assignment, statement))
    return named


def _evaluated_once(statement: gast.stmt) -> list[gast.expr]:
    """The expressions of ``statement`` Python evaluates once, before anything else of it."""
    kind = type(statement)
    if kind is gast.If:  # not an assert's test, which python -O does not run
        return [statement.test]
    if kind in (gast.Assign, gast.AnnAssign, gast.Return, gast.Expr):
        return [statement.value] if statement.value is not None else []
    if kind is gast.AugAssign:
        return [statement.target, statement.value]
    if kind is gast.For:
        return [statement.iter]
    return []


# reads of what names hold, as the chain's own lower bound ``self.lo`` or ``bounds[0]``:
# taken as unchanged by the middle operand
_READS = (gast.Attribute, gast.Subscript, gast.Slice, gast.Tuple, gast.List, gast.keyword)
_COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


class _Finder:
    """Walks expressions in Python's order of evaluation, noting what ran before each
    chain's middle operand."""

    def __init__(self, resolve):
        self.resolve = resolve
        self.found: list[gast.Compare] = []
        self.called = False  # a call that is not repeatable ran before this point
        self.computed = False  # something other than a name or a literal ran before

    def visit(self, node: gast.AST, conditional: bool) -> None:
        kind = type(node)
        if kind is gast.Name or kind is gast.Constant or _is_literal(node):
            return
        if kind is gast.Lambda:  # not run here; calling it is a call not repeatable
            return
        if kind is gast.Compare and len(node.ops) > 1 and not conditional:
            self.chain(node)
            return
        if kind is gast.IfExp:
            self.visit(node.test, conditional)
            self.visit(node.body, True)
            self.visit(node.orelse, True)
        elif kind is gast.BoolOp:
            first, *rest = node.values
            self.visit(first, conditional)
            for value in rest:
                self.visit(value, True)
        elif kind is gast.Dict:
            for key, value in zip(node.keys, node.values):
                if key is not None:
                    self.visit(key, conditional)
                self.visit(value, conditional)
        elif kind in _COMPREHENSIONS:
            for child in gast.iter_child_nodes(node):
                self.visit(child, True)
        elif kind is gast.Call:
            if not _is_reference(node.func):  # np.where, a name: only looked up
                self.visit(node.func, conditional)
            for child in (*node.args, *node.keywords):
                self.visit(child, conditional)
        else:
            for child in gast.iter_child_nodes(node):
                if isinstance(child, gast.AST):
                    self.visit(child, conditional)
        if kind not in _READS and isinstance(node, (gast.expr, gast.comprehension)):
            self.computed = True
        if kind is gast.Call and not repeatable(node, self.resolve):
            self.called = True

    def chain(self, node: gast.Compare) -> None:
        self.visit(node.left, False)
        middle = node.comparators[0]
        calls = [n for n in walk(middle) if type(n) is gast.Call]
        repeats = all(repeatable(c, self.resolve) for c in calls)
        if calls and not self.called and (repeats or not self.computed):
            self.found.append(node)  # run first, in the order the chains are met
        else:
            self.visit(middle, False)
        for later in node.comparators[1:]:
            self.visit(later, True)
        self.computed = True


def _is_reference(node: gast.expr) -> bool:
    """A name, or attributes of one (``np.linalg.norm``, ``x.sum``): looked up, not run."""
    while type(node) is gast.Attribute:
        node = node.value
    return type(node) is gast.Name


def _is_literal(node: gast.expr) -> bool:
    """``-1.0``: a sign on a literal."""
    return type(node) is gast.UnaryOp and type(node.operand) is gast.Constant
