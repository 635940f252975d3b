"""The global names of one generated module: each object bound under a name of its own.

Example::

    space = Namespace(NameGenerator({"x"}))  # the names the function uses
    space.bind("np", numpy)  # 'np'
"""

from __future__ import annotations

import functools
import keyword
from typing import Any

from s2sgrad.compiler.passes.names import NameGenerator

__all__ = ["Namespace"]


class Namespace:
    """The global names of one generated module: name → object, without collisions.

    Example::

        space = Namespace(NameGenerator({"x"}))  # the names the function uses
        space.bind("np", numpy)  # 'np'
        space.bind("x", other)  # 'x_1': 'x' is taken
    """

    def __init__(self, names: NameGenerator):
        self.names = names
        self.objects: dict[str, Any] = {}

    def bind(self, preferred: str, obj: Any) -> str:
        preferred = _identifier(preferred)
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


@functools.cache
def _identifier(name: str) -> str:
    """``name`` made a Python identifier: ``<lambda>_vjp`` (a lambda's) is ``lambda_vjp``."""
    if name.isidentifier() and not keyword.iskeyword(name):
        return name
    cleaned = "".join(c if c.isalnum() or c == "_" else "" for c in name)
    cleaned = cleaned if cleaned.isidentifier() else f"f_{cleaned}"
    return f"{cleaned}_" if keyword.iskeyword(cleaned) else cleaned
