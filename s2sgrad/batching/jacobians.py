"""Jacobians from batched pullbacks and pushforwards, falling back to one element at a time.

:func:`reverse_jacobian` (behind ``sg.jacobian``) seeds the pullback with the one-hot
cotangents of many output elements at once, as one :class:`BatchedValue`, and runs the
generated backward code once per chunk instead of once per element; :func:`forward_jacobian`
(behind ``sg.jacfwd``) does the same with tangents through the generated JVP code. Where
that is impossible (the tape, a custom derivative, an operation without a batching rule),
the first attempt raises :class:`NotBatchable`, the generated function is remembered in
:data:`refused`, and it is differentiated one element at a time from then on.

Example::

    jacobian = reverse_jacobian(layer, (x, w), {}, 1, "auto")  # wrt w
    stats["reverse_batched"]  # 1: one output, its rows computed in one backward pass
"""

from __future__ import annotations

import collections
import functools
import inspect
import types
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from s2sgrad.batching.helpers import batched_twin, batching_rule_of, is_generated
from s2sgrad.batching.values import BatchedValue, NotBatchable
from s2sgrad.compiler.caller_dicts import refuse_writes_into_caller_dicts
from s2sgrad.compiler.pipeline import derivative
from s2sgrad.engines import products
from s2sgrad.engines.arguments import (
    bind_self,
    check_differentiable,
    containers_of,
    positional_name,
    refuse_unknown_constants,
)
from s2sgrad.engines.products import vjp_engine
from s2sgrad.errors import S2SGradError
from s2sgrad.numpy_signatures import positional_parameters
from s2sgrad.runtime import as_gradient, zeros_like_structure
from s2sgrad.runtime.core import rebuild_sequence
from s2sgrad.runtime.kept_states import kept_states_of
from s2sgrad.runtime.linalg import refuse_undefined_tangent, undefined_eigenvector_tangents
from s2sgrad.runtime.replays import SameDraws
from s2sgrad.tape import is_tape_value

__all__ = [
    "reverse_jacobian",
    "forward_jacobian",
    "stats",
    "refused",
    "CHUNK_ELEMENTS",
    "BATCHING",
    "leaf_paths",
    "leaf_at",
    "replace_leaf",
]

# How many output (or input) elements one run may batch: chunks are cut so that the
# batch times the largest array the function works with stays below this many elements.
CHUNK_ELEMENTS = 1 << 22

# Whether to try batched runs at all (tests and benchmarks switch it off to compare).
BATCHING = True

# Counts of Jacobian blocks computed batched and one element at a time.
stats: collections.Counter = collections.Counter()

# Generated functions that cannot run batched → why (so a failure is not retried).
refused: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# Reverse mode -----------------------------------------------------------------------------


def reverse_jacobian(f: Any, args: tuple, kwargs: dict, index: int, mode: str) -> Any:
    """The Jacobian of ``f(*args, **kwargs)`` wrt ``args[index]`` by reverse mode.

    Shape ``out.shape + x.shape``; for containers, the output's structure of the
    argument's structure of such blocks.

    Example::

        reverse_jacobian(np.sin, (np.zeros(3),), {}, 0, "auto")  # the 3x3 identity
    """
    f, args, function, primals, name = _differentiated(f, args, kwargs, index)
    x = args[index]
    out, pullback = vjp_engine(function, primals, (name,), mode)
    batchable = _batchable_backward(pullback, primals) if BATCHING else None
    rows = {}
    for path, leaf in leaf_paths(out):
        blocks = None
        if batchable is not None and batchable[0] not in refused and np.size(leaf) > 1:
            blocks = _try(batchable[0], _batched_rows, *batchable, out, path, x)
        if blocks is None:
            stats["reverse_loop"] += 1
            blocks = [_as_row(pullback(seed), x) for seed in _seeds(out, path)]
        else:
            stats["reverse_batched"] += 1
        rows[path] = blocks
    return _assemble(out, x, rows, stack_axis=0)


def _batchable_backward(pullback: Any, primals: tuple) -> tuple | None:
    """``(backward, saved)`` of a generated pullback that may run batched, else None."""
    if not (
        isinstance(pullback, functools.partial)
        and is_generated(pullback.func)
        and len(pullback.args) == 1
        and not pullback.keywords
    ):
        return None  # the tape
    backward, saved = pullback.func, pullback.args[0]
    if backward in refused:
        return None
    if _holds_callables(saved):
        refused[backward] = "its backward pass calls pullbacks dispatched at run time"
        return None
    if _holds_tape_values(primals):
        return None
    return backward, saved


