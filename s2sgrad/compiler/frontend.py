"""Read a function's source, parse it with gast, and resolve the names it uses.

The transformer never guesses what ``np.sin`` means: every free name (and attribute
chain on one, like ``np.linalg.norm``) is resolved against the function's globals,
closure cells and builtins before any code is written.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import dis
import inspect
import itertools
import linecache
import re
import sys
import textwrap
import tokenize
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gast

from s2sgrad.compiler.python_ast import to_gast
from s2sgrad.compiler.syntax import walk
from s2sgrad.errors import S2SGradError, UnsupportedError, where
from s2sgrad.running import ORIGINS

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
        origin = ORIGINS.get(self.filename)  # generated code differentiated again
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
    node, first_line = _checked_node(function, code)
    filename = code.co_filename
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
        try:
            lines, first_line, tree = read_definition(function)
        except (OSError, TypeError) as error:
            raise S2SGradError(
                f"{where(code.co_filename, code.co_firstlineno)}: no source is available for "
                f"{function.__qualname__} ({error}); define it in a file, or use mode='tape'"
            ) from None
        except (SyntaxError, IndexError, ValueError, tokenize.TokenError):
            continue  # the lines at the code's position are not a whole definition
        try:
            node, definition = _definition_node(function, code, lines, first_line, tree)
        except S2SGradError as error:
            if reread and _names_the_function(lines, code):
                raise error from None  # the function's own source, which cannot be read
            continue
        if generated or _runs_as(definition, "".join(lines), function, code):
            return node, first_line
    raise UnsupportedError(
        f"{where(code.co_filename, code.co_firstlineno)}: the source of "
        f"{function.__qualname__} on disk no longer matches the code that runs (the file "
        "was edited after it was imported); reload the module (importlib.reload) or "
        "restart, or use mode='tape'"
    )


def _definition_node(function, code, lines, first_line, tree):
    """The gast FunctionDef the transformer works on, and the ``ast`` definition (a
    FunctionDef, or a Lambda) it came from, to compile and compare with ``code``."""
    filename = code.co_filename
    source = textwrap.dedent("".join(lines))
    if function.__name__ == "<lambda>":
        first = lines[0]
        indent = (
            len(first)
            - len(first.lstrip())
            - (len(source.splitlines()[0]) - len(source.splitlines()[0].lstrip()))
        )

        def runs_as_code(lam: gast.Lambda) -> bool:
            return _compiles_to(gast.gast_to_ast(lam), "".join(lines), function, code)

        node, lam = _lambda_node(source, code, filename, first_line, indent, runs_as_code)
        return node, gast.gast_to_ast(lam)
    if tree is None:
        try:
            tree = ast.parse(source)
        except SyntaxError as error:
            raise S2SGradError(
                f"{where(filename, first_line)}: could not parse the source of "
                f"{function.__qualname__}: {error.msg}"
            ) from None
    work = tree
    if any(_may_be_deep(s) for block in _statement_lists(tree) for s in block):
        work = ast.parse(source)  # splitting changes it; the original is compared with code
    return _function_node(work, function, filename, first_line), tree.body[0]


def _names_the_function(lines: list[str], code: types.CodeType) -> bool:
    """Whether ``lines`` still begin the function's definition (so that a failure to read
    them is the transformer's limit, not an edited file)."""
    if code.co_name == "<lambda>":
        return bool(lines) and "lambda" in lines[0]
    heading = next((line.strip() for line in lines if not line.lstrip().startswith("@")), "")
    pattern = rf"(async\s+)?def\s+{re.escape(code.co_name)}\b"
    return re.match(pattern, heading) is not None


# the code a definition compiles to, compared with the code a function runs ---------------
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag
_FUTURE_FLAGS &= ~inspect.CO_NESTED  # nested_scopes shares CO_NESTED's bit
_CHECKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # code → its source


def _runs_as(definition: ast.AST, text: str, function: Any, code: types.CodeType) -> bool:
    """Whether ``definition`` compiles, in a scope like ``function``'s, to ``code``.

    Compiling checks what no comparison of names or lines can (``x + y`` edited into
    ``x - y``). The definition is wrapped in functions and classes named after the
    qualified name, so that free variables, ``super()`` and private names compile as they
    did.
    """
    if _CHECKED.get(code) == text:
        return True
    if not _compiles_to(definition, text, function, code):
        return False
    _CHECKED[code] = text
    return True


