"""Turn a generated gast function into source text and a live Python function.

The source is printed with the standard library's ``ast.unparse``; ``# grad of:``
comments are restored from marker statements; the code is compiled under a file name
registered with :mod:`linecache`, so tracebacks and ``pdb`` show the generated lines.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import re
from dataclasses import dataclass
from typing import Any

import gast

from s2sgrad.syntax import COMMENT_MARK

__all__ = ["GeneratedFunction", "compile_function", "to_source", "ORIGINS", "registry"]

_counter = itertools.count()

ORIGINS: dict[str, str] = {}  # generated file name → the user's file:line it came from


@dataclass
class GeneratedFunction:
    """A compiled generated function with its source and the objects it refers to."""

    function: Any
    source: str
    filename: str
    namespace: dict[str, Any]
    node: Any = None  # the gast FunctionDef it was compiled from
    shapes_follow_arguments: bool = False  # safe to specialise on argument shapes


registry: dict[Any, GeneratedFunction] = {}  # compiled function → how it was generated


def to_source(node: gast.FunctionDef) -> str:
    """Unparse a gast function, turning comment markers into ``#`` comments.

    Example::

        to_source(gast.parse("def f(x):\\n    return x").body[0])  # 'def f(x):\\n    return x\\n'
    """
    tree = gast.gast_to_ast(node)
    ast.fix_missing_locations(tree)
    text = ast.unparse(tree)
    lines = []
    for line in text.splitlines():
        match = _STRING_STATEMENT.match(line)
        if match and COMMENT_MARK in line:
            text_value = ast.literal_eval(match.group(2))
            lines.append(f"{match.group(1)}# {text_value[len(COMMENT_MARK) :]}")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


_STRING_STATEMENT = re.compile(r"^(\s*)((?:'.*')|(?:\".*\"))$")


_generated_names: set[str] = set()


def unique_name(stem: str) -> str:
    """A function name no other generated function has, so exports can hold them all.

    Example::

        unique_name("loss_vjp")  # 'loss_vjp', then 'loss_vjp_1', …
    """
    name, index = stem, 0
    while name in _generated_names:
        index += 1
        name = f"{stem}_{index}"
    _generated_names.add(name)
    return name


def compile_function(
    node: gast.FunctionDef, namespace: dict[str, Any], origin: str
) -> GeneratedFunction:
    """Compile ``node`` in a fresh module namespace; ``origin`` is the user's file:line.

    Example::

        compile_function(node, {"np": numpy}, "model.py:3").function(2.0)
    """
    used = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    namespace = {name: obj for name, obj in namespace.items() if name in used}
    source = to_source(node)
    filename = f"<s2sgrad {node.name} #{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ORIGINS[filename] = origin
    module_globals = {"__name__": "s2sgrad.generated", "__builtins__": __builtins__}
    module_globals.update(namespace)
    code = compile(source, filename, "exec")
    exec(code, module_globals)
    generated = GeneratedFunction(
        module_globals[node.name], source, filename, namespace, node=node
    )
    registry[generated.function] = generated
    return generated
