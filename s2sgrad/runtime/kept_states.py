"""The state a function keeps beside its result, noted so that runs of it repeated for one
answer (a forward-mode Jacobian's columns) each start from where the first did.

What is noted: what its arguments hold (their dicts, running statistics; their lists; the
attributes of their plain objects, a model changed in place; nested), the dicts and
lists among the globals and closure variables its code and its helpers' code name (a
counter ``CACHE["n"] = CACHE.get("n", 0) + 1``, a history), the attributes of the plain
objects there (``counter.n += 1``), those of the object a bound method or callable object
runs on (a model counting its calls), and the globals its code assigns (``global n``). Each
is copied shallowly: a value replaced is put back, not one changed in place. A list or dict
made during a call inside one kept (``CACHE.setdefault(k, [])``) is kept from the next note
on. The iterators and generators among all these (``next(ITEMS)``) are noted by where they
stand: a list's, tuple's or range's iterator is set back, and one that cannot be (a
generator, ``itertools.count``) and was advanced is refused where a run is repeated.

Example::

    kept = KeptStates(f, args)
    start = kept.note()
    f(*args)
    kept.set(start)  # CACHE, counter.n and the global n as they were before the call
"""

from __future__ import annotations

import contextlib
import dis
import functools
import io
import itertools
import operator
import random
import sys
import types
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from s2sgrad.errors import UnsupportedError, where

__all__ = [
    "KeptStates",
    "code_names",
    "draw_state",
    "free_values_of",
    "held_by_arguments",
    "helper_functions",
    "kept_states_of",
    "line_naming",
    "own_function",
    "set_draw_state",
    "walked_functions",
    "wrapped_chain",
]

_ABSENT = object()  # a global not bound yet
# free values that hold nothing a call could change (an array can be written into)
_KEEP_NOTHING = (
    np.generic,
    float,
    int,
    complex,
    str,
    bytes,
    type(None),
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
)
_ABSENTS = itertools.repeat(_ABSENT)
_LEAVES = (np.ndarray, np.generic, float, int, complex, str, bytes, bool, type(None))
# a global container longer than this is data the function reads (a dataset as a list),
# not a counter or a cache of a few entries: copying it on every call would cost too much,
# so it is noted by its length and its last _MARKED entries
_LARGEST = 4096
_MARKED = 8


