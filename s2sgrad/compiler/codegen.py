"""Turn a generated gast function into source text and a live Python function.

The source is printed as the standard library's ``ast.unparse`` prints it (by
``source_writer`` where it can, as it is quicker); ``# grad of:``
comments are restored from marker statements; the code is compiled under a file name
registered with :mod:`linecache`, so tracebacks and ``pdb`` show the generated lines.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import functools
import itertools
import linecache
import os
import re
import shutil
import sys
import tempfile
import weakref
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gast

from s2sgrad.compiler.freshness import Assumptions
from s2sgrad.compiler.printed_positions import positions_by_reparsing
from s2sgrad.compiler.python_ast import to_python_ast
from s2sgrad.compiler.source_writer import write_source, write_source_and_names
from s2sgrad.compiler.syntax import COMMENT_MARK, names_used, walk
from s2sgrad.running import ORIGINS, POSITIONS, running_origin

__all__ = [
    "GeneratedFunction",
    "compile_function",
    "compile_ast",
    "to_source",
    "ORIGINS",
    "generated_of",
    "running_origin",
]

_counter = itertools.count()


class GeneratedFunction:
    """A generated function: its syntax tree, and (compiled on first use) its code.

    ``source`` and ``function`` are computed when first asked for, so code that is only
    ever specialised is never compiled in its generic form.
    """

    def __init__(
        self,
        node: gast.FunctionDef,
        namespace: dict[str, Any],
        origin: str,
        finish: Callable[[gast.FunctionDef], gast.FunctionDef] | None = None,
    ):
        self.raw_node = node
        self.finish = finish  # the optimisation still owed, done when the code is needed
        self.given_namespace = namespace  # what the code may use; see ``namespace``
        self.origin = origin
        self.shapes_follow_arguments = False  # safe to specialise on argument shapes
        self.specialised_for: tuple | None = None  # the argument signature specialised to
        self.cached_in: Any = (
            None  # the cache entry (compiler/cache.py) it and its calls are kept in
        )
        self.companion: GeneratedFunction | None = None  # a VJP's backward function
        self.primal: Any = None  # a VJP's: the user's function it is the derivative of
        self.tangent_names: dict[str, str] = {}  # a JVP's: parameter -> its tangent's keyword
        # the user's free names the code reads (entries of s2sgrad.compiler.freshness): ``live``
        # maps the data ones to their entries, copied into the code's globals as they change;
        # ``assumptions`` holds every entry the code depends on, its callees' included
        self.live: dict[str, Any] = {}
        self.assumptions = Assumptions()
        # at each line of ``source``, the line in the user's function of the statement it
        # starts (``running.POSITIONS``), when the printer that knows them printed it
        self.positions: array | None = None

    @functools.cached_property
    def namespace(self) -> dict[str, Any]:
        """The global names the code uses, and their objects."""
        return self._namespace_of(names_used(self.node))

    def _namespace_of(self, used: set[str]) -> dict[str, Any]:
        return {name: obj for name, obj in self.given_namespace.items() if name in used}

    @functools.cached_property
    def defines_functions(self) -> bool:
        """Whether the code has functions or lambdas inside."""
        node = self.raw_node
        return any(type(n) in (gast.FunctionDef, gast.Lambda) and n is not node for n in walk(node))

    @functools.cached_property
    def node(self) -> gast.FunctionDef:
        return self.finish(self.raw_node) if self.finish else self.raw_node

    @functools.cached_property
    def source(self) -> str:
        return to_source(self.node)

    def _print(self) -> None:
        """Find ``source`` and ``namespace`` together, in one pass over the tree (the
        printer meets every name), when neither is known yet."""
        if "source" in self.__dict__ or "namespace" in self.__dict__:
            return
        positions = array("i")
        printed = write_source_and_names(self.node, positions)
        if printed is not None:
            text, used = printed
            self.__dict__["source"] = _with_comments(text)
            self.__dict__["namespace"] = self._namespace_of(used)
            self.positions = positions

    @functools.cached_property
    def filename(self) -> str:
        return _source_file(self.node.name, self.source)

    @functools.cached_property
    def function(self) -> Any:
        self._print()
        source, filename = self.source, self.filename
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        ORIGINS[filename] = self.origin
        if self.positions is None:  # printed by ``ast.unparse``: paired with the tree
            self.positions = positions_by_reparsing(self.node, source)
        if self.positions is not None:  # the statements' lines in the user's function
            POSITIONS[filename] = self.positions
        module_globals: dict[str, Any] = {
            "__name__": "s2sgrad.generated",
            "__builtins__": __builtins__,
        }
        module_globals.update(self.namespace)
        exec(compile(source, filename, "exec"), module_globals)
        function = module_globals[self.node.name]
        for name, entry in self.live.items():
            if name in module_globals:
                entry.mirror(function)
        if self.companion is not None:
            function.backward = self.companion.function
        function.__s2sgrad_generated__ = self
        weakref.finalize(function, _forget_source, filename)
        if self.specialised_for is not None:  # final code: its text is all that is read again
            self.raw_node = self.finish = None
            self.__dict__.pop("node", None)
        return function


def generated_of(obj: Any) -> GeneratedFunction | None:
    """The :class:`GeneratedFunction` a compiled function came from, or None.

    Example::

        generated_of(derivative(f, ("x",)).function).source
    """
    generated = getattr(obj, "__s2sgrad_generated__", None)
    return generated if isinstance(generated, GeneratedFunction) else None


def _forget_source(filename: str) -> None:
    """Drop a collected function's source lines, origin and file."""
    linecache.cache.pop(filename, None)
    ORIGINS.pop(filename, None)
    POSITIONS.pop(filename, None)
    if not filename.startswith("<"):
        with contextlib.suppress(OSError):
            os.remove(filename)