def _compiles_to(definition: ast.AST, text: str, function: Any, code: types.CodeType) -> bool:
    """Whether ``definition`` (read from ``text``) compiles, in a scope like ``function``'s,
    to ``code``; uncached."""
    qualname = getattr(code, "co_qualname", None) or function.__qualname__
    body = [*_imports(function, code), _in_scope(definition, code, qualname)]
    module = ast.Module(body=body, type_ignores=[])
    _rewrite_asserts_as_pytest_did(module, text, function)
    try:
        compiled = compile(
            module,
            code.co_filename,
            "exec",
            flags=code.co_flags & _FUTURE_FLAGS,
            dont_inherit=True,
        )
    except (SyntaxError, ValueError, TypeError):
        return False
    candidate = _find_code(compiled, code.co_name)
    return candidate is not None and _same_code(candidate, code)


def _rewrite_asserts_as_pytest_did(module: ast.Module, text: str, function: Any) -> None:
    """pytest rewrites the ``assert`` statements of test modules before compiling them
    (such a module has ``@pytest_ar`` among its globals); do the same before comparing."""
    rewrite = sys.modules.get("_pytest.assertion.rewrite")
    if rewrite is None or "@pytest_ar" not in function.__globals__:
        return
    try:
        rewrite.rewrite_asserts(module, textwrap.dedent(text).encode())
    except Exception:  # a pytest that rewrites otherwise: the comparison will tell
        return


def _imports(function: Any, code: types.CodeType) -> list[ast.stmt]:
    """``import np`` for each global the code reads that holds a module: CPython 3.11+
    compiles ``np.sin(x)`` differently when ``np`` was bound by an import (never run)."""
    names, stack = set(), [code]
    while stack:
        item = stack.pop()
        names.update(item.co_names)
        stack.extend(c for c in item.co_consts if isinstance(c, types.CodeType))
    modules = sorted(n for n in names if isinstance(function.__globals__.get(n), types.ModuleType))
    imports = [ast.Import(names=[ast.alias(name=name)]) for name in modules]
    return [ast.fix_missing_locations(statement) for statement in imports]


def _in_scope(definition: ast.AST, code: types.CodeType, qualname: str) -> ast.stmt:
    """``definition`` inside functions and classes named after ``qualname``, with the
    code's free variables assigned in the innermost function."""
    if isinstance(definition, ast.stmt):
        statement = definition
    else:  # a lambda: small, and perhaps without locations of its own
        statement = ast.fix_missing_locations(ast.Expr(value=definition))
    definition_statement = statement
    statement = ast.Pass()  # stands for the definition while the wrappers get locations
    scopes = []  # (is_function, name), outermost first
    parts = qualname.split(".")[:-1]
    index = 0
    while index < len(parts):
        is_function = index + 1 < len(parts) and parts[index + 1] == "<locals>"
        scopes.append((is_function, parts[index]))
        index += 2 if is_function else 1
    has_class = any(not is_function for is_function, _ in scopes)
    free = [n for n in code.co_freevars if not (n == "__class__" and has_class)]
    if free and not any(is_function for is_function, _ in scopes):
        scopes.insert(0, (True, "_scope"))
    innermost = max((i for i, (is_function, _) in enumerate(scopes) if is_function), default=-1)
    for index in reversed(range(len(scopes))):
        is_function, name = scopes[index]
        body = [statement]
        if index == innermost:
            body = [_assign_none(free), *body]
        if is_function:
            statement = ast.FunctionDef(
                name=name,
                args=ast.arguments(
                    posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]
                ),
                body=body,
                decorator_list=[],
                returns=None,
                type_params=[],
            )
        else:
            statement = ast.ClassDef(
                name=name, bases=[], keywords=[], body=body, decorator_list=[], type_params=[]
            )
        if index == len(scopes) - 1:
            wrapping = statement  # the innermost wrapper: its last statement is the Pass
    if not scopes:
        return definition_statement
    ast.fix_missing_locations(statement)  # the wrappers only: the definition has its own
    wrapping.body[-1] = definition_statement
    return statement