class KeptStates:
    """The dicts, lists, attributes, written globals and closure variables a function can
    change (see the module's example)."""

    def __init__(self, function: Any, values: Iterable = (), also: Iterable = ()):
        self.containers: dict[int, Any] = held_by_arguments(values, {})
        self.written: list[tuple[dict, frozenset[str]]] = []
        self.cells: list[types.CellType] = []  # closure variables its code assigns (nonlocal)
        self.arrays: dict[int, np.ndarray] = {}  # arrays it names and may write into
        self.classes: dict[int, type] = {}  # the user's classes whose attributes it sets
        self.writes: frozenset[str] = frozenset()  # how ``function``'s code stores around it
        self.codes: list[tuple] = []  # (function, its code): what the walk read, for
        self.read: list[tuple] = []  # (cell, value) and (namespace.get, names, values);
        # see :meth:`current`
        # id -> (iterator, function naming it or None, how it is reached): see _Iterators
        self.iterators: dict[int, tuple[Any, Any, str]] = {}
        self.generators: dict[int, Any] = {}  # random generators its functions name
        self.names_random = False  # whether a function walked names ``random`` (np.random)
        self.in_place = False  # whether a function walked writes into arrays it reaches
        self.given: frozenset[int] = frozenset()  # the containers a call's arguments hold
        sets_attributes = False
        objects: list = []  # the plain objects among the free values
        receivers = tuple(_receivers(function))
        for each in wrapped_chain(function):  # what a partial gives: partial(step, STATE)
            if isinstance(each, functools.partial):
                given = (*each.args, *each.keywords.values())
                self.containers.update(held_by_arguments(given, self.containers))
        for receiver in receivers:  # a model counting its own calls
            self.containers.setdefault(id(vars(receiver)), vars(receiver))
            _note_iterators(self.iterators, vars(receiver).items(), own_function(function))
        also = tuple(also)
        own = frozenset(id(f) for f in _functions((function,)))
        read: dict[int, tuple[Any, dict[str, Any]]] = {}  # globals read, by namespace
        for each in _functions((function, *also)):
            self.codes.append((each, each.__code__, each.__defaults__))
            self.read.extend((cell, _contents(cell)) for cell in each.__closure__ or ())
            namespace = each.__globals__
            _, found = read.setdefault(id(namespace), (namespace, {}))
            found.update((n, namespace.get(n, _ABSENT)) for n in _global_names(each.__code__))
            stores = _stores_of(each.__code__)
            writes_arrays = not _ARRAY_WRITES.isdisjoint(stores)
            self.in_place = self.in_place or writes_arrays or _updates_in_place(each.__code__)
            # its closure variables, the globals it names and its defaults (def f(x, box=box)),
            # but numbers, text, modules and functions, which keep nothing
            named = [
                (n, v) for n, v in _named_free_values(each) if not isinstance(v, _KEEP_NOTHING)
            ]
            free = tuple(v for _, v in named)
            _note_iterators(self.iterators, named, each)
            objects.extend(v for v in free if _plain_object(v))
            _note_generators(self.generators, free)
            self.names_random = self.names_random or "random" in code_names(each.__code__)
            for value in free:
                if writes_arrays and _small_writable_array(value):  # acc[:] += x
                    self.arrays.setdefault(id(value), value)
                elif "attribute" in stores and _user_class(value):  # K.n += 1
                    self.classes.setdefault(id(value), value)
                if _user_class(value):  # Registry.entries.setdefault(k, []).append(v)
                    held = [
                        v
                        for k, v in vars(value).items()
                        if type(v) in (dict, list) and not k.startswith("__")
                    ]
                    self.containers.update(held_by_arguments(held, self.containers))
            if "attribute" in stores:  # f.calls = f.calls + 1
                self.containers.setdefault(id(vars(each)), vars(each))
                sets_attributes = True
            # dicts, lists and plain objects' attributes, and what they hold (s.d["n"] += 1)
            # (and the objects of the bound methods among them: f = counter.loss)
            bound = tuple(v.__self__ for v in free if isinstance(v, types.MethodType))
            for value in free:  # what a partial gives (partial(update, STATE))
                if isinstance(value, functools.partial):
                    bound += (*value.args, *value.keywords.values())
            self.containers.update(held_by_arguments((*free, *bound), self.containers))
            names = _written_globals(each.__code__)
            if names:
                self.written.append((each.__globals__, names))
            assigned = _assigned_free_variables(each.__code__)
            if assigned and each.__closure__:
                free = each.__code__.co_freevars
                self.cells.extend(each.__closure__[free.index(n)] for n in assigned)
            if id(each) in own:
                self.writes |= _stores_of(each.__code__)
        for namespace, found in read.values():
            self.read.append((namespace.get, tuple(found), tuple(found.values())))
        if sets_attributes:  # type(self).n += 1: the classes of the objects it reaches
            for value in (*objects, *receivers):
                if _user_class(type(value)):
                    self.classes.setdefault(id(type(value)), type(value))

    def current(self) -> bool:
        """Whether the functions walked run the code they ran then, and their globals and
        closure variables hold what they held (else what is kept may be other objects)."""
        for function, code, defaults in self.codes:
            if function.__code__ is not code or function.__defaults__ is not defaults:
                return False
        for each in self.read:
            if len(each) == 2:  # a closure variable
                if _contents(each[0]) is not each[1]:
                    return False
            elif not all(map(operator.is_, map(each[0], each[1], _ABSENTS), each[2])):
                return False
        return True

    def empty(self) -> bool:
        """Whether nothing is kept (a function reading only arrays, numbers and modules)."""
        return not (
            self.containers
            or self.written
            or self.cells
            or self.arrays
            or self.classes
            or self.iterators
        )

    def may_store(self) -> bool:
        """Whether ``function``'s code (or a helper's it names) can store around it: assign
        a global or a closure variable, set an attribute, or write into a list or dict it
        can reach (judged from its code; a write into its own array counts only where it
        reaches a list or dict).

        Example::

            kept_states_of(f).with_arguments(args).may_store()  # True for HISTORY.append(y)
        """
        if not self.writes.isdisjoint(("global", "nonlocal", "attribute")):
            return True
        reached = bool(self.containers or self.arrays)
        return not self.writes.isdisjoint(("item", "method", "array")) and reached

    def with_arguments(self, values: Iterable) -> KeptStates:
        """These states and what a call's arguments ``values`` hold (see
        :func:`held_by_arguments`), for a :class:`KeptStates` made once for a function and
        used for each of its calls.

        Example::

            kept = KeptStates(f).with_arguments(args)
            start = kept.note()  # ... a run that fails part way ...
            kept.set(start)  # args[0].w as it was, though that run set it
        """
        for value in values:
            if not isinstance(value, _LEAVES):
                break
        else:
            return self  # arrays and numbers: nothing they hold to change
        values = tuple(values)
        found = held_by_arguments(values, self.containers)
        iterators: dict[int, tuple[Any, Any, str]] = {}
        _note_iterators(iterators, ((f"argument {i}", v) for i, v in enumerate(values)), None)
        for held in found.values():  # (a generator in a dict given)
            if type(held) is dict and len(held) <= _LARGEST:
                _note_iterators(iterators, (("an argument's entry", v) for v in held.values()))
            elif type(held) is list and len(held) <= _LARGEST:
                _note_iterators(iterators, (("an argument's entry", v) for v in held))
        if not found and not iterators:
            return self
        kept = object.__new__(KeptStates)
        kept.__dict__.update(self.__dict__)
        kept.containers = {**self.containers, **found}
        kept.given = frozenset(found)
        if iterators:
            kept.iterators = {**iterators, **self.iterators}
        return kept

    def note(self) -> list:
        """The current state of everything kept (a list or dict longer than 4,096 entries
        by its length and its last entries: copying it at each call would cost too much)."""
        held = [
            (list(c) if type(c) is list else dict(c)) if len(c) <= _LARGEST else _Mark(c)
            for c in self.containers.values()
        ]
        made, iterators = _made_since(self.containers, held, self.iterators)
        if made:  # CACHE.setdefault(k, []) in an earlier run
            self.containers.update(made)
            held += [list(c) if type(c) is list else dict(c) for c in made.values()]
        if iterators:  # ITEMS["it"] = iter(data) since the walk
            self.iterators = {**self.iterators, **iterators}
        if self.in_place:  # self.total += v: the arrays the containers hold, as named ones
            for key, copy in zip(self.containers, held):
                if key in self.given:  # (an argument's arrays: the call's inputs)
                    continue
                values = copy.values() if type(copy) is dict else copy if type(copy) is list else ()
                for value in values:
                    if _small_writable_array(value) and id(value) not in self.arrays:
                        self.arrays = {**self.arrays, id(value): value}
        globals_ = [
            {n: namespace.get(n, _ABSENT) for n in names} for namespace, names in self.written
        ]
        arrays = [a.copy() for a in self.arrays.values()]
        classes = [dict(vars(c)) for c in self.classes.values()]
        places = [_position(it) for it, _, _ in self.iterators.values()]
        draws = [draw_state(g) for g in self.generators.values()]  # a run refused, run again
        return [held, globals_, list(map(_contents, self.cells)), arrays, classes, places, draws]

    def stored_numbers(
        self,
        before: list,
        after: list,
        carrying: Callable[[Any], bool] | None = None,
        given: tuple = (),
    ) -> bool:
        """Whether, from ``before`` to ``after`` (two states :meth:`note` gave), anything
        kept took a new value that could carry a derivative: a real or complex number, an
        array of them, a container holding one (not a count, a text or an object); or
        that ``carrying`` is true of (``lambda value: True``: any new value). One of the
        values ``given`` (a call's arguments, recorded as they came) does not count."""
        fresh: list = []
        for container, old, new in zip(self.containers.values(), before[0], after[0]):
            if _unchanged(old, new):
                continue
            if type(old) is _Mark or type(new) is _Mark:  # a long one
                fresh += _Mark.of(new).fresh_since(_Mark.of(old), container)
            elif type(new) is list:
                fresh += [b for i, b in enumerate(new) if i >= len(old) or old[i] is not b]
            else:
                fresh += [v for k, v in new.items() if k not in old or old[k] is not v]
        fresh += [new for old, new in zip(before[2], after[2]) if new is not old]
        fresh += [new for old, new in zip(before[3], after[3]) if not _same_array(old, new)]
        for old, new in zip(before[4], after[4]):
            fresh += [v for k, v in new.items() if k not in old or old[k] is not v]
        for old, new in zip(before[1], after[1]):
            fresh += [new[name] for name, value in old.items() if new[name] is not value]
        if not fresh:
            return False
        test = carrying or _carries_numbers
        ids = frozenset(map(id, given))
        return any(id(value) not in ids and test(value) for value in fresh)

    def set(self, state: list) -> None:
        """Put back a state :meth:`note` gave (of a long list or dict, the entries added
        at its end since)."""
        held, globals_, cells, arrays, classes, places, draws = state
        for (iterator, function, reached), place in zip(self.iterators.values(), places):
            _set_position(iterator, place, function, reached)
        for generator, draw in zip(self.generators.values(), draws):
            set_draw_state(generator, draw)
        for cls, kept in zip(self.classes.values(), classes):
            for name in set(vars(cls)) - set(kept):
                delattr(cls, name)
            for name, value in kept.items():
                if vars(cls).get(name, _ABSENT) is not value:
                    setattr(cls, name, value)
        for array, kept in zip(self.arrays.values(), arrays):
            array[...] = kept
        for container, kept in zip(self.containers.values(), held):
            if type(kept) is _Mark:
                kept.cut(container)
            elif type(container) is list:
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
        for cell, value in zip(self.cells, cells):
            if value is _ABSENT:
                with contextlib.suppress(ValueError):
                    del cell.cell_contents
            else:
                cell.cell_contents = value


