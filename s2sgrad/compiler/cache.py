"""The one cache of generated code, keyed once: user function → options → argument signature.

For each user function (held weakly: the code dies with it) and each set of options
``(wrt, kind, has_aux, dynamic)``, one :class:`Derivatives` holds

* ``generic``: the generic derivative per container layout of the differentiated
  arguments (what ``derivative`` returns, what callees and dispatch call);
* ``calls``: per argument signature, the code a call with that signature runs — its
  specialisation to those shapes, or the generic code where shapes may depend on values —
  with the freshness assumptions it depends on (``compiler/freshness.py``), which every
  call checks (their entries are kept beside them, for the check of the hot path);
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
from s2sgrad.compiler.freshness import MISSING, Assumptions
from s2sgrad.compiler.signature_guards import guarded_call

__all__ = ["CACHE", "Derivatives", "nothing_remembered"]


def nothing_remembered(*args: Any) -> Any:
    """The hot path's code before a signature was remembered: every call misses it.

    Example::

        nothing_remembered(1.0)  # MISSING
    """
    return MISSING


class Derivatives:
    """Everything generated for one function and one set of options."""

    __slots__ = ("generic", "calls", "latest", "fast", "_guarded", "__weakref__")

    def __init__(self) -> None:
        self.generic: dict[frozenset, GeneratedFunction] = {}  # containers → generic code
        # signature → (function, its assumptions' entries, its assumptions): what runs
        self.calls: dict[tuple, tuple[Callable, list, Assumptions]] = {}
        self.latest: GeneratedFunction | None = None
        # the code of the signature called last behind its guard (signature_guards.py):
        # an entry of ``calls`` found faster; nothing_remembered when calls change
        self.fast: Callable = nothing_remembered
        self._guarded: dict[tuple, tuple] = {}  # signature → (function, entries, guarded)

    def keep_call(self, key: tuple, ran: GeneratedFunction) -> None:
        """Remember that calls with signature ``key`` run ``ran``."""
        self.calls[key] = (ran.function, ran.assumptions.entries, ran.assumptions)
        self.latest = ran
        self.fast = nothing_remembered
        self._guarded.pop(key, None)

    def remember_fast(self, key: tuple, function: Callable, entries: list) -> None:
        """Make ``calls[key]`` (``function`` and its ``entries``) the one the hot path of
        a transformed function tries first, behind a guard of the signature ``key``."""
        kept = self._guarded.get(key)
        if kept is None or kept[0] is not function or kept[1] is not entries:
            guarded = guarded_call(key, function, entries) or nothing_remembered
            kept = self._guarded[key] = (function, entries, guarded)
        self.fast = kept[2]

    def forget_fast(self) -> None:
        """Make the next call look its code up in ``calls`` again."""
        self.fast = nothing_remembered

    def forget_calls(self) -> None:
        self.calls.clear()
        self.latest = None
        self.fast = nothing_remembered
        self._guarded.clear()

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
