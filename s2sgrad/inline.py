"""Inline a derivative rule's body into generated code, with the call site's names.

A rule ``def _sin(g, ans, x): return g * np.cos(x)`` used at ``y = np.sin(t1)`` with
cotangent ``dy`` becomes the expression ``dy * np.cos(t1)``. Parameters are replaced by
the call's arguments (or the parameter's default), the rule's local variables get fresh
names, ``if`` statements whose tests are constant after substitution are folded, and the
free names of the rule (``np``, runtime helpers) are bound in the generated namespace.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import warnings
from dataclasses import dataclass
from typing import Any

import gast

from s2sgrad.passes.names import NameGenerator
from s2sgrad.syntax import assign, clone, constant, names_written, walk

__all__ = ["Inlined", "inline_rule", "Namespace"]


class Namespace:
    """The global names of one generated module: name → object, without collisions.

    Example::

        space = Namespace(reserved={"x"})
        space.bind("np", numpy)  # 'np'
    """

    def __init__(self, names: NameGenerator):
        self.names = names
        self.objects: dict[str, Any] = {}

    def bind(self, preferred: str, obj: Any) -> str:
        if self.objects.get(preferred, _UNSET) is obj:
            return preferred
        for name, bound in self.objects.items():
            if bound is obj and name.startswith(preferred):
                return name
        name = preferred if preferred not in self.names.taken else self.names.claim(preferred)
        self.names.taken.add(name)
        self.objects[name] = obj
        return name

    def bind_existing(self, name: str, obj: Any) -> None:
        """Bind a name the user's code already uses for ``obj``."""
        self.objects[name] = obj
        self.names.taken.add(name)


_UNSET = object()


@dataclass
class Inlined:
    """Statements to emit, then one expression (or None) per positional argument."""

    statements: list[gast.stmt]
    entries: list[gast.expr | None]


@dataclass
class _ParsedRule:
    positional: list[inspect.Parameter]
    varargs: str | None
    keyword_only: list[inspect.Parameter]
    body: list[gast.stmt]
    globals: dict


@functools.cache
def _parse_rule(rule) -> _ParsedRule | None:
    try:
        source = textwrap.dedent(inspect.getsource(rule))
    except (OSError, TypeError):
        return None
    node = gast.parse(source).body[0]
    if not isinstance(node, gast.FunctionDef):
        return None
    parameters = list(inspect.signature(rule).parameters.values())[2:]
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), None)
    keyword_only = [p for p in parameters if p.kind == p.KEYWORD_ONLY]
    body = node.body
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant):
        body = body[1:]
    return _ParsedRule(positional, varargs, keyword_only, body, rule.__globals__)


def inline_rule(
    rule,
    first: gast.expr,
    ans: gast.expr,
    args: list[gast.expr],
    keywords: dict[str, gast.expr],
    wanted: set[int],
    names: NameGenerator,
    namespace: Namespace,
) -> Inlined | None:
    """Inline ``rule(first, ans, *args, **keywords)``; ``None`` when it cannot be inlined.

    Example::

        inlined = inline_rule(_sin, load("dy"), load("y"), [load("t1")], {}, {0}, names, space)
        inlined.entries[0]  # dy * np.cos(t1)
    """
    parsed = _parse_rule(rule)
    if parsed is None or any(isinstance(a, gast.Starred) for a in args):
        return None
    bound: dict[str, gast.expr] = {}
    if len(args) > len(parsed.positional) and parsed.varargs is None:
        return None
    for parameter, argument in zip(parsed.positional, args):
        bound[parameter.name] = argument
    if parsed.varargs is not None:
        extra = args[len(parsed.positional) :]
        bound[parsed.varargs] = gast.Tuple(elts=list(extra), ctx=gast.Load())
    by_name = {p.name: p for p in parsed.positional + parsed.keyword_only}
    for key, value in keywords.items():
        if key not in by_name or key in bound:
            return None  # a keyword the rule does not know: calling it raises a clear error
        bound[key] = value
    for parameter in parsed.positional + parsed.keyword_only:
        if parameter.name in bound:
            continue
        if parameter.default is inspect.Parameter.empty or not _is_literal(parameter.default):
            return None
        bound[parameter.name] = constant(parameter.default)
    first_name, ans_name = list(inspect.signature(rule).parameters)[:2]
    bound[first_name] = first
    bound[ans_name] = ans

    body = [clone(s) for s in parsed.body]
    written = set().union(*(names_written(s) for s in body)) if body else set()
    renames = {name: names.claim(name) for name in written}
    prologue = [
        assign(renames[name], clone(value)) for name, value in bound.items() if name in written
    ]
    _Substitute(bound, renames, parsed.globals, namespace).visit_block(body)
    body = _fold(body)
    if body is None or not body or not isinstance(body[-1], gast.Return):
        return None
    *statements, final = body
    if any(isinstance(n, gast.Return) for s in statements for n in walk(s)):
        return None
    value = final.value
    if isinstance(value, gast.Tuple):
        if any(isinstance(e, gast.Starred) for e in value.elts):
            return None
        entries = list(value.elts)
    else:
        entries = [value]
    entries += [None] * (len(args) - len(entries))
    entries = [
        None if (e is None or (isinstance(e, gast.Constant) and e.value is None)) else e
        for e in entries
    ]
    return Inlined(prologue + statements, entries[: max(len(args), 1)])


def _is_literal(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    return isinstance(value, tuple) and all(_is_literal(v) for v in value)


class _Substitute(gast.NodeTransformer):
    def __init__(self, bound, renames, rule_globals, namespace: Namespace):
        self.bound = bound
        self.renames = renames
        self.rule_globals = rule_globals
        self.namespace = namespace

    def visit_block(self, statements: list[gast.stmt]) -> None:
        for index, statement in enumerate(statements):
            statements[index] = self.visit(statement)

    def visit_Name(self, node: gast.Name) -> gast.expr:
        if node.id in self.renames:
            node.id = self.renames[node.id]
            return node
        if node.id in self.bound:
            return clone(self.bound[node.id])
        if node.id in self.rule_globals:
            node.id = self.namespace.bind(node.id, self.rule_globals[node.id])
            return node
        return node  # a builtin


def _fold(statements: list[gast.stmt]) -> list[gast.stmt] | None:
    """Fold ``if`` statements with constant tests; cut statements after a ``return``."""
    result: list[gast.stmt] = []
    for statement in statements:
        if isinstance(statement, gast.If):
            verdict = constant_truth(statement.test)
            if verdict is not None:
                branch = _fold(statement.body if verdict else statement.orelse)
                if branch is None:
                    return None
                result.extend(branch)
                if branch and isinstance(branch[-1], gast.Return):
                    return result
                continue
            statement.body = _fold(statement.body) or [gast.Pass()]
            statement.orelse = _fold(statement.orelse) or []
        result.append(statement)
        if isinstance(statement, gast.Return):
            return result
    return result


def constant_truth(test: gast.expr) -> bool | None:
    """The truth of an expression made only of literals, or None if it has names or calls.

    Example::

        constant_truth(parse_expression("None is None"))  # True
    """
    for node in walk(test):
        if isinstance(node, (gast.Name, gast.Call, gast.Attribute, gast.Subscript, gast.Lambda)):
            return None
    try:
        tree = gast.gast_to_ast(gast.Expression(body=clone(test)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # `-1 is None` warns, and is still foldable
            code = compile(ast.fix_missing_locations(tree), "<fold>", "eval")
            return bool(eval(code, {}, {}))
    except Exception:
        return None
