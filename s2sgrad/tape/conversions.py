"""NumPy calls that turn their arguments into arrays without asking them: ``np.array``,
``np.asarray``, ``np.full`` and the functions that read a list of values.

NumPy hands a tape value its calls through ``__array_function__`` only when the value is
an argument itself. ``np.array([a, b])``, ``np.sum([a, b])`` and ``np.full(shape, c)``
never show the tape their values: NumPy converts each one with ``__array__``, which must
return a plain array, so the derivative would be lost (``TapeValue.__array__`` refuses).
TensorFlow has ``convert_to_tensor`` and autograd its own ``np.array`` for this. Here, while
a tape records, these few attributes of ``numpy`` are replaced by :class:`Converting`
wrappers: given values a recording tape tracks, they record the registered rule of the
NumPy function (``np.array`` of a nested list gives each element its slice of the
cotangent); given anything else they call NumPy's function unchanged. The wrappers compare
and hash equal to the function they stand for, so rule look-ups find the same rule.
``from numpy import array`` made before bypasses them, and the refusal stays.

Example::

    with GradientTape() as tape:   # installs the wrappers
        tape.watch(x)
        y = np.array([x[0] * x[1], np.sin(x[1])])   # recorded
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad.rules.python_math import NUMPY_TWINS
from s2sgrad.rules.registry import is_registered
from s2sgrad.tape.recording import RECORDING
from s2sgrad.tape.values import TapeValue, _any_tracked, apply_rule, value_of

__all__ = ["Converting", "install", "uninstall"]

_ASARRAY = np.asarray  # NumPy's own (this module is imported before any tape records)


class Converting:
    """A callable standing in for a NumPy function on the ``numpy`` module while a tape
    records: ``handle(original, args, kwargs)`` runs when a tracked value is among the
    arguments, ``original`` otherwise.

    Example::

        Converting(np.asarray, _asarray)(x)  # x itself for a tape value x
    """

    __slots__ = ("_original", "_handle", "__wrapped__")

    def __init__(self, original: Callable, handle: Callable) -> None:
        self._original = original
        self._handle = handle
        self.__wrapped__ = original

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if RECORDING and (_any_tracked(args) or kwargs and _any_tracked(kwargs.values())):
            return self._handle(self._original, args, kwargs)
        return self._original(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        # the function's own: numpy.ma, first imported while a tape records, edits np.clip's
        return self._original.__doc__

    def __eq__(self, other: Any) -> bool:
        return other is self or other is self._original

    def __hash__(self) -> int:
        return hash(self._original)

    def __repr__(self) -> str:
        return repr(self._original)


def _array(original: Callable, args: tuple, kwargs: dict) -> Any:
    """``np.array(obj, dtype=None, *, copy=True, ...)``: a new value (NumPy copies);
    ``copy=False`` gives the value itself where NumPy would not copy."""
    if kwargs.get("like") is not None:
        return original(*args, **kwargs)
    obj = args[0] if args else kwargs.get("object")
    if kwargs.get("copy", True) is False and _is_same(obj, args[1:2], kwargs):
        return obj
    return apply_rule(np.array, original, args, kwargs)


def _asarray(original: Callable, args: tuple, kwargs: dict) -> Any:
    """``np.asarray(a, dtype=None, ...)``: ``a`` itself when NumPy would not copy it (so an
    item written through one name is seen through the other, as in NumPy), else the rule of
    ``np.asarray``, which reads a nested list of values."""
    if kwargs.get("like") is not None:
        return original(*args, **kwargs)
    a = args[0] if args else kwargs.get("a")
    if kwargs.get("copy") is not True and _is_same(a, args[1:2], kwargs):
        return a
    return apply_rule(np.asarray, original, args, kwargs)


def _is_same(value: Any, dtype_given: tuple, kwargs: dict) -> bool:
    """Whether converting the tape value ``value`` to the dtype asked for changes nothing."""
    if type(value) is not TapeValue or not isinstance(value._value, np.ndarray):
        return False
    dtype = dtype_given[0] if dtype_given else kwargs.get("dtype")
    return dtype is None or np.dtype(dtype) == value._value.dtype


def _record(key: Callable) -> Callable:
    """A handler recording the rule of ``key`` (the function the wrapper stands for)."""

    def handle(original: Callable, args: tuple, kwargs: dict) -> Any:
        return apply_rule(key, original, args, kwargs)

    return handle


def _lists_read_as_arrays(arrays: tuple[str, ...]) -> Callable:
    """A handler for a function whose array parameters ``arrays`` (its first ones) may be
    given lists (``np.sum([a, b])``): each list or tuple holding a tracked value becomes
    ``np.asarray`` of it first, as NumPy would do. Other parameters (``out=(t,)``) are
    passed as they are."""

    def handle(original: Callable, args: tuple, kwargs: dict) -> Any:
        count = len(arrays)
        args = tuple(_as_array(a) if i < count else a for i, a in enumerate(args))
        kwargs = {k: _as_array(v) if k in arrays else v for k, v in kwargs.items()}
        return original(*args, **kwargs)

    return handle


def _of_plain_values(original: Callable, args: tuple, kwargs: dict) -> Any:
    """A function that only reads the shape of its argument (``np.shape([a, b])``)."""
    return original(*value_of(args), **value_of(kwargs))


def _enumerated(original: Callable, args: tuple, kwargs: dict) -> Any:
    """``np.ndenumerate(x)`` of a tape value: each index with the entry ``x[index]``, read
    as the tape records (NumPy's own iterator reads the plain memory)."""
    array = args[0] if args else kwargs["arr"]
    return ((index, array[index]) for index in np.ndindex(*np.shape(value_of(array))))


def _as_array(value: Any) -> Any:
    if type(value) in (list, tuple) and _any_tracked(value):
        return apply_rule(_ASARRAY, _ASARRAY, (value,))
    return value


# NumPy functions that convert a whole argument (not its elements one by one), with the
# names of their leading array parameters (np.stack and np.concatenate see the tape values
# inside their list, and differentiate them by their own rules).
_READING_LISTS = {
    "sum": ("a",),
    "prod": ("a",),
    "mean": ("a",),
    "average": ("a",),
    "max": ("a",),
    "min": ("a",),
    "amax": ("a",),
    "amin": ("a",),
    "std": ("a",),
    "var": ("a",),
    "cumsum": ("a",),
    "cumprod": ("a",),
    "dot": ("a", "b"),
    "inner": ("a", "b"),
    "outer": ("a", "b"),
    "trace": ("a",),
    "diag": ("v",),
    "transpose": ("a",),
    "reshape": ("a",),
    "ravel": ("a",),
    "where": ("condition", "x", "y"),
    "clip": ("a", "a_min", "a_max"),
    "linalg.norm": ("x",),
    "linalg.det": ("a",),
    "linalg.inv": ("a",),
    "linalg.solve": ("a", "b"),
}


# functions joining a sequence of arrays, whose entries may be lists holding tape values
_JOINING = ("concatenate", "stack", "hstack", "vstack", "column_stack", "dstack")


def _math_wrapper(function: Callable) -> Converting:
    """``math.exp(x)`` of a tracked ``x``: the rule of ``math.exp`` (``np.exp``'s) recorded,
    the wrapper computing (so a tape recording outside this one sees the call too)."""

    def handle(original: Callable, args: tuple, kwargs: dict) -> Any:
        return apply_rule(function, wrapper, args, kwargs)

    wrapper = Converting(function, handle)
    return wrapper


def _math_functions() -> list[tuple[Any, str, Converting]]:
    """Python's ``math`` functions with rules: they convert their argument with
    ``float()``, which the tape refuses for a value it differentiates."""
    functions = (
        *NUMPY_TWINS,
        math.log,
        math.hypot,
        math.erf,
        math.erfc,
        math.gamma,
        math.lgamma,
        math.fsum,
        math.prod,
    )
    return [
        (math, f.__name__, _math_wrapper(f))
        for f in functions
        if is_registered(f) and getattr(math, f.__name__, None) is f
    ]


def _wrappers() -> list[tuple[Any, str, Converting]]:
    """(module, attribute, wrapper) for every function replaced while a tape records."""
    made = [
        (np, "array", Converting(np.array, _array)),
        (np, "asarray", Converting(np.asarray, _asarray)),
        (np, "asanyarray", Converting(np.asanyarray, _asarray)),
        (np, "full", Converting(np.full, _record(np.full))),
        (np, "full_like", Converting(np.full_like, _record(np.full_like))),
    ]
    for name in ("shape", "ndim", "size"):
        made.append((np, name, Converting(getattr(np, name), _of_plain_values)))
    made.append((np, "ndenumerate", Converting(np.ndenumerate, _enumerated)))
    # np.concatenate([y, [t]]) of a plain y: NumPy hands the tape neither its list nor t
    for name in _JOINING:
        made.append((np, name, Converting(getattr(np, name), _record(getattr(np, name)))))
    for path, arrays in _READING_LISTS.items():
        module_name, _, name = path.rpartition(".")
        module = getattr(np, module_name) if module_name else np
        handler = _lists_read_as_arrays(arrays)
        made.append((module, name, Converting(getattr(module, name), handler)))
    return made + _math_functions()


_WRAPPERS = _wrappers()
_BY_ORIGINAL = {id(w._original): w for module, _, w in _WRAPPERS if module is math}
_lock = threading.Lock()
_installed = [False]
# (module, attribute, what install put there, what the attribute held before)
_PUT: list[tuple[Any, str, Any, Any]] = []


def install() -> None:
    """Put the wrappers on ``numpy`` (done when the first tape starts recording).

    Example::

        install()  # np.array is now a Converting wrapper
    """
    with _lock:
        if _installed[0]:
            return
        _PUT.clear()
        for module, name, wrapper in _WRAPPERS:
            held = getattr(module, name, None)
            if held is not wrapper._original:  # the user's own (math.exp = math.sin):
                # kept, recorded as the function it is where that one has a wrapper
                twin = _BY_ORIGINAL.get(id(held)) if module is math else None
                if twin is None:
                    continue
                wrapper = twin
            setattr(module, name, wrapper)
            _PUT.append((module, name, wrapper, held))
        _installed[0] = True


def uninstall() -> None:
    """Give ``numpy`` its own functions back (done when no tape records any more).

    Example::

        uninstall()  # np.array is NumPy's again
    """
    with _lock:
        if not _installed[0]:
            return
        for module, name, wrapper, held in _PUT:
            if getattr(module, name, None) is wrapper:  # not replaced since by the user
                setattr(module, name, held)
        _PUT.clear()
        _installed[0] = False
