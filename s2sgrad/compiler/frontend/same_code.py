"""Check that source read from a file compiles to the code the function runs.

Source edited after a module was imported must be refused, not differentiated: the
definition is compiled, in a scope like the function's, and its code object compared
with the function's, instruction by instruction where the module around it could change
what the compiler chose.
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import copy
import dis
import inspect
import sys
import textwrap
import types
import weakref
from typing import Any

__all__ = ["runs_as", "compiles_to"]

_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag
_FUTURE_FLAGS &= ~inspect.CO_NESTED  # nested_scopes shares CO_NESTED's bit
_CHECKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # code → its source


def runs_as(definition: ast.AST, text: str, function: Any, code: types.CodeType) -> bool:
    """Whether ``definition`` compiles, in a scope like ``function``'s, to ``code``.

    Compiling checks what no comparison of names or lines can (``x + y`` edited into
    ``x - y``). The definition is wrapped in functions and classes named after the
    qualified name, so that free variables, ``super()`` and private names compile as they
    did.
    """
    if _CHECKED.get(code) == text:
        return True
    if not compiles_to(definition, text, function, code):
        return False
    _CHECKED[code] = text
    return True


def compiles_to(definition: ast.AST, text: str, function: Any, code: types.CodeType) -> bool:
    """Whether ``definition`` (read from ``text``) compiles, in a scope like ``function``'s,
    to ``code``; uncached."""
    qualname = getattr(code, "co_qualname", None) or function.__qualname__
    names = _names_in(code)
    if "__firstlineno__" in names:  # Python 3.13: a class inside keeps its first line
        definition = _on_its_own_lines(definition, code)
    body = [*_imports(function, names), _in_scope(definition, code, qualname)]
    module = _rewritten_as_pytest_did(ast.Module(body=body, type_ignores=[]), text, function)
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
    return any(_same_code(candidate, code) for candidate in _codes_named(compiled, code.co_name))


def _names_in(code: types.CodeType) -> set[str]:
    """The names ``code`` and the code nested in it read or bind (``co_names``)."""
    names: set[str] = set()
    stack = [code]
    while stack:
        item = stack.pop()
        names.update(item.co_names)
        stack.extend(c for c in item.co_consts if isinstance(c, types.CodeType))
    return names


def _on_its_own_lines(definition: Any, code: types.CodeType) -> Any:
    """A copy of ``definition`` (parsed from its lines alone) moved to the lines of the
    file it was read from."""
    decorators = getattr(definition, "decorator_list", [])
    first = min([definition.lineno, *(d.lineno for d in decorators)])
    moved = copy.deepcopy(definition)
    ast.increment_lineno(moved, code.co_firstlineno - first)
    return moved


def _rewritten_as_pytest_did(module: ast.Module, text: str, function: Any) -> ast.Module:
    """pytest rewrites the ``assert`` statements of test modules before compiling them
    (such a module has ``@pytest_ar`` among its globals); do the same, to a copy (the
    definition in ``module`` is the caller's), before comparing."""
    rewrite = sys.modules.get("_pytest.assertion.rewrite")
    if rewrite is None or "@pytest_ar" not in function.__globals__:
        return module
    module = copy.deepcopy(module)
    # a pytest that rewrites otherwise: the comparison will tell
    with contextlib.suppress(Exception):
        rewrite.rewrite_asserts(module, textwrap.dedent(text).encode())
    return module


def _imports(function: Any, names: set[str]) -> list[ast.stmt]:
    """``import np`` for each global of ``names`` (those the code reads) that holds a
    module: CPython 3.11+ compiles ``np.sin(x)`` differently when ``np`` was bound by an
    import (never run)."""
    modules = sorted(n for n in names if isinstance(function.__globals__.get(n), types.ModuleType))
    imports = [ast.Import(names=[ast.alias(name=name)]) for name in modules]
    return [ast.fix_missing_locations(statement) for statement in imports]


def _in_scope(definition: Any, code: types.CodeType, qualname: str) -> ast.stmt:
    """``definition`` inside functions and classes named after ``qualname``, with the
    code's free variables assigned in the innermost function."""
    statement: Any
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
        body: list[ast.stmt] = [statement]
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
                **_TYPE_PARAMS,
            )
        else:
            statement = ast.ClassDef(
                name=name, bases=[], keywords=[], body=body, decorator_list=[], **_TYPE_PARAMS
            )
        if index == len(scopes) - 1:
            wrapping = statement  # the innermost wrapper: its last statement is the Pass
    if not scopes:
        return definition_statement
    ast.fix_missing_locations(statement)  # the wrappers only: the definition has its own
    wrapping.body[-1] = definition_statement
    return statement


# Python 3.12's type parameters, none (given as keywords: older Pythons' nodes have no field)
_TYPE_PARAMS: dict[str, Any] = {"type_params": []}


def _assign_none(names: list[str]) -> ast.stmt:
    if not names:
        return ast.Pass()
    targets: list[ast.expr] = [ast.Name(id=name, ctx=ast.Store()) for name in names]
    return ast.Assign(targets=targets, value=ast.Constant(value=None))


def _codes_named(code: types.CodeType, name: str) -> list[types.CodeType]:
    """The code objects named ``name`` inside ``code``, outermost first (a lambda inside a
    lambda sits, compiled again, in a wrapper also named ``<lambda>``)."""
    found: list[types.CodeType] = []
    queue = [code]
    while queue:
        queue = [c for item in queue for c in item.co_consts if isinstance(c, types.CodeType)]
        found.extend(c for c in queue if c.co_name == name)
    return found


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
