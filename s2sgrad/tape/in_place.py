"""``x op= v`` on the tape, where plain NumPy would change an array that another name shares.

A tape value has no in-place operators, so ``x += v`` makes a new value and rebinds ``x``
(as ``x = x + v``). Plain NumPy changes the array itself, and every name sharing it (``w =
x``, a view such as ``x.T``, a list holding ``x``) sees the change. Where such a name is
read afterwards the two differ, and the tape would record a function other than the one
the code computes. The source transformer refuses that code (see
:mod:`s2sgrad.compiler.passes.aliases`). The function transforms promise NumPy's meaning, so while
they run a function on the tape (:func:`numpy_semantics`) the tape asks the same analysis
about the function running the update, and refuses it too. A ``GradientTape`` used
directly keeps its documented meaning: tape values are immutable, and ``x += v`` rebinds.

Example::

    def f(x):
        v = x * 2.0
        w = v
        v += 1.0            # refused on the tape: w is read below
        return np.sum(w)
"""

from __future__ import annotations

import contextlib
import dis
import threading
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from s2sgrad.errors import NonDifferentiableError, UnsupportedError, where
from s2sgrad.running import ORIGINS, is_own_code
from s2sgrad.runtime.kept_states import free_values_of
from s2sgrad.tape.view_writes import STALE, forget_superseded

__all__ = [
    "plain_array_write",
    "numpy_semantics",
    "numpy_semantics_depth",
    "under_numpy_semantics",
    "refuse_shared_update",
    "refuse_unread_sharing",
    "refuse_value_class_patterns",
    "use_source_facts",
    "names_unread_after_call",
    "refuse_view_write",
    "SLICE",
    "WritesOnOneLine",
]


@dataclass(frozen=True)
class SourceFacts:
    """What the tape asks the source analysis about a function (each computed once per code
    object): see :mod:`s2sgrad.compiler.tape_facts`, which provides them."""

    # function -> {line: why its ``x op= v`` is refused}, None without source
    shared_updates: Callable[[Any], dict[int, str] | None]
    # function -> why its class patterns or type comparisons are refused, or ""
    class_pattern: Callable[[Any], str]
    # function -> {line: (name, compiled index) of a write the tape may take over, or None}
    plain_writes: Callable[[Any], dict[int, Any]]
    # function -> {line: (why its write into an array an expression makes is refused,
    # whether always or only into a view)}
    view_writes: Callable[[Any], dict[int, tuple[str, bool | str]]]
    # (function, (first line, last line), (first column, end column)) of a call it runs ->
    # the local names it cannot read again once that call returns
    unread_after_call: Callable[[Any, tuple, Any], frozenset[str]] | None = None


_facts: SourceFacts | None = None

#: the name a compiled index (``plain_writes``) calls for a slice
SLICE = "__s2sgrad_slice"


def use_source_facts(
    shared_updates: Callable[[Any], dict[int, str] | None],
    class_pattern: Callable[[Any], str],
    plain_writes: Callable[[Any], dict[int, Any]],
    view_writes: Callable[[Any], dict[int, tuple[str, bool | str]]],
    unread_after_call: Callable[[Any, tuple, Any], frozenset[str]] | None = None,
) -> None:
    """Register the source analysis the tape asks (the compiler, above the tape, does
    when imported).

    Example::

        use_source_facts(
            shared_updates_by_line, value_class_pattern, plain_writes_by_line, view_writes_by_line
        )
    """
    global _facts
    _facts = SourceFacts(
        shared_updates, class_pattern, plain_writes, view_writes, unread_after_call
    )


def _source_facts() -> SourceFacts:
    if _facts is None:  # import s2sgrad imports the compiler, which registers them
        raise RuntimeError("s2sgrad.compiler.tape_facts was not imported")
    return _facts


# code object -> {line: why its update is refused}
_REFUSED_LINES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_numpy_semantics = threading.local()


@contextlib.contextmanager
def numpy_semantics():
    """Inside: ``x op= v`` on an array-valued tape value is checked by
    :func:`refuse_shared_update`.

    Example::

        with numpy_semantics():
            out = f(*watched_args)
    """
    depth = getattr(_numpy_semantics, "depth", 0)
    _numpy_semantics.depth = depth + 1
    try:
        yield
    finally:
        _numpy_semantics.depth = depth
        if STALE:
            forget_superseded(depth + 1)