def _batched_rows(backward, saved, out, path, x) -> Iterator[Any]:
    """Blocks of rows of the Jacobian of output leaf ``path``, one backward pass each."""
    leaf = leaf_at(out, path)
    twin = batched_twin(backward)
    for start, stop in _chunks(np.size(leaf), _largest(saved, out, x)):
        seeds = BatchedValue(_one_hot(leaf, start, stop))
        cotangent = replace_leaf(zeros_like_structure(out), path, seeds)
        yield _batch_arrays(twin(saved, cotangent), x, stop - start, gradient=True)


# Forward mode -----------------------------------------------------------------------------


def forward_jacobian(f: Any, args: tuple, kwargs: dict, index: int, mode: str) -> Any:
    """The Jacobian of ``f(*args, **kwargs)`` wrt ``args[index]`` by forward mode.

    Example::

        forward_jacobian(lambda x: x**2, (np.arange(3.0),), {}, 0, "auto")  # diag([0, 2, 4])
    """
    f, args, function, primals, name = _differentiated(f, args, kwargs, index)
    x = args[index]
    pushforward = _generated_jvp(function, primals, name, mode)
    if pushforward is None:
        return _jvp_loop(f, args, index, mode)
    kept = kept_states_of(function).with_arguments(primals)  # put back if refused
    start = kept.note()
    try:
        before = undefined_eigenvector_tangents()
        columns = _generated_columns(pushforward, function, primals, x)
        refuse_undefined_tangent(before, columns)
        return columns
    except S2SGradError as error:  # refused as it ran: the tape computes every column
        if not (mode == "auto" and products.may_fall_back(mode, error, function)):
            raise
        products.warn_fallback(function, error)
        kept.set(start)  # the tape runs the function once more
        return _jvp_loop(products.on_the_tape(f, error), args, index, "tape")


def _generated_columns(pushforward, function, primals, x) -> Any:
    """The forward-mode Jacobian wrt ``x`` from the generated JVP ``pushforward``."""
    jvp_function, keyword = pushforward
    batchable = BATCHING and not _holds_tape_values(primals)
    columns, out = {}, None
    draws = SameDraws(function, primals)  # each run draws what the first drew
    for path, leaf in leaf_paths(x):
        blocks = None
        if batchable and jvp_function not in refused and np.size(leaf) > 1:
            blocks = _try(
                jvp_function, _batched_columns, jvp_function, keyword, primals, x, path, draws
            )
            if blocks is None:  # the columns one at a time, from the state it started from
                draws.failed()
        if blocks is None:
            stats["forward_loop"] += 1
            blocks = []
            for seed in _seeds(x, path):
                draws.begin()
                out, tangent = jvp_function(*primals, **{keyword: seed})
                blocks.append(_as_column(tangent, out))
        else:
            stats["forward_batched"] += 1
            out = blocks[-1][1]
            blocks = [block for block, _ in blocks]
        columns[path] = blocks
    draws.end()
    if out is None:  # an argument with no elements
        out = function(*primals)
    return _assemble(out, x, columns, stack_axis=-1)


def _generated_jvp(function, primals, name, mode) -> tuple | None:
    """``(generated JVP function, keyword of the tangent of name)``, or None for the tape."""
    if mode == "tape":
        return None
    try:
        refuse_writes_into_caller_dicts(function, primals, {}, (name,))
        generated = derivative(
            function,
            (name,),
            "jvp",
            containers=containers_of(primals, function),
            dynamic=mode == "auto",
        )
        return generated.function, generated.tangent_names[name]
    except S2SGradError:
        if mode == "s2s":
            raise
        return None  # sg.jvp warns once and uses the tape


def _batched_columns(
    jvp_function, keyword, primals, x, path, draws: SameDraws
) -> Iterator[tuple[Any, Any]]:
    """``(block of columns, output)`` per chunk of the elements of ``x``'s leaf ``path``."""
    leaf = leaf_at(x, path)
    twin = batched_twin(jvp_function)
    for start, stop in _chunks(np.size(leaf), _largest(primals, x)):
        draws.begin()
        seeds = BatchedValue(_one_hot(leaf, start, stop))
        tangent = replace_leaf(zeros_like_structure(x), path, seeds)
        out, tangent_out = twin(*primals, **{keyword: tangent})
        yield _batch_arrays(tangent_out, out, stop - start, gradient=False), out