def _assign_none(names: list[str]) -> ast.stmt:
    if not names:
        return ast.Pass()
    targets = [ast.Name(id=name, ctx=ast.Store()) for name in names]
    return ast.Assign(targets=targets, value=ast.Constant(value=None))


def _find_code(code: types.CodeType, name: str) -> types.CodeType | None:
    """The outermost code object named ``name`` inside ``code`` (breadth first)."""
    queue = [code]
    while queue:
        inner = [c for item in queue for c in item.co_consts if isinstance(c, types.CodeType)]
        for candidate in inner:
            if candidate.co_name == name:
                return candidate
        queue = inner
    return None


def _same_code(a: types.CodeType, b: types.CodeType) -> bool:
    return (
        (a.co_code == b.co_code or _instructions(a) == _instructions(b))
        and a.co_names == b.co_names
        and a.co_varnames == b.co_varnames
        and a.co_freevars == b.co_freevars
        and a.co_cellvars == b.co_cellvars
        and a.co_argcount == b.co_argcount
        and a.co_posonlyargcount == b.co_posonlyargcount
        and a.co_kwonlyargcount == b.co_kwonlyargcount
        and not (a.co_flags ^ b.co_flags) & ~inspect.CO_NESTED
        and len(a.co_consts) == len(b.co_consts)
        and all(map(_same_constant, a.co_consts, b.co_consts))
    )


_BY_INDEX = frozenset(("LOAD_CONST", "RETURN_CONST", "KW_NAMES"))
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


def _instructions(code: types.CodeType) -> list[tuple]:
    """``code``'s instructions, without what the compiler chooses by the module around it.

    CPython 3.11 calls ``np.sin(x)`` with LOAD_ATTR (and a PUSH_NULL) instead of
    LOAD_METHOD when ``np`` was imported in the module, which a definition compiled on
    its own cannot know. Jumps are compared by the instruction they reach, constants by
    their index (``co_consts`` is compared on its own).
    """
    kept, after = [], {}  # after: offset → how many kept instructions start there or later
    for instruction in reversed(list(dis.get_instructions(code))):
        if instruction.opname not in ("PUSH_NULL", "EXTENDED_ARG", "CACHE", "NOP"):
            kept.append(instruction)
        after[instruction.offset] = len(kept)  # a jump to a dropped one reaches the next
    kept.reverse()
    position = {offset: len(kept) - count for offset, count in after.items()}
    result = []
    for instruction in kept:
        name = "LOAD_ATTR" if instruction.opname == "LOAD_METHOD" else instruction.opname
        if instruction.opcode in _JUMPS:
            argument = position.get(instruction.argval)
        elif instruction.opname in _BY_INDEX:
            argument = instruction.arg
        else:
            argument = instruction.argval
        result.append((name, argument))
    return result


def _same_constant(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, types.CodeType):
        return _same_code(a, b)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(map(_same_constant, a, b))
    if isinstance(a, str) and "<locals>" in a and "<locals>" in b:
        return a.rsplit(".", 1)[-1] == b.rsplit(".", 1)[-1]  # 3.10: a nested def's qualname
    if isinstance(a, (float, complex)):
        return repr(a) == repr(b)  # 0.0 and -0.0 differ
    return a == b


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


# Expressions deeper than this are split into statements (the passes recurse into
# expressions; a sum of 1,000 terms is a left-nested tree 1,000 deep).
DEEPEST = 48
# statements whose expressions are evaluated once, before anything else they do
_SPLIT_STATEMENTS = (
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Return,
    ast.Expr,
    ast.If,
    ast.For,
)
_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