def numpy_semantics_depth() -> int:
    """How many function transforms are running code on the tape in this thread.

    Example::

        numpy_semantics_depth()  # 0 outside them
    """
    return getattr(_numpy_semantics, "depth", 0)


def under_numpy_semantics() -> bool:
    """Whether a function transform is running code on the tape in this thread."""
    return getattr(_numpy_semantics, "depth", 0) > 0


def refuse_shared_update(frame: Any) -> bool:
    """Raise ``UnsupportedError`` if the line ``frame`` runs is an ``x op= v`` after which a
    name that may share ``x``'s memory is read (the frame is the user's, running it).
    Returns whether the function's source told that; without it, the caller asks
    :func:`refuse_unread_sharing`.

    Example::

        refuse_shared_update(sys._getframe())  # True: a no-op outside such an update
    """
    if frame is None:
        return True
    code = frame.f_code
    refused = _REFUSED_LINES.get(code)
    if refused is None:
        refused = _REFUSED_LINES[code] = _updates_by_line(frame)
    if refused is _NO_SOURCE:
        return False
    message = refused.get(frame.f_lineno)
    if message is not None and not _entry_of_an_arrays_copy(message, frame):
        error = UnsupportedError(message)
        error.tape_cannot_either = True
        error.in_generated_code = code.co_filename in ORIGINS  # s2sgrad's code, on the tape
        raise error
    return True


def _entry_of_an_arrays_copy(message: str, frame: Any) -> bool:
    """Whether ``message`` refuses ``q[i] op= v`` for an entry ``q`` shares with a shallow
    copy (:class:`s2sgrad.compiler.passes.shallow_copies.EntryOfACopy` names ``q``) while
    ``q`` holds an array, whose copy's rows are its own: only a list's or dict's copy shares
    them (the transformer checks the same as the code runs, ``runtime.refuse_if_array``)."""
    container = getattr(message, "container", "")
    if not container or container not in frame.f_locals:
        return False
    return not isinstance(frame.f_locals[container], (list, dict))


# what _REFUSED_LINES holds for a function without source to analyse
_NO_SOURCE: dict[int, str] = {}


def refuse_unread_sharing(
    frame: Any, value: Any, primal: Any, primal_of: Callable[[Any], Any], rebinds: bool
) -> None:
    """Raise ``UnsupportedError`` when ``value`` (whose array is ``primal``), about to change
    in place on the line ``frame`` runs, may share its memory with another value, and the
    function has no source to say whether that value is read afterwards: ``primal`` is a
    view, or a value the frame holds (by a name, or in a list, tuple or dict it holds) is
    one of it, or, when the update rebinds (``x op= v``), holds ``value`` itself under another
    name. ``primal_of`` gives the array of a held value, or None.

    Example::

        refuse_unread_sharing(frame, y, y_array, primal_of, rebinds=False)
    """
    if not isinstance(primal, np.ndarray):
        return
    shared = primal.base is not None
    holders = 0
    for held in _held_by(frame):
        if held is value:
            holders += 1
            shared = shared or (rebinds and holders > 1)
            continue
        other = primal_of(held)
        if other is not None and np.may_share_memory(other, primal):
            shared = True
        if shared:
            break
    if shared:
        error = UnsupportedError(
            f"{where(frame.f_code.co_filename, frame.f_lineno)}: an array being differentiated "
            "is changed in place "
            "while it may share memory with another value (a view of it, or it of another), "
            "and this function has no source s2sgrad can read to tell whether that value is "
            "read afterwards; define the function in a file, or build the new array "
            "(np.where, np.concatenate, x = x + v) instead of changing it"
        )
        error.tape_cannot_either = True
        raise error


def _held_by(frame: Any):
    for held in frame.f_locals.values():
        yield held
        if type(held) in (list, tuple):
            yield from held
        elif type(held) is dict:
            yield from held.values()


