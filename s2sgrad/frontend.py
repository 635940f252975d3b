"""Read a function's source, parse it with gast, and resolve the names it uses.

The transformer never guesses what ``np.sin`` means: every free name (and attribute
chain on one, like ``np.linalg.norm``) is resolved against the function's globals,
closure cells and builtins before any code is written.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass, field
from typing import Any

import gast

from s2sgrad.errors import S2SGradError, where
from s2sgrad.python_ast import to_gast
from s2sgrad.syntax import walk

__all__ = ["ParsedFunction", "parse_function", "read_definition", "NOT_FOUND"]

NOT_FOUND = object()


@dataclass
class ParsedFunction:
    """A function's syntax tree with everything needed to resolve its names."""

    function: Any
    node: gast.FunctionDef
    filename: str
    line_offset: int  # add to a node's lineno to get the line in ``filename``
    globals: dict
    closure: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.node.name

    def location(self, node: gast.AST | None = None) -> str:
        """``file:line`` of ``node`` (or of the function) in the user's file."""
        line = getattr(node, "lineno", None) if node is not None else None
        here = where(self.filename, self.line_offset + (line or 1))
        from s2sgrad.codegen import ORIGINS  # generated code differentiated again

        origin = ORIGINS.get(self.filename)
        return here if origin is None else f"{origin} (in its derivative, {here})"

    def source_line(self, node: gast.AST) -> str:
        """The user's source line that ``node`` came from, stripped."""
        line = getattr(node, "lineno", None)
        if line is None:
            return ""
        return linecache.getline(self.filename, self.line_offset + line).strip()

    def resolve(self, node: gast.AST) -> Any:
        """The object a Name or an attribute chain on a free name refers to, or NOT_FOUND."""
        if isinstance(node, gast.Name):
            return self.resolve_name(node.id)
        if isinstance(node, gast.Attribute):
            base = self.resolve(node.value)
            if base is NOT_FOUND:
                return NOT_FOUND
            return getattr(base, node.attr, NOT_FOUND)
        return NOT_FOUND

    def resolve_name(self, name: str) -> Any:
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, NOT_FOUND)


def unwrap(function: Any, containers: frozenset = frozenset()) -> Any:
    """The plain Python function behind a method, or behind a transform (its generated code).

    Transforms such as ``grad(f)`` hand over the generic code they generated, so that
    differentiating them again is source transformation of generated source.
    """
    if isinstance(function, types.MethodType):
        return function.__func__
    generic = getattr(function, "generic_function", None)
    if callable(generic):
        return generic(containers)
    return function


def parse_function(function: Any, containers: frozenset = frozenset()) -> ParsedFunction:
    """Parse ``function``'s source into a gast FunctionDef (lambdas become functions).

    Example::

        parsed = parse_function(lambda x: x * 2)
        parsed.node.name  # '<lambda>' turned into a def named 'lambda_'
    """
    function = unwrap(function, containers)
    code = getattr(function, "__code__", None)
    if code is None:
        raise S2SGradError(
            f"{_describe(function)}: s2sgrad can only read the source of Python functions; "
            "register a derivative with @s2sgrad.derivative(of=...) or use mode='tape'"
        )
    try:
        lines, first_line, tree = read_definition(function)
    except (OSError, TypeError) as error:
        raise S2SGradError(
            f"{where(code.co_filename, code.co_firstlineno)}: no source is available for "
            f"{function.__qualname__} ({error}); define it in a file, or use mode='tape'"
        ) from None
    filename = code.co_filename
    source = textwrap.dedent("".join(lines))
    if function.__name__ == "<lambda>":
        first = lines[0]
        indent = (
            len(first)
            - len(first.lstrip())
            - (len(source.splitlines()[0]) - len(source.splitlines()[0].lstrip()))
        )
        node = _lambda_node(source, code, filename, first_line, indent)
    else:
        node = _function_node(source, tree, function, filename, first_line)
    closure = {}
    if function.__closure__:
        for name, cell in zip(code.co_freevars, function.__closure__):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # an empty cell: a name defined later in the enclosing scope
                continue
    return ParsedFunction(
        function=function,
        node=node,
        filename=filename,
        line_offset=first_line - 1,
        globals=function.__globals__,
        closure=closure,
    )


