"""Read a function's definition from its file and parse it into a gast ``FunctionDef``.

The lines are the ``def``'s (its last line is the last one its code has a position on, so
no tokenizing), checked to compile to the code the function runs
(:mod:`.same_code`); expressions nested too deep are split into statements
(:mod:`.deep_expressions`); a lambda is found by its line and columns (:mod:`.lambdas`).
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import operator
import re
import textwrap
import tokenize
import types
from typing import Any

import gast

import s2sgrad.compiler.frontend.lambdas as lambdas  # called through it: a test replaces one
from s2sgrad.compiler.frontend.deep_expressions import (
    may_be_deep,
    split_deep_expressions,
    statement_lists,
)
from s2sgrad.compiler.frontend.parsed import ParsedFunction
from s2sgrad.compiler.frontend.same_code import compiles_to, runs_as
from s2sgrad.compiler.primitive_callers import differentiated_by_its_rule, primitive_caller
from s2sgrad.compiler.python_ast import into_gast
from s2sgrad.errors import S2SGradError, UnsupportedError, where
from s2sgrad.rules.registry import get_rule
from s2sgrad.running import function_origin

__all__ = ["parse_function", "read_definition", "unwrap"]


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
    matrix = getattr(function, "__s2sgrad_matrix__", None)
    if matrix is not None:  # sg.jacfwd(sg.jacobian(f)): its wrapper is s2sgrad's own code
        origin = function_origin(function)
        raise UnsupportedError(
            f"{origin + ': ' if origin else ''}a Jacobian made by {matrix} is differentiated "
            "again here; source transformation differentiates gradients, not Jacobians: "
            "for second derivatives use sg.hessian(f) or sg.jacfwd(sg.grad(f)), or use "
            "mode='tape'"
        )
    if getattr(function, "__s2sgrad_vmapped__", False):  # sg.jacobian(sg.vmap(f)): no source
        origin = function_origin(function)
        raise UnsupportedError(
            f"{origin + ': ' if origin else ''}a function made by sg.vmap is differentiated "
            "here; source transformation differentiates Python functions, not vmap's "
            "batching: map the derivative instead (sg.vmap(sg.grad(f)), sg.vmap(sg.jacfwd(f))), "
            "or use mode='auto' or mode='tape'"
        )
    if differentiated_by_its_rule(function):  # sg.vjp(np.linalg.norm, x): by its rule
        function = primitive_caller(function)
    made = getattr(function, "__s2sgrad_parsed__", None)
    if made is not None:  # a checkpointed loop's body (passes/checkpointed_loops.py)
        return made()
    code = getattr(function, "__code__", None)
    if code is None:
        if get_rule(function) is not None:  # sg.grad(np.sin): a rule, but no source
            raise UnsupportedError(
                f"{_describe(function)} has a derivative rule but no Python source to "
                "transform; differentiate a function of yours that calls it "
                "('def f(x): return np.sin(x)'), or use mode='auto' or mode='tape'"
            )
        if isinstance(function, functools.partial):
            wrapped = getattr(function.func, "__name__", "f")
            inner = getattr(function.func, "__code__", None)
            where = f"{inner.co_filename}:{inner.co_firstlineno}: " if inner else ""
            raise UnsupportedError(
                f"{where}functools.partial({wrapped}): sg.vjp, sg.jvp and sg.hvp take the "
                f"function they call with its arguments; pass a lambda calling {wrapped} "
                "with the "
                f"arguments this partial binds (lambda x: {wrapped}(x, ...)), or use "
                "mode='tape' (sg.grad, sg.jacobian and sg.hessian take partials)"
            )
        raise UnsupportedError(
            f"{_describe(function)}: s2sgrad can only read the source of Python functions; "
            "register a derivative with @s2sgrad.derivative(of=...) or use mode='tape'"
        )
    node, first_line = _checked_node(function, code)
    filename = code.co_filename
    closure = {}
    if function.__closure__:
        for name, cell in zip(code.co_freevars, function.__closure__):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # an empty cell: a name defined later in the enclosing scope
                continue
    if "__class__" in closure:
        _explicit_super(node)
    return ParsedFunction(
        function=function,
        node=node,
        filename=filename,
        line_offset=first_line - 1,
        globals=function.__globals__,
        closure=closure,
    )


def _explicit_super(node: gast.FunctionDef) -> None:
    """``super()`` in a method becomes ``super(__class__, self)``: Python finds the class
    and the instance of a bare ``super()`` in the method's own frame, which the generated
    function is not (the class is in the closure, bound as ``__class__``)."""
    parameters = node.args.posonlyargs + node.args.args
    if not parameters:
        return
    first = parameters[0].id
    for sub in gast.walk(node):
        if (
            isinstance(sub, gast.Call)
            and isinstance(sub.func, gast.Name)
            and sub.func.id == "super"
            and not sub.args
            and not sub.keywords
        ):
            sub.args = [
                gast.Name(id="__class__", ctx=gast.Load(), annotation=None, type_comment=None),
                gast.Name(id=first, ctx=gast.Load(), annotation=None, type_comment=None),
            ]


def _checked_node(function: Any, code: types.CodeType) -> tuple[gast.FunctionDef, int]:
    """``function``'s syntax tree and first line, from source that compiles to the code it
    runs: source edited after the function was defined is refused, not differentiated.

    ``linecache`` may still hold the lines the function was compiled from, which are the
    right ones; only when they do not match is the file read again.
    """
    generated = getattr(function, "__s2sgrad_generated__", None) is not None
    for reread in (False, True):
        if reread:
            linecache.checkcache(code.co_filename)
        try:  # read again, the lines are found by tokenizing: code a return leaves dead
            # at the end (after a try whose every way out returns) has no position
            lines, first_line, tree = read_definition(function, by_tokens=reread)
        except (OSError, TypeError) as error:
            raise S2SGradError(
                f"{where(code.co_filename, code.co_firstlineno)}: no source is available for "
                f"{function.__qualname__} ({error}); define it in a file, or use mode='tape'"
            ) from None
        except (SyntaxError, IndexError, ValueError, tokenize.TokenError):
            continue  # the lines at the code's position are not a whole definition
        try:
            made, definition = _definition_node(function, code, lines, first_line, tree)
        except S2SGradError as error:
            if reread and _names_the_function(lines, code):
                raise error from None  # the function's own source, which cannot be read
            continue
        if generated or runs_as(definition, "".join(lines), function, code):
            return made(), first_line
    raise UnsupportedError(
        f"{where(code.co_filename, code.co_firstlineno)}: the source of "
        f"{function.__qualname__} on disk no longer matches the code that runs (the file "
        "was edited after it was imported); reload the module (importlib.reload) or "
        "restart, or use mode='tape'"
    )


def _definition_node(function, code, lines, first_line, tree):
    """What makes the gast FunctionDef the transformer works on (called once the ``ast``
    definition is compared: it may make it of that very tree), and the ``ast`` definition
    (a FunctionDef, or a Lambda) it came from, to compile and compare with ``code``."""
    filename = code.co_filename
    source = textwrap.dedent("".join(lines))
    if code.co_name == "<lambda>":  # functools.wraps may have renamed the function
        first = lines[0]
        indent = (
            len(first)
            - len(first.lstrip())
            - (len(source.splitlines()[0]) - len(source.splitlines()[0].lstrip()))
        )

        def runs_as_code(lam: gast.Lambda) -> bool:
            return compiles_to(gast.gast_to_ast(lam), "".join(lines), function, code)

        node, lam = lambdas.lambda_node(source, code, filename, first_line, indent, runs_as_code)
        return (lambda: node), gast.gast_to_ast(lam)
    if tree is None:
        try:
            tree = ast.parse(source)
        except SyntaxError as error:
            raise S2SGradError(
                f"{where(filename, first_line)}: could not parse the source of "
                f"{function.__qualname__}: {error.msg}"
            ) from None
    work = tree
    deep = any(may_be_deep(s) for block in statement_lists(tree) for s in block)
    if deep:
        work = ast.parse(source)  # splitting changes it; the original is compared with code
    if deep:  # else no statement of the tree may be too deep: nothing to split
        split_deep_expressions(work, lambda line: where(filename, first_line + line - 1))
    if not (work.body and isinstance(work.body[0], ast.FunctionDef)):
        raise S2SGradError(
            f"{where(filename, first_line)}: {function.__qualname__} is not defined by a plain "
            "'def' (async functions and classes are not differentiable); use mode='tape'"
        )
    return functools.partial(_function_node, work), tree.body[0]


def _names_the_function(lines: list[str], code: types.CodeType) -> bool:
    """Whether ``lines`` still begin the function's definition (so that a failure to read
    them is the transformer's limit, not an edited file)."""
    if code.co_name == "<lambda>":
        return bool(lines) and "lambda" in lines[0]
    heading = next((line.strip() for line in lines if not line.lstrip().startswith("@")), "")
    pattern = rf"(async\s+)?def\s+{re.escape(code.co_name)}\b"
    return re.match(pattern, heading) is not None


