"""Fresh, readable, collision-free names for temporaries and adjoints."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["NameGenerator"]


class NameGenerator:
    """Hands out names that collide with nothing the function or its namespace uses.

    Example::

        names = NameGenerator({"x", "dx"})
        names.adjoint("x")  # 'dx_1' because 'dx' is taken
        names.fresh("t")    # 't1'
    """

    def __init__(self, taken: Iterable[str] = ()):
        self.taken = set(taken)
        self._counters: dict[str, int] = {}

    def claim(self, name: str) -> str:
        """``name`` itself if free, else ``name_1``, ``name_2`` …"""
        candidate = name
        index = 0
        while candidate in self.taken:
            index += 1
            candidate = f"{name}_{index}"
        self.taken.add(candidate)
        return candidate

    def fresh(self, stem: str) -> str:
        """``stem1``, ``stem2`` … skipping names in use."""
        while True:
            index = self._counters.get(stem, 0) + 1
            self._counters[stem] = index
            candidate = f"{stem}{index}"
            if candidate not in self.taken:
                self.taken.add(candidate)
                return candidate

    def version(self, name: str) -> str:
        """A new name for a later value of variable ``name`` (``x`` → ``x_1``)."""
        base = re.sub(r"_\d+$", "", name)
        index = 1
        while f"{base}_{index}" in self.taken:
            index += 1
        return self.claim(f"{base}_{index}")

    def adjoint(self, name: str) -> str:
        """The name of ``name``'s adjoint: ``dx`` for ``x`` unless that is taken."""
        return self.claim("d" + name)