def _unchanged(old: Any, new: Any) -> bool:
    """Whether two copies of a list or dict hold the same objects, in the same order."""
    if type(old) is not type(new) or type(old) is _Mark or len(old) != len(new):
        return False
    if type(old) is list:
        return all(map(operator.is_, old, new))
    return all(map(operator.is_, old.values(), new.values())) and all(map(operator.is_, old, new))


class _Mark:
    """A list or dict too long to copy, noted by its length and its last entries (by
    identity): what is appended or added since, or written over at its end, is seen; an
    entry written over further back is not."""

    __slots__ = ("length", "keys", "values")

    def __init__(self, container: Any) -> None:
        self.length = len(container)
        self.keys: tuple | None = None
        if type(container) is list:
            self.values = tuple(container[-_MARKED:])
        else:  # the last items, last first
            items = tuple(itertools.islice(reversed(container.items()), _MARKED))
            self.keys = tuple(k for k, _ in items)
            self.values = tuple(v for _, v in items)

    @staticmethod
    def of(noted: Any) -> _Mark:
        return noted if type(noted) is _Mark else _Mark(noted)

    def same(self, keys: tuple | None, values: tuple) -> bool:
        """Whether ``keys`` and ``values`` are the marked entries, the same objects."""
        if len(values) != len(self.values) or not all(map(operator.is_, values, self.values)):
            return False
        return keys is None or self.keys is None or all(map(operator.is_, keys, self.keys))

    def fresh_since(self, old: _Mark, container: Any) -> list:
        """The values ``container`` holds now that it did not when ``old`` was noted
        (``self`` is its mark now)."""
        if self.length == old.length and old.same(self.keys, self.values):
            return []
        fresh = [v for v in self.values if not any(v is w for w in old.values)]
        added = self.length - old.length
        if added > _MARKED:  # appended past the mark: each entry added
            if type(container) is list:
                fresh.extend(container[old.length : self.length])
            else:
                fresh.extend(itertools.islice(reversed(container.values()), added))
        return fresh

    def cut(self, container: Any) -> None:
        """Remove what was added at the end of ``container`` since this mark (where its
        marked entries are still there, before the added ones), or put its marked entries
        back where nothing was added."""
        added = len(container) - self.length
        if added == 0 and type(container) is list and self.values:  # BIG[-1] = v
            container[-len(self.values) :] = self.values
            return
        if added == 0 and self.keys:
            for key, value in zip(self.keys, self.values):
                if key in container:
                    container[key] = value
            return
        if added < 0:
            return
        if type(container) is list:
            before = tuple(container[max(self.length - len(self.values), 0) : self.length])
            if self.same(None, before):
                del container[self.length :]
            return
        items = tuple(itertools.islice(reversed(container.items()), added + len(self.values)))
        if self.same(tuple(k for k, _ in items[added:]), tuple(v for _, v in items[added:])):
            for key, _ in items[:added]:
                del container[key]


