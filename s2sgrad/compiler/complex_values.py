"""Whether a function's derivative may run on complex values (docs/complex.md).

The generated code does not look at dtypes, so the transformer decides before it writes
any: a function is *complex-ready* when every step it takes has rules declared right for
complex values (``s2sgrad.rules.complex``). A function that makes complex values itself
(a complex literal or global, ``np.fft.fft``, ``x.astype(complex)``) must be complex-ready,
or it is refused here; a function that is not is refused when it is called with a complex
argument (``s2sgrad.api``), so that mode="auto" uses the tape, which checks every step.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import gast
import numpy as np

from s2sgrad.compiler.frontend import NOT_FOUND, ParsedFunction
from s2sgrad.compiler.node_kinds import of_kind, of_kinds
from s2sgrad.compiler.operations import Operation, OperationKind, classify
from s2sgrad.compiler.syntax import method_receiver, names_read, walk
from s2sgrad.errors import UnsupportedError
from s2sgrad.rules.registry import accepts_complex, makes_complex

__all__ = ["complex_readiness", "with_callees", "ComplexFacts"]

# calls resolved when the code runs (a function passed as an argument, a method) and
# user-written derivatives: what they run is not checked from here. A call of a user
# function is checked through its own derivative (``with_callees``).
_NOT_READY = (OperationKind.UNKNOWN, OperationKind.HIGHER_ORDER_CUSTOM)


class ComplexFacts(NamedTuple):
    """What ``complex_readiness`` found: whether the function's own steps may meet complex
    values, and whether it makes complex values itself."""

    ready: bool
    makes: bool


def complex_readiness(
    node: gast.FunctionDef,
    parsed: ParsedFunction,
    local_names: set[str],
    reads_complex: bool,
    varied: set[str],
    nodes: list[gast.AST] | None = None,
    classified: dict[int, tuple] | None = None,
) -> ComplexFacts:
    """Whether every differentiated step of ``node`` (in A-normal form; one that reads a
    ``varied`` name) may meet complex values.

    Raises ``UnsupportedError`` naming the first step that may not when the function
    makes complex values itself (``reads_complex``: a global or closure value it reads is
    complex). ``nodes``: ``walk(node)``, and ``classified``: the operations of values
    already classified (``{id(value): (value, operation)}``), when the caller has them.

    Example::

        complex_readiness(node, parsed, {"x", "t1"}, False, {"x", "t1"}).ready  # np.exp(x)
    """
    nodes = walk(node) if nodes is None else nodes
    classified = {} if classified is None else classified
    makes = reads_complex or _has_complex_literal(nodes)
    refused = None
    statements = list(of_kinds(nodes, _STATEMENTS))
    assigned = _Assignments(statements)
    for statement in statements:
        known = classified.get(id(statement.value))
        if known is not None and known[0] is statement.value:
            operation = known[1]
        else:
            operation = classify(statement.value, parsed, local_names)
        makes = makes or _makes_complex(operation, statement.value, parsed, assigned)
        if _list_append(statement):
            continue
        if refused is None and not _ready(operation) and names_read(statement.value) & varied:
            refused = (statement, operation)
    if makes and refused is not None:
        statement, operation = refused
        what = operation.description or _name(operation.primitive)
        error = UnsupportedError(
            f"{parsed.location(statement)}: this function computes with complex numbers, and "
            f"the derivative of {what} is not known to be right for complex values "
            "(docs/complex.md); write this step with the real and imaginary parts "
            "(np.real, np.imag) as float arrays"
        )
        error.tape_cannot_either = operation.kind is OperationKind.PRIMITIVE
        raise error
    return ComplexFacts(refused is None, makes)


def with_callees(facts: ComplexFacts, callees: list, parsed: ParsedFunction) -> bool:
    """Whether the derivative may meet complex values, given ``callees``: a ``(call node or
    None, ready)`` pair for each user function whose derivative it calls. Refuses, at the
    call, a function that makes complex values and passes them to a callee that is not
    complex-ready.

    Example::

        with_callees(ComplexFacts(True, False), [(call, True)], parsed)  # True
    """
    refused = next(((node, ready) for node, ready in callees if not ready), None)
    if refused is None:
        return facts.ready
    if facts.makes:
        error = UnsupportedError(
            f"{parsed.location(refused[0])}: this function computes with complex numbers, and "
            "a function it calls has a step whose derivative is not known to be right for "
            "complex values (docs/complex.md); write that step with the real and imaginary "
            "parts (np.real, np.imag) as float arrays"
        )
        raise error
    return False


def _list_append(statement: gast.stmt) -> bool:
    """``items.append(v)`` as a statement (a list comprehension is written so too): both
    sweeps follow it as a list's append, whose derivative moves ``v``'s tangent or
    cotangent unchanged, right for complex values as ``items.pop()`` is."""
    return type(statement) is gast.Expr and method_receiver(statement.value, "append") is not None


def _ready(operation: Operation) -> bool:
    if operation.kind is OperationKind.PRIMITIVE:
        return accepts_complex(operation.rule)
    return operation.kind not in _NOT_READY


def _name(primitive) -> str:
    module = getattr(primitive, "__module__", None) or ""
    name = getattr(primitive, "__qualname__", None) or repr(primitive)
    return f"np.{name}" if module.startswith("numpy") else name


_STATEMENTS = frozenset({gast.Assign, gast.Expr})  # what complex readiness looks at


def _has_complex_literal(nodes: list[gast.AST]) -> bool:
    """A complex literal among ``nodes`` (a function's walk), except as a slice's step
    (``np.mgrid[0:1:5j]`` counts points)."""
    literals = [c for c in of_kind(nodes, gast.Constant) if isinstance(c.value, complex)]
    if not literals:
        return False
    steps = {id(s.step) for s in of_kind(nodes, gast.Slice) if s.step is not None}
    return any(id(child) not in steps for child in literals)


def _makes_complex(
    operation: Operation, value: gast.expr, parsed: ParsedFunction, assigned: _Assignments
) -> bool:
    """Whether this step may make a complex value of real ones: a function declared so
    (``np.fft.fft``), or a ``dtype`` that is not known to be real."""
    if operation.kind is OperationKind.PRIMITIVE and makes_complex(operation.primitive):
        return True
    if type(value) is not gast.Call:
        return False
    dtypes = [k.value for k in value.keywords if k.arg == "dtype"]
    if type(value.func) is gast.Attribute and value.func.attr == "astype" and value.args:
        dtypes.append(value.args[0])
    return any(not _real_dtype(d, parsed, assigned) for d in dtypes)


class _Assignments:
    """Each name's value in the last ``name = value`` of the statements a function's walk
    found: made when a ``dtype`` first asks (most functions name none)."""

    def __init__(self, statements: list[gast.stmt]):
        self.statements = statements

    @functools.cached_property
    def values(self) -> dict[str, gast.expr]:
        return {
            s.targets[0].id: s.value
            for s in self.statements
            if type(s) is gast.Assign and len(s.targets) == 1 and type(s.targets[0]) is gast.Name
        }


_OF_VALUES = (np.result_type, np.promote_types)


def _of_a_value(node: gast.expr) -> bool:
    return type(node) is gast.Attribute and node.attr == "dtype"


def _real_dtype(node: gast.expr, parsed: ParsedFunction, assigned: _Assignments) -> bool:
    """Whether ``node`` is statically a real dtype, or one taken from values the function
    has (``x.dtype``, ``np.result_type(x, y)``), which adds no complex value of its own; a
    name bound once to ``np.dtype(...)`` is followed; a dtype computed otherwise, or passed
    in, may be complex."""
    if type(node) is gast.Name and node.id in assigned.values:
        node = assigned.values[node.id]
        if type(node) is gast.Call and parsed.resolve(node.func) in _OF_VALUES:
            return True
        if type(node) is not gast.Call or len(node.args) != 1:
            return _of_a_value(node)
        if parsed.resolve(node.func) is not np.dtype:
            return False
        node = node.args[0]
    if _of_a_value(node):
        return True
    if type(node) is gast.Constant:
        obj = node.value
    else:
        obj = parsed.resolve(node)
        if obj is NOT_FOUND:
            return False
    if obj is None:
        return True
    try:
        return np.dtype(obj).kind != "c"
    except TypeError:
        return False