# code object -> view_writes of its function
_VIEW_WRITES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def refuse_view_write(frame: Any, is_view: bool) -> None:
    """Raise ``UnsupportedError`` if the line ``frame`` runs writes into an array that an
    expression makes (``a.T[0] = v``, ``a[1:][0] = v``), which on the tape is a new value the
    write would not reach back from; ``is_view``: whether the array written into is a view.

    Example::

        refuse_view_write(sys._getframe(), is_view=True)  # a no-op outside such a write
    """
    if frame is None or frame.f_code.co_name.startswith("<"):
        return
    code = frame.f_code
    refused = _VIEW_WRITES.get(code)
    if refused is None:
        refused = _VIEW_WRITES[code] = _source_facts().view_writes(_running_function(frame))
    message, always = refused.get(frame.f_lineno, (None, False))
    if message is not None and always == "iterated":  # not followed through views either
        raise NonDifferentiableError(message)
    if message is not None and (always or is_view):
        error = UnsupportedError(message)
        error.tape_cannot_either = True
        raise error


def _updates_by_line(frame: Any) -> dict[int, str]:
    code = frame.f_code
    if code.co_name.startswith("<") and code.co_name != "<lambda>":  # a module, comprehension
        return {}
    found = _source_facts().shared_updates(_running_function(frame))
    return _NO_SOURCE if found is None else found


def _running_function(frame: Any) -> types.FunctionType:
    """The function whose code ``frame`` runs, rebuilt from the frame."""
    code = frame.f_code
    cells = tuple(_cell(frame.f_locals, name) for name in code.co_freevars)
    return types.FunctionType(code, frame.f_globals, code.co_name, None, cells)


def _cell(names: dict, name: str) -> types.CellType:
    return types.CellType(names[name]) if name in names else types.CellType()


# code object -> why a match statement in it is refused on the tape ("" for none)
_CLASS_PATTERNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def refuse_value_class_patterns(function: Any) -> None:
    """Raise ``UnsupportedError`` if ``function`` has a ``match`` class pattern such as
    ``case float():`` or ``case np.ndarray():``, or compares ``type(x)``: on the tape ``x``
    may be a tape value, which is neither, so the code would take another branch than it
    does with NumPy's values.

    Example::

        refuse_value_class_patterns(f)  # before running f on tape values
    """
    if callable(getattr(function, "generic_function", None)):  # grad(f) run on the tape:
        function = getattr(function, "function", function)  # its code compares as f does
    seen: set[int] = set()
    pending = [(function, 0)]
    while pending:  # and the user's functions it names, whose code runs on tape values too
        each, depth = pending.pop()
        code = getattr(each, "__code__", None)
        if code is None or id(code) in seen:
            continue
        if depth and is_own_code(code):
            continue  # (the function itself is read whoever wrote it, as it always was)
        seen.add(id(code))
        message = _CLASS_PATTERNS.get(code)
        if message is None:
            message = _CLASS_PATTERNS[code] = (
                _source_facts().class_pattern(each) if _matches_class(code) else ""
            )
        if message:
            raise UnsupportedError(message)
        if depth < 2 and isinstance(each, types.FunctionType):
            pending += [
                (value, depth + 1)
                for value in free_values_of(each)
                if isinstance(value, types.FunctionType)
            ]


def _matches_class(code: Any) -> bool:
    """Whether ``code`` or a function defined in it may test a class pattern or compare a
    ``type(...)`` (cheap: bytecode)."""
    if "type" in code.co_names or any(
        i.opname == "MATCH_CLASS" for i in dis.get_instructions(code)
    ):
        return True
    return any(_matches_class(c) for c in code.co_consts if hasattr(c, "co_code"))


# ``y[index] = v`` into a plain array the function made, with ``v`` being differentiated ----

