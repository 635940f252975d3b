"""Imports inside the differentiated function (``import numpy as np``, ``from scipy import
stats``), done once when transforming.

An import binds a module, or a name a module holds, which is the same object each time
the function runs (Python keeps imported modules). The transformer resolves what the
function calls by the objects its names hold, so an import statement is done here, the
name it binds given to the generated code as a free name (whose freshness is checked like
any other), and the statement dropped. A name that the function also binds otherwise, or
two imports that bind it differently, keep their statements (and the names stay local,
refused where they are called); so does an import that fails here.

Example::

    # def f(x): from scipy.special import expit; return expit(x)   becomes
    # def f(x): return expit(x)      with expit bound to scipy.special.expit
"""

from __future__ import annotations

import importlib
from typing import Any

import gast

from s2sgrad.compiler.syntax import SCOPES, names_written, nested_statements

__all__ = ["done_imports"]

_UNRESOLVED = object()


def done_imports(node: gast.FunctionDef, package: str | None) -> dict[str, Any]:
    """Remove, in place, the import statements of ``node``'s body (not of functions it
    defines) that bind a name nothing else binds; return the names and their objects.
    ``package``: the function's module's package, for relative imports."""
    imports = [s for s in nested_statements(node.body) if type(s) in (gast.Import, gast.ImportFrom)]
    if not imports:
        return {}
    bindings = {id(s): _bindings(s, package) for s in imports}  # each import done once
    found: dict[str, Any] = {}
    for statement in imports:
        for name, value in bindings[id(statement)]:
            if found.get(name, value) is not value or value is _UNRESOLVED:
                found[name] = _UNRESOLVED
            else:
                found[name] = value
    others = set().union(
        *(
            names_written(s)
            for s in nested_statements(node.body)
            if type(s) not in (gast.Import, gast.ImportFrom) and not isinstance(s, SCOPES)
        )
    )
    bound = {n: v for n, v in found.items() if v is not _UNRESOLVED and n not in others}
    done = {id(s) for s in imports if all(name in bound for name, _ in bindings[id(s)])}
    if done:
        _drop(node.body, done)
    return {name: bound[name] for key in done for name, _ in bindings[key]}


def _bindings(statement: gast.stmt, package: str | None) -> list[tuple[str, Any]]:
    """``(name, object)`` for each name the import binds (``_UNRESOLVED`` if it fails)."""
    result = []
    for alias in statement.names:
        if alias.name == "*":
            return [("*", _UNRESOLVED)]
        if type(statement) is gast.Import:
            if alias.asname is None:  # import a.b binds a
                root = alias.name.split(".")[0]
                result.append((root, _imported(alias.name, package, root)))
            else:
                result.append((alias.asname, _imported(alias.name, package)))
        else:
            module = "." * statement.level + (statement.module or "")
            value = _imported(module, package)
            if value is not _UNRESOLVED:
                value = getattr(value, alias.name, _UNRESOLVED)
                if value is _UNRESOLVED:  # from a import submodule
                    value = _imported(f"{module}.{alias.name}".replace("..", "."), package)
            result.append((alias.asname or alias.name, value))
    return result


def _imported(name: str, package: str | None, root: str | None = None) -> Any:
    try:
        module = importlib.import_module(name, package)
    except Exception:  # an import that fails when transforming: its statement stays
        return _UNRESOLVED
    if root is not None:
        return importlib.import_module(root) if root != name else module
    return module


def _drop(block: list[gast.stmt], done: set[int]) -> None:
    block[:] = [s for s in block if id(s) not in done] or [gast.Pass()]
    for statement in block:
        if isinstance(statement, SCOPES):
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                _drop(inner, done)
            elif isinstance(inner, list):
                for part in inner:  # except handlers, match cases
                    if isinstance(getattr(part, "body", None), list):
                        _drop(part.body, done)
