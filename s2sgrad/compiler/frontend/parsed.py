"""A parsed function, and the objects the names it uses refer to.

The transformer never guesses what ``np.sin`` means: every free name (and attribute
chain on one, like ``np.linalg.norm``) is resolved against the function's globals,
closure cells and builtins before any code is written.
"""

from __future__ import annotations

import builtins
import linecache
from dataclasses import dataclass, field
from typing import Any

import gast

from s2sgrad.errors import where
from s2sgrad.running import ORIGINS

__all__ = ["ParsedFunction", "NOT_FOUND"]

NOT_FOUND = object()
_NAME, _ATTRIBUTE = gast.Name, gast.Attribute
_BUILTINS = builtins.__dict__


@dataclass
class ParsedFunction:
    """A function's syntax tree with everything needed to resolve its names."""

    function: Any
    node: gast.FunctionDef
    filename: str
    line_offset: int  # add to a node's lineno to get the line in ``filename``
    globals: dict
    closure: dict = field(default_factory=dict)
    # the names the body writes, as parsed, when ``node`` is only the function's outline
    # (its name and parameters): the transformer changes the parsed body in place
    written: frozenset[str] | None = None

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
        kind = type(node)
        if kind is _NAME:  # the commonest (np.sin is an attribute of one): without a call
            return self.resolve_name(node.id)
        if kind is _ATTRIBUTE:
            value = node.value
            base = self.resolve_name(value.id) if type(value) is _NAME else self.resolve(value)
            if base is NOT_FOUND:
                return NOT_FOUND
            return getattr(base, node.attr, NOT_FOUND)
        if isinstance(node, gast.Name):
            return self.resolve_name(node.id)
        if isinstance(node, gast.Attribute):
            base = self.resolve(node.value)
            if base is NOT_FOUND:
                return NOT_FOUND
            return getattr(base, node.attr, NOT_FOUND)
        return NOT_FOUND

    def resolve_name(self, name: str) -> Any:
        closure = self.closure
        if name in closure:
            return closure[name]
        namespace = self.globals
        if name in namespace:
            return namespace[name]
        return _BUILTINS.get(name, NOT_FOUND)  # ``getattr`` builds an error for a miss
