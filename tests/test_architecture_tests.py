"""The tests use s2sgrad through its public names only.

A test that imports ``s2sgrad.x._y`` (or reads ``x._y``, or patches it) ties itself to how a
module happens to be written: it breaks when the module is restructured, though the
behaviour it checks has not changed. What a test needs is tested through the public API,
or is public in its module.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pathlib

from collector import older_objects_frozen

TESTS = pathlib.Path(__file__).parent

# Private names still read, each with why and who removes it; delete an entry when its use
# goes (a stale entry does not fail the test, so that the branches named can land in any
# order).
PENDING: set[tuple[str, str]] = set()


def _private_prefix(name: str) -> str | None:
    """``a.b._c`` for ``a.b._c.d``: the name up to its first private part, if it has one."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[: i + 1])
    return None


def _is_module(name: str) -> bool:
    try:
        return inspect.ismodule(importlib.import_module(name))
    except ImportError:
        return False


def _bound_modules(nodes: list[ast.AST]) -> dict[str, str]:
    """Local names bound to s2sgrad modules by the imports among ``nodes``."""
    bound = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "s2sgrad":
                    local = alias.asname or alias.name.split(".")[0]
                    bound[local] = alias.name if alias.asname else "s2sgrad"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "s2sgrad":
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if _is_module(full):
                    bound[alias.asname or alias.name] = full
    return bound


def _dotted(node: ast.AST, bound: dict[str, str]) -> str | None:
    """``s2sgrad.x.y`` for an expression ``m.y`` where ``m`` is bound to ``s2sgrad.x``."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = _dotted(node.value, bound)
        return None if owner is None else f"{owner}.{node.attr}"
    return None


def private_uses(source: str) -> set[str]:
    """The private s2sgrad names that ``source`` imports, reads or patches.

    Example::

        private_uses("from s2sgrad.api import _name")  # {"s2sgrad.api._name"}
    """
    nodes = list(ast.walk(ast.parse(source)))
    bound = _bound_modules(nodes)
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "s2sgrad":
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "s2sgrad"}
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            found.add(_dotted(node, bound) or "")
        elif isinstance(node, ast.Call) and node.args:
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else None
            name = function.id if isinstance(function, ast.Name) else name
            strings = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if name in {"getattr", "setattr", "delattr", "hasattr"} and len(node.args) > 1:
                owner = _dotted(node.args[0], bound)
                if owner and isinstance(node.args[1], ast.Constant):
                    found.add(f"{owner}.{node.args[1].value}")
            found |= {s for s in strings if isinstance(s, str) and s.startswith("s2sgrad.")}
    private = {_private_prefix(name) for name in found if name.startswith("s2sgrad")}
    return private - {None}


def test_the_check_sees_each_way_of_reaching_a_private_name():
    source = """
import s2sgrad.compiler.pipeline as pipeline
from s2sgrad.compiler import reverse
from s2sgrad.api import _name, grad
from s2sgrad.compiler.pipeline import _cache as renamed

def test(monkeypatch):
    reverse._Reverse.backward_if
    monkeypatch.setattr(pipeline, "_lock", None)
    monkeypatch.setattr("s2sgrad.tracing._TRACING", None)
    getattr(reverse, "_private_helper")
    reverse.public_name, grad, pipeline.derivative, (1.0)._x
"""
    assert private_uses(source) == {
        "s2sgrad.api._name",
        "s2sgrad.compiler.pipeline._cache",
        "s2sgrad.compiler.reverse._Reverse",
        "s2sgrad.compiler.pipeline._lock",
        "s2sgrad.tracing._TRACING",
        "s2sgrad.compiler.reverse._private_helper",
    }


def test_no_test_reaches_a_private_s2sgrad_name():
    # every test file's syntax tree starts full collections: frozen, the worker's older
    # objects are not walked by each (most of this test's time late in a run)
    with older_objects_frozen():
        found = {
            (path.name, name)
            for path in sorted(TESTS.glob("*.py"))
            for name in private_uses(path.read_text(encoding="utf-8"))
        }
    assert found - PENDING == set(), "tests reaching private names; test the public API"
