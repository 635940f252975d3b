"""Helpers for the derivatives of shape, indexing and selection functions.

Most shape functions are linear maps whose adjoint NumPy already has (the adjoint of
``np.transpose`` is another transpose). The helpers here are the adjoints NumPy lacks:
scattering a cotangent back through an index, splitting it back into the pieces of a
concatenation, summing the copies made by ``np.tile`` or ``np.repeat``, and so on. Each
helper is linear in its first argument, so its own VJP and JVP rules (registered at the
bottom of this module) are one line each, and generated code that calls it can be
differentiated again.
"""

from __future__ import annotations

import functools
import math
import types
from typing import Any

import numpy as np

from s2sgrad.errors import NonDifferentiableError, UnsupportedError
from s2sgrad.rules.registry import batches_as_is, jvp_rule, nondifferentiable, vjp_rule
from s2sgrad.running import running_origin
from s2sgrad.runtime.container_subclasses import refuse_overriding_container
from s2sgrad.runtime.core import (
    CotangentDict,
    CotangentList,
    add_cotangents,
    owned,
    refuse_unnumeric_array,
    snapshot,
    unbroadcast,
    zeros_like_structure,
    zeros_like_value,
)

__all__ = [
    "index_cotangent",
    "assigned_cotangent",
    "only_last_writes",
    "concatenated",
    "repeated",
    "repeated_sum",
    "sequence_part",
    "for_items",
    "items_cotangent",
    "dict_keys",
    "dict_entry",
    "split_like",
    "join_like",
    "unpack_like",
    "pack_like",
    "owned_items",
    "untile",
    "unwindow",
    "window_axes",
    "unblock",
    "block_of",
    "strided_positions",
    "unrepeat",
    "undiagonal",
    "untake",
    "untake_along_axis",
    "undiff",
    "rollaxis_destination",
    "item_mask",
    "unpad",
    "ravel_positions",
    "clip_regions",
    "zero_if_integer",
    "added_at",
]


def added_at(a: Any, indices: Any, values: Any) -> Any:
    """A new array: ``a`` with ``values`` added at ``indices``, repeated indices adding up.

    What ``np.add.at(a, indices, values)`` leaves in ``a``; the transformer writes
    ``np.add.at(t, i, v)`` as ``t[...] = added_at(t, i, v)``.

    Example::

        added_at(np.zeros(3), [0, 0, 2], 1.0)  # array([2., 0., 1.])
    """
    return a + index_cotangent(np.broadcast_to(values, np.shape(a[indices])), a, indices)


def zero_if_integer(g: Any, ans: Any) -> Any:
    """``g``, or zeros where the value it is the derivative of has an integer or bool dtype.

    Casting to an integer dtype (``x.astype(int)``, ``np.full_like(counts, x)``) makes a
    function piecewise constant, so no derivative flows through it.

    Any other dtype (Python objects, strings, dates) is refused: a value being
    differentiated cast to it would carry its derivative on, or not, in ways the rules
    cannot follow, and a zero there would be silently wrong.

    Example::

        zero_if_integer(np.ones(2), np.array([1, 2]))  # array([0., 0.])
    """
    dtype = np.result_type(ans)
    if np.issubdtype(dtype, np.inexact):
        return g
    if dtype.kind in "biu":
        return np.zeros_like(g)
    origin = running_origin("")  # on the tape, the transform names the user's line
    raise NonDifferentiableError(
        f"{origin}{': ' if origin else ''}a value being differentiated is "
        f"converted to dtype {dtype} (as by dtype={dtype} or .astype({dtype})), which "
        "s2sgrad does not differentiate; keep a float dtype (leave dtype out), or wrap the "
        "value in s2sgrad.stop_gradient if it needs no derivative"
    )


# ---------------------------------------------------------------------------------------
# Indexing


def index_cotangent(g: Any, x: Any, index: Any) -> Any:
    """The cotangent of ``x`` when ``g`` is the cotangent of ``x[index]``.

    For an array, zeros of ``x``'s shape (and ``g``'s dtype) with ``g`` added in at
    ``index``; an element picked twice by an integer array gets both contributions. For a
    list or tuple, the same container with ``g`` at ``index`` and zeros everywhere else;
    for a dict (a model's parameters), ``{index: g}``: the missing entries are zero, which
    ``add_cotangents`` and ``as_gradient`` understand.

    Example::

        index_cotangent(np.ones(2), np.zeros(3), [0, 0])  # array([2., 0., 0.])
        index_cotangent(1.0, {"w": 2.0, "b": 3.0}, "w")   # {'w': 1.0}
    """
    if isinstance(x, (list, tuple, dict)):
        refuse_overriding_container(x)
        if isinstance(x, dict):  # sparse: the other entries are zero (see as_gradient)
            return CotangentDict({index: g})
        return _sequence_cotangent(g, x, index)
    if isinstance(x, range):  # integers (a loop's range, sliced): zero, as items_cotangent's
        return np.zeros(len(x))
    refuse_unnumeric_array(x)
    index = _normalize_index(index)
    cotangent = np.zeros(np.shape(x), dtype=_cotangent_dtype(g))
    if _has_integer_array(index):
        np.add.at(cotangent, index, g)
    else:
        cotangent[index] = g
    return cotangent


def assigned_cotangent(g: Any, index: Any) -> Any:
    """The cotangent of ``v`` in ``y[index] = v``, when ``g`` is the cotangent of ``y``
    after it: a copy of ``g[index]``, zero where a later position of ``index`` writes the
    same element of ``y`` (NumPy keeps the last value written to an element, so the
    earlier ones reach nothing).

    Example::

        assigned_cotangent(np.array([1.0, 2.0]), [0, 0])  # array([0., 1.])
    """
    if isinstance(g, list):  # y a list (a gradient's own, differentiated again): one entry
        return list(g[index]) if isinstance(index, slice) else snapshot(g[index])
    if isinstance(g, dict):  # y a dict (a copy of one given): its entry, zero if none flowed
        return snapshot(g[index]) if index in g else 0.0
    if isinstance(g, (int, float, complex)):  # a 0-d y's cotangent, folded to a number
        g = np.asarray(g)
    return only_last_writes(snapshot(g[index]), np.shape(g), index)


