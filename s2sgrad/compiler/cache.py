"""The one cache of generated code, keyed once: user function → options → argument signature.

For each user function (held weakly: the code dies with it) and each set of options
``(wrt, kind, has_aux, dynamic)``, one :class:`Derivatives` holds

* ``generic``: the generic derivative per container layout of the differentiated
  arguments (what ``derivative`` returns, what callees and dispatch call);
* ``calls``: per argument signature, the code a call with that signature runs — its
  specialisation to those shapes, or the generic code where shapes may depend on values —
  with the freshness assumptions it depends on (``compiler/freshness.py``), which every
  call checks (their entries are kept beside them, for the check of the hot path, a
  transform's guard of the signature it ran last, which runs only while ``token`` is
  the one it was made with);
* ``latest``: the code made last for a signature (what ``sg.source`` shows).

When a generic derivative is found stale (a name it read holds something else), it is
built anew and every entry of ``calls`` and ``latest`` goes with it.

Example::

    derivatives = CACHE.entry(f, (("x",), "grad", False, True))
    function, entries, assumptions = derivatives.calls[signature((x,), {})]
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from s2sgrad.compiler.codegen import GeneratedFunction
from s2sgrad.compiler.freshness import Assumptions

__all__ = ["CACHE", "Derivatives"]


class Derivatives:
    """Everything generated for one function and one set of options."""

    __slots__ = ("generic", "calls", "latest", "token", "__weakref__")

    def __init__(self) -> None:
        self.generic: dict[frozenset, GeneratedFunction] = {}  # containers → generic code
        # signature → (function, its assumptions' entries, its assumptions): what runs
        self.calls: dict[tuple, tuple[Callable, list, Assumptions]] = {}
        self.latest: GeneratedFunction | None = None
        # made anew whenever ``calls`` changes: a transform's guard of a signature
        # (signature_guards.py) runs the code it found only while the token is this one
        self.token = object()

    def keep_call(self, key: tuple, ran: GeneratedFunction) -> None:
        """Remember that calls with signature ``key`` run ``ran``."""
        self.calls[key] = (ran.function, ran.assumptions.entries, ran.assumptions)
        self.latest = ran
        self.token = object()

    def forget_fast(self) -> None:
        """Make every guard of an entry of ``calls`` miss: the next call of each
        transform looks its code up in ``calls`` again."""
        self.token = object()

    def forget_calls(self) -> None:
        self.calls.clear()
        self.latest = None
        self.token = object()

    def clear(self) -> None:
        self.generic.clear()
        self.forget_calls()


class _Cache:
    """:class:`Derivatives` by (function, options); forgotten when the function is."""

    def __init__(self) -> None:
        self._by_function: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._lasting: dict = {}  # functions that cannot be weakly referenced

    def entry(self, function: Any, options: tuple) -> Derivatives:
        """The entry of ``function`` for ``options``, made empty when there is none."""
        try:
            table = self._by_function.get(function)
            if table is None:
                table = self._by_function[function] = {}
        except TypeError:
            table = self._lasting.setdefault(function, {})
        entry = table.get(options)
        if entry is None:
            entry = table[options] = Derivatives()
        return entry

    def find(self, function: Any, options: tuple) -> Derivatives | None:
        """The entry of ``function`` for ``options`` if there is one (none is made).

        Example::

            CACHE.find(f, (("x",), "grad", False, True))  # None before f's first transform
        """
        try:
            table = self._by_function.get(function)
        except TypeError:
            table = self._lasting.get(function)
        return None if table is None else table.get(options)

    def clear(self) -> None:
        """Forget every generated function; entries stay, empty, for whoever holds them."""
        for table in [*self._by_function.values(), *self._lasting.values()]:
            for entry in table.values():
                entry.clear()

    def __len__(self) -> int:
        """How many generic derivatives are kept."""
        tables = [*self._by_function.values(), *self._lasting.values()]
        return sum(len(entry.generic) for table in tables for entry in table.values())


CACHE = _Cache()
