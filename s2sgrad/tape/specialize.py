"""VJP rules specialised to the arguments that need a cotangent.

A rule returns one cotangent per positional argument, so ``x * 2.0`` would also compute
the cotangent of the constant ``2.0`` (a sum over the whole array, to undo broadcasting).
The tape knows which arguments lead back to a source, and calls a copy of the rule whose
return tuple keeps only those entries, with the assignments that only fed the others
removed. Rules are written as assignments and ``if`` statements followed by one ``return``
(the contract of :mod:`s2sgrad.rules.registry`), which is what makes this safe: dropping an
unused NumPy computation does not change anything else. Any other shape of rule is used
as it is.

Example::

    specialized(get_rule(operator.mul).vjp, (True, False))
    # def _multiply(g, ans, x1, x2):
    #     return (unbroadcast(g * x2, x1), None)
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable

__all__ = ["specialized"]

_CACHE: dict[tuple[Callable, tuple[bool, ...]], Callable] = {}


def specialized(function: Callable, needed: tuple[bool, ...]) -> Callable:
    """``function`` (a VJP rule) computing only the cotangents flagged in ``needed``.

    Example::

        specialized(rule.vjp, (True, False))(g, ans, x, 2.0)  # (g * 2.0, None)
    """
    key = (function, needed)
    result = _CACHE.get(key)
    if result is None:
        result = _CACHE[key] = _specialize(function, needed) or function
    return result


def _specialize(function: Callable, needed: tuple[bool, ...]) -> Callable | None:
    definition = _parse(function)
    if definition is None:
        return None
    body = definition.body
    last = body[-1]
    if not isinstance(last, ast.Return) or not isinstance(last.value, ast.Tuple):
        return None
    entries = last.value.elts
    if all(i < len(needed) and needed[i] for i in range(len(entries))):
        return None  # every entry is needed: the rule as written is the best
    kept = [
        entry if i < len(needed) and needed[i] else ast.Constant(None)
        for i, entry in enumerate(entries)
    ]
    returned = ast.Return(ast.Tuple(kept, ast.Load()))
    definition.body = [*_live_statements(body[:-1], _names_read(returned)), returned]
    definition.decorator_list = []
    return _compile(definition, function)


def _parse(function: Callable) -> ast.FunctionDef | None:
    """The rule's definition, if it is a plain function ending in ``return (a, b, …)``."""
    if getattr(function, "__closure__", None) or not hasattr(function, "__code__"):
        return None
    try:
        lines, first_line = inspect.getsourcelines(function)
    except (OSError, TypeError):
        return None
    try:
        module = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None
    definition = module.body[0] if module.body else None
    if not isinstance(definition, ast.FunctionDef) or not definition.body:
        return None
    ast.increment_lineno(definition, first_line - 1)
    last = definition.body[-1]
    if not isinstance(last, ast.Return) or not isinstance(last.value, ast.Tuple):
        return None
    if any(isinstance(e, ast.Starred) for e in last.value.elts):
        return None
    for statement in definition.body[:-1]:
        if any(
            isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) for node in ast.walk(statement)
        ):
            return None
    return definition


def _live_statements(statements: list[ast.stmt], live: set[str]) -> list[ast.stmt]:
    """``statements`` without the plain assignments whose names nothing later reads."""
    kept = []
    for statement in reversed(statements):
        if _is_dead_assignment(statement, live):
            continue
        kept.append(statement)
        live |= _names_read(statement)
    return kept[::-1]


def _is_dead_assignment(statement: ast.stmt, live: set[str]) -> bool:
    if not isinstance(statement, ast.Assign):
        return False
    targets = statement.targets
    return all(isinstance(t, ast.Name) and t.id not in live for t in targets)


def _names_read(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _compile(definition: ast.FunctionDef, original: Callable) -> Callable:
    module = ast.fix_missing_locations(ast.Module([definition], type_ignores=[]))
    filename = inspect.getsourcefile(original) or "<rule>"
    namespace: dict = {}
    exec(compile(module, filename, "exec"), original.__globals__, namespace)
    function = namespace[definition.name]
    function.__defaults__ = original.__defaults__
    function.__kwdefaults__ = original.__kwdefaults__
    function.__qualname__ = original.__qualname__
    return function
