"""Helpers every generated gradient may call: undoing broadcasting, shaping results."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from s2sgrad.errors import AuxOutputError, UnsupportedError
from s2sgrad.numpy_signatures import signature
from s2sgrad.rules.registry import (
    batches_as_is,
    jvp_rule,
    nondifferentiable,
    per_argument,
    rule_function,
    vjp_rule,
)
from s2sgrad.running import IN_A_DERIVATIVE, running_origin
from s2sgrad.runtime import hooks
from s2sgrad.runtime.container_subclasses import refuse_deque, refuse_overriding_container
from s2sgrad.runtime.custom_cotangents import check_cotangent_shapes, cotangent_tuple
from s2sgrad.runtime.object_gradients import attribute_values, is_object_node, object_gradient
from s2sgrad.runtime.replays import DrawsAtStart

__all__ = [
    "is_dask_array",
    "unbroadcast",
    "as_gradient",
    "add_cotangents",
    "zeros_like_structure",
    "vjp_call",
    "jvp_call",
    "seed_cotangent",
    "zeros_like_value",
    "star_tangents",
    "unpack_cotangent",
    "owned",
    "owned_argument",
    "owned_tangent",
    "snapshot",
    "shape_only",
    "custom_vjp",
    "custom_jvp_call",
    "jvp_entry",
    "refuse_if_array",
    "refuse_unless_array",
    "require_aux_pair",
    "chained_index",
    "refuse_unless_ndarray",
    "is_view_of",
    "item_reads_are_views",
    "matches_class",
    "is_foreign_array",
    "is_complex",
]


def unbroadcast(g: Any, x: Any) -> Any:
    """Sum ``g`` down to the shape of ``x``, undoing NumPy broadcasting (and keep the real
    part of a complex ``g`` when ``x`` is real).

    Example::

        unbroadcast(np.ones((4, 3)), np.zeros(3))  # array([4., 4., 4.])
    """
    if is_complex(g) and not is_complex(x):
        g = np.real(g)  # a real value's cotangent is real (docs/complex.md)
    try:
        if g.shape == x.shape:
            return g
    except AttributeError:
        pass
    if type(g) in _SEQUENCES and isinstance(x, (list, tuple)):
        # the tuple of cotangents a *args gradient hands back (as_gradient's VJP)
        if len(g) != len(x):  # x * n repeated a sequence the transformer took for a number
            error = UnsupportedError(
                "a list or tuple was repeated with '*' where source transformation took it "
                "for a number or an array; build the repeated list with a comprehension "
                "([h for _ in range(n) for h in items]), or use mode='tape'"
            )
            error.whole_function_on_tape = True  # mode="auto": the tape repeats it as Python
            raise error
        return type(g)(u if u is None else unbroadcast(u, v) for u, v in zip(g, x))
    if type(g) in _DICTS and isinstance(x, dict) and g.keys() <= x.keys():  # a dict argument
        return type(g)((k, u if u is None else unbroadcast(u, x[k])) for k, u in g.items())
    shape = np.shape(x)
    g_shape = np.shape(g)
    if g_shape == shape:
        return g
    extra = len(g_shape) - len(shape)
    axes = tuple(range(extra)) + tuple(
        extra + i for i, n in enumerate(shape) if n == 1 and g_shape[extra + i] != 1
    )
    g = np.sum(g, axis=axes) if axes else g
    return np.reshape(g, shape) if np.shape(g) != shape else g


@vjp_rule(unbroadcast)
def _unbroadcast_vjp(g, ans, g_in, x):
    return np.broadcast_to(g, np.shape(g_in)), None


@jvp_rule(unbroadcast)
def _unbroadcast_jvp(t, ans, g_in, x):
    return unbroadcast(t, x), None


def rebuild_sequence(like: list | tuple, items: list) -> list | tuple:
    """``items`` in a sequence of ``like``'s type (a named tuple takes them one by one).

    Example::

        rebuild_sequence(Point(1.0, 2.0), [0.0, 0.0])  # Point(x=0.0, y=0.0)
    """
    if hasattr(like, "_fields"):
        return type(like)(*items)
    return type(like)(items)


def zeros_like_structure(x: Any) -> Any:
    """Zeros with the structure, shapes and floating dtypes of ``x``.

    Example::

        zeros_like_structure({"w": np.ones(2), "b": 1.0})  # {'w': array([0., 0.]), 'b': 0.0}
    """
    if isinstance(x, dict):
        return {k: zeros_like_structure(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return rebuild_sequence(x, [zeros_like_structure(v) for v in x])
    if isinstance(x, (float, int, bool)):
        return 0.0
    if not _numeric(x):  # a function, a range, a string: nothing flows into it
        return None
    return np.zeros(np.shape(x), dtype=_float_dtype(x))


batches_as_is(zeros_like_structure)  # right on batched values as it is


def refuse_unnumeric_array(x: Any) -> None:
    """Refuse an array of Python objects or a structured (record) array that is to hold a
    value being differentiated: its cotangent cannot be an array of floats of its shape.

    Example::

        refuse_unnumeric_array(np.empty(2, dtype=object))  # raises UnsupportedError
    """
    if type(x) is not np.ndarray or (x.dtype.kind != "O" and x.dtype.names is None):
        return
    kind = "Python objects" if x.dtype.kind == "O" else "a structured (record) array"
    raise UnsupportedError(
        f"{running_origin('the differentiated function')}: a value being differentiated is "
        f"written into or read from an array of dtype {x.dtype} ({kind}), which s2sgrad "
        "does not differentiate; keep the values in a list, a dict of float arrays (one "
        "per field), or join them into a float array with np.stack([...])"
    )


def _numeric(x: Any) -> bool:
    return x is None or isinstance(x, (complex, np.generic)) or hasattr(x, "__array_function__")


def _entries_of_array_cotangent(g: Any, x: list | tuple) -> list:
    """The cotangent of each entry of a list or tuple that NumPy read as one array, from
    the cotangent of that array."""
    try:
        shape = np.shape(x)
        entries = np.broadcast_to(g, shape)
    except ValueError:
        raise UnsupportedError(
            f"{running_origin('the differentiated function')}: the derivative with respect "
            f"to a {type(x).__name__} of differently shaped entries came back as one array "
            f"of shape {np.shape(g)}; pass np.stack(...) of the entries instead"
        ) from None
    return [entries[i] for i in range(len(x))]


def add_cotangents(a: Any, b: Any) -> Any:
    """Add two cotangents that may be containers or ``None`` (meaning zero).

    Example::

        add_cotangents({"w": 1.0}, {"w": 2.0})  # {'w': 3.0}
    """
    if a is None:
        return b
    if b is None:
        return a
    # a plain 0.0 (a cotangent started as a number, the value a list after all) is no entry
    if isinstance(b, (list, tuple, dict)) and _is_number_zero(a):
        return b
    if isinstance(a, (list, tuple, dict)) and _is_number_zero(b):
        return a
    if isinstance(a, dict) and is_object_node(b):  # by attribute, as a dataclass's is
        b = attribute_values(b)
    if isinstance(b, dict) and is_object_node(a):
        a = CotangentDict(attribute_values(a))
    if isinstance(a, dict):
        total = {k: add_cotangents(a.get(k), b.get(k)) for k in {**a, **b}}
        return CotangentDict(total) if isinstance(a, CotangentDict) else total
    if isinstance(a, (list, tuple)):
        return rebuild_sequence(a, [add_cotangents(u, v) for u, v in zip(a, b)])
    return a + b


batches_as_is(add_cotangents)  # right on batched values as it is


def _is_number_zero(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0


class CotangentList(list):
    """The cotangent of a tuple or list built inside differentiated code (``t[0]`` read).

    Generated code adds cotangents with ``+``; for these, ``+`` adds entry by entry
    instead of concatenating. ``as_gradient`` turns one back into its primal's type.

    Example::

        CotangentList([1.0, 0.0]) + CotangentList([0.0, 2.0])  # [1.0, 2.0]
    """

    def __add__(self, other):
        if not isinstance(other, (list, tuple)):
            return NotImplemented
        return CotangentList(add_cotangents(u, v) for u, v in zip(self, other, strict=True))

    __radd__ = __add__

    def __iadd__(self, other):
        return self.__add__(other)


class CotangentDict(dict):
    """The cotangent of a dict built inside differentiated code: only the entries something
    flowed into (the rest are zero), added key by key with ``+``.

    Example::

        CotangentDict(a=1.0) + CotangentDict(b=2.0)  # {'a': 1.0, 'b': 2.0}
    """

    def __add__(self, other):
        if is_object_node(other):  # a dataclass's gradient from the tape: by attribute
            other = attribute_values(other)
        if not isinstance(other, dict):
            return NotImplemented
        return add_cotangents(self, other)

    __radd__ = __add__

    def __missing__(self, key):  # an entry nothing flowed into: zero
        return 0.0


_SEQUENCES = (tuple, list, CotangentList)  # cotangents unbroadcast entry by entry
_DICTS = (dict, CotangentDict)


def as_gradient(g: Any, x: Any) -> Any:
    """Give the cotangent ``g`` of ``x`` exactly the structure, shape and dtype of ``x``.

    A Python number gets a float, an array a fresh writable array of its shape and
    floating dtype, a container the same container. ``None`` (no contribution) gives zeros;
    an entry of ``x`` that is ``None`` (a layer without bias) gets ``None``, as in JAX.

    Example::

        as_gradient(np.float32(2), np.ones((), np.float32))  # array(2., dtype=float32)
    """
    # an array that owns its memory was computed by the gradient and is the caller's now
    if (
        type(g) is np.ndarray
        and type(x) is np.ndarray
        and g.base is None
        and g.shape == x.shape
        and g.dtype == x.dtype
        and g.flags.writeable
    ):
        return g
    if x is None:  # an empty entry (a layer without bias): nothing flows into it
        return None
    if is_object_node(x):  # a dataclass, a model object: the same class
        return object_gradient(g, x, as_gradient)
    if g is None and not isinstance(x, (dict, list, tuple)):  # containers: entry by entry
        return zeros_like_structure(x)
    if isinstance(x, (str, bytes)) or callable(x):
        return None  # a string, a function (an entry of *args): nothing flows into it
    if is_complex(g) and not is_complex(x):
        g = np.real(g)  # the gradient wrt a real value is real (docs/complex.md)
    if isinstance(x, dict):
        return {k: as_gradient(g.get(k) if isinstance(g, dict) else None, v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        if isinstance(g, (np.ndarray, np.generic)):  # NumPy read x as one array (np.sum(x))
            g = _entries_of_array_cotangent(g, x)
        parts = g if isinstance(g, (list, tuple)) else [None] * len(x)
        return rebuild_sequence(x, [as_gradient(u, v) for u, v in zip(parts, x)])
    if isinstance(x, (float, int)) and not isinstance(x, bool):
        return float(np.sum(g)) if np.ndim(g) else float(g)
    if type(x) is complex and isinstance(g, (np.ndarray, np.generic, float, int, complex)):
        return complex(np.sum(g))  # a Python complex for a Python complex
    if isinstance(x, np.generic) and isinstance(g, (np.ndarray, np.generic, float, int)):
        return _float_dtype(x).type(np.sum(g))  # a NumPy scalar for a NumPy scalar
    dtype = _float_dtype(x)
    shape = np.shape(x)
    if (
        type(g) is np.ndarray
        and g.dtype == dtype
        and g.shape == shape
        and g.flags.writeable
        and g.flags.owndata
    ):
        return g
    if np.shape(g) != shape:
        g = unbroadcast(g, x) if np.ndim(g) >= len(shape) else np.broadcast_to(g, shape)
    if not isinstance(g, (np.ndarray, np.generic, int, float)):  # recorded by an outer tape
        return g
    return np.array(g, dtype=dtype, copy=True)


def _float_dtype(x: Any) -> np.dtype:
    dtype = np.result_type(x)
    return dtype if np.issubdtype(dtype, np.inexact) else np.dtype(np.float64)


def vjp_call(primitive: Any, g: Any, ans: Any, *args: Any, **kwargs: Any) -> tuple:
    """Run the registered VJP rule of ``primitive``; one cotangent per positional argument.

    Generated code calls this for rules registered with ``inline=False``.

    Example::

        vjp_call(np.einsum, g, ans, "ij,jk", a, b)  # (None, da, db)
    """
    entries = per_argument(rule_function(primitive, "vjp")(g, ans, *args, **kwargs), len(args))
    return _zeros_for_none(entries, args, args)


def _zeros_for_none(entries: tuple, args: tuple, like: tuple) -> tuple:
    """``entries`` with zeros like the matching entry of ``like`` (the argument for a
    cotangent, the result for a tangent) in place of each ``None`` (a rule's "none") for an
    argument of floating point values: generated code adds or passes on the entries of
    the arguments it differentiates as arrays."""
    if all(entry is not None for entry in entries):
        return entries
    return tuple(
        zeros_like_value(shape) if entry is None and is_inexact(a) else entry
        for entry, a, shape in zip(entries, args, like)
    )


def is_inexact(value: Any) -> bool:
    """Whether ``value`` is a float or complex number or array (what carries a derivative).

    Example::

        is_inexact(np.ones(2))  # True; is_inexact(np.arange(2)) is False
    """
    if isinstance(value, (float, complex, np.inexact)):
        return True
    return isinstance(value, np.ndarray) and value.dtype.kind in "fc"


def jvp_call(primitive: Any, t: Any, ans: Any, *args: Any, **kwargs: Any) -> tuple:
    """Run the registered JVP rule of ``primitive``; one tangent contribution per argument.

    Example::

        jvp_call(np.einsum, t, ans, "ij,jk", a, b)
    """
    entries = per_argument(rule_function(primitive, "jvp")(t, ans, *args, **kwargs), len(args))
    return _zeros_for_none(entries, args, (ans,) * len(args))


def seed_cotangent(out: Any, origin: str | None = None) -> Any:
    """The cotangent ``1`` for a single-element output, which ``grad`` starts from.

    Raises ``ValueError`` (naming ``origin``, or the file and line of the differentiated
    function whose generated code is running) when the output has more than one element.

    Example::

        seed_cotangent(np.float32(2.0))  # array(1., dtype=float32)
    """
    if type(out) is float:
        return 1.0
    if type(out) is np.float64 or type(out) is np.float32:  # what np.sum returns: no dispatch
        return np.array(1.0, dtype=type(out))
    if is_dask_array(out) and out.size == 1:  # lazy: ones of its dtype, computed with it
        return np.ones_like(out, dtype=np.promote_types(out.dtype, np.float32))
    if hasattr(out, "__array_function__") and not isinstance(out, (np.ndarray, np.generic)):
        out = hooks.value_of(out)  # a tape value recorded by an outer tape
    if np.size(out) != 1 or not isinstance(out, (np.ndarray, np.generic, int, float, complex)):
        origin = origin or running_origin("the differentiated function")
        shape = np.shape(out) if isinstance(out, (np.ndarray, np.generic)) else type(out).__name__
        raise ValueError(
            f"{origin}: grad needs a function with a single-element output, but it returned "
            f"{shape}; use s2sgrad.vjp for a vector-Jacobian product or s2sgrad.jacobian "
            "for the full Jacobian"
        )
    # promote_types, not result_type(out, np.float32): NumPy 1.x's value-based casting would
    # make a float64 scalar's cotangent float32
    return np.ones_like(out, dtype=np.promote_types(np.result_type(out), np.float32))


def star_tangents(values: tuple, given: dict) -> tuple:
    """The tangent of the tuple ``*args`` takes, from those ``given`` for some of its
    entries (by position); zeros for the others.

    Example::

        star_tangents((x, y), {1: dy})  # (zeros of x, dy)
    """
    return tuple(given[i] if i in given else zeros_like_value(v) for i, v in enumerate(values))


def zeros_like_value(x: Any) -> Any:
    """A zero cotangent for ``x``: zeros of its shape, ``0.0`` for numbers and ``None``
    (``0j`` for a complex number).

    Example::

        zeros_like_value(np.ones(2, np.float32))  # array([0., 0.], dtype=float32)
    """
    if x is None or isinstance(x, (float, int, str, bytes)):  # str: a dict key, say
        return 0.0
    if isinstance(x, complex):
        return 0j
    if isinstance(x, dict):  # containers' cotangents add entry by entry with +
        refuse_overriding_container(x)
        return CotangentDict({k: zeros_like_value(v) for k, v in x.items()})
    if is_object_node(x):  # a dataclass: by attribute, and no entry is zero
        return CotangentDict()
    if isinstance(x, (list, tuple)):
        refuse_overriding_container(x)
        return CotangentList(zeros_like_value(v) for v in x)
    if isinstance(x, range):  # integers read item by item: a zero for each
        return CotangentList(0.0 for _ in x)
    refuse_deque(x)
    if not isinstance(x, (np.ndarray, np.generic, list, tuple, dict)) and not (
        hasattr(x, "__array_function__") or hasattr(x, "__array__")
    ):  # a function, a slice, np.r_, a string spec passed along: nothing to differentiate
        return None
    refuse_unnumeric_array(x)
    return zeros_like_structure(x)


batches_as_is(zeros_like_value)  # right on batched values as it is


def unpack_cotangent(parts: tuple, value: Any, star: int | None = None) -> Any:
    """The cotangent of ``value`` when ``a, b = value`` bound names whose cotangents are
    ``parts`` (``None`` for a zero).

    ``star`` is the position of a starred name (``first, *rest = value``): its cotangent
    covers as many entries as it took. An array gets one array of its shape, a list or
    tuple a :class:`CotangentList`; a dict (unpacking gives its keys) gets none.

    Example::

        unpack_cotangent((np.ones(2), None), np.zeros((2, 2)))  # array([[1., 1.], [0., 0.]])
    """
    if isinstance(value, dict):
        return None
    expanded = _expanded_parts(parts, len(value), star)
    if isinstance(value, (list, tuple)):
        return CotangentList(
            zeros_like_value(item) if _is_zero(part) else part
            for part, item in zip(expanded, value)
        )
    row = np.shape(value)[1:]
    pieces = [
        np.zeros(row, dtype=_float_dtype(value)) if _is_zero(part) else _shaped(part, row)
        for part in expanded
    ]
    return np.stack(pieces)


def _is_zero(part: Any) -> bool:
    """``None``, or the ``0.0`` forward mode makes the tangent of a ``None`` cotangent: a zero
    that must take its entry's shape (``unbroadcast`` cannot widen a number)."""
    return part is None or (type(part) is float and part == 0.0)


def _expanded_parts(parts: tuple, length: int, star: int | None) -> list:
    if star is None:
        return list(parts)
    taken = length - (len(parts) - 1)
    middle = parts[star]
    middle = [None] * taken if _is_zero(middle) else list(middle)
    return [*parts[:star], *middle, *parts[star + 1 :]]


def _unpacked_parts(g: Any, count: int, star: int | None) -> tuple:
    """The parts of ``g`` (a cotangent or tangent of an unpacked value) that ``count``
    names bound, the starred one at ``star`` taking a list of the rest."""
    if star is None:
        return tuple(g[i] for i in range(count))
    after = count - 1 - star
    middle = list(g[star : len(g) - after])
    return (*(g[i] for i in range(star)), middle, *(g[len(g) - after + i] for i in range(after)))


def _shaped(part: Any, shape: tuple) -> Any:
    if np.shape(part) == shape:
        return part
    if np.ndim(part) > len(shape):
        return unbroadcast(part, np.zeros(shape))
    return np.broadcast_to(part, shape)


def owned(g: Any) -> Any:
    """A private, writable copy of a cotangent, which generated code may update in place.

    A number becomes a 0-d array: generated code owns a cotangent to write into it, and a
    0-d array's cotangent is a NumPy scalar after arithmetic (or a Python float once folded).

    Example::

        owned(np.broadcast_to(1.0, (3,)))  # array([1., 1., 1.]) that can be written
    """
    if isinstance(g, (np.inexact, float, complex)):
        return np.array(g)
    return _owned(g)


def owned_tangent(tangent: Any, primal: Any) -> Any:
    """What :func:`owned` makes of a tangent forward mode is about to write an item of,
    complex where the primal is: ``z = x + 0j`` has the real tangent of ``x``, into which
    ``dz[0] = dt`` of a complex ``dt`` dropped the imaginary part.

    Example::

        owned_tangent(np.ones(2), np.zeros(2, complex))  # array([1.+0.j, 1.+0.j])
    """
    copy = owned(tangent)
    complex_primal = isinstance(primal, (np.ndarray, np.generic)) and primal.dtype.kind == "c"
    if complex_primal and isinstance(copy, np.ndarray) and copy.dtype.kind == "f":
        return copy.astype(np.result_type(copy, primal))
    return copy


def owned_argument(value: Any) -> Any:
    """A private copy of an argument the function writes into (what :func:`owned` makes),
    read-only where the argument is: a write into it then raises NumPy's own ValueError, as
    the function itself does when called with it.

    Example::

        x = np.ones(3); x.flags.writeable = False
        owned_argument(x)[0] = 2.0  # ValueError: assignment destination is read-only
    """
    copy = owned(value)
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        copy.flags.writeable = False
    return copy


def _owned(g: Any) -> Any:
    if isinstance(g, tuple) and any(map(_is_index_part, g)):
        # a saved value, not a cotangent: an index (np.s_[i:j, k], np.ix_(i, j), (i, j))
        # stays a tuple, which NumPy reads as one position per axis
        items = map(_owned, g)
        return type(g)(*items) if hasattr(g, "_fields") else tuple(items)  # a namedtuple too
    if isinstance(g, (list, tuple)):  # entries may be updated in place too: copy them
        return (CotangentList if isinstance(g, CotangentList | tuple) else list)(map(_owned, g))
    if isinstance(g, dict):
        return type(g)({k: _owned(v) for k, v in g.items()})
    if isinstance(g, np.ndarray) or np.ndim(g):
        return np.array(g, copy=True)
    return g


def _is_index_part(e: Any) -> bool:
    """A slice, ``...``, an integer, or an integer or boolean array (or a list of integers):
    what indexes an array, and no cotangent holds (cotangents are floats)."""
    if type(e) is slice or e is Ellipsis or isinstance(e, (int, np.integer, np.bool_)):
        return True
    if isinstance(e, np.ndarray):
        return e.dtype.kind in "biu"
    return type(e) is list and len(e) > 0 and all(map(_is_index_part, e))


def snapshot(value: Any) -> Any:
    """A copy of ``value`` that later in-place updates cannot change (views are copied).

    Example::

        saved = snapshot(y[0:2])  # y[0:2] = 0 later leaves `saved` as it was
    """
    if isinstance(value, hooks.TapeValue) and type(hooks.value_of(value)) is np.ndarray:
        return value.copy()  # type: ignore[attr-defined]  # a view the tape follows writes
        # through changes with its array
    return value.copy() if isinstance(value, np.ndarray) else value


_STAND_INS: dict[tuple, np.ndarray] = {}  # (shape, dtype) -> its stand-in, read-only


def shape_only(value: Any) -> Any:
    """A stand-in for a NumPy array that only its shape and dtype are read from: a
    read-only array of that shape and dtype on one zero element (no copy of the data,
    and one stand-in shared by every array of the same shape and dtype). Anything else
    is returned as it is. The backward sweep saves this where it reads a value only for
    its shape (``unbroadcast(g, x)``).

    Example::

        shape_only(np.ones((1000, 3))).shape  # (1000, 3), and it holds 8 bytes
    """
    if type(value) is not np.ndarray:
        return value
    key = (value.shape, value.dtype)
    stand_in = _STAND_INS.get(key)
    if stand_in is None:
        if value.dtype.kind not in "biufc":
            return value
        if len(_STAND_INS) >= 256:  # shapes come and go: keep the table small
            _STAND_INS.clear()
        zero = bytes(value.dtype.itemsize)  # bytes: the array is read-only
        stand_in = np.ndarray(value.shape, value.dtype, zero, 0, (0,) * value.ndim)
        _STAND_INS[key] = stand_in
    return stand_in


# a single argument's result in a 1-tuple: the value may be a tuple (a tuple's tangent, or
# the cotangent of one on the tape), which a bare return would spread over arguments


@vjp_rule(owned, owned_argument, snapshot)
def _copy_vjp(g, ans, value):
    return (g,)


@jvp_rule(owned, owned_argument)
def _owned_jvp(t, ans, value):
    return (owned(t),)  # the code updates the copy in place, and the tangent alongside it


@vjp_rule(owned_tangent)
def _owned_tangent_vjp(g, ans, tangent, primal):
    return g, None


@jvp_rule(owned_tangent)
def _owned_tangent_jvp(t, ans, tangent, primal):
    return owned_tangent(t, primal), None


@jvp_rule(snapshot)
def _snapshot_jvp(t, ans, value):
    return (snapshot(t),)


nondifferentiable(zeros_like_value)
nondifferentiable(shape_only)


@vjp_rule(unpack_cotangent)
def _unpack_cotangent_vjp(g, ans, parts, value, star=None):
    return _unpacked_parts(g, len(parts), star), None, None


@jvp_rule(unpack_cotangent)
def _unpack_cotangent_jvp(t, ans, parts, value, star=None):
    return unpack_cotangent(t, value, star), None, None


class custom_vjp:  # noqa: N801  (reads as a function in generated code)
    """The user's derivative of ``function``, shaped like a generated VJP.

    Calling it returns ``(value, saved)``; ``backward(saved, g)`` returns the cotangents of
    the arguments at ``positions`` (one value for one position, else a tuple).

    Example::

        exp_vjp = custom_vjp(my_exp, (0,))
        value, saved = exp_vjp(3.0)
        exp_vjp.backward(saved, 1.0)
    """

    def __init__(self, function: Any, positions: tuple[int, ...]):
        self.function = function
        self.positions = tuple(positions)
        self.derivative = rule_function(function, "custom")
        self.__name__ = f"{getattr(function, '__name__', 'custom')}_vjp"

    def __call__(self, *args: Any, **kwargs: Any):
        draws = DrawsAtStart(args)  # what running it again must draw again
        value, pullback = self.derivative(*args, **kwargs)
        return value, (pullback, args, draws)

    def backward(self, saved: tuple, g: Any) -> Any:
        """The cotangents of the chosen arguments, from what ``__call__`` saved."""
        pullback, args, draws = saved
        now = draws.rewind()
        try:
            if _holds_tape_values(args):  # differentiated again: redo it where the tape sees it
                _, pullback = self.derivative(*args)
            cotangents = pullback(g)
        finally:
            draws.restore(now)
        cotangents = cotangent_tuple(self.derivative, cotangents, args, len(self.positions))
        cotangents = cotangents + (None,) * (len(args) - len(cotangents))
        check_cotangent_shapes(self.derivative, cotangents, args)
        chosen = tuple(
            zeros_like_value(args[i]) if cotangents[i] is None else cotangents[i]
            for i in self.positions
        )
        return chosen[0] if len(chosen) == 1 else chosen

    def __repr__(self) -> str:
        return f"custom_vjp({self.function.__qualname__}, {self.positions})"


def _holds_tape_values(value: Any) -> bool:
    if isinstance(value, hooks.TapeValue):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_tape_values(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_tape_values(item) for item in value.values())
    return False


class custom_jvp_call:  # noqa: N801  (reads as a function in generated code)
    """A user's forward-mode derivative of ``function``, shaped like a generated JVP.

    ``custom_jvp_call(f, positions)(*args, **tangents)`` returns ``(value, tangent)``;
    the tangents of the parameters at ``positions`` are passed as keywords named
    ``d<parameter>`` (see ``tangent_names``).

    Example::

        value, tangent = custom_jvp_call(my_exp, (0,))(3.0, dx=1.0)
    """

    def __init__(self, function: Any, positions: tuple[int, ...]):
        self.function = function
        self.positions = tuple(positions)
        self.jvp = rule_function(function, "custom_jvp")
        parameters = list(signature(function).parameters)
        self.tangent_names = {parameters[i]: f"d{parameters[i]}" for i in self.positions}
        self.__name__ = f"{getattr(function, '__name__', 'custom')}_jvp"

    def __call__(self, *args: Any, **kwargs: Any):
        tangents_by_name = {
            name: kwargs.pop(keyword)
            for name, keyword in self.tangent_names.items()
            if keyword in kwargs
        }
        if kwargs:  # kw_block(x, scale=3.0): the jvp takes primals by position, or it
            # would run with the default scale (a silently wrong tangent)
            args = primals_in_position(self.function, args, kwargs)
        names = list(self.tangent_names)
        tangents = tuple(
            tangents_by_name.get(names[self.positions.index(i)]) if i in self.positions else None
            for i in range(len(args))
        )
        tangents = tuple(zeros_like_value(a) if t is None else t for a, t in zip(args, tangents))
        return self.jvp(args, tangents)

    def __repr__(self) -> str:
        return f"custom_jvp_call({self.function.__qualname__}, {self.positions})"


def primals_in_position(function: Any, args: tuple, kwargs: dict) -> tuple:
    """``function``'s arguments ``args`` and ``kwargs`` as one tuple in parameter order;
    a keyword-only one, which a ``jvp(primals, tangents)`` has no place for, is refused.

    Example::

        primals_in_position(lambda v, s=2.0: v * s, (x,), {"s": 3.0})  # (x, 3.0)
    """
    try:
        bound = signature(function).bind(*args, **kwargs)
    except TypeError:
        bound = None
    if bound is None or bound.kwargs:
        raise UnsupportedError(
            f"{running_origin(getattr(function, '__qualname__', 'the function'))}: "
            f"{getattr(function, '__qualname__', function)} is given "
            f"{', '.join(sorted(kwargs))} by keyword, which its forward-mode derivative "
            "(jvp(primals, tangents)) takes by position only; pass it by position"
        )
    return tuple(bound.args)


@vjp_rule(as_gradient)
def _as_gradient_vjp(g, ans, g_in, x):
    return unbroadcast(g, g_in), None


@jvp_rule(as_gradient)
def _as_gradient_jvp(t, ans, g_in, x):
    return as_gradient(t, x), None


nondifferentiable(seed_cotangent, zeros_like_structure)


def refuse_if_array(value: Any, message: str, lists: bool = False, container: Any = None) -> None:
    """Raise ``UnsupportedError(message)`` if ``value`` is an array, whose memory ``+=``
    changes in place (or, read-only, where NumPy raises), or, with ``lists`` (another name
    holding the same object is read afterwards), a list or dict, which ``+=`` and ``|=``
    change in place too; numbers and NumPy scalars are left alone.

    Generated code calls it before ``x = x + v`` written as ``x += v`` where another name
    may share ``x``'s memory (see :mod:`s2sgrad.compiler.passes.aliases`); given the
    ``container`` of ``q[i] += v``, only when that is a list or dict, whose shallow copies
    share the array (:mod:`s2sgrad.compiler.passes.shallow_copies`).

    Example::

        refuse_if_array(2.0, "never raised for a number")
    """
    if container is not None and not isinstance(hooks.value_of(container), (list, dict)):
        return  # b = a.copy(); b[0] += v of an array: a row of a new array
    value = hooks.value_of(value)
    if isinstance(value, np.ndarray):
        error = UnsupportedError(message)
        if IN_A_DERIVATIVE in message:  # a derivative transformed again: the tape
            error.tape_cannot_either = True  # rebinds x too, it would be as wrong
        else:  # the tape follows x op= v through the memory the held values share, or
            error.whole_function_on_tape = True  # refuses it (tape.view_writes)
        raise error
    if lists and isinstance(value, (list, dict)):  # += extends a list, |= a dict, in place
        error = UnsupportedError(message.replace(" the array ", " the list ", 1))
        error.whole_function_on_tape = True  # the tape runs Python's own lists: "auto" does
        raise error


nondifferentiable(refuse_if_array)


def chained_index(array: Any, first: Any, then: Any, message: str) -> tuple:
    """The one index of ``array`` that ``array[first][then]`` reads when ``first`` is an
    integer (or a tuple of them): ``array[first]`` is then a view of ``array``, and a write
    into it is a write into ``array``. ``UnsupportedError(message)`` for anything else.

    Example::

        chained_index(np.zeros((2, 3)), 1, 2, "")  # (1, 2)
    """
    leading = first if isinstance(first, tuple) else (first,)
    following = then if isinstance(then, tuple) else (then,)
    array = hooks.value_of(array)
    integers = all(
        isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)) for i in leading
    )
    if not (isinstance(array, np.ndarray) and integers and len(leading) < array.ndim):
        raise UnsupportedError(message)
    return (*leading, *following)