def _contents(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return _ABSENT


_MADE: dict[Any, tuple[tuple, KeptStates]] = {}  # id(s) of the functions -> their states


def kept_states_of(function: Any, also: tuple = ()) -> KeptStates:
    """:class:`KeptStates` of ``function`` (and of the functions ``also``, whose stores
    around them are kept but not judged by :meth:`KeptStates.may_store`), made once and
    made again when a function walked runs other code or a global or closure variable it
    names holds another object (fresh: ``HISTORY = []`` rebound is the new list).

    Example::

        kept = kept_states_of(f).with_arguments(args)  # ~1 µs where f keeps nothing
    """
    if not all(map(_module_level, (function, *also))):
        return KeptStates(function, also=also)  # (a cache would keep it, and what it holds)
    key = (id(function), *map(id, also)) if also else id(function)
    found = _MADE.get(key)
    if found is not None:
        roots, kept = found
        if roots == (function, *also) and kept.current():  # (the same objects: by identity)
            return kept
    kept = KeptStates(function, also=also)
    if len(_MADE) >= 512:  # functions made and dropped (a lambda per call): start again
        _MADE.clear()
    _MADE[key] = ((function, *also), kept)
    return kept


def _module_level(function: Any) -> bool:
    """Whether ``function`` is a function its module holds by its name (it lives as long as
    the module: caching what it keeps holds nothing longer than it lives)."""
    module = sys.modules.get(getattr(function, "__module__", None) or "")
    name = getattr(function, "__name__", None)
    return isinstance(function, types.FunctionType) and (
        name is not None and getattr(module, name, None) is function
    )


# how far the walk follows helpers: the function, its helpers and theirs, six levels
# (sg.hessian(lambda x: np.sum(f(x))) reaches the counters and generators of f's helpers'
# helpers)
_DEPTH = 6


def walked_functions(function: Any) -> list[types.FunctionType]:
    """The user's functions ``function`` runs and those it names, ``_DEPTH`` levels down
    (what :class:`KeptStates` walks).

    Example::

        walked_functions(lambda x: np.sum(f(x)))  # [<lambda>, f, f's helpers...]
    """
    return list(_functions((function,)))


def _functions(roots: tuple) -> Iterable[types.FunctionType]:
    """The functions ``roots`` run (through what they wrap, a bound method's function, a
    callable object's ``__call__``) and the Python functions their globals and closures
    name, and theirs (``_DEPTH`` levels), once each."""
    seen: set[int] = set()
    pending = [each for root in roots for each in wrapped_chain(root)]
    for depth in range(_DEPTH):
        helpers: list[Any] = []
        for each in pending:
            own = own_function(each)
            if own is None or id(own) in seen or _library_code(own):
                continue
            seen.add(id(own))
            yield own
            if depth < _DEPTH - 1:
                helpers.extend(helper_functions(own))
        pending = helpers


def helper_functions(function: types.FunctionType) -> Iterable[types.FunctionType]:
    """The user's functions ``function``'s globals and closure name: functions, the
    functions of bound methods, and the methods of the user's classes and objects there
    (static and class methods' too); not the libraries'.

    Example::

        list(helper_functions(loss))  # [predict, Model.__call__, Model.fit, ...]
    """
    for value in free_values_of(function):
        if isinstance(value, types.FunctionType):
            yield value
        elif isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
            yield value.__func__
        elif isinstance(value, functools.partial):  # step = partial(update, STATE)
            yield from (f for f in wrapped_chain(value) if isinstance(f, types.FunctionType))
        elif not isinstance(value, types.ModuleType):
            kind = value if isinstance(value, type) else type(value)
            if (kind.__module__ or "").split(".")[0] in _LIBRARIES:
                continue
            for klass in kind.__mro__:
                for member in vars(klass).values():
                    member = getattr(member, "__func__", member)  # static and class methods
                    if isinstance(member, types.FunctionType):
                        yield member


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
    nested containers and attributes (a layer in a list of layers), four levels deep (not
    into a list or dict longer than 4,096 entries).

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
            if id(held) in found or id(held) in known:
                continue
            found[id(held)] = held
            if len(held) > _LARGEST:  # a dataset: noted by its end, not walked
                continue
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


_LIBRARIES = ("numpy", "scipy", "s2sgrad", "math", "builtins")


def _library_code(function: types.FunctionType) -> bool:
    """s2sgrad's own functions (a transform's ``__call__``: its caches are not the user's
    state), NumPy's, SciPy's and Python's."""
    module = function.__module__ or ""
    return module.split(".")[0] in _LIBRARIES


def wrapped_chain(function: Any) -> Iterable:
    """``function`` and what it wraps (``__wrapped__``: a transform's, a decorator's), to
    the user's own."""
    for _ in range(16):  # sg.grad(sg.grad(f)) reaches the user's f
        if function is None:
            return
        yield function
        if isinstance(function, functools.partial):  # partial(step, STATE): step
            function = function.func
            continue
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


_NONLOCAL_WRITES = frozenset((dis.opmap["STORE_DEREF"], dis.opmap["DELETE_DEREF"]))


@functools.lru_cache(maxsize=1024)
def _assigned_free_variables(code: types.CodeType) -> frozenset[str]:
    """The closure variables of ``code`` that it (or a function it defines) assigns or
    deletes: ``nonlocal n; n += 1``."""
    return _assigned_of(code, frozenset(code.co_freevars))


def _assigned_of(code: types.CodeType, free: frozenset[str]) -> frozenset[str]:
    names: set[str] = set()
    if not _NONLOCAL_WRITES.isdisjoint(code.co_code[::2]):
        names = {
            i.argval
            for i in dis.get_instructions(code)
            if i.opname in ("STORE_DEREF", "DELETE_DEREF") and i.argval in free
        }
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):  # a nested function's, of the same cells
            names |= _assigned_of(constant, free & frozenset(constant.co_freevars))
    return frozenset(names)


