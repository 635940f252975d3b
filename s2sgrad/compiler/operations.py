"""Say what one A-normal-form right-hand side computes: which primitive, on which operands.

Both the reverse and forward transformers ask this module, so that ``x * y``,
``np.multiply(x, y)``, ``x.sum(axis=0)`` and ``x[i]`` are all seen as calls of one
registered primitive with a list of operand expressions.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import operator
import types
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import gast
import numpy as np

from s2sgrad import numpy_signatures, runtime
from s2sgrad.compiler.frontend import NOT_FOUND, ParsedFunction
from s2sgrad.compiler.frontend.parsed import ORIGINS
from s2sgrad.compiler.passes.anf import is_function_reference
from s2sgrad.compiler.syntax import (
    BINARY_OPERATORS,
    UNARY_OPERATORS,
    attribute,
    literal_keys,
    load,
    walk,
)
from s2sgrad.errors import KEYWORD_ONLY_ADVICE, NonDifferentiableError, UnsupportedError
from s2sgrad.naming import library_name
from s2sgrad.rules import get_rule
from s2sgrad.rules.registry import (
    keywords_without_derivative,
    library_function_without_rule,
    parameter_name,
    zero_is_right,
)
from s2sgrad.runtime.records import record_fields

__all__ = [
    "Operation",
    "OperationKind",
    "classify",
    "index_expression",
    "refuse_differentiated_keywords",
    "refuse_dispatched_keywords",
    "named_values_moved_last",
    "refuse_missing_entry",
    "keeps_arguments_inside",
    "dotted_name",
]


class OperationKind(Enum):
    """What kind of computation a right-hand side is."""

    COPY = "copy"  # a name
    CONSTANT = "constant"  # a literal, or a reference to a function
    PRIMITIVE = "primitive"  # a registered rule, or a declared non-differentiable function
    CALL = "call"  # a user function, differentiated in turn
    PACK = "pack"  # a tuple, list or dict literal
    COMPARISON = "comparison"  # a comparison or boolean logic
    UNKNOWN = "unknown"  # anything the transformer cannot see through
    NO_RULE = "no rule"  # a library function with no derivative rule
    LIST_POP = "list pop"  # items.pop() on a list used as working storage
    ITERATOR = "iterator"  # map, zip, iter, next…: values made only as they are read
    HIGHER_ORDER_CUSTOM = "higher-order custom"  # a custom derivative's code, differentiated


@dataclass
class Operation:
    """What a right-hand side does: its ``kind``, and for a call or primitive, what is
    called on which operands."""

    kind: OperationKind
    primitive: Any = None
    args: list[gast.expr] = field(default_factory=list)
    keywords: dict[str, gast.expr] = field(default_factory=dict)
    description: str = ""
    callee: gast.expr | None = None  # for calls: the expression that names the function
    keys: list | None = None  # for a dict literal: its keys, one per argument
    advice: str = ""  # for NO_RULE: what to do instead, where better than a custom rule
    # positions in ``args`` filled from keywords the user wrote (index → keyword)
    keyword_positions: dict[int, str] = field(default_factory=dict)

    @property
    def rule(self):
        return get_rule(self.primitive) if self.kind is OperationKind.PRIMITIVE else None

    @property
    def differentiable(self) -> bool:
        if self.kind in _ALWAYS_DIFFERENTIABLE:
            return True
        rule = self.rule
        return rule is None or rule.differentiable  # no rule: an error when differentiated


_ALWAYS_DIFFERENTIABLE = frozenset(
    {
        OperationKind.COPY,
        OperationKind.PACK,
        OperationKind.CALL,
        OperationKind.UNKNOWN,
        OperationKind.LIST_POP,
        OperationKind.ITERATOR,
    }
)


def classify(value: gast.expr, parsed: ParsedFunction, local_names: set[str]) -> Operation:
    """Describe the A-normal-form expression ``value``.

    Example::

        classify(parse_expression("np.sin(t1)"), parsed, {"t1"})
        # Operation(kind=OperationKind.PRIMITIVE, primitive=np.sin, args=[t1])
    """
    if isinstance(value, gast.Name):
        return Operation(OperationKind.COPY, args=[value])
    if isinstance(value, gast.Constant) or (
        isinstance(value, gast.UnaryOp) and isinstance(value.operand, gast.Constant)
    ):
        return Operation(OperationKind.CONSTANT)
    if isinstance(value, gast.BinOp):
        if _is_text(value.left):  # "%.3f" % loss
            return _text("%-formatting", [value.right])
        return _primitive(BINARY_OPERATORS[type(value.op)], [value.left, value.right])
    if isinstance(value, gast.UnaryOp):
        return _primitive(UNARY_OPERATORS[type(value.op)], [value.operand])
    if isinstance(value, gast.JoinedStr):
        return _text("an f-string", _names_formatted(value))
    if isinstance(value, (gast.Compare, gast.BoolOp)):
        return Operation(OperationKind.COMPARISON)
    if isinstance(value, (gast.Tuple, gast.List)):
        return Operation(OperationKind.PACK, args=list(value.elts))
    if isinstance(value, gast.Dict):
        if not literal_keys(value):
            return Operation(
                OperationKind.UNKNOWN, description="a dict whose keys are not distinct literals"
            )
        return Operation(
            OperationKind.PACK, args=list(value.values), keys=[k.value for k in value.keys]
        )
    if isinstance(value, gast.Subscript):
        trick = _index_trick(value, parsed, local_names)
        if trick is not None:
            return trick
        return _primitive(operator.getitem, [value.value, index_expression(value.slice)])
    if isinstance(value, gast.Attribute):
        if is_function_reference(value, local_names):
            return Operation(OperationKind.CONSTANT)
        descriptor = getattr(np.ndarray, value.attr, None)  # x.T, x.real, x.shape
        if isinstance(descriptor, types.GetSetDescriptorType) and get_rule(descriptor) is not None:
            return _primitive(descriptor, [value.value])
        if isinstance(value.value, gast.Name):  # p.w of a dataclass, a model object
            return _primitive(getattr, [value.value, gast.Constant(value=value.attr, kind=None)])
        return Operation(OperationKind.UNKNOWN, description=f"attribute .{value.attr}")
    if isinstance(value, gast.Call):
        return _call(value, parsed, local_names)
    if isinstance(value, gast.Lambda):
        return Operation(OperationKind.UNKNOWN, description=_LAMBDA)
    return Operation(OperationKind.UNKNOWN, description=type(value).__name__)


_LAMBDA = (
    "a lambda that reads differentiated values and is used as a value (kept in a "
    "container, passed on, or called where it is made): bind it once to a name and call "
    "it by that name"
)


# builtins whose values are made as they are read: a loop or comprehension over them is
# rewritten first (passes/loops.py), and what is left cannot be replayed backwards
_ITERATORS = (map, filter, zip, enumerate, reversed, iter, next)


def _primitive(primitive, args, keywords=None, keyword_positions=None) -> Operation:
    return Operation(
        OperationKind.PRIMITIVE,
        primitive,
        list(args),
        dict(keywords or {}),
        keyword_positions=dict(keyword_positions or {}),
    )


def _call(node: gast.Call, parsed: ParsedFunction, local_names: set[str]) -> Operation:
    keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
    if any(k.arg is None for k in node.keywords):
        if sum(k.arg is None for k in node.keywords) == 1 and node.keywords[-1].arg is None:
            # f(*args, **kwargs), a wrapper's call: which parameters the keywords fill is
            # known when it runs, so it is dispatched then (keywords must be constant)
            keywords[None] = node.keywords[-1].value
            target = (
                parsed.resolve(node.func) if is_function_reference(node.func, local_names) else None
            )
            description = f"{dotted_name(node.func)}(..., **...)"
            return Operation(
                OperationKind.UNKNOWN, target, list(node.args), keywords, description, node.func
            )
        return Operation(OperationKind.UNKNOWN, description="a call with **keyword arguments")
    func = node.func
    if is_function_reference(func, local_names):
        target = parsed.resolve(func)
        if target is NOT_FOUND:  # np.trapz on a NumPy without it, in a branch not taken:
            # dispatched when it runs, where Python raises as the function itself would
            return Operation(
                OperationKind.UNKNOWN,
                None,
                list(node.args),
                keywords,
                f"the undefined name {dotted_name(func)}",
                func,
            )
        if _is_custom_derivative_code(target):
            return Operation(
                OperationKind.HIGHER_ORDER_CUSTOM, target, [], keywords, dotted_name(func), func
            )
        rule = get_rule(target)
        args = list(node.args)
        if any(target is lazy for lazy in _ITERATORS) or inspect.isgeneratorfunction(target):
            return Operation(
                OperationKind.ITERATOR, target, args, keywords, f"{dotted_name(func)}(...)"
            )
        if rule is not None and rule.custom is not None:
            return Operation(OperationKind.CALL, target, args, keywords, dotted_name(func), func)
        if rule is not None:
            unknown = keywords_without_derivative(rule, keywords)
            if unknown:
                named = library_name(target) or dotted_name(func)
                description = f"{named} with the keyword {unknown[0]}="
                return Operation(OperationKind.NO_RULE, target, args, keywords, description)
            return _primitive(target, *_keywords_in_position(rule, list(node.args), keywords))
        if _is_library(target):
            module = getattr(target, "__module__", None) or ""
            library = "SciPy" if module.startswith("scipy") else "NumPy"
            named = library_name(target) or f"{dotted_name(func)} (from {library})"
            return Operation(OperationKind.NO_RULE, target, args, keywords, named)
        if getattr(target, "__module__", None) in ("math", "cmath"):
            return _scalar_math(target, args, keywords, func)
        if getattr(target, "__module__", None) == "statistics":
            return _exact_statistics(target, args, keywords, func)
        ndarray_method = _array_method(target)
        if ndarray_method is not None and isinstance(func, gast.Attribute):
            # ys.dot(x) of a global array: the rule of ndarray.dot, as for a local array
            receiver_and_args = [func.value, *args]
            return _primitive(
                ndarray_method,
                *_keywords_in_position(get_rule(ndarray_method), receiver_and_args, keywords),
            )
        if isinstance(target, types.MethodType) and isinstance(func, gast.Attribute):
            # obj.method(x) is method(obj, x): the receiver is read where the call is
            method = target.__func__
            receiver = func.value
            return Operation(
                OperationKind.CALL, method, [receiver, *args], keywords, dotted_name(func), func
            )
        if isinstance(target, types.MethodType) and hasattr(target.__func__, "__code__"):
            # step(x) of a global step = model.loss: the method of the object it is bound to
            receiver = gast.Attribute(value=func, attr="__self__", ctx=gast.Load())
            return Operation(
                OperationKind.CALL,
                target.__func__,
                [receiver, *args],
                keywords,
                dotted_name(func),
                func,
            )
        if callable(target) and hasattr(target, "__code__"):
            return Operation(OperationKind.CALL, target, args, keywords, dotted_name(func), func)
        if any(target is maker for maker in _TEXT_MAKERS):
            return _text(f"{dotted_name(func)}(...)", [*args, *keywords.values()])
        return Operation(OperationKind.UNKNOWN, target, args, keywords, dotted_name(func), func)
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
        if func.attr == "pop" and not node.args and not keywords:
            return Operation(OperationKind.LIST_POP, None, [func.value], {}, "list.pop()")
        ndarray_method = _ndarray_member(func.attr)
        if ndarray_method is not None and get_rule(ndarray_method) is not None:
            receiver_and_args = [func.value, *node.args]
            return _primitive(
                ndarray_method,
                *_keywords_in_position(get_rule(ndarray_method), receiver_and_args, keywords),
            )
        return Operation(
            OperationKind.UNKNOWN,
            None,
            list(node.args),
            keywords,
            f"the method .{func.attr}()",
            func,
        )
    if isinstance(func, gast.Attribute) and _is_text(func.value):  # "{:.3f}".format(loss)
        return _text(f"str.{func.attr}(...)", [*node.args, *keywords.values()])
    return Operation(
        OperationKind.UNKNOWN,
        None,
        list(node.args),
        keywords,
        "a call of a computed function",
        func,
    )


def _ndarray_member(name: str) -> Any:
    """``np.ndarray``'s own member ``name``, not one every object has (``__class__``,
    which read off the class is its metaclass, ``type``): ``p.__class__(...)`` is no call
    of ``type``.

    Example::

        _ndarray_member("sum")  # np.ndarray.sum; _ndarray_member("__class__") is None
    """
    owner = next((base for base in np.ndarray.__mro__ if name in vars(base)), object)
    return None if owner is object else getattr(np.ndarray, name, None)


# builtins that write a value as text or bytes, which carry no derivative, yet whose value
# can reach the result again (``float(str(x))``): refused where it does
_TEXT_MAKERS = (str, repr, format, ascii, bytes, bytearray)
_TEXT_ADVICE = (
    "text or bytes written from a value being differentiated carry no derivative, yet "
    "their value reaches the result here (as in float(str(x))); compute with the value "
    "itself, or wrap it in s2sgrad.stop_gradient if it should count as a constant"
)


def is_text(operation: Operation) -> bool:
    """Whether ``operation`` writes text or bytes (``str(x)``, an f-string, ``"%f" % x``).

    Example::

        is_text(classify(parse_expression("str(t1)"), parsed, {"t1"}))  # True
    """
    return operation.advice is _TEXT_ADVICE


def _text(description: str, args: list) -> Operation:
    """Text or bytes written from ``args``: differentiated around where their value is not
    needed (a message, a log line), refused where it reaches the result."""
    return Operation(OperationKind.NO_RULE, None, list(args), {}, description, advice=_TEXT_ADVICE)


def _is_text(node: gast.expr) -> bool:
    return isinstance(node, gast.Constant) and isinstance(node.value, (str, bytes))


def _names_formatted(value: gast.JoinedStr) -> list[gast.Name]:
    """The names an f-string reads (its parts are not in A-normal form)."""
    return [
        node
        for node in gast.walk(value)
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load)
    ]


def drop_receiver(operation: Operation) -> None:
    """``obj.method(x)``, classified as ``method(obj, x)``, dispatched as written when it
    runs: the bound method ``operation.callee`` is called with the arguments after the
    receiver, which ``operation.args`` starts with.

    Example::

        drop_receiver(operation)  # args [obj, x] -> [x]; callee obj.method
    """
    callee = operation.callee
    if isinstance(callee, gast.Attribute) and operation.args[:1] == [callee.value]:
        operation.args = operation.args[1:]


def _array_method(target: Any) -> Any:
    """The ``np.ndarray`` method with a rule that ``target`` is bound to an array
    (``ys.dot`` gives ``np.ndarray.dot``), or ``None``."""
    if not isinstance(target, types.BuiltinMethodType):
        return None
    if not isinstance(getattr(target, "__self__", None), np.ndarray):
        return None
    method = getattr(np.ndarray, target.__name__, None)
    return method if method is not None and get_rule(method) is not None else None


_INDEX_TRICKS = (
    type(np.r_).__mro__[1],  # AxisConcatenator: np.r_, np.c_
    type(np.mgrid).__mro__[1],  # nd_grid: np.mgrid, np.ogrid
    type(np.s_),  # IndexExpression: np.s_, np.index_exp
)


def _index_trick(node: gast.Subscript, parsed, local_names) -> Operation | None:
    """``np.r_[a, b]`` and ``np.c_[a, b]`` as calls of a primitive on the items; the other
    objects NumPy indexes to build arrays (``np.mgrid[a:b]``) as unknown operations."""
    if not is_function_reference(node.value, local_names):
        return None
    obj = parsed.resolve(node.value)
    if not isinstance(obj, _INDEX_TRICKS):
        return None
    name = dotted_name(node.value)
    items = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
    instead = "write np.concatenate, np.stack or np.column_stack instead"
    if isinstance(obj, type(np.s_)):
        return None  # np.s_[c, 1:, ::2] (as generated code writes indices) builds an index
    if obj is not np.r_ and obj is not np.c_:
        return Operation(OperationKind.UNKNOWN, description=f"{name}[...]; {instead}")
    if items and isinstance(items[0], gast.Constant) and isinstance(items[0].value, str):
        return Operation(
            OperationKind.UNKNOWN, description=f"{name}[...] with a string directive; {instead}"
        )
    args = []
    for item in items:
        if isinstance(item, gast.Slice):
            bounds = [b for b in (item.lower, item.upper, item.step) if b is not None]
            if not all(_is_literal(b) for b in bounds):
                return Operation(
                    OperationKind.UNKNOWN,
                    description=f"{name}[...] with a computed range; {instead}",
                )
            item = index_expression(item)
        args.append(item)
    return _primitive(obj, args)


def _is_literal(node: gast.expr) -> bool:
    if isinstance(node, gast.UnaryOp):
        node = node.operand
    return isinstance(node, gast.Constant)


def _keywords_in_position(rule, args: list, keywords: dict) -> tuple[list, dict, dict]:
    """Computed values passed by keyword (``np.full(shape=3, fill_value=v)``), moved to
    their positions: a rule returns cotangents for positional arguments only. Also returns
    which positions came from which keywords.

    The gaps take the rule's defaults; a value the rule has no position for stays a keyword.
    """
    computed = [k for k, v in keywords.items() if not isinstance(v, gast.Constant)]
    function = rule.vjp or rule.jvp
    if not computed or function is None:
        return args, keywords, {}
    try:
        parameters = list(inspect.signature(function).parameters.values())[2:]
    except (TypeError, ValueError):
        return args, keywords, {}
    positional = []
    for parameter in parameters:
        if parameter.kind is not parameter.POSITIONAL_OR_KEYWORD:
            break
        positional.append(parameter)
    last = max((i for i, p in enumerate(positional) if p.name in computed), default=-1)
    if last < len(args):
        return args, keywords, {}
    moved, left, positions = list(args), dict(keywords), {}
    for parameter in positional[len(args) : last + 1]:
        if parameter.name in left:
            positions[len(moved)] = parameter.name
            moved.append(left.pop(parameter.name))
        elif parameter.default is not parameter.empty and _is_plain(parameter.default):
            moved.append(gast.Constant(value=parameter.default, kind=None))
        else:  # a gap with no default to write: leave the call as it is
            return args, keywords, {}
    return moved, left, positions


def refuse_missing_entry(operation: Operation, index: int, parsed, statement) -> None:
    """A differentiated value whose rule gives it no derivative (the rule answers for the
    other arguments): refuse it rather than give it a zero, unless the rule declares the
    zero right (``zero_by_design``: np.full_like's ``a``). In generated code differentiated
    again, only keywords are checked: a condition or an index computed there from active
    values is an integer or a boolean, whose None is right, and the rules' own calls are
    checked to second order by their tests.

    Example::

        refuse_missing_entry(operation, 2, parsed, statement)
    """
    location = parsed.location(statement)
    rule = operation.rule
    if rule is not None and index in rule.zero_by_design:  # however it was passed
        return
    name = operation.keyword_positions.get(index)
    if name is not None:
        function = library_name(operation.primitive) or "the function"
        raise UnsupportedError(
            f"{location}: {function} has no "
            f"derivative in '{name}=', which is given a differentiated value; compute that "
            "part yourself with functions that have derivatives, or use "
            "s2sgrad.stop_gradient(...) on the value if it needs none"
        )
    if rule is None or zero_is_right(operation.primitive, rule, index):
        return
    if parsed.filename in ORIGINS:  # generated code
        return
    function = library_name(operation.primitive) or "the function"  # a look at every module
    raise UnsupportedError(
        f"{location}: {function} has no derivative in its argument "
        f"'{parameter_name(rule.vjp or rule.jvp, index)}', which is given a differentiated "
        "value; compute that part yourself with functions that have derivatives, or use "
        "s2sgrad.stop_gradient(...) on the value if it needs none"
    )


def refuse_refused_arguments(operation: Operation, positions, location: str) -> None:
    """A differentiated value in an argument whose derivative s2sgrad refuses
    (``registry.refused_argument``: np.interp's ``xp``): refused naming the statement.

    Example::

        refuse_refused_arguments(operation, {1}, "model.py:7")
    """
    rule = operation.rule
    refused = rule.refused if rule is not None else {}
    for index in sorted(set(positions) & refused.keys()):
        raise NonDifferentiableError(f"{location}: {refused[index]}")


def refuse_differentiated_keywords(operation: Operation, is_active, location: str) -> None:
    """A differentiated value left as a keyword argument (keyword-only, or with no position
    in the rule) would get no derivative: refuse it.

    Example::

        refuse_differentiated_keywords(operation, sweeps.is_active_expression, "f.py:3")
    """
    for name, value in operation.keywords.items():
        if is_active(value):
            advice = "pass it by position"
            if _keyword_only(operation.primitive, name):
                advice = KEYWORD_ONLY_ADVICE
            raise UnsupportedError(
                f"{location}: the differentiated value passed as '{name}=' has no derivative "
                f"rule in that position; {advice}, or use mode='tape'"
            )


def _keyword_only(function: Any, name: str) -> bool:
    """Whether ``function``'s parameter ``name`` can only be given by name."""
    try:
        parameter = numpy_signatures.signature(function).parameters.get(name)
    except (TypeError, ValueError):  # no signature to read
        return False
    return parameter is not None and parameter.kind is inspect.Parameter.KEYWORD_ONLY


def named_values_moved_last(operation: Operation, is_active) -> tuple[str, ...]:
    """Move the differentiated values a call dispatched at run time is given by name
    (``f(*args, w=y)``, not ``**kw``) to the end of its positional arguments; their names,
    for ``keywords_at_the_end(f, names)``, which passes them back by name.

    Example::

        named_values_moved_last(operation, sweep.is_active_expression)  # ('w',)
    """
    names = tuple(
        n
        for n, v in operation.keywords.items()
        if n is not None and is_active(v) and _positional_parameter(operation.primitive, n)
    )
    operation.args = [*operation.args, *(operation.keywords.pop(n) for n in names)]
    return names


def _positional_parameter(function: Any, name: str) -> bool:
    """Whether ``name`` may be a parameter ``function`` takes positionally (when the
    function is known only when it runs, or its signature cannot be read: it may)."""
    if function is None or function is types.SimpleNamespace:
        return True  # a SimpleNamespace's keywords are its attributes (3.13 reads **kwargs)
    if library_function_without_rule(function):
        return False  # a library function with no rule: refused as it is, with advice
    try:
        parameters = numpy_signatures.signature(function).parameters
    except (TypeError, ValueError):
        return True
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return name in parameters and parameters[name].kind in kinds


def refuse_dispatched_keywords(operation: Operation, is_active, location: str) -> None:
    """A call dispatched when it runs is given derivatives of its positional arguments
    only: a differentiated value passed to it by keyword is refused (in both sweeps).

    Example::

        refuse_dispatched_keywords(operation, sweep.is_active_expression, "f.py:3")
    """
    for name, value in operation.keywords.items():
        if is_active(value):
            raise UnsupportedError(
                f"{location}: pass differentiated values to {operation.description} "
                "positionally, not as "
                + (f"'{name}='" if name is not None else "**keywords")
                + ", or wrap one no derivative should flow through (the probabilities a "
                "sample is drawn with, say) in s2sgrad.stop_gradient(...); for a method "
                "taking values by keyword only (a NamedTuple's ._replace), use mode='auto' "
                "or mode='tape'"
            )


def _is_plain(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def keeps_arguments_inside(target: Any) -> bool:
    """Whether calling ``target`` makes an object that holds on to its arguments rather
    than data: ``functools.partial``, a lazy ``map``/``filter``, an instance of a class
    that is not a tuple, list, dict or dataclass. Cotangents cannot flow back through it.

    Example::

        keeps_arguments_inside(functools.partial)  # True
    """
    if target in (functools.partial, map, filter):
        return True
    if not isinstance(target, type) or target.__module__ in ("builtins", "numpy"):
        return False
    if record_fields(target) is not None:  # an object of the values it stores
        return False
    return not (issubclass(target, (tuple, list, dict)) or dataclasses.is_dataclass(target))


def _scalar_math(target, args, keywords, func) -> Operation:
    """``math.sin(x)``: Python's math module works on floats, and drops the derivative."""
    name = getattr(target, "__name__", "")
    twin = getattr(np, name, None)
    instead = f"use np.{name}, which is differentiated" if callable(twin) else "use NumPy"
    description = f"{dotted_name(func)} (Python's {target.__module__} module, for plain floats)"
    return Operation(
        OperationKind.NO_RULE, target, args, keywords, description, func, advice=instead
    )


def _exact_statistics(target, args, keywords, func) -> Operation:
    """``statistics.mean(xs)``: computed exactly, with fractions, which drops the derivative
    (refused at the user's line, not inside statistics.py). No advice is given, so mode
    "auto" tries the tape, which follows those that only compare and pick (``median``)."""
    name = getattr(target, "__name__", "")
    twin = getattr(np, name, None)
    instead = f"np.{name}" if callable(twin) else "NumPy"
    description = (
        f"{dotted_name(func)} (Python's statistics module, which computes exactly on plain "
        f"floats; use {instead})"
    )
    return Operation(OperationKind.NO_RULE, target, args, keywords, description, func)


def _is_custom_derivative_code(target) -> bool:
    """A user's derivative, as generated code calls it (differentiating it again)."""
    owner = getattr(target, "__self__", target)
    return isinstance(owner, (runtime.custom_vjp, runtime.custom_jvp_call))


def _is_library(target) -> bool:
    # SciPy's functions without a rule are refused like NumPy's, not transformed from source
    module = getattr(target, "__module__", None) or ""
    method_of_ufunc = isinstance(getattr(target, "__self__", None), np.ufunc)  # np.add.reduce
    library = module.split(".")[0] in ("numpy", "scipy")
    return isinstance(target, np.ufunc) or method_of_ufunc or library


def index_expression(index: gast.expr) -> gast.expr:
    """An index as an ordinary expression: slices become ``np.s_[...]``."""
    if any(isinstance(n, gast.Slice) for n in walk(index)):
        return gast.Subscript(value=attribute(load("np"), "s_"), slice=index, ctx=gast.Load())
    return index


def dotted_name(node: gast.expr) -> str:
    """``np.linalg.norm`` for that attribute chain: a name as the user wrote it."""
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Attribute):
        return f"{dotted_name(node.value)}.{node.attr}"
    return "<expression>"