def read_definition(function) -> tuple[list[str], int, ast.Module | None]:
    """The lines of ``function``'s definition (decorators included), the first one's
    number, and the dedented definition parsed (None if it was not parsed here).

    Like ``inspect.getsourcelines`` (and raising what it raises), without tokenizing: a
    ``def`` ends on the last line its code (or any code nested in it) has a position on;
    trailing lines without code (comments, a final ``pass``) do not change what the
    function does.

    Example::

        lines, first, tree = read_definition(read_definition)
    """
    code = getattr(function, "__code__", None)
    if code is None:
        raise TypeError(f"{function!r} is not a Python function")
    if function.__name__ != "<lambda>":
        lines = linecache.getlines(code.co_filename, function.__globals__)
        last = _last_line(code)
        first = code.co_firstlineno
        if lines and last is not None and first <= last <= len(lines):
            chunk = lines[first - 1 : last]
            text = "".join(chunk)
            try:
                return chunk, first, ast.parse(text if text[:1] > " " else textwrap.dedent(text))
            except SyntaxError:
                pass
    return (*inspect.getsourcelines(function), None)


def _last_line(code: types.CodeType) -> int | None:
    if hasattr(code, "co_positions"):
        ends = [end for _, end, _, _ in code.co_positions() if end is not None]
    else:  # Python 3.10: start lines only; a cut statement fails to parse, and inspect reads it
        ends = [line for _, _, line in code.co_lines() if line is not None]
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            ends.append(_last_line(constant) or 0)
    return max(ends, default=None)


def _function_node(source, tree, function, filename, first_line) -> gast.FunctionDef:
    try:
        module = to_gast(tree if tree is not None else ast.parse(source))
    except SyntaxError as error:
        raise S2SGradError(
            f"{where(filename, first_line)}: could not parse the source of "
            f"{function.__qualname__}: {error.msg}"
        ) from None
    node = module.body[0]
    if not isinstance(node, gast.FunctionDef):
        raise S2SGradError(
            f"{where(filename, first_line)}: {function.__qualname__} is not defined by a plain "
            "'def' (async functions and classes are not differentiable); use mode='tape'"
        )
    node.decorator_list = []
    return node


def _lambda_node(source, code, filename, first_line, indent) -> gast.FunctionDef:
    """Find the lambda whose code object is ``code`` in its source lines.

    ``indent`` is how much indentation dedenting removed, to compare columns.
    """
    module, wrapped = _parse_fragment(source)
    if module is None:
        raise S2SGradError(
            f"{where(filename, first_line)}: could not isolate the lambda's source; "
            "define it with 'def' instead"
        )
    params = list(code.co_varnames[: code.co_argcount])
    line = code.co_firstlineno - first_line + 1
    candidates = [
        node
        for node in walk(module)
        if isinstance(node, gast.Lambda)
        and node.lineno == line
        and [a.id for a in node.args.args] == params
    ]
    if len(candidates) > 1:  # several lambdas on one line: match the columns of `code`
        columns = {pos[2] for pos in code.co_positions() if pos[2] is not None}
        shift = indent - (1 if wrapped else 0)
        candidates = [c for c in candidates if c.body.col_offset + shift in columns] or (
            candidates[:1]
        )
    if not candidates:
        raise S2SGradError(
            f"{where(filename, code.co_firstlineno)}: could not find the lambda in its source "
            "line; define it with 'def' instead"
        )
    lam = candidates[0]
    ret = gast.Return(value=lam.body)
    gast.copy_location(ret, lam.body)
    node = gast.FunctionDef(
        name="lambda_",
        args=lam.args,
        body=[ret],
        decorator_list=[],
        returns=None,
        type_comment=None,
        type_params=[],
    )
    return gast.copy_location(node, lam)


def _parse_fragment(source: str) -> tuple[gast.Module | None, bool]:
    """Parse a source fragment that may be cut mid-expression (lambdas inside calls)."""
    lines = source.splitlines()
    for end in range(len(lines), 0, -1):
        text = "\n".join(lines[:end])
        for attempt in (text, text.rstrip().rstrip(",") + ")"):
            try:
                return gast.parse(attempt), False
            except SyntaxError:
                continue
        try:  # "(" + the first line, stripped: columns move by the stripped amount, less one
            stripped = text.lstrip()
            return gast.parse("(" + stripped + "\n)"), len(text) - len(stripped) != 0
        except SyntaxError:
            continue
    return None, False


def _describe(function: Any) -> str:
    return getattr(function, "__qualname__", None) or repr(function)
