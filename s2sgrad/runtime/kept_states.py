"""The state a function keeps beside its result, noted so that runs of it repeated for one
answer (a forward-mode Jacobian's columns) each start from where the first did.

What is noted: what its arguments hold (their dicts, running statistics; their lists; the
attributes of their plain objects, a model changed in place; nested), the dicts and
lists among the globals and closure variables its code and its helpers' code name (a
counter ``CACHE["n"] = CACHE.get("n", 0) + 1``, a history), the attributes of the plain
objects there (``counter.n += 1``), those of the object a bound method or callable object
runs on (a model counting its calls), and the globals its code assigns (``global n``). Each
is copied shallowly: a value replaced is put back, not one changed in place.

Example::

    kept = KeptStates(f, args)
    start = kept.note()
    f(*args)
    kept.set(start)  # CACHE, counter.n and the global n as they were before the call
"""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = [
    "KeptStates",
    "code_names",
    "free_values_of",
    "held_by_arguments",
    "own_function",
    "wrapped_chain",
]

_ABSENT = object()  # a global not bound yet
_LEAVES = (np.ndarray, np.generic, float, int, complex, str, bytes, bool, type(None))
# a global container longer than this is data the function reads (a dataset as a list),
# not a counter or a cache of a few entries: copying it on every call would cost too much
_LARGEST = 4096


class KeptStates:
    """The dicts, lists, attributes and written globals a function can change (see the
    module's example)."""

    def __init__(self, function: Any, values: Iterable = ()):
        self.containers: dict[int, Any] = held_by_arguments(values, {})
        self.written: list[tuple[dict, frozenset[str]]] = []
        for receiver in _receivers(function):  # a model counting its own calls
            if len(vars(receiver)) <= _LARGEST:
                self.containers.setdefault(id(vars(receiver)), vars(receiver))
        functions = list(_functions(function))
        for each in functions:
            for value in free_values_of(each):
                if type(value) in (dict, list) and len(value) <= _LARGEST:
                    self.containers.setdefault(id(value), value)
                elif _plain_object(value) and len(vars(value)) <= _LARGEST:
                    self.containers.setdefault(id(vars(value)), vars(value))
            names = _written_globals(each.__code__)
            if names:
                self.written.append((each.__globals__, names))

    def with_arguments(self, values: Iterable) -> KeptStates:
        """These states and what a call's arguments ``values`` hold (see
        :func:`held_by_arguments`), for a :class:`KeptStates` made once for a function and
        used for each of its calls.

        Example::

            kept = KeptStates(f).with_arguments(args)
            start = kept.note()  # ... a run that fails part way ...
            kept.set(start)  # args[0].w as it was, though that run set it
        """
        if all(isinstance(v, _LEAVES) for v in values):
            return self  # arrays and numbers: nothing they hold to change
        found = held_by_arguments(values, self.containers)
        if not found:
            return self
        kept = object.__new__(KeptStates)
        kept.containers, kept.written = {**self.containers, **found}, self.written
        return kept

    def note(self) -> list:
        """The current state of everything kept."""
        held = [list(c) if type(c) is list else dict(c) for c in self.containers.values()]
        globals_ = [
            {n: namespace.get(n, _ABSENT) for n in names} for namespace, names in self.written
        ]
        return [held, globals_]

    def stored_numbers(self, before: list, after: list) -> bool:
        """Whether, from ``before`` to ``after`` (two states :meth:`note` gave), anything
        kept took a new value that could carry a derivative: a real or complex number, an
        array of them, a container holding one (not a count, a text or an object)."""
        for old, new in zip(before[0], after[0]):
            if type(new) is list:
                fresh = [b for i, b in enumerate(new) if i >= len(old) or old[i] is not b]
            else:
                fresh = [v for k, v in new.items() if k not in old or old[k] is not v]
            if any(_carries_numbers(v) for v in fresh):
                return True
        return any(
            any(
                new[name] is not value and _carries_numbers(new[name])
                for name, value in old.items()
            )
            for old, new in zip(before[1], after[1])
        )

    def set(self, state: list) -> None:
        """Put back a state :meth:`note` gave."""
        held, globals_ = state
        for container, kept in zip(self.containers.values(), held):
            if type(container) is list:
                container[:] = kept
            else:
                container.clear()
                container.update(kept)
        for (namespace, _), values in zip(self.written, globals_):
            for name, value in values.items():
                if value is _ABSENT:
                    namespace.pop(name, None)
                else:
                    namespace[name] = value


def _functions(function: Any) -> Iterable[types.FunctionType]:
    """``function`` (through what it wraps, a bound method's function, a callable object's
    ``__call__``) and the Python functions its globals and closure name, once each."""
    seen: set[int] = set()
    pending = list(wrapped_chain(function))
    for depth in range(2):
        helpers: list[Any] = []
        for each in pending:
            own = own_function(each)
            if own is None or id(own) in seen or _library_code(own):
                continue
            seen.add(id(own))
            yield own
            if depth == 0:
                helpers.extend(v for v in free_values_of(own) if isinstance(v, types.FunctionType))
        pending = helpers


