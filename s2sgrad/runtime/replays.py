"""Recomputing what a checkpoint dropped: with the same random numbers, or refused.

``sg.checkpoint(f)`` and ``sg.checkpointed(range(n))`` run code a second time in the
backward pass. Code that draws random numbers (dropout, noise) would draw new ones, and
the derivative would belong to another computation than the one that ran. So the states
of the random generators the code can reach (NumPy's global one, and the generators among
its arguments, globals and closure variables) are noted where the first run starts and
set again for the second. What the code could still draw from or read unseen (a generator
an object holds, a global changed since) is caught by comparing a sample of the values the
second run gives with those of the first.

Example::

    sources = random_sources(f, args)
    states = random_states(sources)        # before the first run
    first = fingerprint(f(*args))
    ...
    set_random_states(sources, states)     # before the second run
    same = fingerprint(f(*args)) == first  # True
"""

from __future__ import annotations

import random
import types
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from s2sgrad.errors import UnsupportedError
from s2sgrad.running import code_of
from s2sgrad.runtime.kept_states import (
    KeptStates,
    code_names,
    draw_state,
    free_values_of,
    kept_states_of,
    own_function,
    set_draw_state,
    wrapped_chain,
)

__all__ = [
    "DrawsAtStart",
    "RANDOM_GENERATORS",
    "SameDraws",
    "StatesAndDraws",
    "changed_on_recomputing",
    "fingerprint",
    "random_sources",
    "random_states",
    "set_random_states",
    "stores_while_checkpointed",
]

_GENERATORS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator, random.Random)
RANDOM_GENERATORS = _GENERATORS  # a generator among a call's arguments (api's fallback)
_SCALARS = (float, int, bool, np.float64, np.float32, np.int64, np.bool_)
_SAMPLES = 8  # elements compared per array: new random numbers change nearly all of them


class _GlobalState:
    """NumPy's global generator (``np.random.normal``, ``np.random.seed``)."""

    def __repr__(self) -> str:
        return "np.random"


GLOBAL = _GlobalState()


def random_sources(function: Any, values: Iterable = (), every_global: bool = False) -> list:
    """The generators ``function`` can reach: NumPy's global one and Python's ``random``
    where its code (or a function it names) says ``random``, those among ``values``
    (entries of tuples, lists and dicts too), those its code names as globals or closure
    variables, and those these objects hold as attributes (``self.rng``) or are methods of
    (``from numpy.random import normal``). Noting a state costs tens of microseconds, so
    generators the code cannot name are left out, where the fingerprint refuses what they
    change; ``every_global`` keeps the two global ones whatever the code names.

    Example::

        random_sources(step, (h, rng))  # [GLOBAL, rng]
    """
    free = list(_free_values(function))
    found: dict[int, Any] = {}
    if every_global or "random" in _code_names(function, free):
        found[id(GLOBAL)] = GLOBAL
        found[id(random)] = random
    for value in (*_leaves(values), *free):
        if value is np.random:  # import numpy.random as npr; npr.normal()
            found.setdefault(id(GLOBAL), GLOBAL)
        if isinstance(value, types.ModuleType):  # not every generator a library holds
            attributes: Iterable = ()
        elif type(getattr(value, "__dict__", None)) is dict:
            attributes = vars(value).values()  # a layer's or a model's own (self.rng)
        else:
            attributes = ()
        for candidate in (value, getattr(value, "__self__", None), *attributes):
            if isinstance(candidate, _GENERATORS) or candidate is random:
                found.setdefault(id(candidate), candidate)
    return list(found.values())


def _with_walked(sources: list, kept: KeptStates) -> list:
    """``sources`` and the generators the functions ``kept`` walked name (a helper's
    ``RNG.normal()``; NumPy's and Python's global ones where one of them says ``random``)."""
    found = {id(source): source for source in sources}
    if kept.names_random:
        found.setdefault(id(GLOBAL), GLOBAL)
        found.setdefault(id(random), random)
    for generator in kept.generators.values():
        found.setdefault(id(generator), generator)
    return list(found.values())


def _code_names(function: Any, free: list) -> set[str]:
    """The names the code of ``function`` (and of what it wraps) and of the Python
    functions among its free values use."""
    names: set[str] = set()
    for value in (*wrapped_chain(function), *free):
        code = code_of(value)
        if code is not None:
            names.update(code_names(code))
    return names