def to_source(node: gast.FunctionDef) -> str:
    """Unparse a gast function, turning comment markers into ``#`` comments.

    Example::

        to_source(gast.parse("def f(x):\\n    return x").body[0])  # 'def f(x):\\n    return x\\n'
    """
    text = write_source(node)
    if text is None:  # a node kind the quick printer leaves to ``ast.unparse``
        text = _unparse(to_python_ast(node))
    return _with_comments(text)


def _with_comments(text: str) -> str:
    """``text`` with comment markers as ``#`` comments, ending with a newline."""
    lines = []
    for line in text.splitlines():
        # the mark looked for first: most lines are code, and a search is cheaper than a match
        match = _STRING_STATEMENT.match(line) if COMMENT_MARK in line else None
        if match:
            printed = match.group(2)
            inner = printed[1:-1]
            simple = "\\" not in inner and not printed.startswith(printed[0] * 3)
            text_value = inner if simple else ast.literal_eval(printed)
            lines.append(f"{match.group(1)}# {text_value[len(COMMENT_MARK) :]}")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


_STRING_STATEMENT = re.compile(r"^(\s*)((?:'.*')|(?:\".*\"))$")


def _unparse(tree: ast.AST) -> str:
    """``ast.unparse``, printing the same on every supported Python."""
    if sys.version_info >= (3, 11):
        return ast.unparse(tree)
    return _Python310Unparser(tree).visit(tree)


if sys.version_info < (3, 11):

    class _Python310Unparser(ast._Unparser):  # type: ignore[name-defined]  # private, no stub
        """Python 3.10's printer with 3.11's bare tuple targets: ``a, b = f(x)`` and
        ``for i, v in z``, not ``(a, b) = f(x)``, so generated code reads the same."""

        def __init__(self, tree: ast.AST | None = None, **options):
            # 3.10's printer makes a printer of its own class for an f-string's parts,
            # with options (_avoid_backslashes) and no tree
            super().__init__(**options)
            targets = _tuple_targets(tree) if tree is not None else ()
            self._bare = {id(target) for target in targets if target.elts}

        def visit_Tuple(self, node):
            if id(node) in self._bare:
                self.items_view(self.traverse, node.elts)
            else:
                super().visit_Tuple(node)

    def _tuple_targets(tree: ast.AST):
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                targets = [node.target]
            else:
                continue
            yield from (t for t in targets if isinstance(t, ast.Tuple))


_SOURCE_DIRECTORY: Path | None = None


def _source_file(name: str, source: str) -> str:
    """Write generated source to a file of this process's own, and return its path.

    Python's own traceback printer (before 3.13) and debuggers read source lines from
    files, so generated code gets one; ``linecache`` is filled as well.
    """
    global _SOURCE_DIRECTORY
    path = f"<s2sgrad {name} #{next(_counter)}>"
    try:
        if _SOURCE_DIRECTORY is None:
            _SOURCE_DIRECTORY = Path(tempfile.mkdtemp(prefix="s2sgrad-"))
            atexit.register(shutil.rmtree, _SOURCE_DIRECTORY, ignore_errors=True)
        file = _SOURCE_DIRECTORY / f"{name}_{path.rsplit('#', 1)[1][:-1]}.py"
        file.write_text(source)
        return str(file)
    except OSError:  # no writable temporary directory: linecache alone still serves pdb
        return path


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


def compile_ast(node: gast.FunctionDef, namespace: dict[str, Any], origin: str) -> Any:
    """Compile ``node`` without keeping its source.

    Quicker than :class:`GeneratedFunction`, for code that runs once (the specialisation
    probe); tracebacks through it show no source lines. Its text is compiled when
    ``source_writer`` prints it (quicker than building an ``ast`` tree), else the tree.
    """
    filename = f"<s2sgrad {node.name} #{next(_counter)}>"
    ORIGINS[filename] = origin
    code: Any = write_source(node)
    if code is None:
        statement: Any = to_python_ast(node)
        code = ast.Module(body=[statement], type_ignores=[])
    module_globals = {"__name__": "s2sgrad.generated", "__builtins__": __builtins__}
    module_globals.update(namespace)
    exec(compile(code, filename, "exec"), module_globals)
    return module_globals[node.name]


def compile_function(
    node: gast.FunctionDef,
    namespace: dict[str, Any],
    origin: str,
    finish: Callable[[gast.FunctionDef], gast.FunctionDef] | None = None,
) -> GeneratedFunction:
    """A generated function for ``node``, compiled in a fresh module namespace when used.

    ``origin`` is the user's file:line, for error messages.

    Example::

        compile_function(node, {"np": numpy}, "model.py:3").function(2.0)
    """
    return GeneratedFunction(node, namespace, origin, finish)
