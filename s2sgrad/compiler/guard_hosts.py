"""A generated function compiled again with its signature guard at its top, so that a
call runs the guard's tests and the code in one frame.

The guard (``signature_guards.py``) would otherwise be a function of its own that calls
the generated code: a second frame on every call. Here the generated function's source
(the text ``sg.source`` shows, which tracebacks and ``pdb`` read) is parsed again and
compiled under the same file name, with

* the guard's parameters: the call's arguments, positional only (one not given is
  :data:`ABSENT`, which fails every test), then ``*rest`` and ``**kw``;
* the guard's test and its way out, ``if not <test>: return <otherwise>``, placed on
  the ``def`` line, so that every statement of the code keeps its line;
* the parameters the call does not give bound to their defaults (an empty tuple and a
  new dict for ``*args`` and ``**kwargs``), as calling the code would bind them;
* the code itself, each ``return`` shaping its value, all in ``try``/``except`` when an
  exception is to be reported on its way out.

The guard's own names (its constants, ``rest``, ``kw``) take a prefix that no name of
the code or of its globals starts with. It runs in a copy of the code's globals, which
the freshness entries of the names the code reads keep up to date as they keep the
code's own (it is one of their *mirrors*, ``freshness.py``).

Example::

    host = guard_host(function, 1)  # None: call the code from a guard of its own
    name = host.name  # name("C0"): the name the guard's constant C0 has
    guarded = host.compile(f"type(x) is {name('C0')}", "None", {name("C0"): float})
"""

from __future__ import annotations

import ast
import inspect
import re
import types
import weakref
from collections.abc import Iterator
from typing import Any, TypeVar, cast

from s2sgrad.compiler.codegen import GeneratedFunction, generated_of

__all__ = ["ABSENT", "GuardHost", "guard_host"]

