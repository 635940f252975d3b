"""``x op= v`` on the tape, where plain NumPy would change an array that another name shares.

A tape value has no in-place operators, so ``x += v`` makes a new value and rebinds ``x``
(as ``x = x + v``). Plain NumPy changes the array itself, and every name sharing it (``w =
x``, a view such as ``x.T``, a list holding ``x``) sees the change. Where such a name is
read afterwards the two differ, and the tape would record a function other than the one
the code computes. The source transformer refuses that code (see
:mod:`s2sgrad.compiler.passes.aliases`). The function transforms promise NumPy's meaning, so while
they run a function on the tape (:func:`numpy_semantics`) the tape asks the same analysis
about the function running the update, and refuses it too. A ``GradientTape`` used
directly keeps its documented meaning: tape values are immutable, and ``x += v`` rebinds.

Example::

    def f(x):
        v = x * 2.0
        w = v
        v += 1.0            # refused on the tape: w is read below
        return np.sum(w)
"""

from __future__ import annotations

import ast
import contextlib
import dis
import numbers
import threading
import types
import weakref
from typing import Any

import gast
import numpy as np

from s2sgrad.compiler.frontend import NOT_FOUND, parse_function
from s2sgrad.compiler.passes.aliases import shared_in_place_updates
from s2sgrad.compiler.syntax import nested_statements
from s2sgrad.errors import S2SGradError, UnsupportedError

__all__ = [
    "plain_array_write",
    "numpy_semantics",
    "under_numpy_semantics",
    "refuse_shared_update",
    "refuse_value_class_patterns",
]

# code object -> {line: why its update is refused}
_REFUSED_LINES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_numpy_semantics = threading.local()


@contextlib.contextmanager
def numpy_semantics():
    """Inside: ``x op= v`` on an array-valued tape value is checked by
    :func:`refuse_shared_update`.

    Example::

        with numpy_semantics():
            out = f(*watched_args)
    """
    depth = getattr(_numpy_semantics, "depth", 0)
    _numpy_semantics.depth = depth + 1
    try:
        yield
    finally:
        _numpy_semantics.depth = depth


def under_numpy_semantics() -> bool:
    """Whether a function transform is running code on the tape in this thread."""
    return getattr(_numpy_semantics, "depth", 0) > 0


def refuse_shared_update(frame: Any) -> None:
    """Raise ``UnsupportedError`` if the line ``frame`` runs is an ``x op= v`` after which a
    name that may share ``x``'s memory is read (the frame is the user's, running it).

    Example::

        refuse_shared_update(sys._getframe())  # a no-op outside such an update
    """
    if frame is None:
        return
    code = frame.f_code
    refused = _REFUSED_LINES.get(code)
    if refused is None:
        refused = _REFUSED_LINES[code] = _shared_updates_by_line(frame)
    message = refused.get(frame.f_lineno)
    if message is not None:
        error = UnsupportedError(message)
        error.tape_cannot_either = True
        raise error


def _shared_updates_by_line(frame: Any) -> dict[int, str]:
    code = frame.f_code
    if code.co_name.startswith("<") and code.co_name != "<lambda>":  # a module, comprehension
        return {}
    cells = tuple(_cell(frame.f_locals, name) for name in code.co_freevars)
    running = types.FunctionType(code, frame.f_globals, code.co_name, None, cells)
    try:
        parsed = parse_function(running)
    except S2SGradError:  # no source: nothing to tell by
        return {}
    node = _with_matches_desugared(parsed)
    found = shared_in_place_updates(node, parsed.location, parsed.resolve)
    return {
        parsed.line_offset + statement.lineno: found[id(statement)]
        for statement in nested_statements(node.body)
        if id(statement) in found and type(statement) in (gast.AugAssign, gast.Assign)
    }


def _with_matches_desugared(parsed: Any) -> gast.FunctionDef:
    """The function with ``match`` statements as ``if`` chains, so that updates in their
    cases are seen (statements keep their lines)."""
    from s2sgrad.compiler.passes.desugar import desugar_matches
    from s2sgrad.compiler.passes.names import NameGenerator
    from s2sgrad.compiler.syntax import clone

    node = clone(parsed.node)
    taken = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    try:
        desugar_matches(node, NameGenerator(taken), parsed.location, parsed.resolve)
    except UnsupportedError:  # a pattern it cannot rewrite: look at the rest
        return parsed.node
    return node