class SameDraws:
    """Runs of one computation (a forward-mode Jacobian's columns, one run each) that must
    each draw the random numbers the first drew: ``begin()`` before each run sets the
    generators back to where the first started, and ``end()`` leaves them where the first
    run left them, as one call of the function would. So for the state the function keeps
    (:mod:`.kept_states`: the dicts among ``values``, running statistics; a global
    counter or history, an object's attributes, the globals it assigns): each run starts
    from the state the first started from, and the first run's is left at the end.

    Example::

        draws = SameDraws(f, args)
        for seed in seeds:
            draws.begin()
            columns.append(jvp(f, args, seed))
        draws.end()
    """

    def __init__(self, function: Any, values: Iterable = ()):
        # a few runs, and nothing to compare them by: every generator that may be drawn from
        values = tuple(values)
        self.kept = kept_states_of(function).with_arguments(values)  # dicts, counters, globals
        self.sources = _with_walked(random_sources(function, values, True), self.kept)
        self.start: list | None = None
        self.after: list | None = None
        self.again = False  # the run before failed: the next is the first again

    def begin(self) -> None:
        if self.start is None:
            self.start = [random_states(self.sources), self.kept.note()]
            return
        if self.again:
            self.again = False
        elif self.after is None:
            self.after = [random_states(self.sources), self.kept.note()]
        self._set(self.start)

    def failed(self) -> None:
        """A run failed part way (a batched run the code could not take): the next run
        starts from the first's state as the first run, and its end is the one kept
        (noted after a failed run, the state at the end was the part the failed run
        changed)."""
        self.after, self.again = None, True

    def end(self) -> None:
        if self.after is not None:
            self._set(self.after)

    def _set(self, states: list) -> None:
        generators, kept = states
        set_random_states(self.sources, generators)
        self.kept.set(kept)


class StatesAndDraws:
    """What a function keeps (``kept``, :class:`KeptStates`) and the states of the random
    generators it can reach, noted and set together: runs of one call (``vmap``'s batched
    run and its examples computed alone) each draw what the first drew.

    Example::

        kept = StatesAndDraws(kept_states_of(f).with_arguments(args), f, args)
        start = kept.note()
        first = f(*args)
        kept.set(start)
        again = f(*args)  # the same draws as `first`
    """

    __slots__ = ("kept", "sources")

    def __init__(
        self, kept: KeptStates, function: Any, values: Iterable = (), sources: list | None = None
    ):
        self.kept = kept  # sources: the generators, when the caller has found them already
        found = random_sources(function, tuple(values)) if sources is None else sources
        self.sources = _with_walked(found, kept)

    def note(self) -> list:
        return [self.kept.note(), random_states(self.sources) if self.sources else []]

    def set(self, state: list) -> None:
        self.kept.set(state[0])
        if self.sources:
            set_random_states(self.sources, state[1])


class DrawsAtStart:
    """The random generators among a call's arguments and those its functions can reach (a
    checkpointed loop's body drawing from one), and their states before the call. A
    pullback that runs the call again (redone for a second derivative, or pulled back a
    second time) starts them from there with ``rewind()``, so that it draws what the call
    drew, and ``restore(now)`` then leaves them where they were. Nothing to do for a call
    given neither.

    Example::

        draws = DrawsAtStart((step, carried, read, range(10)))
        value, pullback = custom(step, carried, read, range(10))
        now = draws.rewind()
        try:
            cotangents = pullback(g)
        finally:
            draws.restore(now)
    """

    __slots__ = ("sources", "states")

    def __init__(self, args: Iterable):
        args = tuple(args)
        functions = [a for a in args if isinstance(a, types.FunctionType)]
        found: dict[int, Any] = {id(a): a for a in args if isinstance(a, _GENERATORS)}
        for function in functions:
            for source in random_sources(function, args):
                found.setdefault(id(source), source)
        self.sources = list(found.values())
        self.states = random_states(self.sources) if self.sources else []

    def rewind(self) -> list | None:
        """Set the generators to their states before the call; returns their states now."""
        if not self.sources:
            return None
        now = random_states(self.sources)
        set_random_states(self.sources, self.states)
        return now

    def restore(self, now: list | None) -> None:
        if now is not None:
            set_random_states(self.sources, now)


def random_states(sources: list) -> list:
    """The state of each generator of ``sources`` now.

    Example::

        states = random_states(sources)
    """
    return [_state_of(source) for source in sources]