def read_definition(function, by_tokens: bool = False) -> tuple[list[str], int, ast.Module | None]:
    """The lines of ``function``'s definition (decorators included), the first one's
    number, and the dedented definition parsed (None if it was not parsed here).

    Like ``inspect.getsourcelines`` (and raising what it raises), without tokenizing: a
    ``def`` ends on the last line its code (or any code nested in it) has a position on;
    trailing lines without code (comments, a final ``pass``) do not change what the
    function does. ``by_tokens``: as ``inspect`` finds them (statements the compiler left
    out as dead after a ``return`` have no position, yet their constants stay in the code).

    Example::

        lines, first, tree = read_definition(read_definition)
    """
    code = getattr(function, "__code__", None)
    if code is None:
        raise TypeError(f"{function!r} is not a Python function")
    if code.co_name != "<lambda>" and not by_tokens:
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
    # its code's lines: inspect would follow __wrapped__ to the function functools.wraps named
    return (*inspect.getsourcelines(code), None)


def _last_line(code: types.CodeType) -> int | None:
    last: int | None
    if hasattr(code, "co_positions"):  # the end lines, taken in C (one per instruction)
        last = max(filter(_IS_A_LINE, map(_END_LINE, code.co_positions())), default=None)
    else:  # Python 3.10: start lines only; a cut statement fails to parse, and inspect reads it
        last = max((line for _, _, line in code.co_lines() if line is not None), default=None)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            inner = _last_line(constant) or 0
            last = inner if last is None else max(last, inner)
    return last


_END_LINE = operator.itemgetter(1)
_IS_A_LINE = functools.partial(operator.is_not, None)


def _function_node(tree: ast.Module) -> gast.FunctionDef:
    """The gast FunctionDef of ``tree``'s one plain ``def``, made of the tree itself."""
    node = into_gast(tree.body[0])
    node.decorator_list = []
    return node


def _describe(function: Any) -> str:
    return getattr(function, "__qualname__", None) or repr(function)