def _cell(names: dict, name: str) -> types.CellType:
    return types.CellType(names[name]) if name in names else types.CellType()


# code object -> why a match statement in it is refused on the tape ("" for none)
_CLASS_PATTERNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_VALUE_TYPES = (numbers.Number, np.ndarray, np.generic)


def refuse_value_class_patterns(function: Any) -> None:
    """Raise ``UnsupportedError`` if ``function`` has a ``match`` class pattern such as
    ``case float():`` or ``case np.ndarray():``, or compares ``type(x)``: on the tape ``x``
    may be a tape value, which is neither, so the code would take another branch than it
    does with NumPy's values.

    Example::

        refuse_value_class_patterns(f)  # before running f on tape values
    """
    code = getattr(function, "__code__", None)
    if code is None:
        return
    message = _CLASS_PATTERNS.get(code)
    if message is None:
        message = _CLASS_PATTERNS[code] = (
            _value_class_pattern(function) if _matches_class(code) else ""
        )
    if message:
        raise UnsupportedError(message)


def _matches_class(code: Any) -> bool:
    """Whether ``code`` or a function defined in it may test a class pattern or compare a
    ``type(...)`` (cheap: bytecode)."""
    if "type" in code.co_names or any(
        i.opname == "MATCH_CLASS" for i in dis.get_instructions(code)
    ):
        return True
    return any(_matches_class(c) for c in code.co_consts if hasattr(c, "co_code"))


def _value_class_pattern(function: Any) -> str:
    try:
        parsed = parse_function(function)
    except S2SGradError:  # no source: nothing to tell by
        return ""
    for node in gast.walk(parsed.node):
        if isinstance(node, gast.Compare) and any(
            _is_type_call(part, parsed.resolve) for part in (node.left, *node.comparators)
        ):
            return (
                f"{parsed.location(node)}: type(...) of a value being differentiated on the "
                "tape is the tape's own class, not NumPy's, so this comparison would take "
                "another branch than the plain program; test isinstance(...) instead (which "
                "the tape answers as NumPy would), or differentiate with mode='s2s'"
            )
        if isinstance(node, gast.MatchClass):
            cls = parsed.resolve(node.cls)
            if cls is NOT_FOUND or (isinstance(cls, type) and issubclass(cls, _VALUE_TYPES)):
                return (
                    f"{parsed.location(node)}: a class pattern in a match statement would see "
                    "the tape's value, not the number or array it stands for; differentiate "
                    "with mode='s2s' (which tests the values themselves)"
                )
    return ""


def _is_type_call(node: gast.expr, resolve: Any) -> bool:
    """Whether ``node`` is ``type(value)``, the builtin with one argument."""
    return (
        isinstance(node, gast.Call)
        and len(node.args) == 1
        and not node.keywords
        and resolve(node.func) is type
    )


# ``y[index] = v`` into a plain array the function made, with ``v`` being differentiated ----

# code object -> {line: (name, compiled index) of a write the tape may take over, or None}
_PLAIN_WRITES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PURE_INDEX = (
    gast.Name,
    gast.Constant,
    gast.Attribute,
    gast.Subscript,
    gast.Tuple,
    gast.List,
    gast.Slice,
    gast.BinOp,
    gast.UnaryOp,
    gast.Compare,
    gast.expr_context,
    gast.operator,
    gast.unaryop,
    gast.cmpop,
)


def plain_array_write(frame: Any) -> tuple[str, Any] | None:
    """``(name, index)`` when ``frame`` runs ``name[index] = v`` on a plain array that the
    function itself made (its only binding is ``name = np.zeros(...)``, another call known
    to return a new array, or arithmetic), whose index has no calls (so it may be evaluated
    again), and after which no name sharing the array is read; else None. The tape then
    takes the array over as a tape value (see ``TapeValue._refuse_plain``).

    Example::

        plain_array_write(frame)  # ('Y', (0, 1)) while running Y[i, j] = total
    """
    code = frame.f_code
    writes = _PLAIN_WRITES.get(code)
    if writes is None:
        writes = _PLAIN_WRITES[code] = _plain_writes_by_line(frame)
    found = writes.get(frame.f_lineno)
    if found is None or found[0] in code.co_cellvars or found[0] not in frame.f_locals:
        return None
    refuse_shared_update(frame)
    name, index = found
    scope = {**frame.f_locals, "__s2sgrad_slice": slice}
    return name, eval(index, frame.f_globals, scope)  # noqa: S307 (the user's own index)


