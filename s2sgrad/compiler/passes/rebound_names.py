"""A name bound again at the top of the function, for another value, gets a name of its own
from there on, before the analyses that follow a name through the whole function look at
it::

    for u in x:                        for u in x:
        v = v + u * y                      v = v + u * y
    u = np.zeros(5)            ->      u_1 = np.zeros(5)
    u[1:4] = np.sin(x)                 u_1[1:4] = np.sin(x)

Every statement after a statement of the function's own body runs after it, so the rest of
the function reads the new value under the new name: the program is the same. The sharing
analysis (``sharing.py``) took ``u`` for a loop's item, which may share memory with the
list it came from, and refused the write into the new array. A name that a nested function,
a lambda or a comprehension mentions, a parameter, or a name that ``global``, ``nonlocal``
or ``del`` mention keeps its name, and so does every name of a function that calls
``locals``, ``vars``, ``eval`` or ``exec``.
"""

from __future__ import annotations

import gast

from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import COMPREHENSIONS, names_written, walk

__all__ = ["rename_rebound_names"]

_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef, *COMPREHENSIONS)
_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec"})


def rename_rebound_names(node: gast.FunctionDef, names: NameGenerator) -> bool:
    """Give each name bound again by a statement of ``node``'s own body its own name from
    that statement on (see the module's docstring); whether any was.

    Example::

        rename_rebound_names(parse("def f(x):\\n    u = x\\n    u = 2 * x\\n    return u"), names)
        # u_1 = 2 * x; return u_1
    """
    if not _rebinds(node.body):
        return False
    nodes = walk(node)
    if any(type(n) is gast.Name and n.id in _INTROSPECTION for n in nodes):
        return False
    kept = {a.id for a in walk(node.args) if type(a) is gast.Name}
    for inner in nodes[1:]:
        if isinstance(inner, _SCOPES):
            kept |= {n.id for n in walk(inner) if type(n) is gast.Name}
        elif isinstance(inner, (gast.Global, gast.Nonlocal)):
            kept |= set(inner.names)
        elif isinstance(inner, gast.Delete):
            kept |= {n.id for n in walk(inner) if type(n) is gast.Name}
    bound: set[str] = set()  # names bound so far, as written
    renamed: dict[str, str] = {}  # name as written -> its name from its last binding on
    for statement in node.body:
        target = _plain_target(statement)
        if target is None:
            bound |= names_written(statement)
            _rename(statement, renamed)
            continue
        _rename(statement.value, renamed)
        if target.id in bound and target.id not in kept:
            renamed[target.id] = names.claim(target.id)
        bound.add(target.id)
        target.id = renamed.get(target.id, target.id)
    return bool(renamed)


def _rebinds(body: list[gast.stmt]) -> bool:
    """Whether a plain assignment of ``body`` binds a name a statement before it bound."""
    bound: set[str] = set()
    for statement in body:
        target = _plain_target(statement)
        if target is not None and target.id in bound:
            return True
        bound |= names_written(statement)
    return False


def _plain_target(statement: gast.stmt) -> gast.Name | None:
    if type(statement) is gast.Assign and len(statement.targets) == 1:
        target = statement.targets[0]
        if type(target) is gast.Name:
            return target
    return None


def _rename(node: gast.AST, renamed: dict[str, str]) -> None:
    if renamed:
        for inner in walk(node):
            if type(inner) is gast.Name and inner.id in renamed:
                inner.id = renamed[inner.id]