def _jvp_loop(f, args, index, mode):
    """Column by column through ``sg.jvp`` (the tape, where the source cannot be transformed)."""
    x = args[index]
    columns, out = {}, None
    draws = SameDraws(f, args)  # each run draws what the first drew
    for path, _ in leaf_paths(x):
        stats["forward_loop"] += 1
        blocks = []
        for seed in _seeds(x, path):
            draws.begin()
            tangents: list = [None] * len(args)  # the others held constant
            tangents[index] = seed
            out, tangent = products.jvp(f, args, tangents, mode=mode)
            blocks.append(_as_column(tangent, out))
        columns[path] = blocks
    draws.end()
    if out is None:
        out = f(*args)
    return _assemble(out, x, columns, stack_axis=-1)


# Shared pieces ----------------------------------------------------------------------------


def _differentiated(f: Any, args: tuple, kwargs: dict, index: int) -> tuple:
    """``(f, args, function, primals, name)`` with keywords moved into position, a bound
    ``self`` among the primals, and ``name`` the parameter ``args[index]`` is given for
    (checked to be differentiable)."""
    f, args = _positional(f, tuple(args), kwargs)
    function, primals = bind_self(f, args)
    position = index + len(primals) - len(args)
    name = positional_name(function, position)
    check_differentiable(name, args[index], f)
    refuse_unknown_constants(f, positional_parameters(function), primals, {})
    return f, args, function, primals, name


def _positional(f: Any, args: tuple, kwargs: dict) -> tuple[Any, tuple]:
    """``f`` and ``args`` with the keyword arguments moved into position (defaults filling
    the gaps), so the source of ``f`` can still be transformed; ``functools.partial`` for
    keyword-only parameters.

    Example::

        def f(x, bias=0.0, scale=1.0): ...
        _positional(f, (x,), {"scale": 2.0})  # (f, (x, 0.0, 2.0))
    """
    if not kwargs:
        return f, args
    try:
        signature = inspect.signature(f)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return functools.partial(f, **kwargs), args
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p.name for p in signature.parameters.values() if p.kind in kinds]
    if len(positional) != len(signature.parameters) or any(k not in positional for k in kwargs):
        return functools.partial(f, **kwargs), args
    bound.apply_defaults()
    return f, tuple(bound.arguments[name] for name in positional)


def _try(function: Any, blocks: Any, *args: Any) -> list | None:
    """``list(blocks(*args))``, or None (remembering why in :data:`refused` under
    ``function``) if ``function`` cannot run batched."""
    try:
        return list(blocks(*args))
    except NotBatchable as error:
        refused[function] = str(error)
    except Exception as error:  # the same code runs again one element at a time
        refused[function] = f"{type(error).__name__}: {error}"
    stats["refused"] += 1
    return None


