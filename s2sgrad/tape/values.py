"""Tape values: NumPy values that record what is done to them while a tape watches.

A :class:`TapeValue` holds a plain value (an ndarray, a NumPy scalar or a Python float) and
the serial numbers of the tapes tracking it. Python operators, NumPy functions and ufuncs
(through NumPy's ``__array_function__`` and ``__array_ufunc__`` protocols), indexing and the
array methods all end in :func:`apply_rule`: it computes the plain result, and if a
recording tape tracks an argument it appends ``(rule, args, kwargs, out)`` to that tape.

Example::

    x = TapeValue(np.ones(3))
    y = np.sin(x) * 2.0     # a TapeValue; recorded if a tape tracks x
"""

from __future__ import annotations

import dis
import inspect
import linecache
import logging
import operator
import os
import sys
import sysconfig
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

import numpy as np

from s2sgrad import numpy_signatures
from s2sgrad.errors import (
    KEYWORD_ONLY_ADVICE,
    USE_S2S,
    ImmutableValueError,
    NonDifferentiableError,
    S2SGradError,
    UnsupportedError,
    where,
)
from s2sgrad.naming import describe, library_entry
from s2sgrad.rules.registry import (
    Rule,
    get_rule,
    keywords_without_derivative,
    parameter_name,
    silent_zero_positions,
    when_forgotten,
)
from s2sgrad.running import IN_A_DERIVATIVE, origin_of, statement_origin
from s2sgrad.runtime.answering_objects import answers_arithmetic, answers_itself
from s2sgrad.runtime.core import CotangentDict, CotangentList, is_complex, is_foreign_array
from s2sgrad.runtime.piecewise import pieces_into
from s2sgrad.runtime.replays import DrawsAtStart
from s2sgrad.runtime.ufunc_methods import plain_reduction
from s2sgrad.tape.caught_refusals import note_refusal
from s2sgrad.tape.custom import CALLED_BY_TAPE, CUSTOM, CustomCall
from s2sgrad.tape.helper_writes import (
    held_values,
    is_held,
    is_helper_frame,
    refuse_changing_an_input,
    refuse_shared_memory,
)
from s2sgrad.tape.in_place import (
    numpy_semantics_depth,
    plain_array_write,
    refuse_shared_update,
    refuse_unread_sharing,
    refuse_view_write,
    under_numpy_semantics,
)
from s2sgrad.tape.index_joins import held_for_join
from s2sgrad.tape.recording import IDENTITY, RECORDING, live_serials
from s2sgrad.tape.text import DifferentiatedText
from s2sgrad.tape.view_writes import STALE, is_stale, supersede, write_through_views
from s2sgrad.tape.writes import with_item

__all__ = [
    "TapeValue",
    "apply",
    "apply_rule",
    "call_custom",
    "is_recorded",
    "is_tape_value",
    "value_of",
    "user_location",
]


_NUMPY_1 = np.lib.NumpyVersion(np.__version__) < "2.0.0"


def _numpy_defers_to(other: Any) -> bool:
    """Whether NumPy's own operators give way to ``other`` (Python then calls its
    reflected method with the whole array): ``__array_ufunc__ = None``, or a positive
    ``__array_priority__`` without ``__array_ufunc__``."""
    ufunc = getattr(type(other), "__array_ufunc__", False)
    if ufunc is None:
        return True
    return ufunc is False and getattr(other, "__array_priority__", 0.0) > 0.0


def _answered_by_other(value: TapeValue, other: Any, what: str = "a comparison") -> Any:
    """``x[0] > c`` or ``x + c`` of a tape value and an object whose class answers the
    comparison (or does the arithmetic) with code of its own (``__lt__`` returning
    ``other * self.s``): for one number, Python's reflected call (``c.__lt__(x[0])``),
    recorded on the tape as it computes; for an array, which NumPy gives such an object
    entry by entry, each a plain number (or whole, as ``NotImplemented`` does, when its
    class sets ``__array_priority__`` or ``__array_ufunc__ = None``), refused at the user's
    line (the values it answered were constants, and its answers' derivatives lost)."""
    if _numpy_defers_to(other) or (
        np.ndim(value._value) == 0
        and not (_NUMPY_1 and what == "a comparison" and isinstance(value._value, np.generic))
    ):
        return NotImplemented  # (NumPy 1's scalars answer themselves, with a flag: refused)
    error = UnsupportedError(
        f"{user_location()}: an array being differentiated meets, in {what}, an object "
        "whose class answers it with code of its own, which NumPy calls entry by entry "
        "on plain numbers; compute with the values the object holds, or entry by entry"
    )
    error.tape_cannot_either = True
    raise error


# ndarray attributes NumPy 2.0 added (the array API's), which a library (SciPy's array-API
# helpers) asks of any array it does not know as NumPy's, on NumPy 1.26 too
_ARRAY_API_2 = frozenset({"device", "to_device", "mT"})