_STORES = {
    "global": ("STORE_GLOBAL", "DELETE_GLOBAL"),
    "attribute": ("STORE_ATTR", "DELETE_ATTR"),
    "item": ("STORE_SUBSCR", "DELETE_SUBSCR", "STORE_SLICE"),
}
_STORE_CODES = {
    dis.opmap[name]: kind for kind, names in _STORES.items() for name in names if name in dis.opmap
}
# methods that store into a list or dict (not NumPy's add, sort: named alike, they store nothing)
_STORING_METHODS = frozenset(("append", "extend", "insert", "update", "setdefault", "__setitem__"))
# names of what writes into an array in place (a[i] = v, a.fill(v), np.copyto(a, v), out=a)
_ARRAY_WRITERS = frozenset(("fill", "copyto", "put", "putmask", "place", "itemset", "out"))
_ARRAY_WRITES = frozenset(("item", "array"))


def _user_class(value: Any) -> bool:
    """A class of the user's (not a library's), whose attributes the code may set."""
    return isinstance(value, type) and (value.__module__ or "").split(".")[0] not in _LIBRARIES


def _same_array(old: np.ndarray, new: np.ndarray) -> bool:
    return bool(np.array_equal(old, new, equal_nan=old.dtype.kind in "fc"))


def _small_writable_array(value: Any) -> bool:
    """A writable NumPy array of at most 65,536 entries (a larger one is data, too costly to
    copy at each call)."""
    return type(value) is np.ndarray and value.flags.writeable and value.size <= 65536


