"""What generated code assumes about the names the user's code reads, checked at each call.

Generated code is built from what the user's free names held when it was transformed:
``np`` was NumPy, ``helper`` was a function whose derivative it calls, ``X`` an array of
some shape the code was specialised to. A user may rebind any of them between calls
(``X, y = next_batch()``), so every name is an :class:`Entry` that remembers the object
seen last, and every call checks, by identity, that each name still holds it.

When one does not:

* a data value (an array, a number, a container of them) replaced by one of the same
  *kind* (type; shape and dtype for an array; the value for an integer, which may set
  shapes) is simply the new value: it is copied into the generated code's globals (its
  *mirrors*) and the code runs on;
* anything else (a function, a module, an object whose attributes the transformer read,
  an array of another shape) retires the entry: every generated function that depends on
  it is stale and is transformed again.

Example::

    entry = entry_for(module.__dict__, "X")
    assumptions = Assumptions([entry])
    assumptions.hold()  # True while module.X is the array it was
"""

from __future__ import annotations

import threading
import types
import weakref
from typing import Any

import numpy as np

__all__ = ["Entry", "Assumptions", "entry_for", "code_entry_for", "is_data", "is_frozen", "MISSING"]


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()  # what an unbound name or an empty cell holds
_lock = threading.RLock()


class _Cell:
    """A closure cell read like a dictionary, so that every entry is checked alike."""

    __slots__ = ("cell",)

    def __init__(self, cell: types.CellType):
        self.cell = cell

    def get(self, name: str, default: Any) -> Any:
        try:
            return self.cell.cell_contents
        except ValueError:  # an emptied cell
            return default


class _Attributes:
    """An object's attributes read like a dictionary (``get(name, default)``, at C speed):
    a function's ``__code__``, which a reload replaces in place. The object is held weakly,
    so that a function's derivatives go with it; gone, it reads as ``default``."""

    __slots__ = ("owner", "__weakref__")

    def __init__(self, owner: Any):
        self.owner = weakref.ref(owner)

    def get(self, name: str, default: Any) -> Any:
        owner = self.owner()
        return default if owner is None else getattr(owner, name, default)


class Entry:
    """One free name of the user's code: where it lives, what it held, and its kind.

    ``holder`` is the module's globals dict (with ``name``) or a closure cell, both read
    with ``holder.get(name, MISSING)``.
    """

    __slots__ = ("holder", "name", "expected", "kind", "stale", "mirrors", "key", "__weakref__")

    def __init__(self, holder: dict | types.CellType | _Attributes, name: str, value: Any):
        self.key = (id(holder), name)
        self.holder = holder if isinstance(holder, (dict, _Attributes)) else _Cell(holder)
        self.name = name
        self.expected = value
        self.kind = kind_of(value)
        self.stale = False
        self.mirrors: weakref.WeakSet = weakref.WeakSet()  # functions whose globals copy it

    def read(self) -> Any:
        return self.holder.get(self.name, MISSING)

    def refresh(self) -> bool:
        """Take the name's current value if it is of the same kind; False if stale."""
        if self.stale:
            return False
        value = self.read()
        if value is self.expected:
            return True
        if self.kind is None or kind_of(value) != self.kind:
            self.retire()
            return False
        self.expected = value
        for function in list(self.mirrors):
            function.__globals__[self.name] = value
        return True

    def mirror(self, function: types.FunctionType) -> None:
        """Keep ``function``'s global of this name equal to the user's value."""
        function.__globals__[self.name] = self.expected
        self.mirrors.add(function)

    def retire(self) -> None:
        self.stale = True
        if _ENTRIES.get(self.key) is self:
            del _ENTRIES[self.key]


_ENTRIES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def entry_for(holder: dict | types.CellType, name: str) -> Entry:
    """The entry of ``name`` in ``holder`` (a globals dict or a cell), shared by every
    generated function that reads it, so one update serves them all."""
    with _lock:
        key = (id(holder), name)
        entry = _ENTRIES.get(key)
        if entry is not None and entry.refresh():
            return entry
        entry = Entry(holder, name, MISSING)
        entry.expected = entry.read()
        entry.kind = kind_of(entry.expected)
        _ENTRIES[key] = entry
        return entry