def only_last_writes(part: Any, shape: tuple, index: Any) -> Any:
    """``part`` (shaped like ``y[index]`` for an array ``y`` of ``shape``) with zeros where a
    later position of ``index``, in C order, selects the same element of ``y``; ``part``
    itself when no element is selected twice (always so without integer arrays).

    Example::

        only_last_writes(np.array([5.0, 6.0, 7.0]), (4,), [1, 2, -3])  # array([0., 6., 7.])
    """
    if not _may_repeat(shape, index):
        return part
    # Ask NumPy itself which write wins: write each position's number, read back the winner.
    selected = np.shape(np.empty(shape, dtype=np.bool_)[index])
    order = np.arange(math.prod(selected), dtype=np.intp).reshape(selected)
    winner = np.full(shape, -1, dtype=np.intp)
    winner[index] = order
    kept = winner[index] == order
    return np.where(kept, part, np.zeros((), dtype=np.result_type(part)))


def _may_repeat(shape: tuple, index: Any) -> bool:
    """Whether ``y[index]``, for an array ``y`` of ``shape``, may select an element twice:
    only integer arrays (or what this does not know) can, and then only if two positions
    of their broadcast, wrapped into range, are equal."""
    parts = _normalize_index(index)
    parts = parts if isinstance(parts, tuple) else (parts,)
    if all(_selects_once(part) for part in parts):
        return False
    coordinates = _advanced_coordinates(shape, parts)
    if coordinates is None:
        return True  # an index this does not follow: let NumPy decide
    arrays, sizes = coordinates
    if 0 in sizes:
        return False
    keys = np.ravel_multi_index(np.broadcast_arrays(*arrays), sizes, mode="wrap").ravel()
    return np.unique(keys).size < keys.size


def _selects_once(part: Any) -> bool:
    """Integers, slices, None, ``...`` and boolean masks never select an element twice; nor
    does a dict's key (a string)."""
    if part is None or part is Ellipsis or isinstance(part, (int, np.integer, slice, str)):
        return True
    return isinstance(part, np.ndarray) and part.dtype == np.bool_


def _advanced_coordinates(shape: tuple, parts: tuple) -> tuple[list, list] | None:
    """The integer coordinates the array parts of an index select (a boolean mask as the
    coordinates of its True elements), and the sizes of the axes they select along; None
    for an index with parts other than integers, slices, None, ``...`` and arrays."""
    taken = 0
    for part in parts:
        if isinstance(part, np.ndarray) and part.dtype == np.bool_:
            taken += part.ndim
        elif part is not None and part is not Ellipsis:
            taken += 1
    axis = 0
    arrays: list = []
    sizes: list = []
    for part in parts:
        if part is None:
            continue
        if part is Ellipsis:
            axis += len(shape) - taken
        elif isinstance(part, np.ndarray) and part.dtype == np.bool_ and part.ndim:
            arrays.extend(np.nonzero(part))
            sizes.extend(shape[axis : axis + part.ndim])
            axis += part.ndim
        elif isinstance(part, np.ndarray) and part.dtype.kind in "iu":
            arrays.append(part)
            sizes.append(shape[axis])
            axis += 1
        elif isinstance(part, (int, np.integer, slice)) and not isinstance(part, bool):
            axis += 1
        else:
            return None
    return arrays, sizes


def dict_entry(g: Any, key: Any, value: Any) -> Any:
    """The cotangent of ``value`` when it was stored at ``key`` of a dict literal whose
    cotangent is ``g``: ``g[key]``, or a zero like ``value`` where ``g`` has none (a dict's
    cotangent holds only the entries something flowed into).

    Example::

        dict_entry({"a": 2.0}, "b", np.ones(2))  # array([0., 0.])
    """
    part = g.get(key) if isinstance(g, dict) else None
    return zeros_like_value(value) if part is None else part


def _sequence_cotangent(g: Any, x: list | tuple, index: Any) -> CotangentList:
    cotangent = CotangentList(zeros_like_structure(item) for item in x)
    if isinstance(index, slice):
        for position, piece in zip(range(len(x))[index], g):
            cotangent[position] = piece
    else:
        cotangent[index] = g
    return cotangent


def concatenated(a: Any, b: Any) -> Any:
    r"""``a + b`` for lists or tuples: generated code calls it where ``+`` joins sequences.

    Tangents and cotangents of sequences are :class:`CotangentList`\ s, whose ``+`` adds
    entry by entry; this joins them instead.

    Example::

        concatenated([1.0], [2.0, 3.0])  # [1.0, 2.0, 3.0]
    """
    if isinstance(a, CotangentList) or isinstance(b, CotangentList):
        return CotangentList([*a, *b])
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):  # NumPy adds, item by item
        raise UnsupportedError(
            f"{running_origin('a function')}: '+' of an array and a list or tuple adds them "
            "item by item, where source transformation took it for joining two lists; make "
            "an array of the list first (x + np.array([a, b]), or np.stack([a, b]) of values "
            "being differentiated), or use mode='tape'"
        )
    return a + b


def repeated(a: Any, n: Any) -> Any:
    r"""``a * n`` for a list or tuple ``a`` and an integer ``n``: generated code calls it
    where ``*`` repeats a sequence (whose derivative sums the copies, not a product's).

    Example::

        repeated([1.0, 2.0], 2)  # [1.0, 2.0, 1.0, 2.0]
    """
    if not isinstance(a, (list, tuple)) or not isinstance(n, (int, np.integer)):
        raise UnsupportedError(
            f"'*' of a {type(a).__name__} by a {type(n).__name__} is differentiated here as "
            "the repetition of a list or tuple by an integer; make an array of the list "
            "first (np.array(...)), or use mode='tape'"
        )
    if isinstance(a, CotangentList):
        return CotangentList([*a] * n)
    return a * n


def repeated_sum(g: Any, a: Any, n: int) -> CotangentList:
    """The cotangent of ``a`` from ``g``, the cotangent of ``a * n``: each entry's copies
    summed.

    Example::

        repeated_sum(CotangentList([1.0, 2.0, 3.0, 4.0]), [0.0, 0.0], 2)  # [4.0, 6.0]
    """
    size = len(a)
    if len(g) != size * max(n, 0):
        raise UnsupportedError(
            f"the cotangent of a list repeated {n} times has {len(g)} entries, not "
            f"{size * max(n, 0)}: a list cotangent was joined rather than added (the tape "
            "over generated code of a list repeated by '*'); use mode='s2s' or mode='tape' "
            "for both orders"
        )
    if n <= 0:
        return CotangentList(zeros_like_value(entry) for entry in a)
    return CotangentList(
        functools.reduce(add_cotangents, (g[i + j * size] for j in range(n))) for i in range(size)
    )