def _carries_numbers(value: Any, depth: int = 2) -> bool:
    """A real or complex number or array (not an integer or a bool), or a list, tuple or
    dict holding one (``depth`` levels down), or a value of the tape."""
    if isinstance(value, (float, complex, np.inexact)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "fcO"
    if isinstance(value, (list, tuple, dict)) and depth > 0:
        items = value.values() if isinstance(value, dict) else value
        return any(_carries_numbers(v, depth - 1) for v in items)
    return type(value).__module__.startswith("s2sgrad.tape")


def held_by_arguments(values: Iterable, known: dict) -> dict[int, Any]:
    """What a call's arguments ``values`` hold that the call can change, by id, leaving out
    ``known``: their dicts and lists and the attributes of their plain objects, through
    nested containers and attributes (a layer in a list of layers), four levels deep.

    Example::

        held_by_arguments((params, x), {})  # params (a dict) and each layer's vars in it
    """
    found: dict[int, Any] = {}
    pending = [v for v in values if not isinstance(v, _LEAVES)]
    for _ in range(4):
        deeper: list = []
        for value in pending:
            if type(value) is tuple:
                deeper.extend(v for v in value if not isinstance(v, _LEAVES))
                continue
            if type(value) in (dict, list):
                held = value
            elif _plain_object(value):
                held = vars(value)
            else:
                continue
            if id(held) in found or id(held) in known or len(held) > _LARGEST:
                continue
            found[id(held)] = held
            items = held.values() if type(held) is dict else held
            deeper.extend(v for v in items if not isinstance(v, _LEAVES))
        pending = deeper
    return found


def _receivers(function: Any) -> Iterable[Any]:
    """The plain objects ``function`` runs on: a bound method's object, a callable
    object itself (``sg.hessian(model)``, ``sg.hessian(model.loss)``)."""
    for each in wrapped_chain(function):
        receiver = each.__self__ if isinstance(each, types.MethodType) else each
        if _plain_object(receiver):
            yield receiver


def _library_code(function: types.FunctionType) -> bool:
    """s2sgrad's own functions (a transform's ``__call__``: its caches are not the user's
    state) and NumPy's and SciPy's."""
    module = function.__module__ or ""
    return module.split(".")[0] in ("s2sgrad", "numpy", "scipy")


def wrapped_chain(function: Any) -> Iterable:
    """``function`` and what it wraps (``__wrapped__``: a transform's, a decorator's), to
    the user's own."""
    for _ in range(16):  # sg.grad(sg.grad(f)) reaches the user's f
        if function is None:
            return
        yield function
        function = getattr(getattr(function, "__func__", function), "__wrapped__", None)


def own_function(value: Any) -> types.FunctionType | None:
    """The Python function ``value`` runs: itself, a bound method's function, a callable
    object's ``__call__``; None for a class, a module or a builtin."""
    value = getattr(value, "__func__", value)
    if isinstance(value, types.FunctionType):
        return value
    if isinstance(value, (type, types.ModuleType, types.BuiltinFunctionType)):
        return None
    call = next((vars(c)["__call__"] for c in type(value).__mro__ if "__call__" in vars(c)), None)
    return call if isinstance(call, types.FunctionType) else None


def free_values_of(function: types.FunctionType) -> Iterable:
    """The values of the closure variables and of the globals ``function``'s code names."""
    for cell in function.__closure__ or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell
            continue
    for name in code_names(function.__code__):
        if name in function.__globals__:
            yield function.__globals__[name]


def _plain_object(value: Any) -> bool:
    """An instance of a Python class with its attributes in a plain ``__dict__`` (a model
    whose ``__call__`` counts its calls too; not a module, class, function, NumPy's value
    or one of s2sgrad's transforms)."""
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType)):
        return False
    module = type(value).__module__ or ""
    if module in ("builtins", "numpy") or module.startswith("s2sgrad"):
        return False  # (a transform's caches are its own)
    return type(getattr(value, "__dict__", None)) is dict


@functools.lru_cache(maxsize=1024)
def code_names(code: types.CodeType) -> frozenset[str]:
    """The names ``code`` uses, its comprehensions' and nested functions' included."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= code_names(constant)
    return frozenset(names)


_GLOBAL_WRITES = frozenset((dis.opmap["STORE_GLOBAL"], dis.opmap["DELETE_GLOBAL"]))


@functools.lru_cache(maxsize=1024)
def _written_globals(code: types.CodeType) -> frozenset[str]:
    """The globals ``code`` (its nested functions' included) assigns or deletes."""
    names: set[str] = set()
    if not _GLOBAL_WRITES.isdisjoint(code.co_code[::2]):  # (wordcode: opcodes at even bytes)
        names = {
            i.argval
            for i in dis.get_instructions(code)
            if i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL")
        }
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _written_globals(constant)
    return frozenset(names)