def _plain_writes_by_line(frame: Any) -> dict[int, Any]:
    code = frame.f_code
    if code.co_name.startswith("<"):  # a module, lambda or comprehension
        return {}
    cells = tuple(_cell(frame.f_locals, name) for name in code.co_freevars)
    running = types.FunctionType(code, frame.f_globals, code.co_name, None, cells)
    try:
        parsed = parse_function(running)
    except S2SGradError:
        return {}
    statements = list(nested_statements(parsed.node.body))
    made = _made_once_anew(parsed, statements)
    writes: dict[int, Any] = {}
    for statement in statements:
        line = parsed.line_offset + getattr(statement, "lineno", 0)
        target = statement.targets[0] if type(statement) is gast.Assign else None
        if target is None or len(statement.targets) != 1 or type(target) is not gast.Subscript:
            continue
        name = target.value.id if type(target.value) is gast.Name else None
        pure = all(isinstance(n, _PURE_INDEX) for n in gast.walk(target.slice))
        fits = name in made and pure
        writes[line] = (
            (name, _compiled_index(target.slice)) if fits and line not in writes else None
        )
    return writes


def _made_once_anew(parsed: Any, statements: list) -> set[str]:
    """The local names bound once only, by arithmetic or a call known to return a new
    array."""
    from s2sgrad.compiler.passes.aliases import fresh_result
    from s2sgrad.compiler.syntax import names_written

    counts: dict[str, int] = {}
    for statement in statements:
        for name in names_written(statement) if not _is_compound(statement) else ():
            counts[name] = counts.get(name, 0) + 1
        if isinstance(statement, (gast.For, gast.With, gast.Try)):  # loop targets and the like
            for name in _header_names(statement):
                counts[name] = counts.get(name, 0) + 2
    arguments = parsed.node.args
    parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    parameters += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    taken = {a.id for a in parameters if type(a) is gast.Name}
    made = set()
    for statement in statements:
        if type(statement) is not gast.Assign or len(statement.targets) != 1:
            continue
        target, value = statement.targets[0], statement.value
        if type(target) is not gast.Name or counts.get(target.id) != 1 or target.id in taken:
            continue
        if type(value) in (gast.BinOp, gast.UnaryOp) or (  # arithmetic makes a new array
            type(value) is gast.Call and fresh_result(parsed.resolve(value.func), value)
        ):
            made.add(target.id)
    return made


def _is_compound(statement: gast.stmt) -> bool:
    return isinstance(statement, (gast.For, gast.While, gast.If, gast.With, gast.Try))


def _header_names(statement: gast.stmt) -> set[str]:
    from s2sgrad.compiler.syntax import names_written

    if isinstance(statement, gast.For):
        return names_written(statement.target)
    found: set[str] = set()
    for item in getattr(statement, "items", ()):
        if item.optional_vars is not None:
            found |= names_written(item.optional_vars)
    for handler in getattr(statement, "handlers", ()):
        if handler.name is not None:
            found |= names_written(handler.name)
    return found


class _SlicesAsCalls(ast.NodeTransformer):
    def visit_Slice(self, node: ast.Slice) -> ast.Call:
        self.generic_visit(node)
        parts = [
            p if p is not None else ast.Constant(None) for p in (node.lower, node.upper, node.step)
        ]
        return ast.Call(ast.Name("__s2sgrad_slice", ast.Load()), parts, [])


def _compiled_index(index: gast.expr) -> Any:
    """Code that evaluates an index expression (``i:i + h, j``) in the user's frame."""
    expression = _SlicesAsCalls().visit(gast.gast_to_ast(index))
    tree = ast.fix_missing_locations(ast.Expression(expression))
    return compile(tree, "<s2sgrad index>", "eval")