def split_deep_expressions(tree: ast.AST, location: Callable[[int], str]) -> None:
    """Bind the parts of expressions nested deeper than ``DEEPEST`` to names first, in
    the order Python evaluates them, so that no pass recurses with a function's size.

    ``a + b + c + …`` (1,000 terms) becomes ``t = a + b + … (48 terms)``,
    ``t = t + …``: the same operations in the same order. An expression that cannot be
    split that way (its deep part inside a loop condition, a lambda, a comprehension, or
    after a call it must not run before) is refused, naming ``location(line)``.

    Example::

        split_deep_expressions(ast.parse(source), lambda line: f"model.py:{line}")
    """
    counter = itertools.count()
    for statements in _statement_lists(tree):
        if not any(map(_may_be_deep, statements)):
            continue
        split: list[ast.stmt] = []
        for statement in statements:
            if _may_be_deep(statement):
                split.extend(_split_statement(statement, counter, location))
            else:
                split.append(statement)
        statements[:] = split
    if next(counter):  # parts were bound to names
        ast.fix_missing_locations(tree)


def _statement_lists(tree: ast.AST) -> list[list[ast.stmt]]:
    """Every list of statements in ``tree`` (bodies, else and finally blocks, handlers and
    cases), found without recursion and without visiting expressions."""
    found, owners = [], [tree]
    while owners:
        owner = owners.pop()
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            items = getattr(owner, name, None)
            if not isinstance(items, list):
                continue
            owners.extend(i for i in items if isinstance(i, _BLOCKS))
            if name not in ("handlers", "cases"):
                found.append(items)
    return found


def _may_be_deep(statement: ast.stmt) -> bool:
    """Whether an expression of ``statement`` may be too deep: each level of nesting takes
    a character at least, and the passes cope with twice ``DEEPEST``, so an expression on
    one line that is shorter than that is not looked at (most are, and it is quicker)."""
    for child in ast.iter_child_nodes(statement):
        if isinstance(child, _BLOCKS) or getattr(child, "end_lineno", None) is None:
            continue
        if (
            child.end_lineno != child.lineno
            or child.end_col_offset - child.col_offset > 2 * DEEPEST
        ):
            return True
    return False


def _heights(statement: ast.stmt) -> tuple[dict[int, int], dict[int, bool]]:
    """The height of every node of ``statement``'s expressions, and whether it is plain
    (names, constants, attributes and arithmetic only), both by id, without recursion."""
    order: list[ast.AST] = []
    stack = [c for c in ast.iter_child_nodes(statement) if not isinstance(c, _BLOCKS)]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(ast.iter_child_nodes(node))
    heights: dict[int, int] = {}
    plain: dict[int, bool] = {}
    for node in reversed(order):  # children come after their parents in order
        _measure(node, heights, plain)
    return heights, plain


def _measure(node: ast.AST, heights: dict[int, int], plain: dict[int, bool]) -> None:
    """Set ``node``'s height and plainness from its children's."""
    children = list(ast.iter_child_nodes(node))
    heights[id(node)] = 1 + max((heights.get(id(c), 0) for c in children), default=0)
    plain[id(node)] = isinstance(node, _PLAIN_NODES) and all(plain.get(id(c)) for c in children)


