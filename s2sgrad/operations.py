"""Say what one A-normal-form right-hand side computes: which primitive, on which operands.

Both the reverse and forward transformers ask this module, so that ``x * y``,
``np.multiply(x, y)``, ``x.sum(axis=0)`` and ``x[i]`` are all seen as calls of one
registered primitive with a list of operand expressions.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import gast
import numpy as np

from s2sgrad.frontend import NOT_FOUND, ParsedFunction
from s2sgrad.passes.anf import is_function_reference
from s2sgrad.rules import get_rule
from s2sgrad.syntax import (
    BINARY_OPERATORS,
    UNARY_OPERATORS,
    attribute,
    literal_keys,
    load,
    walk,
)

__all__ = ["Operation", "classify", "index_expression"]


@dataclass
class Operation:
    """What a right-hand side does.

    ``kind`` is one of: ``copy`` (a name), ``constant``, ``primitive`` (a registered rule
    or a declared non-differentiable function), ``call`` (a user function to differentiate
    in turn), ``pack`` (a tuple, list or dict literal), ``comparison``, ``unknown`` (anything the
    transformer cannot see through), ``no rule`` (a library function with no derivative
    rule), ``list pop`` (``items.pop()`` on a list used as working storage).
    """

    kind: str
    primitive: Any = None
    args: list[gast.expr] = field(default_factory=list)
    keywords: dict[str, gast.expr] = field(default_factory=dict)
    description: str = ""
    callee: gast.expr | None = None  # for calls: the expression that names the function
    keys: list | None = None  # for a dict literal: its keys, one per argument

    @property
    def rule(self):
        return get_rule(self.primitive) if self.kind == "primitive" else None

    @property
    def differentiable(self) -> bool:
        if self.kind in ("copy", "pack", "call", "unknown", "list pop"):
            return True
        rule = self.rule
        return rule is None or rule.differentiable  # no rule: an error when differentiated


def classify(value: gast.expr, parsed: ParsedFunction, local_names: set[str]) -> Operation:
    """Describe the A-normal-form expression ``value``.

    Example::

        classify(parse_expression("np.sin(t1)"), parsed, {"t1"})
        # Operation(kind='primitive', primitive=np.sin, args=[t1])
    """
    if isinstance(value, gast.Name):
        return Operation("copy", args=[value])
    if isinstance(value, gast.Constant) or (
        isinstance(value, gast.UnaryOp) and isinstance(value.operand, gast.Constant)
    ):
        return Operation("constant")
    if isinstance(value, gast.BinOp):
        return _primitive(BINARY_OPERATORS[type(value.op)], [value.left, value.right])
    if isinstance(value, gast.UnaryOp):
        return _primitive(UNARY_OPERATORS[type(value.op)], [value.operand])
    if isinstance(value, (gast.Compare, gast.BoolOp)):
        return Operation("comparison")
    if isinstance(value, (gast.Tuple, gast.List)):
        return Operation("pack", args=list(value.elts))
    if isinstance(value, gast.Dict):
        if not literal_keys(value):
            return Operation("unknown", description="a dict whose keys are not distinct literals")
        return Operation("pack", args=list(value.values), keys=[k.value for k in value.keys])
    if isinstance(value, gast.Subscript):
        return _primitive(operator.getitem, [value.value, index_expression(value.slice)])
    if isinstance(value, gast.Attribute):
        if is_function_reference(value, local_names):
            return Operation("constant")
        descriptor = getattr(np.ndarray, value.attr, None)
        if descriptor is not None and get_rule(descriptor) is not None:
            return _primitive(descriptor, [value.value])
        return Operation("unknown", description=f"attribute .{value.attr}")
    if isinstance(value, gast.Call):
        return _call(value, parsed, local_names)
    return Operation("unknown", description=type(value).__name__)


def _primitive(primitive, args, keywords=None) -> Operation:
    return Operation("primitive", primitive, list(args), dict(keywords or {}))


def _call(node: gast.Call, parsed: ParsedFunction, local_names: set[str]) -> Operation:
    keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
    if any(k.arg is None for k in node.keywords):
        return Operation("unknown", description="a call with **keyword arguments")
    func = node.func
    if is_function_reference(func, local_names):
        target = parsed.resolve(func)
        if target is NOT_FOUND:
            return Operation("unknown", description=f"the undefined name {_dotted(func)}")
        if _is_custom_derivative_code(target):
            return Operation("higher-order custom", target, [], keywords, _dotted(func), func)
        rule = get_rule(target)
        args = list(node.args)
        if rule is not None and rule.custom is not None:
            return Operation("call", target, args, keywords, _dotted(func), func)
        if rule is not None:
            return _primitive(target, node.args, keywords)
        if _is_library(target):
            return Operation("no rule", target, args, keywords, f"{_dotted(func)} (from NumPy)")
        if callable(target) and hasattr(target, "__code__"):
            return Operation("call", target, args, keywords, _dotted(func), func)
        return Operation("unknown", target, args, keywords, _dotted(func), func)
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
        if func.attr == "pop" and not node.args and not keywords:
            return Operation("list pop", None, [func.value], {}, "list.pop()")
        method = getattr(np.ndarray, func.attr, None)
        if method is not None and get_rule(method) is not None:
            return _primitive(method, [func.value, *node.args], keywords)
        return Operation(
            "unknown", None, list(node.args), keywords, f"the method .{func.attr}()", func
        )
    return Operation(
        "unknown", None, list(node.args), keywords, "a call of a computed function", func
    )


def _is_custom_derivative_code(target) -> bool:
    """A user's derivative, as generated code calls it (differentiating it again)."""
    from s2sgrad import runtime

    owner = getattr(target, "__self__", target)
    return isinstance(owner, (runtime.custom_vjp, runtime.custom_jvp_call))


def _is_library(target) -> bool:
    module = getattr(target, "__module__", None) or ""
    return isinstance(target, np.ufunc) or module.split(".")[0] == "numpy"


def index_expression(index: gast.expr) -> gast.expr:
    """An index as an ordinary expression: slices become ``np.s_[...]``."""
    if any(isinstance(n, gast.Slice) for n in walk(index)):
        return gast.Subscript(value=attribute(load("np"), "s_"), slice=index, ctx=gast.Load())
    return index


def _dotted(node: gast.expr) -> str:
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "<expression>"
