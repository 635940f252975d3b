"""``vmap``: a function of one example applied to a whole batch of examples.

The batched run calls the function once with :class:`BatchedValue` arguments, so every
NumPy operation in it applies to all examples at once (the batching rules of
``batching/rules.py``). Where that is impossible — Python control flow on a value, a
function without a batching rule, ``float(x)`` — the function runs once per example
instead, and ``vmap`` says so once with a :class:`S2SGradWarning`. The first batched run of
each argument signature is checked against its first and last examples computed alone, so a
function that treats a batch differently from an example (``isinstance(x, np.ndarray)``)
is run per example rather than answered wrongly.

Example::

    def loss(w, x, y):
        return np.sum((x @ w - y) ** 2)

    per_example = vmap(sg.grad(loss), in_axes=(None, 0, 0))
    per_example(w, xs, ys)  # one gradient wrt w per row of xs, stacked on axis 0
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad.batching.helpers import batched_twin
from s2sgrad.batching.values import BatchedValue, NotBatchable
from s2sgrad.errors import S2SGradWarning, warn_at_caller
from s2sgrad.pytrees import _node, tree_flatten, tree_unflatten
from s2sgrad.runtime.kept_states import kept_states_of
from s2sgrad.runtime.replays import StatesAndDraws

__all__ = ["vmap"]

Axes = int | None | tuple[Any, ...]


def vmap(f: Callable[..., Any], in_axes: Axes = 0, out_axes: Axes = 0) -> Callable[..., Any]:
    """``f`` mapped over a batch axis of its arguments, the results stacked on ``out_axes``.

    ``in_axes`` is an int (every argument's batch axis), ``None`` (not batched: every
    example sees the same value) or a tuple with one such entry per positional argument;
    an argument that is a pytree (a list, dict, dataclass ...) has every leaf batched on
    its entry's axis, or an entry may be a pytree itself, shaped as the argument's first
    levels, giving each part its own axis (``in_axes=({"w": None, "b": 0},)``).
    ``out_axes`` says where the batch axis goes in each result leaf (an int, or a tuple
    with one entry per element of a tuple result). Composes with the
    transforms: ``vmap(sg.grad(loss), in_axes=(None, 0, 0))`` gives per-example gradients.

    Example::

        vmap(np.dot, in_axes=(0, None))(np.ones((5, 3)), np.arange(3.0))  # shape (5,)
    """
    if not callable(f):
        raise TypeError(f"vmap takes a function, not {f!r}")
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")
    return _Vectorized(f, in_axes, out_axes)


def _check_axes_spec(spec: Axes, what: str) -> None:
    if what == "in_axes" and spec is not None and not isinstance(spec, tuple) and _node(spec):
        raise TypeError(
            f"vmap: in_axes takes an int, None, or a tuple with one entry per positional "
            f"argument, not {spec!r}; for one argument, write in_axes=({spec!r},)"
        )
    entries = spec if isinstance(spec, tuple) else (spec,)
    for entry in entries:
        entry_leaves = tree_flatten(entry)[0] if what == "in_axes" else [entry]
        for leaf in entry_leaves:
            if leaf is not None and not isinstance(leaf, (int, np.integer)):
                raise TypeError(
                    f"vmap: {what} takes ints, None, or a tuple of them (in_axes: or pytrees "
                    f"of them), not {entry!r}"
                )


def _leaf_axes(spec: Any, arg: Any, position: int) -> list:
    """The batch axis of each leaf of ``arg``, for its ``in_axes`` entry ``spec``: an int or
    ``None`` for all its leaves, or a pytree matching ``arg``'s first levels."""
    if spec is None or isinstance(spec, (int, np.integer)):
        return [spec] * len(tree_flatten(arg)[0])
    spec_node, arg_node = _node(spec), _node(arg)
    if spec_node is None or arg_node is None or type(spec) is not type(arg):
        raise ValueError(
            f"vmap: the in_axes entry {spec!r} for argument {position} does not match its "
            f"structure (a {type(arg).__name__}); give an int or None, or a pytree of the "
            "argument's shape"
        )
    spec_parts, spec_aux = spec_node[0](spec)
    arg_parts, arg_aux = arg_node[0](arg)
    spec_children, arg_children = list(spec_parts), list(arg_parts)
    if spec_aux != arg_aux or len(spec_children) != len(arg_children):
        raise ValueError(
            f"vmap: the in_axes entry {spec!r} for argument {position} does not match its "
            f"structure {tree_flatten(arg)[1]!r} (other keys, fields or length)"
        )
    axes = []
    for part_spec, part in zip(spec_children, arg_children):
        axes += _leaf_axes(part_spec, part, position)
    return axes