nondifferentiable(chained_index)


def require_aux_pair(value: Any, message: str) -> None:
    """Raise ``AuxOutputError(message)`` unless ``value`` is a pair ``(output, aux)``: what a
    function differentiated with ``has_aux=True`` returns (see
    :mod:`s2sgrad.compiler.passes.aux_returns`).

    Example::

        require_aux_pair((1.0, {"n": 2}), "never raised for a pair")
    """
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        shown = f"a {type(hooks.value_of(value)).__name__}" + (
            f" of {len(value)}" if isinstance(value, (tuple, list)) else ""
        )
        raise AuxOutputError(f"{message}; it returned {shown}")


nondifferentiable(require_aux_pair)


def refuse_unless_array(value: Any, message: str) -> None:
    """Raise ``UnsupportedError(message)`` unless ``value`` is an array or a list, which a
    helper's ``a op= v`` changes in place (a number it only rebinds in the helper).

    Generated code calls it before the inlined body of a helper that updates its parameter
    with ``a op= v`` (see :mod:`s2sgrad.compiler.updating_helpers`).

    Example::

        refuse_unless_array(np.ones(2), "never raised for an array")
    """
    if not isinstance(hooks.value_of(value), (np.ndarray, list)):
        raise UnsupportedError(message)


nondifferentiable(refuse_unless_array)