@functools.lru_cache(maxsize=1024)
def _stores_of(code: types.CodeType) -> frozenset[str]:
    """How ``code`` (its nested functions' included) may store around it: ``"global"``,
    ``"nonlocal"``, ``"attribute"``, ``"item"`` (``d[k] = v``, into its own array too),
    ``"method"`` (``history.append(v)``) and ``"array"`` (``a.fill(v)``, ``out=a``), read
    from its instructions and names."""
    kinds = set(_stored_kinds(code))
    if _assigned_free_variables(code):  # (a nested function's of its own cells: not around)
        kinds.add("nonlocal")
    return frozenset(kinds)


def _stored_kinds(code: types.CodeType) -> set[str]:
    kinds = {_STORE_CODES[op] for op in set(code.co_code[::2]) if op in _STORE_CODES}
    if not _STORING_METHODS.isdisjoint(code.co_names):
        kinds.add("method")
    if not _ARRAY_WRITERS.isdisjoint(code.co_names) or "out" in code.co_consts:
        kinds.add("array")  # (out=a: a keyword's name is among the constants)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            kinds |= _stored_kinds(constant)
    return kinds


@functools.lru_cache(maxsize=1024)
def _updates_in_place(code: types.CodeType) -> bool:
    """Whether ``code`` (its nested functions' too) has an augmented assignment (``a += v``,
    in place for an array another object holds)."""
    for instruction in dis.get_instructions(code):
        if instruction.opname.startswith("INPLACE_") or (
            instruction.opname == "BINARY_OP" and instruction.argrepr.endswith("=")
        ):
            return True
    return any(
        _updates_in_place(constant)
        for constant in code.co_consts
        if isinstance(constant, types.CodeType)
    )


_GLOBAL_OPS = frozenset(("LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL"))