def sequence_part(g: Any, start: int, stop: int) -> CotangentList:
    """Entries ``start`` to ``stop`` of a sequence's cotangent ``g``, as a cotangent.

    Example::

        sequence_part(CotangentList([1.0, 2.0, 3.0]), 1, 3)  # [2.0, 3.0]
    """
    return CotangentList(g[i] for i in range(start, stop))


def for_items(x: Any) -> Any:
    """What ``for v in x`` visits, as something to index: ``x``, a dict's keys in a list,
    or a list's entries in a new list (the loop visits the entries it had when it began;
    a VJP's backward sweep restores a list popped later in a private copy, which the
    loop's entries must not depend on).

    Example::

        for_items({"w": 1.0, "b": 2.0})  # ['w', 'b']
        for_items(np.ndindex(2, 2))  # [(0, 0), (0, 1), (1, 0), (1, 1)]
    """
    if isinstance(x, (dict, list)):
        return list(x)
    if hasattr(x, "__len__") and hasattr(x, "__getitem__"):
        return x
    if isinstance(x, types.GeneratorType):
        error = UnsupportedError(
            f"{running_origin('a loop')}: a loop over a generator, which runs step by step "
            "with the loop and may read what the loop body changes; source transformation "
            "would read it whole first. Make a list of it before the loop "
            "(items = list(gen(...))) if it reads nothing the loop changes, or use mode='tape'"
        )
        error.whole_function_on_tape = True  # mode="auto": the tape runs the loop as it is
        raise error
    items = list(x)  # an iterator (np.ndindex, itertools.product of ranges): its items
    if any(_holds_floats(item) for item in items):
        raise UnsupportedError(
            f"{running_origin('a loop')}: a loop over {type(x).__name__}(...), an iterator "
            "that gives numbers, which source transformation cannot follow back; loop over "
            "a list, a range or an array instead, or use mode='tape'"
        )
    return items


def _holds_floats(item: Any) -> bool:
    if isinstance(item, (tuple, list)):
        return any(_holds_floats(part) for part in item)
    return isinstance(item, (float, complex, np.inexact, np.ndarray)) or (
        not isinstance(item, (int, np.integer, str, bytes, type(None)))
    )


def items_cotangent(g: Any, x: Any) -> Any:
    """The cotangent of ``x`` when ``g`` is that of ``for_items(x)`` (keys have none).

    Example::

        items_cotangent(np.ones(2), np.zeros(2))  # array([1., 1.])
    """
    if isinstance(x, dict):
        return zeros_like_value(x)
    if g is None and isinstance(x, range):  # integers: zero for each element read from it
        return np.zeros(len(x))
    return g


def dict_keys(d: dict) -> list:
    """The keys of ``d`` in a list: ``for k, v in d.items()`` loops over them.

    Example::

        dict_keys({"w": 1.0, "b": 2.0})  # ['w', 'b']
    """
    return list(d)


def _normalize_index(index: Any) -> Any:
    # A list index is an array index in NumPy; an empty one selects nothing.
    if isinstance(index, list):
        array = np.asarray(index)
        return array.astype(np.intp) if array.size == 0 else array
    if isinstance(index, tuple):
        for part in index:
            if isinstance(part, (list, tuple)):
                return tuple(_normalize_index(part) for part in index)
    return index  # nothing in it to normalise


def _has_integer_array(index: Any) -> bool:
    for part in index if isinstance(index, tuple) else (index,):
        if isinstance(part, np.ndarray) and part.dtype.kind in "iu":
            return True
    return False


def _cotangent_dtype(*values: Any) -> np.dtype:
    if len(values) == 1 and type(values[0]) is np.ndarray and values[0].dtype.kind in "fc":
        return values[0].dtype  # what result_type says of one inexact array, found faster
    present = [value for value in values if value is not None]
    dtype = np.result_type(*present) if present else np.dtype(np.float64)
    return dtype if np.issubdtype(dtype, np.inexact) else np.dtype(np.float64)


# ---------------------------------------------------------------------------------------
# Joining and splitting: concatenate, stack, hstack, split, np.array of a list


def split_like(g: Any, parts: Any, axis: int | None = 0) -> Any:
    """Cut ``g`` along ``axis`` into one piece per entry of ``parts``, each of its shape.

    This undoes joining ``parts`` along ``axis`` (``np.concatenate``, ``np.stack``,
    ``np.hstack`` …): a part takes as many elements as it has, and its piece is reshaped
    to the part's own shape (so a 1-D part of ``np.vstack`` gets a 1-D piece back).
    ``axis=None`` splits the flattened ``g``. The result is a ``CotangentList`` (so ``+``
    adds two entry by entry), or an array when ``parts`` is one array (whose rows were joined).

    Example::

        split_like(np.arange(5.0), [np.zeros(2), np.zeros(3)])
        # [array([0., 1.]), array([2., 3., 4.])]
    """
    g = np.asarray(g)
    if axis is None:
        g = np.ravel(g)
        axis = 0
    extents = _extents(np.shape(g), parts, axis)
    pieces = np.split(g, np.cumsum(extents)[:-1], axis=axis)
    pieces = [np.reshape(piece, np.shape(part)) for piece, part in zip(pieces, parts)]
    if isinstance(parts, np.ndarray):  # ``np.concatenate(a)`` joins the rows of an array
        return np.stack(pieces)
    return CotangentList(pieces)  # ``+`` of two of them adds, never concatenates


def join_like(pieces: Any, whole: Any, parts: Any, axis: int | None = 0) -> np.ndarray:
    """Join ``pieces`` (one per entry of ``parts``) back into an array shaped like ``whole``.

    The adjoint of :func:`split_like` and of ``np.split``: each piece is laid out along
    ``axis`` as its part was in ``whole``; a ``None`` piece (an output nobody used) counts
    as zeros.

    Example::

        join_like([None, np.ones(2)], np.zeros(3), [np.zeros(1), np.zeros(2)])
        # array([0., 1., 1.])
    """
    shape = np.shape(whole)
    flat = axis is None
    if axis is None:
        shape, axis = (math.prod(shape),), 0
    axis = axis % len(shape)
    dtype = _cotangent_dtype(*pieces)
    extents = _extents(shape, parts, axis)
    blocks = []
    for piece, extent in zip(pieces, extents):
        block_shape = shape[:axis] + (extent,) + shape[axis + 1 :]
        if piece is None:
            blocks.append(np.zeros(block_shape, dtype=dtype))
        else:
            blocks.append(np.reshape(piece, block_shape))
    joined = np.concatenate(blocks, axis=axis) if blocks else np.zeros(shape, dtype=dtype)
    return np.reshape(joined, np.shape(whole)) if flat else joined