def refuse_unless_ndarray(value: Any, message: str) -> None:
    """Raise ``UnsupportedError(message)`` unless ``value`` is a NumPy array.

    Generated code calls it before a view of ``value`` is taken whose writes the code
    follows (see :mod:`s2sgrad.compiler.passes.view_writes`): a list's slice is a new list.

    Example::

        refuse_unless_ndarray(np.ones(2), "never raised for an array")
    """
    if not isinstance(hooks.value_of(value), np.ndarray):
        raise UnsupportedError(message)


nondifferentiable(refuse_unless_ndarray)


def is_view_of(view: Any, base: Any) -> bool:
    """Whether ``view`` shares memory with ``base``: a reshape is a view of a contiguous
    array and a copy of another, and generated code follows writes into views only.

    Example::

        is_view_of(np.ones((2, 2)).T, np.ones(3))  # False
    """
    return bool(np.may_share_memory(hooks.value_of(view), hooks.value_of(base)))


nondifferentiable(is_view_of)


def item_reads_are_views(message: str, *bases_and_indices: Any) -> bool:
    """Whether each ``base[index]`` (the pairs given one after another) reads a view of an
    array (a row of a matrix) rather than a number or a copy (an item of a vector, a list's
    entry): generated code then reads the value anew where a tuple assignment writes it, as
    NumPy's view shows the writes before it (see
    :mod:`s2sgrad.compiler.passes.tuple_item_writes`). Raises ``UnsupportedError(message)``
    when some are views and others not; False where reading fails (the user's code raises).

    Example::

        item_reads_are_views("...", np.ones((2, 2)), 0, np.ones((2, 2)), 1)  # True
    """
    kinds = set()
    for base, index in zip(bases_and_indices[::2], bases_and_indices[1::2]):
        array = hooks.value_of(base)
        if type(array) is not np.ndarray:
            kinds.add(False)
            continue
        try:
            item = array[hooks.value_of(index)]
        except (IndexError, TypeError, ValueError):
            return False  # the statement as written raises it
        kinds.add(isinstance(item, np.ndarray) and bool(np.may_share_memory(item, array)))
    if len(kinds) > 1:
        raise UnsupportedError(message)
    return kinds == {True}


