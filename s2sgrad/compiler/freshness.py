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

__all__ = [
    "Entry",
    "Assumptions",
    "entry_for",
    "code_entries_for",
    "class_attribute_entries",
    "is_data",
    "is_frozen",
    "MISSING",
]


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
    a function's ``__code__`` or defaults, which a reload replaces in place. The object is
    held weakly, so that a function's derivatives go with it; gone, it reads as ``default``."""

    __slots__ = ("owner", "__weakref__")

    def __init__(self, owner: Any):
        self.owner = weakref.ref(owner)

    def get(self, name: str, default: Any) -> Any:
        owner = self.owner()
        return default if owner is None else getattr(owner, name, default)


class _ClassAttributes(_Attributes):
    """A class's own attributes (its ``__dict__``, not what lookup finds in its bases or
    what a descriptor makes), read like a dictionary; the class is held weakly."""

    __slots__ = ()

    def get(self, name: str, default: Any) -> Any:
        owner = self.owner()
        return default if owner is None else owner.__dict__.get(name, default)


class Entry:
    """One free name of the user's code: where it lives, what it held, and its kind.

    ``holder`` is the module's globals dict (with ``name``) or a closure cell, both read
    with ``holder.get(name, MISSING)``.
    """

    __slots__ = (
        "holder",
        "name",
        "expected",
        "kind",
        "arrays",
        "stale",
        "mirrors",
        "key",
        "__weakref__",
    )

    def __init__(self, holder: dict | types.CellType | _Attributes, name: str, value: Any):
        self.key = (id(holder), name)
        self.holder = holder if isinstance(holder, (dict, _Attributes)) else _Cell(holder)
        self.name = name
        self.expected = value
        self.kind = kind_of(value)
        self.arrays = arrays_in(value)
        self.stale = False
        self.mirrors: weakref.WeakSet = weakref.WeakSet()  # functions whose globals copy it

    def read(self) -> Any:
        return self.holder.get(self.name, MISSING)

    def reshaped(self) -> bool:
        """Whether an array the value is (or a tuple holds) changed its shape or dtype in
        place since it was taken (``W.shape = (3, 1)``, ``W.resize(...)``): the same
        object, whose shapes specialised code may have been made for."""
        return any(a.shape != shape or a.dtype != dtype for a, shape, dtype in self.arrays)

    def refresh(self) -> bool:
        """Take the name's current value if it is of the same kind; False if stale."""
        if self.stale:
            return False
        value = self.read()
        if value is self.expected and not (self.arrays and self.reshaped()):
            return True
        if self.kind is None or kind_of(value) != self.kind:
            self.retire()
            return False
        self.expected = value
        self.arrays = arrays_in(value)
        for function in list(self.mirrors):
            function.__globals__[self.name] = value
        return True

    def frozen(self) -> bool:
        """Whether shapes read through the value can change only by rebinding it, which
        the entry sees (:func:`is_frozen`); a function's code and defaults count as such, and
        so does a global not bound yet (a builtin's name), which any binding retires."""
        if self.expected is MISSING and self.kind is None:
            return True
        return isinstance(self.holder, _Attributes) or is_frozen(self.expected)

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
    return _shared((id(holder), name), holder, name)


def _shared(key: tuple, holder: Any, name: str, any_change_is_stale: bool = False) -> Entry:
    """The entry ``key`` names, made for ``name`` in ``holder`` when there is none current;
    ``any_change_is_stale``: no new value is taken over, even data of the same kind."""
    with _lock:
        entry = _ENTRIES.get(key)
        if entry is not None and entry.refresh():
            return entry
        entry = Entry(holder, name, MISSING)
        entry.key = key
        entry.expected = entry.read()
        entry.kind = None if any_change_is_stale else kind_of(entry.expected)
        entry.arrays = arrays_in(entry.expected)
        _ENTRIES[key] = entry
        return entry


def code_entries_for(function: types.FunctionType) -> list[Entry]:
    """The entries of ``function.__code__`` and, where it has them, of its defaults: what
    a derivative was made from that a reload replaces in place without rebinding any name
    (IPython's autoreload, ``f.__code__ = ...``, ``f.__defaults__ = ...``); when one
    changes, the derivative is stale (a derivative bakes the defaults into its signature).

    Example::

        assumptions.include(code_entries_for(helper))
    """
    names = ["__code__"]
    if function.__defaults__ is not None:
        names.append("__defaults__")
    if function.__kwdefaults__ is not None:
        names.append("__kwdefaults__")
    entries = [
        _shared((id(function), name), _Attributes(function), name, any_change_is_stale=True)
        for name in names
    ]
    # ``f.__kwdefaults__["p"] = 5.0`` changes the dict in place: each of its entries is
    # watched too (a tuple of defaults cannot change so)
    keyword_defaults = function.__kwdefaults__ or {}
    entries += [
        _shared((id(keyword_defaults), name), keyword_defaults, name, any_change_is_stale=True)
        for name in keyword_defaults
    ]
    return entries


def class_attribute_entries(cls: type, name: str) -> list[Entry]:
    """Entries for ``cls.name`` as code reads it: one per class of ``cls``'s method
    resolution order up to the one that defines ``name``, so that a value set later on
    ``cls`` or on a base in between (``Model.act = ...``) is seen as well as a value
    replaced where it is defined. Data are taken over as a module's are.

    Example::

        assumptions.include(class_attribute_entries(Layer, "activation"))
    """
    entries = []
    for owner in cls.__mro__:
        if owner is object:
            break
        key = (id(owner), f"class attribute {name}")
        entry = _shared(key, _ClassAttributes(owner), name)
        entries.append(entry)
        if entry.expected is not MISSING:
            break
    return entries


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
            if entry.arrays and entry.reshaped():
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
    if isinstance(value, types.CodeType):  # a function's code (``code_entries_for``)
        return True
    if isinstance(value, type):  # np.float32, np.ndarray: classes holding no shapes
        return value.__module__.partition(".")[0] in ("numpy", "builtins")
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


def arrays_in(value: Any) -> tuple:
    """``(array, its shape, its dtype)`` of ``value`` if it is an ndarray, or of the arrays
    a tuple holds (nested): what may change shape in place while the name holds the very
    same object (:meth:`Entry.reshaped`).

    Example::

        arrays_in((np.ones(2), 1.0))  # ((array([1., 1.]), (2,), dtype('float64')),)
    """
    if isinstance(value, np.ndarray):
        return ((value, value.shape, value.dtype),)
    if type(value) is tuple:
        return tuple(found for item in value for found in arrays_in(item))
    return ()


def _element_kind(value: Any, depth: int) -> Any:
    kind = kind_of(value, depth + 1)
    return ("object", id(value)) if kind is None else kind