class TapeValue:
    """A value the tapes can track; behaves like the NumPy value it wraps.

    Example::

        x = TapeValue(np.arange(3.0))
        (x * x).sum()   # TapeValue(5.0)
    """

    __slots__ = ("_value", "_tapes")
    _read: Callable[[], tuple[Any, Any, tuple]]  # a Variable's read of its current value

    def __init__(self, value: Any, tapes: tuple = ()) -> None:
        self._value = value
        self._tapes = tapes

    # The plain value ---------------------------------------------------------------------

    def numpy(self) -> Any:
        """The plain value (a copy for arrays); no derivative flows through it.

        Example::

            TapeValue(np.ones(2)).numpy()  # array([1., 1.])
        """
        value = self._value
        return value.copy() if isinstance(value, np.ndarray) else value

    def item(self, *args: Any) -> Any:
        """The element as a Python number, like ``ndarray.item``; refused while the value is
        being differentiated (the number would carry no derivative)."""
        self._refuse_plain(".item()")
        return np.asarray(self._value).item(*args)

    def tolist(self) -> Any:
        """The value as nested Python lists, like ``ndarray.tolist``; refused while the value
        is being differentiated."""
        self._refuse_plain(".tolist()")
        return np.asarray(self._value).tolist()

    @property  # type: ignore[misc]  # read-only: isinstance reads it
    def __class__(self) -> type:
        """What ``isinstance`` asks when the type does not match: for the user's code under a
        function transform, the class of the value this stands for, so that
        ``isinstance(x, np.ndarray)`` or ``isinstance(x, float)`` takes the branch NumPy's
        values take (``type(x)`` cannot be changed: :mod:`s2sgrad.tape.in_place` refuses
        functions that compare it). Everywhere else, the tape value's own class."""
        if under_numpy_semantics() and isinstance(self._value, _NUMERIC):
            caller = sys._getframe(1).f_code.co_filename
            if not caller.startswith(_SKIPPED_DIRS):
                return type(self._value)
        return type(self)

    @property
    def shape(self) -> tuple:
        return np.shape(self._value)

    @shape.setter
    def shape(self, shape: Any) -> None:
        raise ImmutableValueError(
            f"{user_location()}: assigning .shape reshapes an array in place, which the tape "
            "cannot record; write x = x.reshape(...) instead."
        )

    @property
    def ndim(self) -> int:
        return np.ndim(self._value)

    @property
    def size(self) -> int:
        return np.size(self._value)

    @property
    def dtype(self) -> np.dtype:
        return np.result_type(self._value)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def strides(self) -> tuple:
        """The strides of the array the tape value holds: what
        ``np.lib.stride_tricks.as_strided`` of this value reads them against."""
        return np.asarray(self._value).strides

    def __len__(self) -> int:
        return len(self._value)

    def __iter__(self):
        if np.ndim(self._value) == 0:
            raise TypeError("iteration over a 0-d array")  # as NumPy says it
        for i in range(len(self._value)):
            yield self[i]

    def __repr__(self) -> str:
        if under_numpy_semantics():  # the user's code under a transform: NumPy's text
            return self._text(repr(self._value))
        return f"{type(self).__name__}({self._value!r})"

    def __str__(self) -> str:
        return self._text(str(self._value))

    def __format__(self, spec: str) -> str:
        return self._text(format(self._value, spec))

    def _text(self, text: str) -> str:
        """The value's text; while it is being differentiated, text that refuses to be read
        back as a number (``float(str(x))`` would drop the derivative)."""
        return DifferentiatedText(text, self) if live_serials(self._tapes) else text

    def __bytes__(self) -> bytes:
        """``bytes(x)``: the array's bytes, as NumPy gives them; refused while the value is
        being differentiated (bytes carry no derivative)."""
        self._refuse_plain("bytes()")
        return bytes(np.asarray(self._value))

    def __bool__(self) -> bool:
        if STALE:
            _refuse_stale(self._value)
        return bool(self._value)

    def __index__(self) -> int:
        return operator.index(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __float__(self) -> float:
        if sys._getframe(1).f_code.co_filename != _LOGGING_FILE:  # "loss %.3f" % (loss,)
            self._refuse_plain("float()")
        return float(self._value)

    def __hash__(self) -> int:
        """A number's hash (a dict key, a set member, a cache key); refused while the value
        is being differentiated, and unhashable for an array, as NumPy's are."""
        self._refuse_plain("hash() (a dict key, a set member or a cache key)")
        return hash(self._value)

    def __round__(self, ndigits: int | None = None) -> Any:
        """``round(x)``: an integer, whose derivative is zero where it has one, as
        ``int(x)``'s; ``round(x, n)`` is ``np.round(x, n)``, recorded."""
        if ndigits is None:
            return round(self._value)
        return np.round(self, ndigits)

    def as_integer_ratio(self) -> tuple[int, int]:
        """The exact ratio of a number (the ``statistics`` module's arithmetic); refused
        while the value is being differentiated (the ratio carries no derivative)."""
        self._refuse_plain("as_integer_ratio() (exact arithmetic, as statistics.mean does)")
        return np.float64(self._value).as_integer_ratio()

    def __complex__(self) -> complex:
        self._refuse_plain("complex()")
        return complex(self._value)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if dtype is None and live_serials(self._tapes) and _joined_by_index_trick(self):
            return held_for_join(self, self._value)  # np.r_/np.c_ join this value itself
        self._refuse_plain("np.asarray() / np.array()")
        if copy:
            return np.array(self._value, dtype=dtype, copy=True)
        return np.asarray(self._value, dtype=dtype)

    def _refuse_plain(self, what: str) -> None:
        """Converting a value that is being differentiated to a plain one would drop its
        derivative without a word; say so instead."""
        if not live_serials(self._tapes):
            return
        try:
            self._refuse_live(what)
        except S2SGradError as error:
            note_refusal(error, _caller_outside_this_file())
            raise

    def _refuse_live(self, what: str) -> None:
        frame = _user_frame()
        if _inside_index_concatenation():
            raise NonDifferentiableError(
                f"{where(*_shown_position(frame))}: np.r_[...] / np.c_[...] convert their items to "
                "plain arrays, which would drop the derivative of a value being differentiated "
                "on the tape. Write np.concatenate([...]) or np.column_stack([...]) instead, "
                f"or {USE_S2S}."
            )
        if _inside_numpy_full():
            raise NonDifferentiableError(
                f"{where(*_shown_position(frame))}: np.full(shape, c) makes a plain array out of "
                "c, so the derivative of a c being differentiated would be lost on the tape "
                "(NumPy does not let the tape make that array). Write c * np.ones(shape) or "
                f"np.broadcast_to(c, shape) instead, or {USE_S2S}."
            )
        if _is_storing_an_item(frame):
            if under_numpy_semantics() and _take_over_written_array(frame, self):
                return
            error = NonDifferentiableError(
                f"{where(*_shown_position(frame))}: writing a value being differentiated into an "
                "element of a plain array ('a[i] = ...') would drop its derivative: "
                + (_WRITE_ADVICE if under_numpy_semantics() else _IMMUTABLE_ADVICE)
            )
            # s2sgrad's own code on the tape (a derivative differentiated again): mode "auto"
            # has the tape record the user's code instead
            error.in_generated_code = (
                frame is not None and origin_of(frame.f_code.co_filename) is not None
            )
            raise error
        if what.startswith("np.asarray") and _calls_array_dot(frame):
            raise NonDifferentiableError(
                f"{where(*_shown_position(frame))}: a.dot(b) of a plain array a converts b with "
                "np.asarray, which would drop the derivative of a b being differentiated on the "
                f"tape (NumPy does not let b take part). Write a @ b or np.dot(a, b), or {USE_S2S}."
            )
        library = library_entry(frame)
        if library is not None and what.startswith("np.asarray"):
            # SciPy's solve_toeplitz converting its argument: the library's missing rule is
            # the cause, not a list given to np.array by the user
            raise NonDifferentiableError(
                f"{where(*_shown_position(frame))}: {library[0]} converts a value being "
                "differentiated to a plain array, which would drop its derivative on the "
                f"tape. Register a derivative with @s2sgrad.derivative(of={library[0]}), or "
                "wrap its input in s2sgrad.stop_gradient(...) if no derivative should flow "
                "through this call."
            )
        math_functions = (
            " Python's math functions (math.sin, math.exp ...) take floats this way: on the "
            f"tape use NumPy's (np.sin, np.exp ...), or {USE_S2S}."
            if what == "float()" and (frame is None or origin_of(frame.f_code.co_filename) is None)
            else ""
        )
        if what == "float()":  # history.append(float(loss))
            math_functions += (
                " To log the value (history.append(float(loss))), log "
                f"float(s2sgrad.stop_gradient(loss)), or {USE_S2S}."
            )
        raise NonDifferentiableError(
            f"{where(*_shown_position(frame))}: {what} of a value being differentiated on the tape "
            "would drop its derivative. Keep it a NumPy computation (for a list of values "
            "use np.stack([...]) rather than np.array([...])), or take the plain value on "
            f"purpose with .numpy() or s2sgrad.stop_gradient(...).{math_functions}"
        )

    def __reduce_ex__(self, protocol: Any) -> str | tuple:
        """``pickle.dumps(x)``: refused while the value is being differentiated (its bytes
        would carry no derivative); else pickled as a tape value of the plain value."""
        self._refuse_plain("pickling (pickle.dumps)")
        if type(self) is not TapeValue:  # a Variable: pickled as Python pickles its slots
            return object.__reduce_ex__(self, protocol)
        return (TapeValue, (self._value,))

    def __copy__(self) -> TapeValue:
        """``copy.copy(x)``: a new tape value recorded as a copy of ``x`` (gradients reaching
        it flow on to ``x``), as ``x.copy()`` is.

        Example::

            copy.copy(x) is x  # False
        """
        return _copy_of(self)

    def __deepcopy__(self, memo: dict) -> TapeValue:
        return _copy_of(self)

    def view(self, dtype: Any = None, type: Any = None) -> TapeValue:
        """``x.view()``: ``x`` itself, since a tape value never changes (an update of a view
        that a name sharing it would see is refused, see :mod:`s2sgrad.tape.in_place`).
        A view as another dtype reinterprets the bytes, which has no derivative.

        Example::

            x.view() is x  # True
        """
        try:
            same = dtype is None or np.dtype(dtype) == self.dtype
        except TypeError:  # an array subclass given as the dtype
            same = False
        if same and type in (None, np.ndarray):
            return self
        raise NonDifferentiableError(
            f"{user_location()}: .view({dtype!r}) reinterprets the memory of a value being "
            "differentiated, which has no derivative; convert it with .astype(...) instead, "
            "or take the plain value on purpose with .numpy() or s2sgrad.stop_gradient(...)"
        )

    def __setitem__(self, index: Any, value: Any) -> None:
        """``x[index] = value``: under a function transform, NumPy's meaning, recorded as a
        new version of ``x`` (see :mod:`s2sgrad.tape.writes`); refused where NumPy would
        change an array the caller holds, or one that a name read later shares."""
        if under_numpy_semantics() and type(self) is TapeValue:
            frame = _user_frame()
            helper = is_helper_frame(frame, _SKIPPED_DIRS)
            if helper:  # callers see it: not their arguments
                refuse_changing_an_input(self, frame, _SKIPPED_DIRS)
            try:
                if helper:
                    refuse_shared_memory(self, frame, _SKIPPED_DIRS)
                    refuse_shared_update(frame)  # b[:1], b[1:] = b[1:], b[:1]: a view unheld
                elif not refuse_shared_update(frame):
                    refuse_unread_sharing(frame, self, self._value, _primal_or_none, rebinds=False)
                refuse_view_write(frame, getattr(self._value, "base", None) is not None)
            except UnsupportedError:  # memory shared: followed where it is all held
                if _write_through_views(frame, self, index, value, helper):
                    return
                raise
            _refuse_read_only(self._value, "assignment destination is read-only")
            if (STALE or _is_view(self._value)) and not _in_generated_code(frame):
                # a view's array, or views of this one's written through before, follow it
                _write_through_views(frame, self, index, value, helper, forced=True)
                return
            _write_item(self, index, value)
            return
        raise ImmutableValueError(
            f"{user_location()}: tape values are immutable and cannot be assigned to in place; "
            f"build the new array with np.where, np.concatenate or np.stack instead, or {USE_S2S}."
        )

    def _immutable(self, *args: Any, **kwargs: Any) -> None:
        """Array methods that change the array in place (``x.sort()``, ``x.fill(v)``, ...)."""
        raise ImmutableValueError(
            f"{user_location()}: tape values are immutable, so methods that change an array in "
            "place (sort, fill, put, resize, partition, setfield) do not apply to them; use the "
            "NumPy function that returns a new array (np.sort, np.full_like, np.where, ...)."
        )

    resize = partition = setfield = _immutable

    def sort(self, axis: Any = -1, kind: Any = None, order: Any = None) -> None:
        """``x.sort()``: under a function transform, the item write ``x[...] = np.sort(x)``."""
        if order is not None or not self._written_in_place():
            self._immutable()
        self._method_write(Ellipsis, np.sort(self, axis=axis, kind=kind))

    def fill(self, value: Any) -> None:
        """``x.fill(v)``: under a function transform, the item write ``x[...] = v``."""
        if not self._written_in_place() or np.ndim(value_of(value)) != 0:
            self._immutable()
        self._method_write(Ellipsis, value)

    def put(self, indices: Any, values: Any, mode: str = "raise") -> None:
        """``x.put(i, v)`` (``np.put``): under a function transform, the item write of ``v`` at
        the flat indices ``i`` (as many values as indices, or one)."""
        flat = np.ravel(value_of(indices))
        count = np.size(value_of(values))
        if mode != "raise" or not self._written_in_place() or count == 0:
            self._immutable()
        at = np.arange(self._value.size).reshape(np.shape(self._value)).ravel()[flat]
        values = values if count == 1 else np.resize(values, flat.shape)  # cycled, as NumPy
        self._method_write(np.unravel_index(at, np.shape(self._value)), values)

    def _written_in_place(self) -> bool:
        return (
            type(self) is TapeValue and type(self._value) is np.ndarray and under_numpy_semantics()
        )

    def _method_write(self, index: Any, value: Any) -> None:
        """A method's write into ``self`` (sort, fill, put): followed through the views the
        user's frames hold, as a refused item write is (:mod:`s2sgrad.tape.view_writes`)."""
        frame = _user_frame()
        helper = is_helper_frame(frame, _SKIPPED_DIRS)
        if helper:
            refuse_changing_an_input(self, frame, _SKIPPED_DIRS)
        _write_through_views(frame, self, index, value, helper, forced=True)

    def __getattr__(self, name: str) -> Any:
        """An ndarray attribute the tape does not give (``x.flags``, ``x.ctypes``, ``x.data``):
        code asking for it, often a library's, wants the plain array; say so."""
        if name in _ARRAY_INTERFACES and live_serials(self._tapes):
            _refuse_interface_read(name, sys._getframe(1))
        known = hasattr(np.ndarray, name) or name in _ARRAY_API_2
        if name.startswith("__") or not known:
            raise AttributeError(name)
        entry = library_entry(_caller_outside_this_file())
        if entry is None and not hasattr(np.ndarray, name):  # the user's, as NumPy 1.26 says
            raise AttributeError(name)
        if entry is not None:  # a library's function, not the user's code, reads it
            target, frame = entry
            message = (
                f"{where(*_shown_position(frame))}: {target} has no derivative rule, and its "
                f"code reads .{name} of a value being differentiated, which the tape cannot "
                f"follow. Register one with @s2sgrad.derivative(of={target}), or wrap its input "
                "in s2sgrad.stop_gradient(...) if no derivative should flow through this call."
            )
        else:
            message = (
                f"{user_location()}: .{name} of a value being differentiated is not available "
                "on the tape (code that reads it wants a plain NumPy array, whose derivative "
                "the tape would not see); give the function that reads it a rule with "
                "@s2sgrad.derivative(of=...)."
            )
        error = TapeAttributeError(message)
        if live_serials(self._tapes):  # hasattr(x, "base"): the user's code may catch it
            note_refusal(error, _caller_outside_this_file())
        raise error

    def _in_place(self, op: Any, other: Any) -> Any:
        """``x op= v``: a new value, as ``x = x op v`` (Python falls back to ``x op v``);
        refused, under a function transform, where NumPy would change an array that a name
        read later shares (see :mod:`s2sgrad.tape.in_place`). In a helper, NumPy's meaning:
        ``x`` itself changes, for its callers too (see :mod:`s2sgrad.tape.helper_writes`)."""
        if isinstance(self._value, np.ndarray) and under_numpy_semantics():
            frame = _user_frame()
            if type(self) is TapeValue and is_helper_frame(frame, _SKIPPED_DIRS):
                new = apply_binary(op, self, other)
                if is_held(self, frame, _SKIPPED_DIRS):  # not the temporary y[:] of y[:] *= s
                    refuse_changing_an_input(self, frame, _SKIPPED_DIRS)
                    try:
                        refuse_shared_memory(self, frame, _SKIPPED_DIRS)
                    except UnsupportedError:  # memory shared: followed where it is all held
                        if _write_through_views(frame, self, Ellipsis, new, True):
                            return self
                        raise
                _refuse_read_only(self._value, "output array is read-only")
                if STALE:
                    _write_through_views(frame, self, Ellipsis, new, True, forced=True)
                    return self
                _write_item(self, Ellipsis, new)
                return self
            if _in_place_operator(frame) is None:  # x.__iadd__(v) called: x must change
                raise NonDifferentiableError(
                    f"{where(*_shown_position(frame))}: an in-place operator method called "
                    "directly (x.__iadd__(v), operator.iadd(x, v)) changes a value being "
                    "differentiated in place, which the tape follows only as 'x += v'; write "
                    f"x += v or x = x + v, or {USE_S2S}."
                )
            try:
                if not refuse_shared_update(frame):
                    refuse_unread_sharing(frame, self, self._value, _primal_or_none, rebinds=True)
            except UnsupportedError:  # memory shared: followed where it is all held
                if not is_held(self, frame, _SKIPPED_DIRS):
                    return NotImplemented  # y[i] of y[i] += v: the store into y is checked
                new = apply_binary(op, self, other)
                if _write_through_views(frame, self, Ellipsis, new, False):
                    return self
                raise
            _refuse_read_only(self._value, "output array is read-only")
            if (
                (STALE or _is_view(self._value))
                and not _in_generated_code(frame)
                and is_held(self, frame, _SKIPPED_DIRS)
            ):  # the array it views, or views of it written through before, follow it
                new = apply_binary(op, self, other)
                _write_through_views(frame, self, Ellipsis, new, False, forced=True)
                return self
        return NotImplemented

    def __iadd__(self, other):
        return self._in_place(operator.add, other)

    def __isub__(self, other):
        return self._in_place(operator.sub, other)

    def __imul__(self, other):
        return self._in_place(operator.mul, other)

    def __itruediv__(self, other):
        return self._in_place(operator.truediv, other)

    def __ifloordiv__(self, other):
        return self._in_place(operator.floordiv, other)

    def __imod__(self, other):
        return self._in_place(operator.mod, other)

    def __ipow__(self, other):
        return self._in_place(operator.pow, other)

    def __imatmul__(self, other):
        return self._in_place(operator.matmul, other)

    # NumPy's override protocols --------------------------------------------------------

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        primitive = ufunc if method == "__call__" else getattr(ufunc, method)
        if "out" in kwargs:
            return _call_with_out(primitive, inputs, kwargs)
        if method == "at":  # ufunc.at(a, indices, b) updates a in place
            return _call_at(primitive, inputs)
        if method == "reduce" and _any_tracked(inputs[:1]):
            # refused here, where the user's line is running, not as the backward pass runs
            plain_reduction(inputs[0], kwargs.get("initial"), kwargs.get("where", True))
        return apply_rule(primitive, primitive, inputs, kwargs)

    def __array_function__(self, func: Any, types: tuple, args: tuple, kwargs: dict) -> Any:
        for t in types:
            if not issubclass(t, (TapeValue, np.ndarray)):
                return NotImplemented
        if kwargs.get("out") is not None:
            return _call_with_out(func, args, kwargs)
        if func is np.copyto:
            return _copy_into(*args, **kwargs)
        if func is np.putmask:
            return _put_mask(*args, **kwargs)
        if func is np.fill_diagonal:
            return _fill_diagonal(*args, **kwargs)
        if func is np.put_along_axis:
            return _put_along_axis(*args, **kwargs)
        if func is np.put:
            return _put(*args, **kwargs)
        if func is np.piecewise:  # each piece's function, recorded on its values
            return _piecewise(*args, **kwargs)
        return apply_rule(func, func, args, kwargs)

    # Python operators ------------------------------------------------------------------

    def __add__(self, other):
        if answers_arithmetic(type(other)):
            return _answered_by_other(self, other, "arithmetic")
        return apply_binary(operator.add, self, other)

    def __radd__(self, other):
        return apply_binary(operator.add, other, self)

    def __sub__(self, other):
        if answers_arithmetic(type(other)):
            return _answered_by_other(self, other, "arithmetic")
        return apply_binary(operator.sub, self, other)

    def __rsub__(self, other):
        return apply_binary(operator.sub, other, self)

    def __mul__(self, other):
        if answers_arithmetic(type(other)):
            return _answered_by_other(self, other, "arithmetic")
        return apply_binary(operator.mul, self, other)

    def __rmul__(self, other):
        return apply_binary(operator.mul, other, self)

    def __truediv__(self, other):
        if answers_arithmetic(type(other)):
            return _answered_by_other(self, other, "arithmetic")
        return apply_binary(operator.truediv, self, other)

    def __rtruediv__(self, other):
        return apply_binary(operator.truediv, other, self)

    def __floordiv__(self, other):
        if answers_arithmetic(type(other)):
            return _answered_by_other(self, other, "arithmetic")
        return apply_binary(operator.floordiv, self, other)

    def __rfloordiv__(self, other):
        return apply_binary(operator.floordiv, other, self)

    def __mod__(self, other):
        if answers_arithmetic(type(other)):
            return _answered_by_other(self, other, "arithmetic")
        return apply_binary(operator.mod, self, other)

    def __rmod__(self, other):
        return apply_binary(operator.mod, other, self)

    def __divmod__(self, other):
        return np.divmod(self, other)

    def __rdivmod__(self, other):
        return np.divmod(other, self)

    def __pow__(self, other):
        if answers_arithmetic(type(other)):
            return _answered_by_other(self, other, "arithmetic")
        return apply_binary(operator.pow, self, other)

    def __rpow__(self, other):
        return apply_binary(operator.pow, other, self)

    def __matmul__(self, other):
        if answers_arithmetic(type(other)):
            return _answered_by_other(self, other, "arithmetic")
        return apply_binary(operator.matmul, self, other)

    def __rmatmul__(self, other):
        return apply_binary(operator.matmul, other, self)

    def __neg__(self):
        return apply_rule(operator.neg, operator.neg, (self,))

    def __pos__(self):
        return apply_rule(operator.pos, operator.pos, (self,))

    def __abs__(self):
        return apply_rule(operator.abs, operator.abs, (self,))

    def __getitem__(self, index):
        return apply_rule(operator.getitem, operator.getitem, (self, value_of(index)))

    # Comparisons have no derivative: they return plain boolean arrays (but an object whose
    # class answers the comparison with code of its own answers it: _answered_by_other).

    def __eq__(self, other):
        if STALE:
            _refuse_stale(self._value)
        if answers_itself(type(other)):
            return _answered_by_other(self, other)
        return self._value == value_of(other)

    def __ne__(self, other):
        if STALE:
            _refuse_stale(self._value)
        if answers_itself(type(other)):
            return _answered_by_other(self, other)
        return self._value != value_of(other)

    def __lt__(self, other):
        if STALE:
            _refuse_stale(self._value)
        if answers_itself(type(other)):
            return _answered_by_other(self, other)
        return self._value < value_of(other)

    def __le__(self, other):
        if STALE:
            _refuse_stale(self._value)
        if answers_itself(type(other)):
            return _answered_by_other(self, other)
        return self._value <= value_of(other)

    def __gt__(self, other):
        if STALE:
            _refuse_stale(self._value)
        if answers_itself(type(other)):
            return _answered_by_other(self, other)
        return self._value > value_of(other)

    def __ge__(self, other):
        if STALE:
            _refuse_stale(self._value)
        if answers_itself(type(other)):
            return _answered_by_other(self, other)
        return self._value >= value_of(other)

    # Attributes with a derivative --------------------------------------------------------

    @property
    def T(self):
        return apply_attribute(np.ndarray.T, "T", np.transpose, self)

    @property
    def real(self):
        return apply_attribute(np.ndarray.real, "real", np.real, self)

    @real.setter
    def real(self, value: Any) -> None:
        self._part_assigned(value, part="real")

    @property
    def imag(self):
        return apply_attribute(np.ndarray.imag, "imag", np.imag, self)

    @imag.setter
    def imag(self, value: Any) -> None:
        self._part_assigned(value, part="imag")

    @property
    def flat(self):
        """``x.flat[i]`` reads as ``x.ravel()[i]`` (writes through it are refused)."""
        return self.ravel()

    @flat.setter
    def flat(self, value: Any) -> None:
        self._part_assigned(value, part="flat")

    def _part_assigned(self, value: Any, *, part: str = "real") -> None:
        """``y.real = v``, ``y.imag = v``, ``y.flat = v``: NumPy writes into ``y`` in
        place, which the tape does not record: refused, naming the user's line."""
        instead = {
            "real": "y = v + 1j * np.imag(y)",
            "imag": "y = np.real(y) + 1j * v",
            "flat": "y = np.resize(v, y.shape), or an item assignment y[...] = v",
        }[part]
        raise ImmutableValueError(
            f"{user_location()}: assigning .{part} writes into an array in place, which the "
            f"tape cannot record; build the new array instead ({instead})."
        )


# Array methods: each dispatches to the rule registered for ``np.ndarray.<name>``, else to
# the rule of the NumPy function of the same name (``x.sum(axis=0)`` is ``np.sum(x, axis=0)``).
_METHODS = [
    "all",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "astype",
    "clip",
    "compress",
    "conj",
    "conjugate",
    "copy",
    "cumprod",
    "cumsum",
    "diagonal",
    "dot",
    "max",
    "mean",
    "min",
    "nonzero",
    "prod",
    "ravel",
    "repeat",
    "reshape",
    "round",
    "squeeze",
    "std",
    "sum",
    "swapaxes",
    "take",
    "trace",
    "transpose",
    "var",
    "flatten",
]

# Methods with no NumPy function of the same name, or whose varargs that function packs.
_METHOD_FUNCTIONS = {"flatten": np.ravel}
_PACKED_VARARGS = {"reshape", "transpose"}


def _method(name: str):
    descriptor = getattr(np.ndarray, name)
    function = _METHOD_FUNCTIONS.get(name, getattr(np, name, None))

    def method(self, *args, **kwargs):
        return apply_method(descriptor, name, function, self, args, kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Like ``ndarray.{name}``; recorded through its derivative rule."
    return method


for _name in _METHODS:
    setattr(TapeValue, _name, _method(_name))


def is_tape_value(x: Any) -> bool:
    """Whether ``x`` is a tape value (or a Variable).

    Example::

        is_tape_value(np.ones(2))  # False
    """
    return isinstance(x, TapeValue)


def value_of(x: Any) -> Any:
    """The plain value of a tape value; containers are unwrapped element by element.

    Example::

        value_of([TapeValue(1.0), 2.0])  # [1.0, 2.0]
    """
    if isinstance(x, TapeValue):
        return x._value
    if type(x) in (list, tuple):
        return type(x)(value_of(a) for a in x)
    if isinstance(x, dict):
        return {k: value_of(v) for k, v in x.items()}
    return x


# Looking rules up --------------------------------------------------------------------------

_RULES: dict[Any, Rule] = {}
when_forgotten(lambda primitive: _RULES.pop(primitive, None))

# A Python operator without a rule of its own uses the rule of the matching ufunc.
_OPERATOR_UFUNCS = {
    operator.add: np.add,
    operator.sub: np.subtract,
    operator.mul: np.multiply,
    operator.truediv: np.true_divide,
    operator.floordiv: np.floor_divide,
    operator.mod: np.remainder,
    operator.pow: np.power,
    operator.matmul: np.matmul,
    operator.neg: np.negative,
    operator.pos: np.positive,
    operator.abs: np.absolute,
}


def _rule(primitive: Any) -> Rule | None:
    """The registered rule of ``primitive`` (cached: rule objects are updated in place)."""
    try:
        return _RULES[primitive]
    except KeyError:
        pass
    except TypeError:  # unhashable callables have no rule
        return None
    rule = get_rule(primitive)
    if rule is None and primitive in _OPERATOR_UFUNCS:
        rule = get_rule(_OPERATOR_UFUNCS[primitive])
    if rule is not None:
        _RULES[primitive] = rule
    return rule


# Applying a primitive ------------------------------------------------------------------


def apply(primitive: Any, *args: Any, **kwargs: Any) -> Any:
    """Call ``primitive`` on arguments that may be tape values, recording its registered rule.

    For functions NumPy does not dispatch to tape values by itself (a runtime helper, a
    function with a custom derivative).

    Example::

        apply(np.sin, x)  # the same as np.sin(x) for a tape value x
    """
    return apply_rule(primitive, primitive, args, kwargs)


def apply_binary(op: Any, a: Any, b: Any) -> Any:
    """``op(a, b)`` for a Python operator; the fast path of :func:`apply_rule`."""
    if type(a) is TapeValue:
        a_value, a_tapes = a._value, a._tapes
    elif isinstance(a, TapeValue):
        a, a_value, a_tapes = a._read()
    else:
        a_value, a_tapes = a, ()
    if type(b) is TapeValue:
        b_value, b_tapes = b._value, b._tapes
    elif isinstance(b, TapeValue):
        b, b_value, b_tapes = b._read()
    else:
        b_value, b_tapes = b, ()
    if STALE:
        _refuse_stale(a_value)
        _refuse_stale(b_value)
    out = op(a_value, b_value)
    if a_tapes is b_tapes or not b_tapes:
        serials = live_serials(a_tapes)
    elif not a_tapes:
        serials = live_serials(b_tapes)
    else:
        serials = live_serials(_merge(a_tapes, b_tapes))
    return _finish(op, (a, b), None, out, serials)


def apply_rule(
    key: Any, compute: Any, args: tuple, kwargs: dict | None = None, rule: Rule | None = None
) -> Any:
    """Compute ``compute(*args, **kwargs)`` on plain values and record the rule of ``key``.

    ``compute`` and ``key`` differ for array methods (the method runs; the rule of
    ``np.ndarray.sum`` or ``np.sum`` is recorded). ``rule`` overrides the registry (custom
    derivatives). Returns a tape value (or a tuple/list of them) for a differentiable
    primitive, the plain result for a non-differentiable one.

    Example::

        apply_rule(np.sum, np.sum, (x,), {"axis": 0})
    """
    if kwargs and _any_tracked(kwargs.values()):
        return _apply_with_tracked_keywords(key, compute, args, kwargs, rule)
    args, raw_args, tapes = _scan(args)
    if tapes and live_serials(tapes):
        rule = rule or _rule(key)
        if rule is not None and rule.custom is not None:  # the user's derivative replaces it
            return call_custom(key, rule, args, kwargs)
    if kwargs:
        kwargs = {k: value_of(v) for k, v in kwargs.items()}
        out = compute(*raw_args, **kwargs)
    else:
        kwargs = None
        out = compute(*raw_args)
    return _finish(key, args, kwargs, out, live_serials(tapes), rule)


def _apply_with_tracked_keywords(key, compute, args, kwargs, rule):
    """A differentiated value passed by keyword: record the call with it in its position.

    Rules return cotangents for positional arguments only, so the arguments are bound to the
    rule's own parameters (which mirror the primitive's), with the rule's defaults filling
    any gap: ``np.clip(x, a_max=m)`` is recorded as ``(x, None, m)``.
    """
    rule = rule or _rule(key)
    if rule is not None and rule.custom is not None:
        return call_custom(key, rule, args, kwargs)
    out = compute(*value_of(args), **value_of(kwargs))
    if rule is None or rule.vjp is None:  # _finish returns a plain value or explains the error
        _, _, tapes = _scan((*args, *kwargs.values()))
        return _finish(key, args, kwargs, out, live_serials(tapes), rule)
    bound = _rule_parameters(rule.vjp).bind(*args, **kwargs)
    bound.apply_defaults()
    if _any_tracked(bound.kwargs.values()):
        raise NonDifferentiableError(
            f"{user_location()}: {describe(key)} got a value being differentiated as a "
            f"keyword-only argument, which its derivative rule cannot return a cotangent for; "
            f"{KEYWORD_ONLY_ADVICE}."
        )
    recorded, _, tapes = _scan(bound.args)
    return _finish(key, recorded, value_of(bound.kwargs), out, live_serials(tapes), rule)


def apply_method(descriptor: Any, name: str, function: Any, self: Any, args: tuple, kwargs: dict):
    """``self.<name>(*args, **kwargs)`` under the rule of ``np.ndarray.<name>`` or ``np.<name>``."""
    compute = _method_caller(name)
    out = kwargs.get("out")
    if (
        out is not None
        and function is not None
        and (name in _OUT_FOLLOWED or _contains_tape_value((out,)))
    ):
        # x.sum(axis=0, out=s) is np.sum(x, axis=0, out=s): the write into s is followed (s
        # a tape value, or a plain array the function made) or refused; the method wrote
        # the plain values into s, whose derivative nothing recorded (zero). y.round(out=y)
        # too: y then holds the rounded values, a constant, not what it held before
        return _call_with_out(function, (self, *args), kwargs)
    if _rule(descriptor) is None and function is not None and _rule(function) is not None:
        if name in _PACKED_VARARGS and len(args) > 1:
            args = (args,)
        return apply_rule(function, compute, (self, *args), kwargs)
    return apply_rule(descriptor, compute, (self, *args), kwargs)


def apply_attribute(descriptor: Any, name: str, function: Any, self: Any) -> Any:
    """An attribute such as ``x.T`` under the rule of its descriptor (or of ``function``)."""
    key = descriptor if _rule(descriptor) is not None or _rule(function) is None else function
    return apply_rule(key, _attribute_getter(name, function), (self,))


# methods whose out= is followed (or refused) as np.<name>(..., out=) is; the others' results
# (round, argmax, all ...) have no derivative, and a plain array taking them needs none
_OUT_FOLLOWED = frozenset(
    {"sum", "mean", "prod", "max", "min", "std", "var", "cumsum", "cumprod", "dot", "clip"}
    | {"take", "trace", "compress"}
)


def _method_caller(name: str):
    def call(self, *args, **kwargs):
        if not isinstance(self, (np.ndarray, np.generic)):
            self = np.asarray(self)
        return getattr(self, name)(*args, **kwargs)

    return call


def _attribute_getter(name: str, function: Any):
    def get(self):
        if isinstance(self, (np.ndarray, np.generic)):
            return getattr(self, name)
        return function(self)

    return get


def _finish(key, args, kwargs, out, serials, rule=None):
    """Wrap and record a computed result (see :func:`apply_rule`)."""
    if rule is None:
        rule = _rule(key)
    if rule is not None and not rule.differentiable:
        return _blank(out) if key in _BLANK_LIKE else out
    if not serials:
        return out if rule is None else _wrap(out, ())
    if _has_no_derivative(out):  # integer and boolean results are piecewise constant
        return out
    if rule is None:
        raise _no_rule_error(key)
    if rule.vjp is None:
        raise _no_rule_error(key, "has a forward-mode (JVP) rule but no reverse-mode (VJP) rule")
    unknown = keywords_without_derivative(rule, kwargs)
    if unknown:
        raise NonDifferentiableError(
            f"{user_location()}: {describe(key)} has no derivative with the keyword "
            f"{unknown[0]}=; compute it without that keyword (np.where(mask, x, 0) for a "
            "where= mask, say), or wrap the value in s2sgrad.stop_gradient(...) if it needs none."
        )
    kind = type(out)
    if kind not in _PLAIN:
        _refuse_foreign_arrays(key, args, out)  # a foreign argument gives a foreign result
    if not rule.complex:
        _refuse_complex(key, args, out)
    _refuse_silent_zeros(key, rule, args)
    out = _wrap(out, serials)
    entry = (rule, _held(args), _held_keywords(kwargs), _as_recorded(out))
    for serial in serials:
        RECORDING[serial]._entries.append(entry)
    return out


def _refuse_silent_zeros(key: Any, rule: Rule, args: tuple) -> None:
    """A value being differentiated in a position its rule gives no derivative, where no
    ``zero_by_design`` declaration says the zero is right: refuse it where the user's code
    does it, rather than give it a silent zero."""
    for index, advice in rule.refused.items():  # declared with registry.refused_argument
        value = args[index] if index < len(args) else None
        if isinstance(value, TapeValue) and np.result_type(value._value).kind in "fc":
            raise NonDifferentiableError(f"{user_location()}: {advice}")
    for index in silent_zero_positions(key, rule):
        value = args[index] if index < len(args) else None
        if isinstance(value, TapeValue) and np.result_type(value._value).kind in "fc":
            raise NonDifferentiableError(
                f"{user_location()}: {describe(key)} has no derivative in its argument "
                f"'{parameter_name(rule.vjp, index)}', which is given a value being "
                "differentiated; compute that part with functions that have derivatives, or "
                "wrap the value in s2sgrad.stop_gradient(...) if it needs none."
            )


def _refuse_foreign_arrays(key: Any, args: tuple, out: Any) -> None:
    """A recorded operation that meets an array of a type s2sgrad does not understand
    (``np.matrix``, a masked array, a duck array) would be differentiated with the rule of
    plain arrays: wrong. Refuse it where the user's code does it."""
    for value in (out, *args):
        if type(value) in _PLAIN:
            continue
        if not is_foreign_array(value):
            continue
        kind = f"{type(value).__module__}.{type(value).__qualname__}"
        error = UnsupportedError(
            f"{user_location()}: {describe(key)} of a value being differentiated meets a "
            f"{kind}, an array type s2sgrad does not differentiate (np.matrix's * is a "
            "matrix product, a masked array hides elements); convert it with np.asarray "
            "first (and apply a mask with np.where)"
        )
        error.tape_cannot_either = True
        raise error


def _refuse_complex(key: Any, args: tuple, out: Any) -> None:
    """Refuse a recorded operation whose rule is not declared right for complex values
    (docs/complex.md) when a complex value goes in or comes out."""
    values = (*out, *args) if type(out) is tuple else (out, *args)
    for value in values:
        inner = value if type(value) in (list, tuple) else (value,)
        if any(is_complex(v) for v in inner):
            error = UnsupportedError(
                f"{user_location()}: {describe(key)} meets a complex value, and its derivative "
                "rule is not known to be right for complex numbers; write this step with the "
                "real and imaginary parts (np.real, np.imag) as float arrays"
            )
            error.tape_cannot_either = True
            raise error


_PLAIN = frozenset({np.ndarray, float, int, np.float64, np.float32, tuple, list, TapeValue})


def _held(args: tuple) -> tuple:
    """The arguments as a recorded operation keeps them for the backward pass: plain arrays
    copied, since the code may change them in place afterwards (``t[:] = 0``, ``t.fill(2)``,
    ``np.copyto(t, v)``, ``t *= 2``, a view of ``t`` written), while the derivative needs the
    value this operation saw. Tape values are kept as they are: their arrays never change.

    Example::

        _held((x, t))  # (x, a copy of t) for a tape value x and an ndarray t
    """
    for a in args:
        kind = type(a)
        if kind is np.ndarray or kind is list or kind is tuple:
            return tuple(_held_value(a) for a in args)
    return args


def _held_value(a: Any) -> Any:
    kind = type(a)
    if kind is np.ndarray:
        return a.copy()
    if (kind is list or kind is tuple) and any(type(b) in (np.ndarray, list, tuple) for b in a):
        return kind(_held_value(b) for b in a)
    return a


def _held_keywords(kwargs: dict | None) -> dict | None:
    if not kwargs:
        return kwargs
    return {k: _held_value(v) for k, v in kwargs.items()}


def _write_through_views(
    frame: Any, target: TapeValue, index: Any, value: Any, helper: bool, forced: bool = False
) -> bool:
    """``target[index] = value`` followed through the views the user's frames hold (see
    :mod:`s2sgrad.tape.view_writes`); in a helper, refused for an argument of the
    differentiated function that it would change. ``forced``: where it cannot be followed,
    written into ``target`` alone, any view of its old array then refused when read."""

    if _in_generated_code(frame):  # s2sgrad's derivative code on the tape: as before,
        if forced:  # refused, and mode "auto" has the tape record the user's code instead
            _write_item(target, index, value)
        return forced

    def check(changed: TapeValue) -> None:
        if helper:
            refuse_changing_an_input(changed, frame, _SKIPPED_DIRS)

    depth = numpy_semantics_depth()
    if write_through_views(frame, target, index, value, _write_item, _SKIPPED_DIRS, depth, check):
        return True
    if forced:
        refuse_shared_memory(target, frame, _SKIPPED_DIRS)  # a plain array, a Variable
        old = target._value
        _write_item(target, index, value)
        supersede(old, depth)
    return forced


def _refuse_stale(value: Any) -> None:
    """Refuse reading a view the tape did not find when it followed a write through another
    view of the same array (see :mod:`s2sgrad.tape.view_writes`)."""
    if is_stale(value):
        error = UnsupportedError(
            f"{user_location()}: a view of an array is read after the array changed through "
            "another view, and the tape, following that change, could not see this view "
            "(kept on a loop's iterator, in a deque or deep in containers), so it holds the "
            "old values; read it from the array again after the change, or take a copy "
            f"(.copy()) before it, or {USE_S2S}."
        )
        error.tape_cannot_either = True
        raise error


def _write_item(target: TapeValue, index: Any, value: Any) -> None:
    """Record ``target[index] = value`` as ``target = with_item(old, index, value)``, where
    ``old`` is a new tape value holding what ``target`` held; ``target`` stays the object
    later steps refer to (:func:`s2sgrad.tape.writes.versions_apart` tells them apart)."""
    old = TapeValue(target._value, target._tapes)
    if value is target:  # t[...] = t reads the value before the write
        value = old
    new = apply_rule(with_item, with_item, (old, value_of(index), value))
    if type(new) is not TapeValue:  # an integer array: no derivative to record
        target._value, target._tapes = new, ()
        return
    for serial in live_serials(new._tapes):
        entries = RECORDING[serial]._entries
        if entries and entries[-1][3] is new:
            rule, args, kwargs, _ = entries[-1]
            entries[-1] = (rule, args, kwargs, target)
    target._value, target._tapes = new._value, new._tapes


# What a write of a differentiated value into a plain array is told: under a function
# transform the tape follows writes into arrays made from values it records; inside the
# user's GradientTape tape values are immutable (as TensorFlow's tensors), so np.zeros_like
# of one is a plain array too and only building the array anew works.
_WRITE_ADVICE = (
    "the tape follows writes only into arrays made from values it records. Make the array "
    "with np.zeros_like(x, shape=...) (or np.empty_like, x.copy()) from a value x being "
    f"differentiated, build it with np.stack, np.concatenate or np.where, or {USE_S2S}."
)
_IMMUTABLE_ADVICE = (
    "inside a GradientTape values are immutable, as TensorFlow's tensors are, and an array "
    "made with np.zeros_like is a plain one too. Build the array with np.stack, "
    "np.concatenate or np.where, or compute it in a function differentiated with sg.grad, "
    "which follows such writes."
)

# Functions that make an array of the shape of their argument without reading its values:
# on the tape, under a function transform, they return a tape value tracked by no tape, so
# that items written into it later are recorded (``new = np.empty_like(u); new[0] = u[0]``).
_BLANK_LIKE = frozenset({np.zeros_like, np.ones_like, np.empty_like})


def _piecewise(x: Any, condlist: Any, funclist: list, *args: Any, **kw: Any) -> Any:
    """``np.piecewise`` of a tape value: each piece's function applied to its values and
    written into zeros the tape follows (``runtime/piecewise.py``)."""
    zeros = TapeValue(np.zeros_like(value_of(x)), ())
    return pieces_into(zeros, x, condlist, funclist, args, kw)


def _blank(out: Any) -> Any:
    """A result of one of ``_BLANK_LIKE``: a tape value where the user's code may write into
    it, else the plain array."""
    if type(out) is not np.ndarray or not under_numpy_semantics():
        return out
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_TAPE_OR_NUMPY):
        frame = frame.f_back
    if frame is None or frame.f_code.co_filename.startswith(_SKIPPED_DIRS):
        return out  # a rule or helper of s2sgrad's: it writes plain arrays
    return TapeValue(out, ())


def record_copy(x: Any) -> TapeValue:
    """A new tape value equal to ``x``, linked to it on every recording tape that tracks it.

    Used where one value must become two distinct sources (an argument passed twice).

    Example::

        y = record_copy(x)  # y is not x, and gradients reaching y flow on to x
    """
    return apply_rule(record_copy, _same, (x,), None, IDENTITY)


def _same(x: Any) -> Any:
    return x


def _copy_of(x: TapeValue) -> TapeValue:
    """``copy.copy(x)`` / ``copy.deepcopy(x)``: a copy recorded as :func:`record_copy` is, but
    of an array in memory of its own, as NumPy's is (sharing it, a later ``q *= 3`` the tape
    follows through memory changed ``x`` too)."""
    return apply_rule(record_copy, _copied, (x,), None, IDENTITY)


def _copied(x: Any) -> Any:
    return x.copy() if isinstance(x, np.ndarray) else x


_NUMERIC = (np.ndarray, np.generic, float, int, complex)


def _wrap(out: Any, serials: tuple) -> Any:
    """Tape values for the numbers and arrays in a result (containers element by element)."""
    if isinstance(out, _NUMERIC):
        return TapeValue(out, serials)
    if isinstance(out, tuple):
        items = [_wrap(o, serials) for o in out]
        return tuple(items) if type(out) is tuple else type(out)(*items)
    if isinstance(out, list):
        items = [_wrap(o, serials) for o in out]
        return CotangentList(items) if type(out) is CotangentList else items
    if isinstance(out, dict):
        entries = {k: _wrap(v, serials) for k, v in out.items()}
        return CotangentDict(entries) if type(out) is CotangentDict else entries
    return out


def _as_recorded(out: Any) -> Any:
    """What the recording keeps of a result: its lists and dicts copied (the tape values in
    them are the same), since the code may replace their entries afterwards (generated
    code writes ``dstate[0] = ...`` into the list a rule returned), and the backward pass
    must find the cotangents of the entries the rule made."""
    if type(out) in SEQUENCES:
        return type(out)(_as_recorded(o) for o in out)
    if type(out) in DICTS:
        return type(out)((k, _as_recorded(v)) for k, v in out.items())
    return out


def _has_no_derivative(out: Any) -> bool:
    """Boolean and integer results have no derivative even without a rule saying so."""
    if isinstance(out, (tuple, list)):
        return all(_has_no_derivative(o) for o in out)
    if isinstance(out, (np.ndarray, np.generic)):
        return out.dtype.kind in "biu"
    return isinstance(out, int)


def _merge(a: tuple, b: tuple) -> tuple:
    return a + tuple(s for s in b if s not in a)


def _scan(args: tuple) -> tuple[tuple, list, tuple]:
    """Split arguments into (as recorded, plain values, serials of the tapes tracking any).

    Variables are read here: on a recording tape a read is a copy of the Variable's value at
    this moment (so a later ``assign`` does not change what was recorded).
    """
    raw = []
    tapes: tuple = ()
    recorded = None
    for i, a in enumerate(args):
        t = type(a)
        if t is TapeValue:
            if STALE:
                _refuse_stale(a._value)
            raw.append(a._value)
            s = a._tapes
        elif isinstance(a, TapeValue):  # a Variable
            read, value, s = a._read()
            raw.append(value)
            recorded = recorded or list(args)
            recorded[i] = read
        elif t in _CONTAINERS or (isinstance(a, tuple) and hasattr(a, "_fields")):
            if not _contains_tape_value(_items(a)):
                raw.append(a)
                continue
            inner, inner_raw, s = _scan(tuple(_items(a)))
            raw.append(_rebuilt(a, inner_raw))
            recorded = recorded or list(args)
            recorded[i] = _rebuilt(a, inner)
        else:
            if t is np.ndarray:
                if a.dtype.kind == "O":
                    _refuse_tape_values_in_objects(a)
                if STALE:
                    _refuse_stale(a)
            raw.append(a)
            continue
        if s and s is not tapes:
            tapes = _merge(tapes, s) if tapes else s
    return (args if recorded is None else tuple(recorded)), raw, tapes


def _refuse_tape_values_in_objects(array: np.ndarray) -> None:
    """An array of Python objects holding values being differentiated (``o = np.empty(2,
    dtype=object); o[0] = x``) passed to a NumPy operation with another one: NumPy would
    read its entries as plain objects, their derivatives dropped. Refuse it there."""
    if any(isinstance(v, TapeValue) for v in array.flat):
        raise NonDifferentiableError(
            f"{user_location()}: an array of dtype object holds values being differentiated, "
            "and NumPy operations on it would drop their derivatives; keep the values in a "
            "list, or join them into a float array with np.stack([...]) or np.array([...])"
        )


def _contains_tape_value(items) -> bool:
    for a in items:
        if isinstance(a, TapeValue) or (_is_container(a) and _contains_tape_value(_items(a))):
            return True
    return False


# the sequences and dicts whose tape values count as arguments' and results': generated
# code's cotangent containers too
SEQUENCES = (list, tuple, CotangentList)
DICTS = (dict, CotangentDict)
# Runtime helpers whose code handles a tuple or list entry by entry, calling themselves:
# recorded on one, each entry's call is recorded, with the rule for one array
# (``unbroadcast`` of the tuple of cotangents a ``*args`` gradient hands back, whose rule's
# ``np.shape`` of a tuple of arrays of different shapes raised NumPy's inhomogeneous-shape
# error; ``tape/runtime_calls.py`` and ``tape/backward.py`` read it)
ENTRYWISE_HELPERS = frozenset({"unbroadcast"})
_CONTAINERS = frozenset(SEQUENCES + DICTS)


def _is_container(a: Any) -> bool:
    """A list, tuple, named tuple or dict of arguments (whose tape values are recorded)."""
    return type(a) in _CONTAINERS or (isinstance(a, tuple) and hasattr(a, "_fields"))


def _items(container: Any):
    return container.values() if type(container) in DICTS else container


def _rebuilt(like: Any, items: Sequence) -> Any:
    if type(like) in DICTS:
        return type(like)(zip(like, items))
    return type(like)(*items) if hasattr(like, "_fields") else type(like)(items)


def _any_tracked(values) -> bool:
    """Whether a recording tape tracks one of ``values`` (a Variable counts while any tape
    records, since reading it may start the watching)."""
    for v in values:
        if isinstance(v, TapeValue):
            if live_serials(v._tapes) or (type(v) is not TapeValue and RECORDING):
                return True
        elif _is_container(v) and _any_tracked(_items(v)):
            return True
    return False


_SIGNATURES: dict[Any, inspect.Signature] = {}


def _rule_parameters(vjp: Any) -> inspect.Signature:
    """The signature of a VJP rule without ``g`` and ``ans``: the primitive's parameters."""
    signature = _SIGNATURES.get(vjp)
    if signature is None:
        full = inspect.signature(vjp)
        parameters = list(full.parameters.values())[2:]
        signature = _SIGNATURES[vjp] = full.replace(parameters=parameters)
    return signature


def _call_with_out(primitive: Any, args: tuple, kwargs: dict) -> Any:
    """``out=`` writes into an existing array: into a tape value, the item write
    ``out[...] = primitive(...)``; into a plain array, allowed only when nothing is
    differentiated."""
    out = kwargs.get("out")
    single = out[0] if isinstance(out, tuple) and len(out) == 1 else out
    if (
        type(single) is TapeValue
        and under_numpy_semantics()
        and not {"where", "casting", "dtype"} & kwargs.keys()
    ):
        rest = {k: v for k, v in kwargs.items() if k != "out"}
        single._method_write(Ellipsis, apply_rule(primitive, primitive, args, rest))
        return out
    if _any_tracked(args) or _any_tracked(kwargs.values()):
        frame = _user_frame()
        symbol = _in_place_operator(frame)
        taken = _taken_over_plain(single, frame) if symbol is None else None  # np.f(..., t)
        if taken is not None and not {"where", "casting", "dtype"} & kwargs.keys():
            rest = {k: v for k, v in kwargs.items() if k != "out"}
            taken[...] = apply_rule(primitive, primitive, args, rest)
            return (taken,) if isinstance(out, tuple) else taken
        if symbol is not None and _takes_the_result(frame, single):
            # a[i] += v: Python stores what the operator returns with a[i] = ..., which the
            # tape follows; the view a[i] itself is dropped, so nothing else sees it change.
            # y += v of an array y the function made and nothing else shares: y is bound to
            # what the operator returns
            rest = {k: v for k, v in kwargs.items() if k != "out"}
            return apply_rule(primitive, primitive, args, rest)
        if symbol is not None:  # a plain array updated with a value being differentiated
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            target = line.split(symbol)[0].strip() if symbol in line else "a"
            error = NonDifferentiableError(
                f"{where(*_shown_position(frame))}: '{line or f'a {symbol} ...'}' updates a "
                "plain array in place with a value being differentiated, which the tape cannot "
                f"record. Write '{target} = {target} {symbol[:-1]} ...' to make a new array, "
                "make the array with np.zeros_like(x, shape=...) from a value x being "
                f"differentiated (the tape follows writes into it), or {USE_S2S}."
            )
            # s2sgrad's own code on the tape (a derivative differentiated again): mode "auto"
            # has the tape record the user's code instead
            error.in_generated_code = origin_of(frame.f_code.co_filename) is not None
            raise error
        raise NonDifferentiableError(
            f"{where(*_shown_position(frame))}: {describe(primitive)}(..., out=...) writes in "
            "place, which cannot be differentiated; drop out= and use the returned value."
        )
    if _contains_tape_value(kwargs.get("out") or ()):
        raise ImmutableValueError(
            f"{user_location()}: tape values are immutable; out= cannot be one."
        )
    return primitive(*value_of(args), **value_of(kwargs))


def _copy_into(dst: Any, src: Any, casting: Any = "same_kind", *mask: Any, **keywords) -> None:
    """``np.copyto(dst, src)``: into a tape value, the item write ``dst[...] = src``; into a
    plain array, allowed only when nothing is differentiated."""
    selected = keywords.get("where", mask[0] if mask else True)
    if type(dst) is TapeValue and selected is True and under_numpy_semantics():
        dst._method_write(Ellipsis, src)
        return
    if not _any_tracked((dst, src, selected)):
        np.copyto(value_of(dst), value_of(src), casting=casting, where=value_of(selected))
        return
    frame = _user_frame()
    taken = _taken_over_plain(dst, frame) if selected is True else None
    if taken is not None:
        taken[...] = src
        return
    if _inside_numpy_full():
        what = (
            "np.full(shape, c) makes a plain array out of c, so the derivative of a c being "
            "differentiated would be lost on the tape (NumPy does not let the tape make that "
            "array). Write c * np.ones(shape) or np.broadcast_to(c, shape) instead"
        )
    else:
        what = (
            "np.copyto writes a value being differentiated into a plain array, which the "
            "tape cannot follow. Write 'a[...] = v' into an array made from a value being "
            "differentiated (np.zeros_like(x, shape=...)), or build a new array"
        )
    raise NonDifferentiableError(f"{where(*_shown_position(frame))}: {what}, or {USE_S2S}.")


def _put_mask(a: Any, mask: Any, values: Any) -> None:
    """``np.putmask(a, mask, values)``: into a tape value, the item write ``a[...] =
    np.where(mask, np.resize(values, np.shape(a)), a)`` (NumPy cycles ``values`` over
    ``a``'s flat positions); into a plain array, allowed only when nothing is
    differentiated."""
    if type(a) is TapeValue and under_numpy_semantics():
        a._method_write(Ellipsis, np.where(mask, np.resize(values, np.shape(a)), a))
        return
    if not _any_tracked((a, mask, values)):
        np.putmask(value_of(a), value_of(mask), value_of(values))
        return
    frame = _user_frame()
    taken = _taken_over_plain(a, frame)
    if taken is not None:
        taken[...] = np.where(mask, np.resize(values, np.shape(a)), taken)
        return
    raise NonDifferentiableError(
        f"{where(*_shown_position(frame))}: np.putmask writes a value being differentiated "
        "into a plain array, which the tape cannot follow. Write "
        "'a[...] = np.where(mask, v, a)' into an array made from a value being "
        f"differentiated, or build a new array, or {USE_S2S}."
    )


def _put(a: Any, indices: Any, values: Any, mode: str = "raise") -> None:
    """``np.put(a, indices, values)``: into a tape value, its ``put``; into a plain array
    the function made, the array taken over first; else allowed only when nothing is
    differentiated."""
    if type(a) is TapeValue:
        a.put(indices, values, mode=mode)
        return
    if not _any_tracked((a, indices, values)):
        np.put(value_of(a), value_of(indices), value_of(values), mode=mode)  # type: ignore[arg-type]
        return
    frame = _user_frame()
    taken = _taken_over_plain(a, frame)
    if taken is not None:
        taken.put(indices, values, mode=mode)
        return
    raise NonDifferentiableError(
        f"{where(*_shown_position(frame))}: np.put writes a value being differentiated into "
        "a plain array, which the tape cannot follow. Write 'a[indices] = v' into an array "
        f"made from a value being differentiated, or build a new array, or {USE_S2S}."
    )


def _fill_diagonal(a: Any, val: Any, wrap: bool = False) -> None:
    """``np.fill_diagonal(a, v)``: into a tape value, the item write ``a[index] = v`` of
    the diagonal's index; into a plain array, allowed only when nothing is differentiated."""
    from s2sgrad.runtime.ufunc_methods import diagonal_index

    if type(a) is TapeValue and under_numpy_semantics():
        a._method_write(diagonal_index(a, wrap), val)
        return
    if not _any_tracked((a, val)):
        np.fill_diagonal(value_of(a), value_of(val), wrap=wrap)
        return
    raise NonDifferentiableError(
        f"{user_location()}: np.fill_diagonal writes a value being differentiated into a "
        "plain array, which the tape cannot follow. Write into an array made from a value "
        "being differentiated (np.zeros_like(x)), or build a new array"
    )


def _put_along_axis(arr: Any, indices: Any, values: Any, axis: Any) -> None:
    """``np.put_along_axis(a, i, v, axis)``: into a tape value, the item write
    ``a[index] = v`` of the positions it names; into a plain array, allowed only when
    nothing is differentiated."""
    from s2sgrad.runtime.ufunc_methods import along_axis_index

    if type(arr) is TapeValue and under_numpy_semantics():
        arr._method_write(along_axis_index(arr, value_of(indices), axis), values)
        return
    if not _any_tracked((arr, values)):
        np.put_along_axis(value_of(arr), value_of(indices), value_of(values), axis)
        return
    raise NonDifferentiableError(
        f"{user_location()}: np.put_along_axis writes a value being differentiated into a "
        "plain array, which the tape cannot follow. Write into an array made from a value "
        "being differentiated (np.zeros_like(x)), or build a new array"
    )


def _refuse_writing_through_a_view(target: TapeValue, what: str) -> None:
    """A library call writing into ``target`` in place: refused when ``target`` is a view of
    another array (``np.copyto(W[0], v)``), whose change NumPy makes and the tape, writing
    a new version of ``target`` alone, would not."""
    if getattr(target._value, "base", None) is not None:
        raise NonDifferentiableError(
            f"{user_location()}: {what} into a view of an array (a slice, a reshape) writes "
            "through to the array it views, which the tape cannot follow; write into the "
            "array itself with an index (W[0] = v, W[i, i] = v), or build a new array, or "
            f"{USE_S2S}."
        )


def _call_at(primitive: Any, inputs: tuple) -> Any:
    """``ufunc.at(a, indices, b)`` writes into ``a``. Into a tape value, the item write
    ``a[...] = added_at(a, indices, ±b)`` for ``np.add``/``np.subtract``, and
    ``a[indices] = ufunc(a[indices], b)`` for another ufunc with a rule (indices picking each
    element once); into a plain array, allowed only when nothing is differentiated."""
    ufunc = primitive.__self__
    if type(inputs[0]) is TapeValue and under_numpy_semantics():
        _refuse_writing_through_a_view(inputs[0], describe(primitive))
    if type(inputs[0]) is TapeValue and under_numpy_semantics() and _written_at(ufunc, inputs):
        return None
    taken = _taken_over_for_at(ufunc, inputs)
    if taken is not None and _written_at(ufunc, (taken, *inputs[1:])):
        return None
    if _any_tracked(inputs):
        raise NonDifferentiableError(
            f"{user_location()}: {describe(primitive)} writes into its first argument in place, "
            "which the tape records only into an array made from a value being differentiated "
            f"(np.zeros_like(x), x * 1.0) and for a ufunc with a derivative rule; write into "
            f"such an array, {USE_S2S}, or build a new array."
        )
    if isinstance(inputs[0], TapeValue):
        raise ImmutableValueError(
            f"{user_location()}: tape values are immutable; {describe(primitive)} "
            "cannot write into one."
        )
    return primitive(*value_of(inputs))


def _taken_over_for_at(ufunc: np.ufunc, inputs: tuple) -> TapeValue | None:
    """``np.add.at(y, index, v)`` with ``v`` differentiated, into a plain array ``y`` that the
    running function made itself (``y = np.zeros(n)``) and no other name shares (see
    :func:`s2sgrad.tape.in_place.plain_array_write`): ``y`` bound to a tape value holding
    its items, which the write then goes into; the plain array nothing reads any more."""
    array = inputs[0]
    if ufunc not in (np.add, np.subtract) or len(inputs) != 3 or type(array) is not np.ndarray:
        return None
    if not under_numpy_semantics() or not _any_tracked(inputs[1:]):
        return None
    return _taken_over_plain(array, _user_frame())


def _taken_over_plain(array: Any, frame: Any) -> TapeValue | None:
    """A plain array that the running function made itself (``y = np.zeros(n)``) and no
    other name shares, written into by the line ``frame`` runs (``np.exp(x, out=y)``,
    ``np.copyto(y, v)``, ``np.putmask(y, m, v)``; see
    :func:`s2sgrad.tape.in_place.plain_array_write`): ``y`` bound to a tape value holding its
    items, which the write then goes into; None where the write does not qualify."""
    if type(array) is not np.ndarray or frame is None or not under_numpy_semantics():
        return None
    found = plain_array_write(frame)
    if found is None or found[1] is not None or frame.f_locals.get(found[0]) is not array:
        return None
    holders = 0
    for _, _, held in held_values(frame, _SKIPPED_DIRS):
        holders += held is array
        other = getattr(held, "_value", held)
        if holders > 1 or (other is not array and _shares_memory(other, array)):
            return None  # a view of it, or it in a list: NumPy would change what they see
    taken = TapeValue(array.copy(), ())
    _bind_local(frame, found[0], taken)
    supersede(array, numpy_semantics_depth())  # a view held where the walk does not look
    return taken


def _in_generated_code(frame: Any) -> bool:
    """Whether ``frame`` runs code s2sgrad generated (a derivative differentiated again)."""
    return frame is not None and origin_of(frame.f_code.co_filename) is not None


def _is_view(value: Any) -> bool:
    """Whether ``value`` is a NumPy array reading another's memory."""
    return type(value) is np.ndarray and value.base is not None


def _shares_memory(value: Any, array: np.ndarray) -> bool:
    return type(value) is np.ndarray and np.may_share_memory(value, array)


def _written_at(ufunc: np.ufunc, inputs: tuple) -> bool:
    """Do ``ufunc.at(*inputs)`` on a tape value as an item write; False when it cannot."""
    from s2sgrad.runtime import added_at
    from s2sgrad.runtime.ufunc_methods import unique_index

    a, index, *rest = inputs
    if ufunc in (np.add, np.subtract) and len(rest) == 1:
        values = rest[0] if ufunc is np.add else np.negative(rest[0])
        a[...] = apply(added_at, a, index, values)
        return True
    rule = _rule(ufunc)
    if rule is None or not rule.differentiable or len(rest) != ufunc.nin - 1:
        return False
    a[index] = ufunc(a[apply(unique_index, a, index)], *rest)
    return True


# calls with a custom derivative ----------------------------------------------------------


def is_recorded(args: tuple, kwargs: dict | None = None) -> bool:
    """Whether a recording tape tracks a value among ``args`` and ``kwargs`` (or inside them).

    A Variable counts while any tape records, since reading it may start the watching.

    Example::

        is_recorded((np.ones(2),))  # False
    """
    if not RECORDING:
        return False
    return _any_tracked(args) or bool(kwargs) and _any_tracked((kwargs or {}).values())


def call_custom(primitive: Any, rule: Rule, args: tuple, kwargs: dict | None = None) -> Any:
    """Call ``primitive`` through its custom derivative and record the pullback.

    Tape values passed by keyword are moved to their positions first (the pullback
    returns cotangents for positional arguments).

    Example::

        y = call_custom(my_exp, get_rule(my_exp), (x,), {})
    """
    kwargs = dict(kwargs or {})
    if kwargs and _any_tracked(kwargs.values()):
        args, kwargs = _positional(primitive, args, kwargs)
        if _any_tracked(kwargs.values()):
            raise NonDifferentiableError(
                f"{user_location()}: {getattr(primitive, '__qualname__', primitive)} got a "
                "value being differentiated as a keyword-only argument, which its custom "
                "derivative cannot return a cotangent for; pass it positionally."
            )
    recorded, raw, tapes = _scan(tuple(args))
    plain_kwargs = value_of(kwargs)
    draws = DrawsAtStart(raw)
    token = CALLED_BY_TAPE.set(True)
    try:
        value, pullback = rule.part("custom")(*raw, **plain_kwargs)
    finally:
        CALLED_BY_TAPE.reset(token)
    serials = live_serials(tapes)
    if not serials:
        return value
    out = _wrap(value, serials)
    call = CustomCall(rule, pullback, plain_kwargs, draws, tuple(args))
    entry = (CUSTOM, (call, *recorded), None, out)
    for serial in serials:
        RECORDING[serial]._entries.append(entry)
    return out


def _refuse_read_only(value: Any, message: str) -> None:
    """NumPy's own error for a write into a read-only array (an argument the caller made
    read-only, ``np.broadcast_to``'s result), which the tape's new version of the value
    would otherwise hide."""
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        raise ValueError(message)


def _positional(primitive: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Bind ``args`` and ``kwargs`` to ``primitive``'s parameters, positionally where possible."""
    try:
        bound = numpy_signatures.signature(primitive).bind(*args, **kwargs)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{getattr(primitive, '__name__', primitive)}: {error}") from None
    return bound.args, bound.kwargs


# Error messages ----------------------------------------------------------------------------


_ARRAY_INTERFACES = frozenset({"__array_interface__", "__array_struct__"})


def _refuse_interface_read(name: str, frame: FrameType) -> None:
    """``self.a.__array_interface__`` in the user's class, read of a value being
    differentiated (``np.asarray(Wrapper(x))``): NumPy, missing it, would make an object
    array of the wrapper (a TypeError later), and a plain array would drop the derivative;
    refused at that line. A lookup by NumPy itself (converting the tape value, which comes
    to ``__array__`` next) is left to it: the code calling NumPy does not name ``name``."""
    if name not in frame.f_code.co_names or frame.f_code.co_filename.startswith(_SKIPPED_DIRS):
        return
    error = NonDifferentiableError(
        f"{where(frame.f_code.co_filename, frame.f_lineno)}: .{name} of a value being "
        "differentiated hands NumPy its memory, a plain array that would drop its derivative "
        "on the tape. Compute with the value itself (not an object wrapping it for NumPy), "
        f"or {USE_S2S}."
    )
    note_refusal(error, frame)
    raise error


class TapeAttributeError(NonDifferentiableError, AttributeError):
    """An ndarray attribute a tape value does not have (``hasattr`` sees it as missing)."""


_NUMPY = os.path.dirname(np.__file__) + os.sep
_TAPE_OR_NUMPY = (os.path.dirname(__file__) + os.sep, os.path.dirname(np.__file__) + os.sep)
_SKIPPED_DIRS = (
    os.path.dirname(os.path.dirname(__file__)) + os.sep,  # s2sgrad's own files
    os.path.dirname(np.__file__) + os.sep,
    os.path.dirname(inspect.__file__) + os.sep + "contextlib.py",
)


def user_location() -> str:
    """``file:line`` of the innermost stack frame outside s2sgrad and NumPy.

    Example::

        user_location()  # 'model.py:12'
    """
    return where(*_shown_position(_user_frame()))


def _joined_by_index_trick(value: TapeValue) -> bool:
    """Whether ``np.r_[...]`` / ``np.c_[...]`` is making an array of ``value`` itself, one
    of its items (not of a list holding it, whose array would not keep it)."""
    frame = sys._getframe(2)
    code = frame.f_code
    return (
        code.co_name == "__getitem__"
        and "index_tricks" in code.co_filename
        and frame.f_locals.get("item") is value
    )


def _inside_index_concatenation() -> bool:
    """Whether NumPy's ``np.r_[...]`` / ``np.c_[...]`` is running below the user's code."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIPPED_DIRS):
        code = frame.f_code
        if code.co_name == "__getitem__" and "index_tricks" in code.co_filename:
            return True
        frame = frame.f_back
    return False


# (frame, instruction) of the last item store whose array the tape took over -> the tape
# value it made and the value written
_TAKEN_OVER: dict[tuple[int, int], Any] = {}


def _take_over_written_array(frame: Any, value: TapeValue) -> bool:
    """``y[index] = value`` running in ``frame`` into a plain array the function made (see
    :func:`s2sgrad.tape.in_place.plain_array_write`): bind ``y`` to a tape value holding the
    array's items with the write recorded, and let NumPy finish writing the plain array,
    which nothing reads any more. False where the write does not qualify."""
    found = plain_array_write(frame)
    if found is None:
        return False
    name, index = found
    array = frame.f_locals[name]
    key = (id(frame), frame.f_lasti)
    if array is _TAKEN_OVER.get(key, (None,))[0]:  # NumPy converting a value once more:
        return value is _TAKEN_OVER[key][1]  # another one is an item of a sequence written
    if type(array) is not np.ndarray:
        return False
    taken = TapeValue(array.copy(), ())
    _write_item(taken, index, value)
    _bind_local(frame, name, taken)
    _TAKEN_OVER.clear()
    _TAKEN_OVER[key] = (taken, value)
    return True


def _bind_local(frame: Any, name: str, value: Any) -> None:
    """Bind the local variable ``name`` of a running frame to ``value``."""
    if sys.version_info >= (3, 13):  # frame.f_locals writes through (PEP 667)
        frame.f_locals[name] = value
        return
    import ctypes  # only here: before 3.13, and only for a write the tape takes over

    frame.f_locals[name] = value
    ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))


# logging formats its message (``msg % args``) only to write it out: a float() asked
# there is text that never comes back
_LOGGING_FILE = logging.__file__


def _inside_numpy_full() -> bool:
    """Whether NumPy's ``np.full`` (or ``np.full_like``) is converting its fill value."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIPPED_DIRS):
        code = frame.f_code
        if code.co_name in ("full", "full_like") and code.co_filename.startswith(_NUMPY):
            return True
        frame = frame.f_back
    return False


def _caller_outside_this_file() -> Any:
    """The innermost frame outside this file: the code that asked a tape value."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame


def _primal_or_none(held: Any) -> Any:
    """The array of a value a frame holds: a tape value's, an array itself, else None."""
    if isinstance(held, TapeValue):
        return held._value
    return held if isinstance(held, np.ndarray) else None


def _user_frame() -> Any:
    """The innermost stack frame outside s2sgrad and NumPy, or None."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIPPED_DIRS):
        frame = frame.f_back
    return frame


def _position(frame: Any) -> tuple:
    """``(filename, line)`` of a frame, or ``(None, None)``. A frame of generated code (the
    source transformer's, running a call on the tape) names the user's function first."""
    if frame is None:
        return (None, None)
    filename = frame.f_code.co_filename
    origin = origin_of(filename)
    if origin is None:
        return (filename, frame.f_lineno)
    statement = statement_origin(filename, frame.f_lineno)  # the user's statement
    if statement is not None and IN_A_DERIVATIVE not in statement:
        origin = statement
    return (f"{origin}{IN_A_DERIVATIVE}{filename}:{frame.f_lineno})", None)


def _shown_position(frame: Any) -> tuple:
    """``(filename, line)`` to name in a message: where the user's code called into an
    installed library (SciPy's ``expm``) when ``frame`` runs inside one, else ``frame``'s."""
    entry = library_entry(frame)
    if entry is not None:
        return _position(entry[1])
    while frame is not None and frame.f_back is not None and _in_standard_library(frame):
        frame = frame.f_back  # statistics.mean converting a value: the user's call is named
    return _position(frame)


_STANDARD_LIBRARY = tuple(
    {os.path.join(sysconfig.get_paths()[key], "") for key in ("stdlib", "platstdlib")}
)


def _in_standard_library(frame: Any) -> bool:
    filename = frame.f_code.co_filename
    return filename.startswith(_STANDARD_LIBRARY) and "site-packages" not in filename


def _instruction(frame: Any) -> tuple[str, int]:
    """The name and argument of the bytecode instruction ``frame`` is running."""
    if frame is None or frame.f_lasti < 0:
        return "", 0
    code = frame.f_code.co_code
    return dis.opname[code[frame.f_lasti]], code[frame.f_lasti + 1]


def _calls_array_dot(frame: Any) -> bool:
    """Whether the line ``frame`` runs loads a method ``dot`` before the call it is in:
    ``X.dot(W)`` of a plain ``X``, which converts a tape value ``W`` with ``__array__``."""
    if frame is None or frame.f_lasti < 0:
        return False
    line = None
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset >= frame.f_lasti:
            return False
        positions = getattr(instruction, "positions", None)  # from Python 3.11
        if positions is not None and positions.lineno is not None:
            line = positions.lineno
        elif type(instruction.starts_line) is int:  # Python 3.10
            line = instruction.starts_line
        if (
            line == frame.f_lineno
            and instruction.opname in ("LOAD_METHOD", "LOAD_ATTR")
            and instruction.argval == "dot"
        ):
            return True
    return False


def _is_storing_an_item(frame: Any) -> bool:
    """Whether the frame is running ``a[i] = value`` (NumPy converts the value to store it)."""
    return _instruction(frame)[0] in ("STORE_SUBSCR", "STORE_SLICE")  # a[1:] = v from 3.12


_MOVES = frozenset({"SWAP", "COPY", "ROT_TWO", "ROT_THREE", "ROT_FOUR", "EXTENDED_ARG"})


def _takes_the_result(frame: Any, out: Any) -> bool:
    """Whether the in-place operator ``frame`` is running may return a new value instead of
    writing into ``out``: it stores its result as an item (``a[i] += v``, ``a[1:] += v``),
    or binds a name the function made a new array with and only updates so, with no other
    name sharing it (:func:`s2sgrad.tape.in_place.plain_array_write`)."""
    store = _next_store(frame)
    if store is None:
        return False
    if store.opname in ("STORE_SUBSCR", "STORE_SLICE"):
        return True
    if store.opname not in ("STORE_FAST", "STORE_NAME"):
        return False
    found = plain_array_write(frame)
    return found == (store.argval, None) and frame.f_locals.get(store.argval) is out


def _next_store(frame: Any) -> dis.Instruction | None:
    """The instruction storing the result of the operator ``frame`` is running."""
    after = False
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset == frame.f_lasti:
            after = True
        elif after and instruction.opname not in _MOVES:
            return instruction if instruction.opname.startswith("STORE_") else None
    return None


def _in_place_operator(frame: Any) -> str | None:
    """``"+="`` (or another in-place operator) if the frame is running one, else None."""
    name, argument = _instruction(frame)
    if name.startswith("INPLACE_"):  # Python 3.10
        return _SYMBOL_OF_OPERATOR.get(name[len("INPLACE_") :], "op=")
    operators = getattr(dis, "_nb_ops", None)  # Python 3.11 and later: BINARY_OP's argument
    if name == "BINARY_OP" and operators and argument < len(operators):
        symbol = operators[argument][1]
        return symbol if symbol.endswith("=") else None
    return None


_SYMBOL_OF_OPERATOR = {
    "ADD": "+=",
    "SUBTRACT": "-=",
    "MULTIPLY": "*=",
    "TRUE_DIVIDE": "/=",
    "FLOOR_DIVIDE": "//=",
    "MODULO": "%=",
    "POWER": "**=",
    "MATRIX_MULTIPLY": "@=",
}


def _no_rule_error(primitive: Any, problem: str = "has no derivative rule") -> Exception:
    name, frame = describe(primitive), _user_frame()
    target = name
    entry = library_entry(frame)  # a library's function calling a ufunc of its own
    if entry is not None:
        target, frame = entry
        name = f"{target} (through {name.removeprefix('the ufunc ')})"
    return NonDifferentiableError(
        f"{where(*_shown_position(frame))}: {name} {problem}, so the tape cannot differentiate "
        f"through it. Register one with @s2sgrad.derivative(of={target}), or wrap its input "
        "in s2sgrad.stop_gradient(...) if no derivative should flow through this call."
    )