nondifferentiable(item_reads_are_views)


def jvp_entry(primitive: Any, index: int, t: Any, ans: Any, *args: Any, **kwargs: Any) -> Any:
    """The output tangent the argument at ``index`` contributes when its tangent is ``t``.

    Zero when ``primitive`` is not differentiable in that argument.

    Example::

        jvp_entry(np.einsum, 1, ta, ans, "ij,jk", a, b)
    """
    entry = per_argument(rule_function(primitive, "jvp")(t, ans, *args, **kwargs), len(args))[index]
    return zeros_like_value(ans) if entry is None else entry


@vjp_rule(add_cotangents)
def _add_cotangents_vjp(g, ans, a, b):
    return g, g


@jvp_rule(add_cotangents)
def _add_cotangents_jvp(t, ans, a, b):
    return t, t


def matches_class(value: Any, cls: Any) -> bool:
    """``isinstance(value, cls)`` for a ``match`` class pattern, seeing through tape values
    (the generated code runs on them when a tape differentiates it again).

    Example::

        matches_class(2.0, float)  # True
    """
    while isinstance(value, hooks.TapeValue):
        value = hooks.value_of(value)
    return isinstance(value, cls)


nondifferentiable(matches_class)


_PLAIN_TYPES = frozenset({np.ndarray, float, int, bool, np.float64, np.float32})
ARRAY_PROTOCOLS = ("__array_ufunc__", "__array_function__", "__array__", "__array_interface__")