batches_as_is(join_like)  # right on batched values as it is


def _extents(shape: tuple, parts: Any, axis: int) -> list[int]:
    """How far along ``axis`` of an array of ``shape`` each of ``parts`` reaches."""
    axis = axis % len(shape)
    across = math.prod(shape[:axis] + shape[axis + 1 :])
    if across == 0:  # every part is empty; any split will do
        return [0] * (len(parts) - 1) + [shape[axis]]
    return [int(np.size(part)) // across for part in parts]


def unpack_like(g: Any, obj: Any) -> Any:
    """Split the cotangent of ``np.array(obj)`` back into ``obj``'s nested list structure.

    ``obj`` is what was passed to ``np.array`` / ``np.asarray``: an array (its cotangent is
    ``g`` itself, reshaped if ``ndmin`` added axes) or a (nested) list or tuple of arrays
    and numbers.

    Example::

        unpack_like(np.array([1.0, 2.0]), [3.0, 4.0])  # [np.float64(1.0), np.float64(2.0)]
    """
    if not isinstance(obj, (list, tuple)):
        return np.reshape(g, np.shape(obj))
    g = np.asarray(g)
    extra = np.ndim(g) - _nested_ndim(obj)
    if extra > 0:  # ``ndmin`` added leading axes
        g = np.reshape(g, np.shape(g)[extra:])
    pieces = [unpack_like(g[i], item) for i, item in enumerate(obj)]
    return tuple(pieces) if isinstance(obj, tuple) else pieces


def owned_items(g: Any) -> Any:
    """A private copy of the cotangent ``g`` of a list that generated code pops from or
    writes entries of: a list of the rows of ``g`` where a rule gave one array for all the
    list's entries (NumPy read the list as an array: ``np.mean(losses)``).

    Example::

        owned_items(np.array([1.0, 2.0]))  # [np.float64(1.0), np.float64(2.0)]
    """
    return owned(list(g) if _is_array_of_items(g) else g)


def _is_array_of_items(g: Any) -> bool:
    return isinstance(g, np.ndarray) and g.ndim > 0


def pack_like(pieces: Any, whole: Any, obj: Any) -> np.ndarray:
    """Assemble nested ``pieces`` shaped like ``obj`` into one array shaped like ``whole``.

    The adjoint of :func:`unpack_like`; a ``None`` anywhere in ``pieces`` counts as zeros.

    Example::

        pack_like([None, np.array(2.0)], np.zeros(2), [1.0, 1.0])  # array([0., 2.])
    """
    shape = np.shape(whole)
    if not isinstance(obj, (list, tuple)):
        if pieces is None:
            return np.zeros(shape, dtype=_cotangent_dtype(whole))
        return np.reshape(pieces, shape)
    packed = np.zeros(shape, dtype=_cotangent_dtype(*_leaves(pieces)))
    # A view of ``packed`` without the leading axes ``ndmin`` added.
    inner = np.reshape(packed, shape[len(shape) - _nested_ndim(obj) :])
    _fill(inner, (), pieces, obj)
    return packed


def _fill(target: np.ndarray, path: tuple, pieces: Any, obj: Any) -> None:
    if pieces is None:
        return
    if isinstance(obj, (list, tuple)):
        for i, (piece, item) in enumerate(zip(pieces, obj)):
            _fill(target, path + (i,), piece, item)
    else:
        target[path] = np.reshape(pieces, np.shape(target[path]))


def _leaves(pieces: Any) -> list:
    if isinstance(pieces, (list, tuple)):
        return [leaf for piece in pieces for leaf in _leaves(piece)]
    return [] if pieces is None else [pieces]


def _nested_ndim(obj: Any) -> int:
    if isinstance(obj, (list, tuple)):
        return 1 + (_nested_ndim(obj[0]) if len(obj) else 0)
    return np.ndim(obj)


# ---------------------------------------------------------------------------------------
# Copies: tile, repeat, pad


def untile(g: Any, x: Any, reps: Any) -> Any:
    """Sum the tiles of ``g = ``cotangent of ``np.tile(x, reps)`` back to ``x``'s shape.

    Example::

        untile(np.arange(4.0), np.zeros(2), 2)  # array([2., 4.])
    """
    shape = np.shape(x)
    reps = tuple(int(r) for r in np.atleast_1d(reps))
    ndim = max(len(reps), len(shape))
    reps = (1,) * (ndim - len(reps)) + reps
    base = (1,) * (ndim - len(shape)) + shape
    interleaved = tuple(n for pair in zip(reps, base) for n in pair)
    summed = np.sum(np.reshape(g, interleaved), axis=tuple(range(0, 2 * ndim, 2)))
    return np.reshape(summed, shape)


batches_as_is(untile)  # right on batched values as it is


def window_axes(x: Any, window_shape: Any, axis: Any = None) -> tuple[tuple, tuple]:
    """The window's lengths and the axes of ``x`` they slide along, as
    ``np.lib.stride_tricks.sliding_window_view(x, window_shape, axis)`` reads them.

    Example::

        window_axes(np.zeros((4, 5)), 2, axis=1)  # ((2,), (1,))
    """
    lengths = tuple(int(n) for n in np.atleast_1d(window_shape))
    if axis is None:
        axes = tuple(range(np.ndim(x)))
    else:
        axes = tuple(int(a) % np.ndim(x) for a in np.atleast_1d(axis))
    if len(axes) != len(lengths):
        raise ValueError("window_shape and axis must have the same number of entries")
    return lengths, axes


def unwindow(g: Any, x: Any, window_shape: Any, axis: Any = None) -> Any:
    """Add each window of ``g``, the cotangent of ``sliding_window_view(x, window_shape,
    axis)``, back onto the elements of ``x`` it shows: one slice per window position.

    Example::

        unwindow(np.ones((3, 2)), np.zeros(4), 2)  # array([1., 2., 2., 1.])
    """
    lengths, axes = window_axes(x, window_shape, axis)
    shape = np.shape(x)
    slid = list(shape)
    for length, a in zip(lengths, axes):
        slid[a] -= length - 1
    cotangent = np.zeros(shape, dtype=_cotangent_dtype(g))
    for offsets in np.ndindex(*lengths):
        start = [0] * len(shape)
        for offset, a in zip(offsets, axes):
            start[a] += offset
        place = tuple(slice(b, b + n) for b, n in zip(start, slid))
        cotangent[place] += g[(Ellipsis,) + tuple(offsets)]
    return cotangent


def _block_layout(arrays: Any) -> tuple[int, int]:
    """``(depth, ndim)`` of ``np.block(arrays)``: how deep its lists nest, and the number
    of dimensions of the result (every piece is given leading axes of length 1 up to it)."""
    depth, item = 0, arrays
    while isinstance(item, list):
        depth += 1
        item = item[0] if item else None
    ndim = depth
    pending = [arrays]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending.extend(item)
        else:
            ndim = max(ndim, np.ndim(item))
    return depth, ndim


def _block_shape(item: Any, level: int, depth: int, ndim: int) -> tuple[int, ...]:
    if level > depth:  # a piece, with the leading axes np.block gives it
        shape = np.shape(item)
        return (1,) * (ndim - len(shape)) + shape
    shapes = [_block_shape(part, level + 1, depth, ndim) for part in item]
    axis = ndim + level - depth - 1
    joined = list(shapes[0])
    joined[axis] = sum(shape[axis] for shape in shapes)
    return tuple(joined)


def unblock(g: Any, arrays: Any) -> Any:
    """The cotangent of ``arrays`` from ``g``, the cotangent of ``np.block(arrays)``: ``g``
    cut into the pieces' places, nested as ``arrays`` is, each of its piece's shape.

    Example::

        unblock(np.arange(3.0), [np.zeros(2), 0.0])  # [array([0., 1.]), array(2.)]
    """
    depth, ndim = _block_layout(arrays)

    def cut(piece: Any, item: Any, level: int) -> Any:
        if level > depth:
            return np.reshape(piece, np.shape(item))
        axis = level - depth - 1  # the outermost list joins along -depth, the innermost -1
        sizes = [_block_shape(part, level + 1, depth, ndim)[axis] for part in item]
        parts = np.split(piece, np.cumsum(sizes)[:-1], axis=axis)
        return [cut(part, sub, level + 1) for part, sub in zip(parts, item)]

    return cut(np.reshape(g, _block_shape(arrays, 1, depth, ndim)), arrays, 1)


def block_of(pieces: Any, arrays: Any) -> Any:
    """``np.block`` of ``pieces``, nested as ``arrays`` is, with zeros of the matching piece
    of ``arrays``'s shape where ``pieces`` holds None (a piece nothing flowed into).

    Example::

        block_of([None, np.ones(1)], [np.zeros(2), 0.0])  # array([0., 0., 1.])
    """
    dtype = _cotangent_dtype(*_leaves(pieces))

    def filled(piece: Any, item: Any) -> Any:
        if isinstance(item, list):
            parts = [None] * len(item) if piece is None else piece
            return [filled(part, sub) for part, sub in zip(parts, item)]
        return np.zeros(np.shape(item), dtype=dtype) if piece is None else piece

    return np.block(filled(pieces, arrays))


def strided_positions(x: Any, shape: Any = None, strides: Any = None) -> np.ndarray:
    """Where each element of ``np.lib.stride_tricks.as_strided(x, shape, strides)`` comes
    from: its position in ``x`` read in C order (``np.take(x, positions)`` is the same
    array). Refused where the strides step between items unevenly or leave ``x``'s
    elements, whose values the result would then not be a function of.

    Example::

        strided_positions(np.zeros(4), (3, 2), (8, 8))  # array([[0, 1], [1, 2], [2, 3]])
    """
    array = np.asarray(x)
    shape = array.shape if shape is None else tuple(int(n) for n in shape)
    strides = array.strides if strides is None else tuple(int(s) for s in strides)
    return _strided_positions(array.shape, array.strides, array.itemsize, shape, strides)


@functools.lru_cache(maxsize=64)
def _strided_positions(
    x_shape: tuple, x_strides: tuple, itemsize: int, shape: tuple, strides: tuple
) -> np.ndarray:
    steps = [s // itemsize for s in (*x_strides, *strides)]
    if any(s % itemsize for s in (*x_strides, *strides)) or min(steps, default=0) < 0:
        raise UnsupportedError(
            "np.lib.stride_tricks.as_strided with strides that are not non-negative "
            f"multiples of the item size ({itemsize} bytes) is not differentiated; use "
            "np.lib.stride_tricks.sliding_window_view, or make the array contiguous first"
        )
    x_steps, steps = steps[: len(x_shape)], steps[len(x_shape) :]
    span = 1 + sum((n - 1) * s for n, s in zip(x_shape, x_steps)) if math.prod(x_shape) else 0
    memory = np.full(span, -1, dtype=np.intp)
    memory[_offsets(x_shape, x_steps).ravel()] = np.arange(math.prod(x_shape))
    offsets = _offsets(shape, steps)
    if offsets.size and (offsets.max() >= span or memory[offsets].min() < 0):
        raise UnsupportedError(
            "np.lib.stride_tricks.as_strided reads memory outside the array's elements "
            "(its shape and strides reach past it), which is not differentiated; check "
            "the shape and strides, or use np.lib.stride_tricks.sliding_window_view"
        )
    positions = memory[offsets] if offsets.size else np.zeros(shape, dtype=np.intp)
    positions.flags.writeable = False  # cached: shared by every call with these shapes
    return positions


def _offsets(shape: tuple, steps: list) -> np.ndarray:
    """The item offset of each element of an array of ``shape`` stepping ``steps``."""
    offsets = np.zeros(shape, dtype=np.intp)
    for axis, (n, step) in enumerate(zip(shape, steps)):
        place = [1] * len(shape)
        place[axis] = n
        offsets = offsets + np.arange(n, dtype=np.intp).reshape(place) * step
    return offsets


def unrepeat(g: Any, x: Any, repeats: Any, axis: int | None = None) -> Any:
    """Sum the copies in ``g = ``cotangent of ``np.repeat(x, repeats, axis)`` back to ``x``.

    Example::

        unrepeat(np.arange(6.0), np.zeros(3), 2)  # array([1., 5., 9.])
    """
    shape = np.shape(x)
    if axis is None:
        return np.reshape(unrepeat(g, np.ravel(x), repeats, 0), shape)
    axis = axis % len(shape)
    g = np.asarray(g)
    if np.size(repeats) == 1:  # every element repeated equally: sum a new axis
        copies = int(np.ravel(repeats)[0])
        split = g.shape[:axis] + (shape[axis], copies) + g.shape[axis + 1 :]
        return np.sum(np.reshape(g, split), axis=axis + 1)
    owners = np.repeat(np.arange(shape[axis]), repeats)
    cotangent = np.zeros(shape, dtype=_cotangent_dtype(g))
    index: Any = (slice(None),) * axis + (owners,)
    np.add.at(cotangent, index, g)
    return cotangent


def unpad(
    g: Any, x: Any, pad_width: Any, mode: str = "constant", reflect_type: str = "even"
) -> Any:
    """The cotangent of ``x`` when ``g`` is the cotangent of ``np.pad(x, pad_width, mode)``.

    Constant padding cuts the border off ``g``; ``edge``, ``wrap``, ``reflect`` and
    ``symmetric`` padding copy elements of ``x``, so the border's cotangents are added
    back onto the elements they copied. Other modes raise ``UnsupportedError``.

    Example::

        unpad(np.arange(5.0), np.zeros(3), 1)          # array([1., 2., 3.])
        unpad(np.arange(5.0), np.zeros(3), 1, "edge")  # array([1., 2., 7.])
    """
    shape = np.shape(x)
    pairs = _pad_pairs(pad_width, len(shape))
    if mode == "constant":
        return np.asarray(g)[tuple(slice(b, b + n) for (b, _), n in zip(pairs, shape))]
    if mode not in ("edge", "wrap", "reflect", "symmetric") or reflect_type != "even":
        raise UnsupportedError(
            f"s2sgrad cannot differentiate np.pad with mode={mode!r}"
            + (f" and reflect_type={reflect_type!r}" if reflect_type != "even" else "")
            + "; use mode 'constant', 'edge', 'wrap', 'reflect', 'symmetric' or a statistical one"
        )
    positions: Any = np.reshape(np.arange(math.prod(shape)), shape)
    sources = np.pad(positions, pairs, mode=mode)  # type: ignore[call-overload]  # checked
    cotangent = np.zeros(math.prod(shape), dtype=_cotangent_dtype(g))
    np.add.at(cotangent, np.ravel(sources), np.ravel(g))
    return np.reshape(cotangent, shape)


def _pad_pairs(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    """``np.pad``'s ``pad_width`` in any accepted form as one (before, after) pair per axis."""
    if isinstance(pad_width, dict):
        pairs = [(0, 0)] * ndim
        for axis, width in pad_width.items():
            before, after = np.broadcast_to(width, (2,))
            pairs[axis] = (int(before), int(after))
        return pairs
    widths = np.broadcast_to(np.asarray(pad_width), (ndim, 2))
    return [(int(before), int(after)) for before, after in widths]


# ---------------------------------------------------------------------------------------
# Selections: diagonal, take, ravel order, clip


def undiagonal(g: Any, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> np.ndarray:
    """Zeros shaped like ``x`` with ``g`` on the diagonal ``np.diagonal(x, offset, axis1, axis2)``.

    Example::

        undiagonal(np.ones(2), np.zeros((2, 3)), 1)  # array([[0., 1., 0.], [0., 0., 1.]])
    """
    g = np.asarray(g)
    cotangent = np.zeros(np.shape(x), dtype=_cotangent_dtype(g))
    length = g.shape[-1]
    rows = np.arange(length) + max(-offset, 0)
    columns = np.arange(length) + max(offset, 0)
    np.moveaxis(cotangent, (axis1, axis2), (-2, -1))[..., rows, columns] = g
    return cotangent


def untake(g: Any, x: Any, indices: Any, axis: int | None = None, mode: str = "raise") -> Any:
    """The cotangent of ``x`` when ``g`` is the cotangent of ``np.take(x, indices, axis)``.

    Elements taken more than once get the sum of their cotangents.

    Example::

        untake(np.ones(3), np.zeros(2), [1, 1, 0])  # array([1., 2.])
    """
    shape = np.shape(x)
    if axis is None:
        return np.reshape(untake(g, np.ravel(x), indices, 0, mode), shape)
    axis, indices = _taken_positions(shape, indices, axis, mode)
    cotangent = np.zeros(shape, dtype=_cotangent_dtype(g))
    np.add.at(cotangent, (slice(None),) * axis + (indices,), g)
    return cotangent


def untake_along_axis(g: Any, x: Any, indices: Any, axis: int | None = -1) -> Any:
    """The cotangent of ``x`` when ``g`` is that of ``np.take_along_axis(x, indices, axis)``.

    Elements taken more than once get the sum of their cotangents; where ``x`` was
    broadcast against ``indices`` (a length-1 axis), the copies' cotangents are summed.

    Example::

        untake_along_axis(np.ones((1, 2)), np.zeros((1, 3)), np.array([[2, 2]]), 1)
        # array([[0., 0., 2.]])
    """
    shape = np.shape(x)
    if axis is None:
        return np.reshape(untake_along_axis(g, np.ravel(x), indices, 0), shape)
    axis = axis % len(shape)
    indices = np.asarray(indices, dtype=np.intp)
    out_shape = np.shape(g)
    positions = []
    for d, n in enumerate(out_shape):
        if d == axis:
            positions.append(indices)
            continue
        along = np.arange(n) if shape[d] != 1 else np.zeros(n, dtype=np.intp)
        positions.append(np.reshape(along, (1,) * d + (n,) + (1,) * (len(out_shape) - d - 1)))
    cotangent = np.zeros(shape, dtype=_cotangent_dtype(g))
    np.add.at(cotangent, tuple(positions), g)
    return cotangent


def undiff(g: Any, n: int = 1, axis: int = -1) -> Any:
    """The adjoint of ``np.diff(., n, axis)``: the cotangent of the array ``np.diff`` read,
    when ``g`` is that of its result (one element longer along ``axis`` per difference).

    Example::

        undiff(np.ones(2))  # array([-1.,  0.,  1.])
    """
    widths_before = [(0, 0)] * np.ndim(g)
    widths_after = [(0, 0)] * np.ndim(g)
    widths_before[axis] = (1, 0)
    widths_after[axis] = (0, 1)
    for _ in range(n):
        g = np.pad(g, widths_before) - np.pad(g, widths_after)
    return g


def rollaxis_destination(ndim: int, axis: int, start: int = 0) -> int:
    """Where ``np.rollaxis(a, axis, start)`` puts ``axis`` of an ``ndim``-dimensional ``a``.

    Example::

        rollaxis_destination(3, 2, 0)  # 0; rollaxis_destination(3, 0, 3) is 2
    """
    axis = axis % ndim
    if start < 0:
        start += ndim
    return start - 1 if axis < start else start


def item_mask(x: Any, args: tuple = ()) -> np.ndarray:
    """Where in ``x`` the element ``x.item(*args)`` is: a boolean array of ``x``'s shape.

    ``args`` is empty (``x`` has one element), one flat index, or one index per axis.

    Example::

        item_mask(np.zeros((2, 2)), (1, 0))  # array([[False, False], [ True, False]])
    """
    shape = np.shape(x)
    size = math.prod(shape)
    if len(args) == 1 and isinstance(args[0], tuple):
        args = args[0]
    if not args:
        position = 0
    elif len(args) == 1:
        position = int(args[0]) % size
    else:
        position = int(np.ravel_multi_index(tuple(int(i) % n for i, n in zip(args, shape)), shape))
    return np.reshape(np.arange(size) == position, shape)


def _taken_positions(shape: tuple, indices: Any, axis: int, mode: str) -> tuple[int, np.ndarray]:
    """The axis ``np.take`` took along (non-negative) and the positions it read there."""
    axis = axis % len(shape)
    indices = np.asarray(indices, dtype=np.intp)
    if mode == "wrap":
        indices = np.mod(indices, shape[axis])
    elif mode == "clip":
        indices = np.clip(indices, 0, shape[axis] - 1)
    return axis, indices


def ravel_positions(x: Any, order: str = "C") -> np.ndarray:
    """For each element of ``np.ravel(x, order)``, its position in ``np.ravel(x)`` (C order).

    Orders ``"A"`` and ``"K"`` depend on how ``x`` is laid out in memory, which is why
    this helper looks at ``x`` itself rather than its shape.

    Example::

        ravel_positions(np.zeros((2, 2)), "F")  # array([0, 2, 1, 3])
    """
    shape = np.shape(x)
    positions = np.reshape(np.arange(math.prod(shape)), shape)
    if order == "A":
        order = "F" if isinstance(x, np.ndarray) and x.flags.f_contiguous else "C"
    if order == "K" and isinstance(x, np.ndarray):
        # ``empty_like`` lays the positions out in memory as ``x`` is, so reading them
        # in memory order reads them as ``np.ravel(x, "K")`` reads ``x``.
        laid_out = np.empty_like(x, dtype=np.intp)
        laid_out[...] = positions
        return np.ravel(laid_out, order="K")
    return np.ravel(positions, order="F" if order == "F" else "C")


def clip_regions(a: Any, a_min: Any, a_max: Any) -> tuple[Any, Any, Any]:
    """Where ``np.clip(a, a_min, a_max)`` passes ``a`` through, takes ``a_min``, takes ``a_max``.

    Three boolean masks of the broadcast shape, one true at each element; a bound may be
    ``None``. An element equal to a bound counts as passed through.

    Example::

        clip_regions(np.array([-1.0, 0.5, 2.0]), 0.0, 1.0)
        # (array([False,  True, False]), array([ True, False, False]), array([False, False,  True]))
    """
    a, a_min, a_max = (np.asarray(v) if type(v) in (list, tuple) else v for v in (a, a_min, a_max))
    inside = np.ones(np.shape(a), dtype=bool)
    below = np.zeros(np.shape(a), dtype=bool)
    if a_min is not None:
        below = a < a_min
        inside = ~below
    if a_max is None:
        return inside, below, np.zeros_like(inside)
    # ``np.clip`` is ``minimum(maximum(a, a_min), a_max)``: a_max wins when bounds cross.
    above = (a > a_max) if a_min is None else (np.maximum(a, a_min) > a_max)
    return inside & ~above, below & ~above, above


batches_as_is(clip_regions)  # right on batched values as it is


# ---------------------------------------------------------------------------------------
# Rules for the helpers above (each is linear in its first argument)


@vjp_rule(index_cotangent)
def _index_cotangent_vjp(g, ans, g_in, x, index):
    return g[index], None, None


@jvp_rule(index_cotangent)
def _index_cotangent_jvp(t, ans, g_in, x, index):
    return index_cotangent(t, x, index), None, None


@vjp_rule(assigned_cotangent)
def _assigned_cotangent_vjp(g, ans, g_in, index):
    return index_cotangent(only_last_writes(g, np.shape(g_in), index), g_in, index), None


@jvp_rule(assigned_cotangent)
def _assigned_cotangent_jvp(t, ans, g_in, index):
    return assigned_cotangent(t, index), None


@vjp_rule(only_last_writes)
def _only_last_writes_vjp(g, ans, part, shape, index):
    return only_last_writes(g, shape, index), None, None


@jvp_rule(only_last_writes)
def _only_last_writes_jvp(t, ans, part, shape, index):
    return only_last_writes(t, shape, index), None, None


@vjp_rule(for_items)
def _for_items_vjp(g, ans, x):
    return (items_cotangent(g, x),)  # in a 1-tuple: a tuple's cotangent may be a tuple


@jvp_rule(for_items)
def _for_items_jvp(t, ans, x):
    return (items_cotangent(t, x),)  # a tuple's tangent is a tuple; a dict's keys: zeros


@vjp_rule(items_cotangent)
def _items_cotangent_vjp(g, ans, g_in, x):
    return items_cotangent(g, x), None


@jvp_rule(items_cotangent)
def _items_cotangent_jvp(t, ans, g_in, x):
    return items_cotangent(t, x), None


@vjp_rule(concatenated)
def _concatenated_vjp(g, ans, a, b):
    return sequence_part(g, 0, len(a)), sequence_part(g, len(a), len(ans))


@jvp_rule(concatenated)
def _concatenated_jvp(t, ans, a, b):
    return concatenated(t, zeros_like_value(b)), concatenated(zeros_like_value(a), t)


@vjp_rule(repeated)
def _repeated_vjp(g, ans, a, n):
    return repeated_sum(g, a, n), None


@jvp_rule(repeated)
def _repeated_jvp(t, ans, a, n):
    return repeated(t, n), None


@vjp_rule(repeated_sum)
def _repeated_sum_vjp(g, ans, g_in, a, n):
    return repeated(g, n), None, None


@jvp_rule(repeated_sum)
def _repeated_sum_jvp(t, ans, g_in, a, n):
    return repeated_sum(t, a, n), None, None


@vjp_rule(sequence_part)
def _sequence_part_vjp(g, ans, g_in, start, stop):
    return index_cotangent(g, g_in, slice(start, stop)), None, None


@jvp_rule(sequence_part)
def _sequence_part_jvp(t, ans, g_in, start, stop):
    return sequence_part(t, start, stop), None, None


@vjp_rule(dict_entry)
def _dict_entry_vjp(g, ans, g_in, key, value):
    return index_cotangent(g, g_in, key), None, None


@jvp_rule(dict_entry)
def _dict_entry_jvp(t, ans, g_in, key, value):
    return dict_entry(t, key, value), None, None


@vjp_rule(split_like)
def _split_like_vjp(g, ans, g_in, parts, axis=0):
    return join_like(g, g_in, parts, axis), None, None


@jvp_rule(split_like)
def _split_like_jvp(t, ans, g_in, parts, axis=0):
    return split_like(t, parts, axis), None, None


@vjp_rule(join_like)
def _join_like_vjp(g, ans, pieces, whole, parts, axis=0):
    return split_like(g, parts, axis), None, None, None


@jvp_rule(join_like)
def _join_like_jvp(t, ans, pieces, whole, parts, axis=0):
    return join_like(t, whole, parts, axis), None, None, None


@vjp_rule(owned_items)
def _owned_items_vjp(g, ans, g_in):
    return (pack_like(g, g_in, ans) if _is_array_of_items(g_in) else g,)


@jvp_rule(owned_items)
def _owned_items_jvp(t, ans, g_in):
    return (owned_items(t),)


@vjp_rule(unpack_like)
def _unpack_like_vjp(g, ans, g_in, obj):
    return pack_like(g, g_in, obj), None


@jvp_rule(unpack_like)
def _unpack_like_jvp(t, ans, g_in, obj):
    return unpack_like(t, obj), None


@vjp_rule(pack_like)
def _pack_like_vjp(g, ans, pieces, whole, obj):
    return unpack_like(g, obj), None, None


@jvp_rule(pack_like)
def _pack_like_jvp(t, ans, pieces, whole, obj):
    return pack_like(t, whole, obj), None, None


@vjp_rule(untile)
def _untile_vjp(g, ans, g_in, x, reps):
    return np.tile(g, reps), None, None


@jvp_rule(untile)
def _untile_jvp(t, ans, g_in, x, reps):
    return untile(t, x, reps), None, None


@vjp_rule(unwindow)
def _unwindow_vjp(g, ans, g_in, x, window_shape, axis=None):
    view = np.lib.stride_tricks.sliding_window_view(g, window_shape, axis)
    return view, None, None, None


@jvp_rule(unwindow)
def _unwindow_jvp(t, ans, g_in, x, window_shape, axis=None):
    return unwindow(t, x, window_shape, axis), None, None, None


@vjp_rule(unblock)
def _unblock_vjp(g, ans, g_in, arrays):
    return block_of(g, arrays), None


@jvp_rule(unblock)
def _unblock_jvp(t, ans, g_in, arrays):
    return unblock(t, arrays), None


@vjp_rule(block_of)
def _block_of_vjp(g, ans, pieces, arrays):
    return unblock(g, arrays), None


@jvp_rule(block_of)
def _block_of_jvp(t, ans, pieces, arrays):
    return block_of(t, arrays), None


nondifferentiable(window_axes, strided_positions)


@vjp_rule(unrepeat)
def _unrepeat_vjp(g, ans, g_in, x, repeats, axis=None):
    return np.repeat(g, repeats, axis=axis), None, None, None


@jvp_rule(unrepeat)
def _unrepeat_jvp(t, ans, g_in, x, repeats, axis=None):
    return unrepeat(t, x, repeats, axis), None, None, None


@vjp_rule(unpad)
def _unpad_vjp(g, ans, g_in, x, pad_width, mode="constant", reflect_type="even"):
    if mode == "constant":
        return np.pad(g, pad_width), None, None
    return np.pad(g, pad_width, mode=mode), None, None


@jvp_rule(unpad)
def _unpad_jvp(t, ans, g_in, x, pad_width, mode="constant", reflect_type="even"):
    return unpad(t, x, pad_width, mode, reflect_type), None, None


@vjp_rule(undiagonal)
def _undiagonal_vjp(g, ans, g_in, x, offset=0, axis1=0, axis2=1):
    return np.diagonal(g, offset, axis1, axis2), None


@jvp_rule(undiagonal)
def _undiagonal_jvp(t, ans, g_in, x, offset=0, axis1=0, axis2=1):
    return undiagonal(t, x, offset, axis1, axis2), None


@vjp_rule(untake)
def _untake_vjp(g, ans, g_in, x, indices, axis=None, mode="raise"):
    return np.take(g, indices, axis=axis, mode=mode), None, None


@jvp_rule(untake)
def _untake_jvp(t, ans, g_in, x, indices, axis=None, mode="raise"):
    return untake(t, x, indices, axis, mode), None, None


@vjp_rule(zero_if_integer)
def _zero_if_integer_vjp(g, ans, g_in, like):
    return zero_if_integer(g, like), None


@jvp_rule(zero_if_integer)
def _zero_if_integer_jvp(t, ans, g_in, like):
    return zero_if_integer(t, like), None


@vjp_rule(added_at)
def _added_at_vjp(g, ans, a, indices, values):
    return g, None, unbroadcast(g[indices], values)


def _shape_or_none(x: Any) -> Any:
    """``np.shape(x)``, or None for a ragged tuple: the tangents of an index tuple whose
    arrays differ in shape (``(rows[:, None], cols[None, :])``) have no one shape.

    Example::

        _shape_or_none((np.zeros((2, 1)), np.zeros((1, 2))))  # None
    """
    try:
        return np.shape(x)
    except ValueError:
        return None


@jvp_rule(added_at, inline=False)
def _added_at_jvp(t, ans, a, indices, values):
    # t is the tangent of a or of values; an entry for an argument of another shape is not
    # asked for (the tangents of the indices, asked for too, may be a ragged tuple)
    t_shape = _shape_or_none(t)
    from_a = t if t_shape is not None and t_shape == np.shape(a) else None
    from_values = None
    if t_shape is not None and t_shape == np.shape(values):
        from_values = added_at(np.zeros_like(ans), indices, t)
    return from_a, None, from_values


@vjp_rule(untake_along_axis)
def _untake_along_axis_vjp(g, ans, g_in, x, indices, axis=-1):
    return np.take_along_axis(g, indices, axis=axis), None, None


@jvp_rule(untake_along_axis)
def _untake_along_axis_jvp(t, ans, g_in, x, indices, axis=-1):
    return untake_along_axis(t, x, indices, axis), None, None


@vjp_rule(undiff)
def _undiff_vjp(g, ans, g_in, n=1, axis=-1):
    return np.diff(g, n, axis)


@jvp_rule(undiff)
def _undiff_jvp(t, ans, g_in, n=1, axis=-1):
    return undiff(t, n, axis)


nondifferentiable(ravel_positions, clip_regions, dict_keys, rollaxis_destination, item_mask)