def _chunks(count: int, largest: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` ranges covering ``count`` elements, each small enough that a batch
    of arrays of ``largest`` elements stays under :data:`CHUNK_ELEMENTS`."""
    step = max(1, min(count, CHUNK_ELEMENTS // max(largest, 1)))
    for start in range(0, count, step):
        yield start, min(start + step, count)


def _largest(*values: Any) -> int:
    """The number of elements of the largest array inside ``values`` (searched recursively)."""
    largest = 1
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, np.ndarray):
            largest = max(largest, value.size)
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return largest


def _seed_dtype(leaf: Any) -> np.dtype:
    """``leaf``'s floating dtype (float64 for integers); by dtypes alone, since NumPy 1.x
    would give a float64 scalar and ``np.float32`` float32."""
    return np.promote_types(np.result_type(leaf), np.float32)


def _one_hot(leaf: Any, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of the identity over ``leaf``'s elements, each shaped like ``leaf``."""
    dtype = _seed_dtype(leaf)
    count = stop - start
    seeds = np.zeros((count, np.size(leaf)), dtype=dtype)
    seeds[np.arange(count), np.arange(start, stop)] = 1
    return seeds.reshape((count, *np.shape(leaf)))


def _seeds(structure: Any, path: tuple) -> Iterator[Any]:
    """One-hot structures for each element of the leaf at ``path`` (zeros elsewhere)."""
    leaf = leaf_at(structure, path)
    for row in np.eye(np.size(leaf), dtype=_seed_dtype(leaf)):
        seed = row.reshape(np.shape(leaf)) if np.ndim(leaf) else float(row[0])
        yield replace_leaf(zeros_like_structure(structure), path, seed)


def _batch_arrays(values: Any, like: Any, count: int, gradient: bool) -> Any:
    """``values`` (batched, plain or None per leaf) as arrays of ``count`` examples, with the
    structure of ``like``; for a gradient, each example shaped and typed like ``like``."""
    if gradient:
        values = batching_rule_of(as_gradient)(values, like)
    blocks = {}
    for path, leaf in leaf_paths(like):
        value = _leaf_or_none(values, path)
        if isinstance(value, BatchedValue):
            blocks[path] = value.array
        else:  # the same for every example
            value = 0.0 if value is None else value
            blocks[path] = np.broadcast_to(value, (count, *np.shape(leaf)))
    return _rebuild(like, blocks)


def _leaf_or_none(structure: Any, path: tuple) -> Any:
    for key in path:
        if structure is None:
            return None
        structure = structure.get(key) if isinstance(structure, dict) else structure[key]
    return structure


def _as_row(cotangent: Any, x: Any) -> Any:
    """One cotangent of the pullback as a block of one row, with ``x``'s structure."""
    return _with_one_example(as_gradient(cotangent, x), x)


def _as_column(tangent: Any, out: Any) -> Any:
    return _with_one_example(tangent, out)


def _with_one_example(values: Any, like: Any) -> Any:
    blocks = {}
    for path, leaf in leaf_paths(like):
        value = _leaf_or_none(values, path)
        value = np.zeros(np.shape(leaf)) if value is None else np.asarray(value)
        blocks[path] = value[None]
    return _rebuild(like, blocks)


def _holds_callables(value: Any) -> bool:
    """Whether saved values hold functions: pullbacks of calls dispatched at run time, which
    are called from the backward pass with the cotangent and have no batched twin."""
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, (types.FunctionType, types.MethodType, functools.partial)):
            return True
        if isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return False


def _holds_tape_values(values: tuple) -> bool:
    return any(is_tape_value(leaf) for _, leaf in leaf_paths(values))


# Structures of arrays ---------------------------------------------------------------------


def leaf_paths(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """``(path, leaf)`` for every array or number in a nested dict/list/tuple.

    Example::

        list(leaf_paths({"w": np.ones(2), "b": [0.0]}))  # [(('w',), array(...)), (('b', 0), 0.0)]
    """
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaf_paths(item, (*path, key))
    elif isinstance(value, (list, tuple)):
        for key, item in enumerate(value):
            yield from leaf_paths(item, (*path, key))
    else:
        yield path, value


def leaf_at(value: Any, path: tuple) -> Any:
    """The leaf at ``path`` (as :func:`leaf_paths` gives it) inside ``value``.

    Example::

        leaf_at({"b": [0.0, 1.0]}, ("b", 1))  # 1.0
    """
    for key in path:
        value = value[key]
    return value


def replace_leaf(structure: Any, path: tuple, leaf: Any) -> Any:
    """A copy of ``structure`` with the leaf at ``path`` replaced (containers are copied).

    Example::

        replace_leaf({"w": 1.0, "b": 2.0}, ("b",), 5.0)  # {'w': 1.0, 'b': 5.0}
    """
    if not path:
        return leaf
    key, rest = path[0], path[1:]
    if isinstance(structure, dict):
        return {**structure, key: replace_leaf(structure[key], rest, leaf)}
    items = list(structure)
    items[key] = replace_leaf(items[key], rest, leaf)
    return rebuild_sequence(structure, items)


def _rebuild(structure: Any, leaves: dict) -> Any:
    result = structure
    for path, value in leaves.items():
        result = replace_leaf(result, path, value)
    return result


def _assemble(out: Any, x: Any, parts: dict, stack_axis: int) -> Any:
    """Join blocks of rows (``stack_axis=0``: one argument-shaped block per output leaf) or of
    columns (``stack_axis=-1``: one output-shaped block per argument leaf) into
    ``out_leaf.shape + x_leaf.shape`` arrays, nested as the output's structure of the
    argument's structure (plain arrays stay plain)."""

    def block(out_path, x_path):
        out_leaf, x_leaf = leaf_at(out, out_path), leaf_at(x, x_path)
        shape = np.shape(out_leaf) + np.shape(x_leaf)
        if stack_axis == 0:  # each block: (rows,) + x_leaf.shape
            pieces = [leaf_at(r, x_path) for r in parts[out_path]]
            matrix = np.concatenate(pieces) if pieces else np.zeros((0, *np.shape(x_leaf)))
        else:  # each block: (columns,) + out_leaf.shape
            pieces = [leaf_at(c, out_path) for c in parts[x_path]]
            if pieces:
                matrix = np.moveaxis(np.concatenate(pieces), 0, -1)
            else:
                matrix = np.zeros((*np.shape(out_leaf), 0))
        return matrix.reshape(shape)

    def over_x(out_path):
        return _rebuild(x, {x_path: block(out_path, x_path) for x_path, _ in leaf_paths(x)})

    return _rebuild(out, {out_path: over_x(out_path) for out_path, _ in leaf_paths(out)})