def is_dask_array(value: Any) -> bool:
    """Whether ``value`` is a Dask array (recognised without importing Dask).

    Dask arrays implement NumPy's functions and ufuncs lazily through NumPy's dispatch
    protocols, so generated code, made of NumPy calls, runs on them unchanged and builds
    a task graph.

    Example::

        is_dask_array(np.ones(2))  # False
    """
    kind = type(value)
    return kind.__name__ == "Array" and kind.__module__ == "dask.array.core"


nondifferentiable(is_dask_array)


def is_foreign_array(value: Any) -> bool:
    """Whether ``value`` is an array of a type s2sgrad does not differentiate: an ndarray
    subclass (``np.matrix``, a masked array) or another object taking part in NumPy's
    dispatch (a Dask or xarray array). Tape values and batches of them are s2sgrad's own.

    Example::

        is_foreign_array(np.ma.array([1.0]))  # True
    """
    kind = type(value)
    if kind in _PLAIN_TYPES or isinstance(value, np.generic):
        return False
    if isinstance(value, np.ndarray):
        return True
    if not any(hasattr(kind, protocol) for protocol in ARRAY_PROTOCOLS):
        return False
    batching = sys.modules.get("s2sgrad.batching.values")  # none made unless imported
    if batching is not None and isinstance(value, batching.BatchedValue):
        return False
    return not isinstance(value, hooks.TapeValue)


nondifferentiable(is_foreign_array)


def is_complex(value: Any) -> bool:
    """Whether ``value`` is a complex number or array (or a tape value holding one).

    Example::

        is_complex(np.ones(2) * 1j)  # True
    """
    if isinstance(value, complex):
        return True
    dtype = getattr(value, "dtype", None)
    return isinstance(dtype, np.dtype) and dtype.kind == "c"


nondifferentiable(is_complex)