class _Vectorized:
    """The function ``vmap`` returns: tries one batched call, else one call per example."""

    def __init__(self, f: Callable[..., Any], in_axes: Axes, out_axes: Axes) -> None:
        functools.update_wrapper(self, f, updated=())
        self.f, self.in_axes, self.out_axes = f, in_axes, out_axes
        self.__s2sgrad_vmapped__ = True  # source transformation names it when refusing it
        self.warned = False
        self.checked: set[tuple] = set()  # argument signatures whose batched run was checked
        self.per_example_reason: str | None = None  # why it runs one example at a time
        # a transform of s2sgrad runs the batched twin of its generated code (which checks
        # no argument types); anything else of s2sgrad's runs on one example at a time
        self.generated = getattr(f, "generic_function", None)
        if getattr(f, "mode", None) == "tape" or getattr(f, "kind", None) not in _TWINNED:
            self.generated = None
        if type(f).__module__.startswith("s2sgrad.") and self.generated is None:
            self.per_example_reason = "an s2sgrad transform runs on one example at a time"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:  # in_axes has no entry for them: mapped or not would be a guess
            names = ", ".join(kwargs)
            raise TypeError(
                f"vmap: {getattr(self.f, '__name__', 'the function')} was given keyword "
                f"arguments ({names}), which in_axes cannot describe; pass them by position "
                "with an in_axes entry each (None for one not mapped), or bind them first "
                "(vmap(functools.partial(f, name=value)))"
            )
        axes = self._argument_axes(len(args))
        size = _batch_size(args, axes)
        if self.per_example_reason is not None and not self.warned:
            self._run_per_example(self.per_example_reason)
        kept = None
        if self.per_example_reason is None:
            checking = _signature(args, axes) not in self.checked
            kept = self._kept_states(args) if checking else None
            start = kept.note() if kept else []
            try:
                return self._batched(args, axes, size, kept, start)
            except NotBatchable as error:
                self._run_per_example(str(error))
            except Exception as error:  # noqa: BLE001 - the per-example run is the answer
                self._run_per_example(f"{type(error).__name__}: {error}")
            if kept is not None:  # the examples start where the batched run started
                kept.set(start)
        return self._per_example(args, axes, size, kept)

    def __repr__(self) -> str:
        return f"vmap({getattr(self.f, '__qualname__', self.f)!r}, in_axes={self.in_axes!r})"

    def _argument_axes(self, count: int) -> tuple:
        if not isinstance(self.in_axes, tuple):
            return (self.in_axes,) * count
        if len(self.in_axes) != count:
            raise ValueError(
                f"vmap: in_axes has {len(self.in_axes)} entries, but the function was called "
                f"with {count} positional arguments; give one entry per argument"
            )
        return self.in_axes

    def _run_per_example(self, reason: str) -> None:
        self.per_example_reason, self.warned = reason, True
        warn_at_caller(
            f"vmap({getattr(self.f, '__qualname__', self.f)}) runs the function once per "
            f"example: it cannot run on the whole batch at once ({reason})",
            S2SGradWarning,
        )

    def _batched(
        self, args: tuple, axes: tuple, size: int, kept: StatesAndDraws | None, start: list
    ) -> Any:
        """One run on the whole batch; the first with a signature is compared with two
        examples', each run from the state the batched run started from (a counter, a
        model's attributes: ``kept``), and the batched run's state is left."""
        batched = tuple(_batch(arg, axis) for arg, axis in zip(args, axes))
        if self.generated is not None:
            if any(isinstance(arg, (dict, list, tuple)) for arg in args):
                raise NotBatchable("a transform's arguments that hold containers")
            result = batched_twin(self.generated())(*batched)
        else:
            result = self.f(*batched)
        stacked = _unbatch(result, self.out_axes, size)
        signature = _signature(args, axes)
        if signature not in self.checked:
            after = kept.note() if kept else []
            if kept and kept.kept.stored_numbers(start[0], after[0], _holds_batched_values):
                raise NotBatchable("it stores values of the batch around it (a running mean)")
            for index in sorted({0, size - 1}):  # a batch mixed up shows at one end or the other
                if kept:
                    kept.set(start)
                expected = _unbatch_single(self.f(*_example(args, axes, index)))
                if not _agree(_one_example(stacked, self.out_axes, index), expected):
                    raise NotBatchable(f"its batched result differs from example {index}'s")
            if kept:
                kept.set(after)
            self.checked.add(signature)
        return stacked

    def _kept_states(self, args: tuple) -> StatesAndDraws:
        """What the function keeps and the random generators it can reach: each example
        computed alone starts from them as the batched run did (the same draws)."""
        return StatesAndDraws(kept_states_of(self.f).with_arguments(args), self.f, args)

    def _per_example(self, args: tuple, axes: tuple, size: int, kept: StatesAndDraws | None) -> Any:
        """One run per example, each from the state the call started from (as the batched
        run would see it), the last one's state left."""
        kept = kept or self._kept_states(args)
        start = kept.note()
        results = []
        for i in range(size):
            kept.set(start)
            results.append(self.f(*_example(args, axes, i)))
        leaves_per_example = [tree_flatten(result) for result in results]
        structure = leaves_per_example[0][1]
        for _, other in leaves_per_example[1:]:
            if other != structure:
                raise ValueError(
                    "vmap: the function returned results of different structures for "
                    f"different examples ({structure!r} and {other!r})"
                )
        out_axes = _leaf_out_axes(self.out_axes, results[0])
        stacked = [
            _stack([leaves[k] for leaves, _ in leaves_per_example], axis)
            for k, axis in enumerate(out_axes)
        ]
        return tree_unflatten(structure, stacked)