# Code longer than this keeps a guard of its own: the frame saved is nothing next to
# running it, and compiling it again would cost more than it saves.
_LONGEST_SOURCE_LINES = 400
_NOT_PLAIN = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Absent:
    """A positional argument the call did not give (a guard's parameter default)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Absent()


class GuardHost:
    """The compiled code ``function`` of ``generated``, with its ``source``, ready to
    take the guard of calls with ``arity`` positional arguments (:func:`guard_host`)."""

    def __init__(
        self,
        function: types.FunctionType,
        generated: GeneratedFunction,
        source: str,
        arity: int,
        compiled: _Compiled,
    ):
        self.function = function
        self.generated = generated
        self.source = source
        self.arity = arity
        self._compiled = compiled
        used = compiled.names
        prefix = "guard_"
        while any(name.startswith(prefix) for name in [*used, *function.__globals__]):
            prefix += "_"
        self._prefix = prefix
        positional = _positional(function.__code__)
        given = min(arity, len(positional))
        extra = [self.name(f"v{index}") for index in range(arity - given)]  # for *args
        self.parameters: list[str] = [*positional[:given], *extra]

    def name(self, base: str) -> str:
        """The name the guard gives ``base`` (a constant, ``rest``, ``kw``): one that no
        name of the code or of its globals starts with."""
        return self._prefix + base

    def compile(
        self,
        test: str,
        otherwise: str,
        constants: dict[str, Any],
        *,
        failed: str | None = None,
        shape: str | None = None,
    ) -> types.FunctionType:
        """The code with the guard at its top: it returns ``otherwise`` unless ``test``
        holds, then runs the code, its value shaped by ``shape`` (``"one_tuple"``, or the
        name of a function among ``constants``) and an exception first passed to the
        function ``failed`` names. ``test`` and ``otherwise`` are expressions over
        :attr:`parameters`, ``name("rest")``, ``name("kw")`` and ``constants``.

        The module code is made once per text (kept with the function's other guards),
        so that a transform made anew for each call (``sg.grad(f)(x)``) compiles nothing.
        """
        namespace = dict(self.function.__globals__)
        namespace.update(constants)
        namespace[self.name("absent")] = ABSENT
        namespace[self.name("code")] = self.function  # keeps its source lines registered
        namespace[self.name("BaseException")] = BaseException
        bindings = self._defaults(namespace)
        key = (self._prefix, self.arity, test, otherwise, failed, shape)
        code = self._compiled.codes.get(key)
        if code is None:
            code = self._module(test, otherwise, bindings, failed, shape)
            self._compiled.keep(key, code)
        name = self.function.__name__
        before = namespace.get(name, ABSENT)
        exec(code, namespace)  # noqa: S102
        guarded = namespace.pop(name)
        if before is not ABSENT:  # the code's own name still names the code
            namespace[name] = before
        for name, entry in self.generated.live.items():
            if name in namespace:
                entry.mirror(guarded)
        return guarded

    def _module(
        self, test: str, otherwise: str, bindings: str, failed: str | None, shape: str | None
    ) -> types.CodeType:
        """The module that defines the code with the guard at its top, compiled."""
        node = cast(ast.FunctionDef, ast.parse(self.source).body[0])
        line = node.lineno
        body = _on_line(bindings, line) + node.body
        if shape is not None:
            body = _shaped(body, shape, line)
        if failed is not None:
            error = self.name("error")
            handler = ast.ExceptHandler(
                type=_placed(ast.Name(id=self.name("BaseException"), ctx=ast.Load()), line),
                name=error,
                body=_on_line(f"{failed}({error}); raise", line),
            )
            attempt = ast.Try(body=body, handlers=[_placed(handler, line)], orelse=[], finalbody=[])
            body = [_placed(attempt, line)]
        node.body = _on_line(_tested(test, otherwise, self.name("ok")), line) + body
        node.args = self._arguments(line)
        node.decorator_list, node.returns = [], None
        module = ast.Module(body=[node], type_ignores=[])
        return compile(module, self.function.__code__.co_filename, "exec")

    def _arguments(self, line: int) -> ast.arguments:
        """``(p0=absent, p1=absent, ..., /, *rest, **kw)``."""
        absent = _placed(ast.Name(id=self.name("absent"), ctx=ast.Load()), line)
        return ast.arguments(
            posonlyargs=[_placed(ast.arg(arg=parameter), line) for parameter in self.parameters],
            args=[],
            vararg=_placed(ast.arg(arg=self.name("rest")), line),
            kwonlyargs=[],
            kw_defaults=[],
            kwarg=_placed(ast.arg(arg=self.name("kw")), line),
            defaults=[absent for _ in self.parameters],
        )

    def _defaults(self, namespace: dict[str, Any]) -> str:
        """Statements binding the parameters the call does not give, as a call binds
        them (on one line, separated by semicolons); their values go to ``namespace``."""
        code = self.function.__code__
        positional = _positional(code)
        defaults = self.function.__defaults__ or ()
        values = dict(zip(positional[len(positional) - len(defaults) :], defaults))
        values.update(self.function.__kwdefaults__ or {})
        statements = []
        for index, name in enumerate(positional[self.arity :] + _keyword_only(code)):
            namespace[self.name(f"default{index}")] = values[name]
            statements.append(f"{name} = {self.name(f'default{index}')}")
        after = code.co_argcount + code.co_kwonlyargcount  # where *args and **kwargs are
        if code.co_flags & inspect.CO_VARARGS:
            extra = "".join(f"{name}, " for name in self.parameters[len(positional) :])
            statements.append(f"{code.co_varnames[after]} = ({extra})")
            after += 1
        if code.co_flags & inspect.CO_VARKEYWORDS:
            statements.append(f"{code.co_varnames[after]} = {{}}")
        return "; ".join(statements)


class _Compiled:
    """What the guard hosts of one function share: whether its source can take a guard
    (one function of that name, not decorated, that declares no global or nonlocal
    names, which would be the copy's globals), the names it uses, and the modules made
    for it so far (a few, the latest kept)."""

    __slots__ = ("fits", "names", "codes")

    def __init__(self, source: str, name: str):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        node = tree.body[0] if len(tree.body) == 1 else None
        self.fits = (
            isinstance(node, ast.FunctionDef)
            and node.name == name
            and not node.decorator_list
            and not any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(node))
        )
        self.names = frozenset(_IDENTIFIER.findall(source))
        self.codes: dict[tuple, types.CodeType] = {}

    def keep(self, key: tuple, code: types.CodeType) -> None:
        if len(self.codes) >= _MODULES_KEPT:
            del self.codes[next(iter(self.codes))]
        self.codes[key] = code


_COMPILED: weakref.WeakKeyDictionary[types.FunctionType, _Compiled] = weakref.WeakKeyDictionary()
_MODULES_KEPT = 8


def guard_host(function: Any, arity: int) -> GuardHost | None:
    """``function`` ready to take the guard of calls with ``arity`` positional arguments
    and no keywords, or None: when it is not the compiled code of a generated function,
    is long, is a generator, declares global or nonlocal names, or cannot be called with
    such arguments alone (a parameter without a default; the guard then calls the code,
    which raises as the call would).

    Example::

        guard_host(derivative(f, ("x",)).function, 1).parameters  # ['x']
    """
    generated = generated_of(function)
    if generated is None or generated.__dict__.get("function") is not function:
        return None  # not the code of a generated function (or not compiled from it)
    source = generated.__dict__.get("source")
    if not isinstance(function, types.FunctionType) or source is None:
        return None
    code = function.__code__
    if source.count("\n") > _LONGEST_SOURCE_LINES or function.__closure__:
        return None
    if code.co_flags & _NOT_PLAIN or not _takes(function, arity):
        return None
    compiled = _COMPILED.get(function)
    if compiled is None:
        compiled = _COMPILED[function] = _Compiled(source, function.__name__)
    return GuardHost(function, generated, source, arity, compiled) if compiled.fits else None


def _takes(function: types.FunctionType, arity: int) -> bool:
    """Whether ``function`` can be called with ``arity`` positional arguments alone."""
    code = function.__code__
    positional = code.co_argcount
    if arity < positional - len(function.__defaults__ or ()):
        return False
    if arity > positional and not code.co_flags & inspect.CO_VARARGS:
        return False
    return all(name in (function.__kwdefaults__ or {}) for name in _keyword_only(code))


def _positional(code: types.CodeType) -> tuple[str, ...]:
    return code.co_varnames[: code.co_argcount]


def _keyword_only(code: types.CodeType) -> tuple[str, ...]:
    return code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]


_Node = TypeVar("_Node", bound=ast.AST)


def _placed(node: _Node, line: int) -> _Node:
    """``node`` placed on line ``line``."""
    there = ast.Pass(lineno=line, col_offset=0, end_lineno=line, end_col_offset=0)
    return ast.copy_location(node, there)


def _on_line(source: str, line: int) -> list[ast.stmt]:
    """The statements of ``source`` (one line of code, or a few), all placed on line
    ``line``."""
    if not source:
        return []
    body = ast.parse(source + "\n").body
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if "lineno" in node._attributes:  # statements, expressions, handlers, arguments
            setattr(node, "lineno", line)  # noqa: B010
            setattr(node, "end_lineno", line)  # noqa: B010
    return body


def _tested(test: str, otherwise: str, ok: str) -> str:
    """The statements that return ``otherwise`` unless ``test`` holds: a test that raises
    (a name deleted from a module, an emptied closure cell: ``signature_guards.py`` reads
    them without a default) fails. ``otherwise`` (the call's usual way) runs outside the
    ``try``, so that its own exception propagates, once."""
    return "\n".join(
        [
            f"{ok} = False",
            "try:",
            f"    if {test}: {ok} = True",
            "except Exception:",
            "    pass",
            f"if not {ok}: return {otherwise}",
        ]
    )


def _shaped(body: list[ast.stmt], shape: str, line: int) -> list[ast.stmt]:
    """``body`` whose every ``return`` (not those of functions inside) returns its value
    shaped by ``shape``, and which returns the shaped None where it ends."""
    for node in _own_nodes(body):
        if isinstance(node, ast.Return):
            value = node.value if node.value is not None else ast.Constant(value=None)
            node.value = _shape(ast.copy_location(value, node), shape)
    end = _placed(ast.Return(value=_shape(_placed(ast.Constant(value=None), line), shape)), line)
    return [*body, end]


def _shape(value: ast.expr, shape: str) -> ast.expr:
    """``(value,)``, or ``shape(value)``, where ``value`` is."""
    if shape == "one_tuple":
        return ast.copy_location(ast.Tuple(elts=[value], ctx=ast.Load()), value)
    function = ast.copy_location(ast.Name(id=shape, ctx=ast.Load()), value)
    return ast.copy_location(ast.Call(func=function, args=[value], keywords=[]), value)


def _own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of ``body``, not entering functions, lambdas or classes defined in it."""
    stack: list[ast.AST] = [node for node in body if not isinstance(node, _SCOPES)]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))