# code object -> {line: (name, compiled index, check of the value written) of a write the
# tape may take over, or None}
_PLAIN_WRITES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def plain_array_write(frame: Any) -> tuple[str, Any] | None:
    """``(name, index)`` when ``frame`` runs ``name[index] = v`` (or ``name[index] += v``)
    on a plain array that the function itself made (its only binding is ``name =
    np.zeros(...)``, another call known to return a new array, or arithmetic), whose index
    has no calls (so it may be evaluated again), which stores one value (not a list whose
    items NumPy converts one by one), and after which no name sharing the array is read;
    else None. The tape then takes the array over as a tape value (see
    ``TapeValue._refuse_plain``). ``(name, None)`` when it runs ``name += v`` on such an
    array, otherwise only updated so: the tape binds ``name`` to the new value.

    Example::

        plain_array_write(frame)  # ('Y', (0, 1)) while running Y[i, j] = total
    """
    code = frame.f_code
    writes = _PLAIN_WRITES.get(code)
    if writes is None:
        writes = _PLAIN_WRITES[code] = _plain_writes(frame)
    found = writes.get(frame.f_lineno)
    if type(found) is WritesOnOneLine:
        found = found.running(frame)
    if found is None or found[0] in code.co_cellvars or found[0] not in frame.f_locals:
        return None
    refuse_shared_update(frame)
    name, index, one_value = found
    if index is None:  # name += v: the name is bound again
        return name, None
    if one_value is not None and not one_value(frame.f_globals, frame.f_locals):
        return None  # y[i] = row of a list row: NumPy converts its items one by one
    scope = {**frame.f_locals, SLICE: slice}
    return name, eval(index, frame.f_globals, scope)  # noqa: S307 (the user's own index)


class WritesOnOneLine(tuple):
    """The item writes of one line in source order (``K[i, i] += k; K[j, j] += k``), each
    what :func:`plain_array_write` would find for the line alone, or None: the one running
    is told by the rank of the store instruction among the line's.

    Example::

        WritesOnOneLine([("K", index, None), None]).running(frame)  # the first's triple
    """

    def running(self, frame: Any) -> Any:
        """The write ``frame`` is storing, or None where the line's item stores in the
        bytecode do not pair off one by one with its writes."""
        stores = _item_stores_by_line(frame.f_code).get(frame.f_lineno, ())
        if len(stores) != len(self) or frame.f_lasti not in stores:
            return None
        return self[stores.index(frame.f_lasti)]


# code object -> {line: offsets of its item stores (STORE_SUBSCR, STORE_SLICE), in order}
_ITEM_STORES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _item_stores_by_line(code: types.CodeType) -> dict[int, list[int]]:
    found = _ITEM_STORES.get(code)
    if found is None:
        found = _ITEM_STORES[code] = {}
        for instruction in dis.get_instructions(code):
            positions = getattr(instruction, "positions", None)  # from Python 3.11
            line = positions.lineno if positions is not None else None
            if line is not None and instruction.opname in ("STORE_SUBSCR", "STORE_SLICE"):
                found.setdefault(line, []).append(instruction.offset)
    return found


# code object -> {instruction: names its function cannot read once the call there returns}
_UNREAD_AFTER: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def names_unread_after_call(frame: Any) -> frozenset[str]:
    """The local names the function ``frame`` runs cannot read again once the call it is
    running returns (see :mod:`s2sgrad.compiler.reads_after`); empty when not known.

    Example::

        names_unread_after_call(frame)  # {'X'} in X = sequence_mask(X.reshape(-1, n), lens)
    """
    code = frame.f_code
    by_instruction = _UNREAD_AFTER.get(code)
    if by_instruction is None:
        by_instruction = _UNREAD_AFTER[code] = {}
    found = by_instruction.get(frame.f_lasti)
    if found is None:
        found = by_instruction[frame.f_lasti] = _unread_after_call(frame)
    return found


def _unread_after_call(frame: Any) -> frozenset[str]:
    code = frame.f_code
    find = _source_facts().unread_after_call
    if find is None or code.co_name.startswith("<"):
        return frozenset()
    positions = getattr(code, "co_positions", None)  # Python 3.11 and later
    if positions is None:
        first = last = frame.f_lineno
        columns = None
    else:
        first, last, start, end = list(positions())[frame.f_lasti // 2]
        columns = (start, end)
        if None in (first, last, start, end):
            return frozenset()
    names = find(_running_function(frame), (first, last), columns)
    return names - set(code.co_cellvars) - set(code.co_freevars)


def _plain_writes(frame: Any) -> dict[int, Any]:
    if frame.f_code.co_name.startswith("<"):  # a module, lambda or comprehension
        return {}
    return _source_facts().plain_writes(_running_function(frame))