def set_random_states(sources: list, states: list) -> None:
    """Set each generator of ``sources`` to its state in ``states``.

    Example::

        set_random_states(sources, states)  # the next draws repeat those made after them
    """
    for source, state in zip(sources, states):
        if source is GLOBAL:
            np.random.set_state(state)
        elif source is random:
            random.setstate(state)
        else:
            set_draw_state(source, state)


def fingerprint(value: Any, plain: Callable[[Any], Any] = lambda v: v) -> int:
    """A hash of a sample of ``value`` (a few elements of each array of a tuple, list or
    dict) that a second run with other random numbers or other inputs would almost surely
    not repeat. ``plain`` gives the plain value of a leaf (a tape value's array).

    Example::

        fingerprint(np.arange(10.0)) == fingerprint(np.arange(10.0))  # True
    """
    parts: list = []
    for leaf in _leaves((value,)):
        leaf = plain(leaf)
        if type(leaf) in _SCALARS:  # a scalar loop's state: the number itself
            parts.append(leaf if leaf == leaf else "nan")
        elif isinstance(leaf, np.ndarray):
            n = leaf.size
            positions = sorted({0, n - 1, *(n * k // _SAMPLES for k in range(1, _SAMPLES))})
            sample = leaf.flat[positions] if n else leaf.ravel()
            parts.append((leaf.shape, _comparable(sample)))
        elif isinstance(leaf, (float, complex, np.number)):
            parts.append(_comparable(np.asarray(leaf)))
        else:
            parts.append(type(leaf).__name__)
    return hash(tuple(parts))


def changed_on_recomputing(function: Any) -> UnsupportedError:
    """The refusal of a checkpointed function (or loop body) that gave other values when
    run again for the backward pass than it gave the first time.

    Example::

        raise changed_on_recomputing(block)
    """
    return UnsupportedError(
        f"{_checkpointed(function)} gave other values when run again for the backward "
        "pass than it gave the first time, so its derivative would be that of another "
        "computation: it draws random numbers from a generator s2sgrad does not see (one an "
        "object holds), or reads something that changed since it ran. Pass the generator or "
        "the random numbers as an argument, or do not checkpoint it"
    )


def stores_while_checkpointed(function: Any) -> UnsupportedError:
    """The refusal of a checkpointed function that stores numbers around it (appends a
    loss to a global list, sets an attribute to an array): its first run is a plain one,
    so a value it stores, read back by its caller, would carry no derivative.

    Example::

        raise stores_while_checkpointed(block)
    """
    return UnsupportedError(
        f"{_checkpointed(function)} stores numbers around it (in a list or dict it names, "
        "an attribute of an object it runs on or is given, a global it assigns): "
        "checkpointing runs it without following its values, so what it stores would "
        "carry no derivative where it is read back. Return the values instead of storing "
        "them, or do not checkpoint it"
    )


def _checkpointed(function: Any) -> str:
    """``file:line: the checkpointed name`` of a checkpointed function."""
    code = code_of(function)
    where = f"{code.co_filename}:{code.co_firstlineno}: " if code is not None else ""
    name = getattr(function, "__qualname__", None) or repr(function)
    return f"{where}the checkpointed {name}"


def _comparable(sample: np.ndarray) -> tuple:
    """The bytes of ``sample``, with every NaN the same (a NaN equals itself here)."""
    if sample.dtype.kind in "fc":
        sample = np.where(np.isnan(sample), np.nan, sample)
    return (sample.dtype.str, sample.tobytes())


def _state_of(source: Any) -> Any:
    if source is GLOBAL:
        return np.random.get_state()
    if source is random:
        return random.getstate()
    return draw_state(source)


def _leaves(values: Iterable) -> Iterable:
    for value in values:
        if type(value) in (tuple, list):
            yield from _leaves(value)
        elif type(value) is dict:
            yield from _leaves(value.values())
        else:
            yield value


def _free_values(function: Any) -> Iterable:
    """The values of the globals and closure variables ``function``'s code names (a bound
    method's function, a layer's ``__call__``), and those of the functions it wraps
    (``__wrapped__``: a transform's, a decorator's)."""
    for each in wrapped_chain(function):
        yield from _own_free_values(each)


def _own_free_values(function: Any) -> Iterable:
    own = own_function(function)
    if own is not None:
        yield from free_values_of(own)