# the transforms whose generated code vmap runs batched: one example's arguments in, one
# example's derivative out
_TWINNED = frozenset({"grad", "value_and_grad"})


def _batch_size(args: tuple, axes: tuple) -> int:
    sizes: dict[int, int] = {}
    for position, (arg, spec) in enumerate(zip(args, axes)):
        for leaf, axis in zip(tree_flatten(arg)[0], _leaf_axes(spec, arg, position)):
            if axis is None:
                continue
            shape = np.shape(leaf)
            if not -len(shape) <= axis < len(shape):
                raise ValueError(
                    f"vmap: argument {position} has a leaf of shape {shape}, which has no "
                    f"axis {axis} to map over; pass in_axes=None for it, or another axis"
                )
            sizes.setdefault(shape[axis], position)
    if not sizes:
        raise ValueError("vmap: no argument is mapped over (every in_axes entry is None)")
    if len(sizes) > 1:
        raise ValueError(
            f"vmap: the mapped axes have different lengths {sorted(sizes)}; every mapped "
            "argument needs one entry per example"
        )
    (size,) = sizes
    if size == 0:
        raise ValueError("vmap: the mapped axis is empty; there is no example to run")
    return size


def _batch(arg: Any, spec: Any) -> Any:
    if spec is None:
        return arg
    leaves, structure = tree_flatten(arg)
    axes = _leaf_axes(spec, arg, 0)
    for leaf, axis in zip(leaves, axes):
        if axis is not None and not isinstance(leaf, (np.ndarray, np.generic, float, int, complex)):
            raise NotBatchable(f"an argument holds a {type(leaf).__name__}")
    return tree_unflatten(
        structure,
        [
            leaf if axis is None else BatchedValue(np.moveaxis(np.asarray(leaf), axis, 0))
            for leaf, axis in zip(leaves, axes)
        ],
    )


def _example(args: tuple, axes: tuple, index: int) -> tuple:
    def take(arg, spec):
        if spec is None:
            return arg
        leaves, structure = tree_flatten(arg)
        axes = _leaf_axes(spec, arg, 0)
        return tree_unflatten(
            structure,
            [
                leaf if axis is None else np.take(leaf, index, axis=axis)
                for leaf, axis in zip(leaves, axes)
            ],
        )

    return tuple(take(arg, axis) for arg, axis in zip(args, axes))