def _split_statement(statement, counter, location) -> list[ast.stmt]:
    heights, plain = _heights(statement)
    deep = [c for c in ast.iter_child_nodes(statement) if heights.get(id(c), 0) > DEEPEST]
    if not deep:
        return [statement]
    if not isinstance(statement, _SPLIT_STATEMENTS):
        raise _too_deep(statement, location)
    before: list[ast.stmt] = []
    for root in deep:  # each turn replaces a subtree DEEPEST // 2 high by a name: it ends
        while heights[id(root)] > DEEPEST:
            try:
                path = _path_to_height(root, heights, plain, DEEPEST // 2)
            except _Unsplittable:
                raise _too_deep(statement, location) from None
            part = path[-1]
            name = f"_s2s_part{next(counter)}"
            before.append(
                ast.copy_location(ast.Assign([ast.Name(name, ast.Store())], part), statement)
            )
            parent, field, index = path[-2]
            replacement = ast.copy_location(ast.Name(name, ast.Load()), part)
            if index is None:
                setattr(parent, field, replacement)
            else:
                getattr(parent, field)[index] = replacement
            heights[id(replacement)], plain[id(replacement)] = 1, True
            for node, _, _ in reversed(path[:-1]):  # the heights above it shrink
                _measure(node, heights, plain)
    return [*before, statement]


def _path_to_height(root, heights, plain, height) -> list:
    """From ``root`` down its deepest branch to a node of ``height``: ``[(node, field,
    index), …, part]``, refusing a branch Python would not evaluate first."""
    path: list = []
    node = root
    while heights[id(node)] > height:
        child, field, index = _deepest_child(node, heights, plain)
        path.append((node, field, index))
        node = child
    return [*path, node]


def _deepest_child(node, heights, plain):
    """The deepest child of ``node``, if computing it first is safe: it is evaluated
    first, or only names and constants are evaluated before it, and always."""
    evaluated_before_are_plain = True
    best = None
    for name, value in ast.iter_fields(node):
        items = value if isinstance(value, list) else [value]
        for index, child in enumerate(items):
            if not isinstance(child, ast.AST):
                continue
            if best is None or heights.get(id(child), 0) > heights[id(best[0])]:
                best = (child, name, index if isinstance(value, list) else None)
                safe = evaluated_before_are_plain
            if not plain.get(id(child), _is_plain_leaf(child)):
                evaluated_before_are_plain = False
    child, field, index = best
    conditional = (
        (isinstance(node, ast.BoolOp) and index != 0)
        or (isinstance(node, ast.IfExp) and field != "test")
        or (isinstance(node, ast.Compare) and field == "comparators" and index != 0)
    )
    if not safe or conditional or isinstance(node, _OWN_SCOPES):
        raise _Unsplittable
    return child, field, index


_OWN_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _is_plain_leaf(node: ast.AST) -> bool:
    """Whether a node without recorded plainness (an operator, a context) is plain."""
    return isinstance(node, _PLAIN_NODES)


# Names, constants, attributes of names (``np.sum``) and arithmetic on them: what may be
# evaluated after a later part of an expression without a visible difference.

_PLAIN_NODES = (
    ast.Name,
    ast.Constant,
    ast.Attribute,
    ast.BinOp,
    ast.UnaryOp,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.expr_context,
)


class _Unsplittable(Exception):
    pass


def _too_deep(node, location) -> UnsupportedError:
    return UnsupportedError(
        f"{location(node.lineno)}: an expression nested more than {DEEPEST} deep that "
        "cannot be split into statements without changing what runs first; bind its parts to "
        "names, or use "
        "mode='tape'"
    )


def _last_line(code: types.CodeType) -> int | None:
    if hasattr(code, "co_positions"):
        ends = [end for _, end, _, _ in code.co_positions() if end is not None]
    else:  # Python 3.10: start lines only; a cut statement fails to parse, and inspect reads it
        ends = [line for _, _, line in code.co_lines() if line is not None]
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            ends.append(_last_line(constant) or 0)
    return max(ends, default=None)


def _function_node(tree, function, filename, first_line) -> gast.FunctionDef:
    split_deep_expressions(tree, lambda line: where(filename, first_line + line - 1))
    node = to_gast(tree).body[0] if tree.body else None
    if not isinstance(node, gast.FunctionDef):
        raise S2SGradError(
            f"{where(filename, first_line)}: {function.__qualname__} is not defined by a plain "
            "'def' (async functions and classes are not differentiable); use mode='tape'"
        )
    node.decorator_list = []
    return node


def _lambda_node(
    source, code, filename, first_line, indent, runs_as_code
) -> tuple[gast.FunctionDef, gast.Lambda]:
    """Find the lambda whose code object is ``code`` in its source lines: the function made
    of it, and the lambda itself.

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
    if len(candidates) > 1 and hasattr(code, "co_positions"):
        # several lambdas on one line: match the columns of `code`
        columns = {pos[2] for pos in code.co_positions() if pos[2] is not None}
        shift = indent - (1 if wrapped else 0)
        candidates = [c for c in candidates if c.body.col_offset + shift in columns] or (
            candidates[:1]
        )
    elif len(candidates) > 1:  # Python 3.10 has no columns: the one that compiles to `code`
        candidates = [c for c in candidates if runs_as_code(c)] or candidates[:1]
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
    return gast.copy_location(node, lam), lam


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