@functools.lru_cache(maxsize=1024)
def _global_names(code: types.CodeType) -> frozenset[str]:
    """The globals ``code`` (its nested functions' included) reads, assigns or deletes (not
    the attribute names among its names)."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in _GLOBAL_OPS}
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _global_names(constant)
    return frozenset(names)


# Iterators and generators ------------------------------------------------------------------

# the iterators of lists, tuples, ranges and strings: their index is read and set back
_SEQUENCE_ITERATORS = frozenset(
    type(each)
    for each in (
        iter([]),
        iter(()),
        iter(range(0)),
        iter(range(2**70, 2**70 + 1)),
        iter(""),
        iter(b""),
        reversed([]),
        reversed(()),
    )
)
_UNSEEN = object()  # where an iterator stands cannot be told: any run may have advanced it


def _is_iterator(value: Any) -> bool:
    """An iterator or generator whose place the functions' runs may change (``next(it)``):
    not a plain object of the user's (whose attributes are kept as a container's), a file
    (written to by a log) or a random generator (:mod:`.replays` sets those back)."""
    if isinstance(value, _LEAVES) or _plain_object(value):
        return False
    kind = type(value)
    if not hasattr(kind, "__next__") or isinstance(value, (type, io.IOBase)):
        return False
    return not (kind.__module__ or "").startswith(("s2sgrad", "numpy"))


def _note_iterators(found: dict, named: Iterable[tuple[str, Any]], function: Any = None) -> None:
    """Add to ``found`` the iterators among ``named`` (``(name, value)`` pairs) and in the
    lists, tuples and dicts of at most 64 entries and the plain objects' attributes they
    hold, two levels down (``ITEMS["it"]``, ``self.it``; one put there later is found by
    :meth:`KeptStates.note`)."""
    for name, value in named:
        pending = [value]
        for _ in range(2):
            deeper: list = []
            for each in pending:
                if isinstance(each, (*_LEAVES, types.ModuleType)):
                    continue
                if _is_iterator(each):
                    found.setdefault(id(each), (each, function, name))
                elif type(each) in (list, tuple) and len(each) <= 64:
                    deeper.extend(each)
                elif type(each) is dict and len(each) <= 64:
                    deeper.extend(each.values())
                elif _plain_object(each):
                    deeper.extend(vars(each).values())
            pending = deeper
            if not pending:
                break


def _named_free_values(function: types.FunctionType) -> Iterable[tuple[str, Any]]:
    """``(name, value)`` of ``function``'s closure variables, the globals its code names and
    its defaults."""
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
        value = _contents(cell)
        if value is not _ABSENT:
            yield name, value
    namespace = function.__globals__
    for name in code_names(function.__code__):
        if name in namespace:
            yield name, namespace[name]
    code = function.__code__
    parameters = code.co_varnames[: code.co_argcount]
    for name, value in zip(parameters[::-1], (function.__defaults__ or ())[::-1]):
        yield name, value
    yield from (function.__kwdefaults__ or {}).items()


_RANDOM = (np.random.Generator, np.random.RandomState, np.random.BitGenerator, random.Random)


def _note_generators(found: dict, free: tuple) -> None:
    """Add to ``found`` the random generators among ``free`` (a function's free values) and
    their attributes (``self.rng``): the walk's helpers draw too (``def noise(): return
    RNG.normal()``)."""
    for value in free:
        attributes = vars(value).values() if _plain_object(value) else ()
        for candidate in (value, *attributes):
            if isinstance(candidate, _RANDOM) or candidate is random:
                found.setdefault(id(candidate), candidate)


def draw_state(generator: Any) -> Any:
    """The state of a random generator (NumPy's or Python's ``random.Random``).

    Example::

        set_draw_state(rng, draw_state(rng))  # the next draws as they would have been
    """
    if isinstance(generator, np.random.Generator):
        return generator.bit_generator.state
    if isinstance(generator, np.random.RandomState):
        return generator.get_state()
    if isinstance(generator, random.Random):
        return generator.getstate()
    return generator.state  # a bit generator


def set_draw_state(generator: Any, state: Any) -> None:
    if isinstance(generator, np.random.Generator):
        generator.bit_generator.state = state
    elif isinstance(generator, np.random.RandomState):
        generator.set_state(state)
    elif isinstance(generator, random.Random):
        generator.setstate(state)
    else:
        generator.state = state


def _position(iterator: Any, depth: int = 3) -> Any:
    """Where ``iterator`` stands, comparable with ``==``: a generator's instruction and
    locals, another iterator's pickled state (a list iterator's index, a count's next
    number, a map's iterators, where they stand); ``_UNSEEN`` where it cannot be told."""
    if isinstance(iterator, types.GeneratorType):
        frame = iterator.gi_frame
        if frame is None:
            return ("finished",)
        inner = iterator.gi_yieldfrom
        locals_ = tuple((k, _part(v, depth)) for k, v in frame.f_locals.items())
        return (frame.f_lasti, locals_, None if inner is None else _part(inner, depth))
    try:
        with warnings.catch_warnings():  # (itertools' pickling: deprecated in Python 3.12)
            warnings.simplefilter("ignore")
            reduced = iterator.__reduce__()
    except Exception:  # noqa: BLE001 - whatever it raises, its place is unseen
        return _UNSEEN
    if not isinstance(reduced, tuple):
        return _UNSEEN
    return tuple(_part(part, depth) for part in reduced[1:])