def code_entry_for(function: types.FunctionType) -> Entry:
    """The entry of ``function.__code__``: the code a derivative was made from, which a
    reload replaces in place without rebinding any name (IPython's autoreload, or
    ``f.__code__ = ...``); when it changes, the derivative is stale.

    Example::

        assumptions.include([code_entry_for(helper)])
    """
    with _lock:
        key = (id(function), "__code__")
        entry = _ENTRIES.get(key)
        if entry is not None and entry.refresh():
            return entry
        entry = Entry(_Attributes(function), "__code__", function.__code__)
        entry.key = key
        _ENTRIES[key] = entry
        return entry


class Assumptions:
    """The entries a generated function depends on, its callees' included."""

    __slots__ = ("entries",)

    def __init__(self, entries=()):
        self.entries: list[Entry] = []
        self.include(entries)

    def include(self, entries) -> None:
        known = {id(e) for e in self.entries}
        for entry in entries.entries if isinstance(entries, Assumptions) else entries:
            if id(entry) not in known:
                known.add(id(entry))
                self.entries.append(entry)

    def hold(self) -> bool:
        """Whether every name still holds what the generated code last saw (the check
        each call makes; a few dictionary reads)."""
        for entry in self.entries:
            if entry.holder.get(entry.name, MISSING) is not entry.expected:
                return False
        return True

    def current(self) -> bool:
        """Whether the generated code is still right: true if every name holds what it
        held, or data of the same kind (then taken over); false if any entry is stale."""
        if self.hold():
            return True
        with _lock:
            return all(entry.refresh() for entry in self.entries)


def is_data(value: Any) -> bool:
    """Whether generated code may simply read a new value of this name: not a module, not
    something called, and of a kind :func:`kind_of` can compare."""
    return kind_of(value) is not None


def is_frozen(value: Any) -> bool:
    """Whether shapes read through ``value`` can only change by rebinding its name, which
    the entries see: an array, a number, a tuple of them, a module (its attributes have
    entries of their own) or a function. Code reading a list, a dict or another object
    (whose items or attributes may be replaced in place) is not specialised to shapes.

    Example::

        is_frozen({"W": np.ones(2)})  # False: params["W"] = ... changes it in place
    """
    if isinstance(value, (np.ndarray, *_NUMBERS, *_EXACT, types.ModuleType, _Missing)):
        return not isinstance(value, _Missing)
    if type(value) is tuple:
        return all(map(is_frozen, value))
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, np.ufunc)):
        return True
    if isinstance(value, types.CodeType):  # a function's code (``code_entry_for``)
        return True
    return callable(value) and type(value).__module__.startswith("numpy")


_NUMBERS = (float, complex, np.floating, np.complexfloating)
_EXACT = (bool, int, str, bytes, type(None), np.integer, np.bool_)


def kind_of(value: Any, depth: int = 0) -> Any:
    """What generated code may depend on in a data value, or None for anything that must
    stay the very same object.

    Example::

        kind_of(np.ones((2, 3)))  # (numpy.ndarray, (2, 3), dtype('float64'))
    """
    if isinstance(value, np.ndarray):
        return (type(value), value.shape, value.dtype)
    if isinstance(value, _NUMBERS):
        return (type(value),)
    if isinstance(value, _EXACT):
        return (type(value), value)
    if depth < 4 and type(value) in (tuple, list):
        return (type(value), tuple(_element_kind(v, depth) for v in value))
    if depth < 4 and type(value) is dict:
        return (dict, tuple((k, _element_kind(v, depth)) for k, v in value.items()))
    return None


def _element_kind(value: Any, depth: int) -> Any:
    kind = kind_of(value, depth + 1)
    return ("object", id(value)) if kind is None else kind