def _leaf_out_axes(out_axes: Axes, result: Any) -> list:
    """The batch axis of each leaf of ``result``."""
    if not isinstance(out_axes, tuple):
        return [out_axes] * len(tree_flatten(result)[0])
    if not isinstance(result, tuple) or len(result) != len(out_axes):
        raise ValueError(
            f"vmap: out_axes has {len(out_axes)} entries, but the function returned "
            f"{_describe(result)}; give one entry per element of a tuple result"
        )
    axes = []
    for entry, part in zip(out_axes, result):
        axes += [entry] * len(tree_flatten(part)[0])
    return axes


def _describe(result: Any) -> str:
    if isinstance(result, tuple):
        return f"a tuple of {len(result)}"
    return f"a {type(result).__name__}"


def _unbatch(result: Any, out_axes: Axes, size: int) -> Any:
    leaves, structure = tree_flatten(result)
    axes = _leaf_out_axes(out_axes, result)
    stacked = []
    for leaf, axis in zip(leaves, axes):
        if isinstance(leaf, BatchedValue):
            if axis is None:
                raise ValueError("vmap: out_axes=None for a result that differs between examples")
            stacked.append(np.moveaxis(leaf.array, 0, axis))
        elif axis is None:
            stacked.append(leaf)
        else:  # the same for every example
            array = np.asarray(leaf)
            stacked.append(np.moveaxis(np.broadcast_to(array, (size,) + array.shape), 0, axis))
    return tree_unflatten(structure, stacked)


def _unbatch_single(result: Any) -> list:
    return [np.asarray(leaf) for leaf in tree_flatten(result)[0]]


def _one_example(stacked: Any, out_axes: Axes, index: int) -> list:
    leaves = tree_flatten(stacked)[0]
    axes = _leaf_out_axes(out_axes, stacked)
    return [
        leaf if axis is None else np.take(leaf, index, axis=axis)
        for leaf, axis in zip(leaves, axes)
    ]


def _agree(got: list, expected: list) -> bool:
    if len(got) != len(expected):
        return False
    for a, b in zip(got, expected):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if np.issubdtype(b.dtype, np.inexact):
            tolerance = 1e3 * np.finfo(b.dtype).eps
            if not np.allclose(
                a, b, rtol=tolerance, atol=tolerance * max(1.0, np.abs(b).max(initial=0))
            ):
                return False
        elif not np.array_equal(a, b):
            return False
    return True


def _stack(leaves: list, axis: Any) -> Any:
    if axis is None:
        first = leaves[0]
        if not all(np.array_equal(first, leaf) for leaf in leaves[1:]):
            raise ValueError("vmap: out_axes=None for a result that differs between examples")
        return first
    stacked_ndim = np.ndim(leaves[0]) + 1
    if not -stacked_ndim <= axis < stacked_ndim:
        raise ValueError(
            f"vmap: out_axes entry {axis} is out of range for a result with "
            f"{stacked_ndim - 1} dimension(s) per example; give an axis of the stacked result "
            f"(-{stacked_ndim} to {stacked_ndim - 1})"
        )
    return np.stack(leaves, axis=axis)  # dispatched: tape values stay on the tape


def _signature(args: tuple, axes: tuple) -> tuple:
    parts = []
    for arg, axis in zip(args, axes):
        leaves, structure = tree_flatten(arg)
        parts.append((repr(axis), repr(structure), tuple(_leaf_signature(leaf) for leaf in leaves)))
    return tuple(parts)


def _leaf_signature(leaf: Any) -> Any:
    """What may change how a function treats a leaf: an array's shape and dtype, an integer's
    or a flag's value (it may set a shape or a loop's length), else the leaf's type."""
    if isinstance(leaf, (np.ndarray, np.generic)):
        return (leaf.shape, leaf.dtype.str)
    if isinstance(leaf, (bool, int)):
        return (type(leaf).__name__, leaf)
    return type(leaf).__qualname__


def _holds_batched_values(value: Any) -> bool:
    """A batch's value, or a list, tuple or dict holding one (two levels down): stored
    around the function by its batched run, it would be left in the user's state."""
    if isinstance(value, BatchedValue):
        return True
    if isinstance(value, (list, tuple, dict)):
        items = value.values() if isinstance(value, dict) else value
        return any(isinstance(v, BatchedValue) for v in items)
    return False