def _part(value: Any, depth: int) -> Any:
    """A part of where an iterator stands: a number or text as it is, an iterator by where
    it stands, a tuple, list or dict by its parts, any other object by identity."""
    if isinstance(value, (int, float, str, bytes, bool, type(None))):
        return (type(value), value)
    if _is_iterator(value):
        return _position(value, depth - 1) if depth > 0 else _UNSEEN
    if type(value) in (tuple, list) and len(value) <= _MARKED:
        return tuple(_part(v, depth) for v in value)
    if type(value) is dict and len(value) <= _MARKED:
        return tuple((k, _part(v, depth)) for k, v in value.items())
    return id(value)


def _set_position(iterator: Any, place: Any, function: Any, reached: str) -> None:
    """Put ``iterator`` back to ``place`` (a list's, tuple's or range's iterator), or refuse
    one that moved since (or whose place cannot be told): a run repeated for one answer
    would take other items than the first run took."""
    now = _position(iterator)
    if now == place and place is not _UNSEEN:
        return
    sequence = type(iterator) in _SEQUENCE_ITERATORS and _UNSEEN not in (place, now)
    if sequence and len(place) == 2 and len(now) == 2:
        iterator.__setstate__(place[1][1])  # (its index, noted as (int, index))
        return
    raise advanced_iterator(iterator, function, reached)


def advanced_iterator(iterator: Any, function: Any, reached: str) -> UnsupportedError:
    """The refusal of a function that advances an iterator or generator it reaches and that
    s2sgrad runs more than once for one answer.

    Example::

        raise advanced_iterator(ITEMS, loss, "ITEMS")
    """
    kind = type(iterator).__qualname__
    named = f"{reached} (a {kind})" if reached else f"a {kind}"
    code = getattr(function, "__code__", None)
    place = "" if code is None else f"{where(code.co_filename, line_naming(code, reached))}: "
    return UnsupportedError(
        f"{place}{named} is an iterator the function advances, and s2sgrad runs the function "
        "more than once for one answer (a forward-mode Jacobian's columns or a Hessian's, "
        "vmap's examples, mode 'auto' running it again on the tape): each run would take "
        "other items, so the runs would differentiate different functions. Take the items "
        "outside the function and pass them as an argument (s = next(it); f(x, s)), or use "
        "sg.jacobian (reverse mode runs the function once)"
    )


def line_naming(code: types.CodeType, name: str) -> int:
    """The first line of ``code`` (its nested functions' too) that reads ``name`` (a
    global, a closure variable, a local, an attribute), else its first line.

    Example::

        line_naming(loss.__code__, "ITEMS")  # the line of next(ITEMS)
    """
    current = code.co_firstlineno  # Python 3.10 marks only a line's first instruction
    for instruction in dis.get_instructions(code):
        starts = instruction.starts_line  # a bool from 3.13 on, with line_number beside it
        if type(starts) is int and starts:
            current = starts
        if instruction.argval == name and instruction.opname.startswith("LOAD"):
            positions = getattr(instruction, "positions", None)
            line = positions.lineno if positions is not None else None
            return line or current
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType) and name in code_names(constant) | set(
            constant.co_freevars
        ):
            return line_naming(constant, name)
    return code.co_firstlineno


def _made_since(containers: dict, held: list, iterators: dict) -> tuple[dict, dict]:
    """The lists, dicts and plain objects' attributes that the copies ``held`` of the
    ``containers`` kept hold and that are not kept yet (made by a run since the walk:
    ``CACHE.setdefault(key, [])``), with what they hold in turn; and the iterators they
    hold that are not among ``iterators`` (``ITEMS["it"] = iter(data)``)."""
    new = []
    found: dict[int, tuple[Any, Any, str]] = {}
    for copy in held:
        if type(copy) is _Mark:
            continue
        for value in copy.values() if type(copy) is dict else copy:
            if isinstance(value, _LEAVES):
                continue
            if type(value) in (dict, list):
                if id(value) not in containers:
                    new.append(value)
            elif _plain_object(value):
                if id(vars(value)) not in containers:
                    new.append(value)
            elif id(value) not in iterators and _is_iterator(value):
                found[id(value)] = (value, None, "an entry or attribute")
    made = held_by_arguments(new, containers) if new else {}
    if made:  # (what the new containers hold, for the iterators among it)
        more = [(c if type(c) is list else dict(c)) for c in made.values() if len(c) <= _LARGEST]
        found.update(_made_since({**containers, **made}, more, {**iterators, **found})[1])
    return made, found
