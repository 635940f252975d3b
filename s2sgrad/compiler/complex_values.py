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
from s2sgrad.compiler.syntax import method_receiver, names_read, names_written, walk
from s2sgrad.errors import UnsupportedError
from s2sgrad.naming import describe
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
    unready: tuple | None = None  # (statement, operation): its first step that is not ready


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
    ops: dict[int, tuple[Operation, bool]] = {}  # id(statement) -> (operation, makes complex)
    for statement in statements:
        known = classified.get(id(statement.value))
        if known is not None and known[0] is statement.value:
            operation = known[1]
        else:
            operation = classify(statement.value, parsed, local_names)
        making = _makes_complex(operation, statement.value, parsed, assigned)
        ops[id(statement)] = (operation, making)
        makes = makes or making
        if _list_append(statement):
            continue
        if refused is None and not _ready(operation) and names_read(statement.value) & varied:
            refused = (statement, operation)
    on_complex = None
    if makes and refused is not None:
        on_complex = _first_on_complex_values(
            nodes, statements, refused, reads_complex, varied, ops
        )
    if on_complex is not None:
        raise _not_ready(parsed, *on_complex)
    return ComplexFacts(refused is None, makes, refused)


# steps whose results are all they make: what they read reaches the names they bind
_FOLLOWED = frozenset(
    {
        OperationKind.COPY,
        OperationKind.CONSTANT,
        OperationKind.PRIMITIVE,
        OperationKind.PACK,
        OperationKind.COMPARISON,
        OperationKind.LIST_POP,
    }
)
# real for complex values too
_REAL_RESULTS = (np.abs, np.real, np.imag, np.angle, np.ndarray.real, np.ndarray.imag)
_NESTED_SCOPES = frozenset({gast.FunctionDef, gast.Lambda, gast.ClassDef})
_UNKNOWN = None  # a step whose effects the names cannot say


def _first_on_complex_values(
    nodes: list[gast.AST],
    statements: list[gast.stmt],
    refused: tuple[gast.stmt, Operation],
    reads_complex: bool,
    varied: set[str],
    ops: dict[int, tuple[Operation, bool]],
) -> tuple[gast.stmt, Operation] | None:
    """The first step that is not complex-ready and may meet a complex value, given
    ``refused``, the first that is not complex-ready at all (on any value).

    A name may hold a complex value when a step that makes one, or that reads a name that
    may, binds it (whatever the order: a loop carries values back); a step on real values
    alone keeps its real rule (``np.sort(y)`` beside ``z = x + 1j * y``). Where the names
    cannot say, every step is taken to meet complex values: a complex global, a function
    defined inside, a call of the user's or a method given a complex value, a complex value
    written into a container or an object (``items[i] = z``: its other names would not
    show it).
    """
    if reads_complex or next(of_kinds(nodes[1:], _NESTED_SCOPES), None) is not None:
        return refused
    steps = []  # (makes a complex value, names read, names bound or _UNKNOWN)
    for statement in statements:
        operation, making = ops[id(statement)]
        making = making or _has_complex_literal(walk(statement.value))
        steps.append((making, names_read(statement), _binds(statement, operation)))
    for loop in of_kind(nodes, gast.For):
        steps.append((False, names_read(loop.iter), names_written(loop.target)))
    for statement in of_kind(nodes, gast.AugAssign):
        bound = names_written(statement) if type(statement.target) is gast.Name else _UNKNOWN
        steps.append((_has_complex_literal(walk(statement)), names_read(statement), bound))
    complex_names: set[str] = set()
    changed = True
    while changed:
        changed = False
        for making, read, bound in steps:
            if making or read & complex_names:
                if bound is _UNKNOWN:
                    return refused
                changed = changed or not bound <= complex_names
                complex_names |= bound
    for statement in statements:
        operation, _ = ops[id(statement)]
        read = names_read(statement.value)
        if not _ready(operation) and not _list_append(statement) and read & varied & complex_names:
            return statement, operation
    return None


def _binds(statement: gast.stmt, operation: Operation) -> set[str] | None:
    """The names a step binds to what it makes, or ``_UNKNOWN``: a step that is not
    followed, or that writes into a container or an object (``buf[i] = v``,
    ``items.append(v)``, ``obj.w = v``)."""
    if operation.kind not in _FOLLOWED and not _list_append(statement):
        return _UNKNOWN
    if operation.kind is OperationKind.PRIMITIVE and any(
        operation.primitive is real for real in _REAL_RESULTS
    ):
        return set()
    numpy = operation.kind is OperationKind.PRIMITIVE and _of_numpy(operation.primitive)
    for node in walk(statement):
        kind = type(node)
        if kind in (gast.Subscript, gast.Attribute) and type(node.ctx) is gast.Store:
            return _UNKNOWN
        method = not numpy and kind is gast.Call and type(node.func) is gast.Attribute
        if method and (node.args or node.keywords):  # a method given values may keep them
            return _UNKNOWN
    return names_written(statement)


def _of_numpy(primitive) -> bool:
    """A NumPy function or array method: what it writes into (``out=``, ``np.copyto``)
    keeps its dtype."""
    if isinstance(primitive, np.ufunc) or getattr(primitive, "__objclass__", None) is np.ndarray:
        return True
    module = getattr(primitive, "__module__", None) or type(primitive).__module__ or ""
    return module.startswith("numpy")


def with_callees(facts: ComplexFacts, callees: list, parsed: ParsedFunction) -> ComplexFacts:
    """What the derivative may meet, given ``callees``: a ``(call node or None, ready,
    makes)`` triple for each user function whose derivative it calls. Refuses, at the
    call, a function that makes complex values (or calls one that does) and passes them to
    a callee that is not complex-ready; and, at the step, a function whose step that is not
    complex-ready may read the complex result of a callee that makes one.

    Example::

        with_callees(ComplexFacts(True, False), [(call, True, False)], parsed).ready  # True
    """
    makes = facts.makes or any(callee_makes for _, _, callee_makes in callees)
    if makes and not facts.makes and facts.unready is not None:
        raise _not_ready(parsed, *facts.unready)  # a callee's complex result may reach it
    refused = next(((node, ready) for node, ready, _ in callees if not ready), None)
    if refused is None:
        return ComplexFacts(facts.ready, makes, facts.unready)
    if makes:
        raise UnsupportedError(
            f"{parsed.location(refused[0])}: this function computes with complex numbers, and "
            "a function it calls has a step whose derivative is not known to be right for "
            "complex values (docs/complex.md); write that step with the real and imaginary "
            "parts (np.real, np.imag) as float arrays"
        )
    return ComplexFacts(False, makes, facts.unready)


def _not_ready(parsed: ParsedFunction, statement: gast.stmt, operation: Operation):
    what = operation.description or describe(operation.primitive)
    return UnsupportedError(  # the tape looks at each value: mode="auto" uses it
        f"{parsed.location(statement)}: this function computes with complex numbers, and "
        f"the derivative of {what} is not known to be right for complex values "
        "(docs/complex.md); write this step with the real and imaginary parts "
        "(np.real, np.imag) as float arrays"
    )


def _list_append(statement: gast.stmt) -> bool:
    """``items.append(v)`` as a statement (a list comprehension is written so too): both
    sweeps follow it as a list's append, whose derivative moves ``v``'s tangent or
    cotangent unchanged, right for complex values as ``items.pop()`` is."""
    return type(statement) is gast.Expr and method_receiver(statement.value, "append") is not None


def _ready(operation: Operation) -> bool:
    if operation.kind is OperationKind.PRIMITIVE:
        return accepts_complex(operation.rule)
    return operation.kind not in _NOT_READY


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
