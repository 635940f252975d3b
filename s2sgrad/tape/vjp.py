"""``tape_vjp``: the tape behind the function transforms (``grad(f, mode="tape")``, fallback)."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad.errors import (
    S2SGradError,
    UnsupportedError,
    asynchronous_error,
    generator_error,
    where,
)
from s2sgrad.running import statement_origin
from s2sgrad.runtime import hooks
from s2sgrad.runtime.core import is_foreign_array
from s2sgrad.runtime.kept_states import free_values_of, kept_states_of
from s2sgrad.tape.backward import Backward
from s2sgrad.tape.caught_refusals import forget_since, noted, noted_since, raise_caught
from s2sgrad.tape.gradient_tape import GradientTape, match_traced, plain_gradient, separate
from s2sgrad.tape.in_place import numpy_semantics, refuse_value_class_patterns
from s2sgrad.tape.library_type_checks import (
    array_protocol_refusal,
    library_value_refusal,
    type_check_refusal,
)
from s2sgrad.tape.recording import is_traced
from s2sgrad.tape.structures import flatten, flatten_like, map_leaves
from s2sgrad.tape.values import TapeValue, record_copy, user_location

__all__ = ["tape_vjp", "unwrap_stored_values", "plain_leaves"]


def tape_vjp(
    f: Callable,
    args: tuple,
    kwargs: dict,
    wrt: tuple[int, ...],
    refuse_stored_state: str | None = None,
) -> tuple[Any, Callable]:
    """Run ``f(*args, **kwargs)`` on the tape; return its output and a pullback.

    ``refuse_stored_state``: the message of an ``UnsupportedError`` to raise if ``f`` stored
    a value being differentiated on an object it reaches (a caller that is not on this tape
    would read it back as a constant).

    Every floating leaf of the positional arguments listed in ``wrt`` (arrays, floats, inside
    dicts, lists and tuples) is watched. ``pullback(cotangent)`` (``cotangent`` shaped like
    the output; ``None`` leaves count as zero) returns one cotangent per ``wrt`` argument, with
    that argument's structure, shapes and floating dtypes (zeros where unconnected). It may be
    called several times. Inside a recording tape the values flowing in and out may be tape
    values, and everything is recorded there too, so ``tape_vjp`` composes (grad of grad).

    Example::

        out, pullback = tape_vjp(lambda w, x: np.sum(w * x), (w, x), {}, (0,))
        (dw,) = pullback(1.0)  # dw == x
    """
    f = hooks.tape_primal(f)  # checkpointed loops become calls the tape records as one
    refuse_value_class_patterns(f)
    _refuse_generators(f)
    _refuse_foreign_arrays(f, [*args, *kwargs.values()], "is given")
    tape = GradientTape(persistent=True, watch_accessed_variables=False)
    arguments = list(args)
    rebuilds = [flatten(arguments[i])[1] for i in wrt]
    with tape:
        for i in wrt:
            arguments[i] = map_leaves(lambda leaf: _watched(tape, leaf), arguments[i])
        sources = [flatten(arguments[i])[0] for i in wrt]
        given_entries = {i: dict(arguments[i]) for i in wrt if type(arguments[i]) is dict}
        mark = noted()
        try:
            with numpy_semantics():
                out = f(*arguments, **kwargs)
            raise_caught(mark)  # a refusal f's own 'except' caught: f went on as NumPy's not
        except ValueError as error:  # NumPy wraps a refusal to store a value into an array
            if isinstance(error.__cause__, S2SGradError):
                raise error.__cause__.with_traceback(error.__traceback__) from None
            swallowed = noted_since(mark)  # NumPy dropped the refusal (b.flat[0] = x)
            if swallowed is not None:
                raise swallowed.with_traceback(error.__traceback__) from None
            refused = array_protocol_refusal(error)  # an object's __array__ gave a tape value
            refused = refused or library_value_refusal(error)  # lfilter of a tape value
            if refused is not None:
                raise refused.with_traceback(error.__traceback__) from None
            raise
        except TypeError as error:  # a library checking the type of the arrays it is given
            refusal = type_check_refusal(error)
            if refusal is not None:
                raise refusal.with_traceback(error.__traceback__) from None
            raise
        finally:  # the watched arguments hold the tape's own values: not theirs to keep
            forget_since(mark)
            kept = tuple(a for i, a in enumerate(arguments) if i not in wrt)
            stored = unwrap_stored_values(f, kept, kwargs, recorded_by=tape)
            # a watched dataclass is a copy: what f stored on it its caller never sees
            now = flatten([arguments[i] for i in wrt])[0]
            watched = [leaf for leaves in sources for leaf in leaves]
            stored += len(now) != len(watched) or any(a is not b for a, b in zip(now, watched))
            if stored and refuse_stored_state is not None:
                stored_refusal = UnsupportedError(refuse_stored_state)
                stored_refusal.whole_function_on_tape = True
                raise stored_refusal
    for i, entries in given_entries.items():
        _write_back_entries(args[i], arguments[i], entries)
    out_leaves, rebuild_out = flatten(out)
    _refuse_foreign_arrays(f, out_leaves, "returns")
    if refuse_stored_state is not None:
        # an object returned holding the tape's values (Layer(w * 2) made by a classmethod):
        # the transformed caller would read them as constants
        objects = tuple(leaf for leaf in out_leaves if _is_object(leaf))
        if objects and unwrap_stored_values(_returns, objects, {}, recorded_by=tape):
            returned_refusal = UnsupportedError(refuse_stored_state)
            returned_refusal.whole_function_on_tape = True
            raise returned_refusal
    flat_sources = [s for leaves in sources for s in leaves]
    backward = Backward(tape._entries, flat_sources, tape._tracks)

    def pullback(cotangent: Any) -> tuple:
        seeds = list(zip(out_leaves, _cotangent_leaves(cotangent, out)))
        grads = [_gradient_leaf(g, leaf) for g, leaf in zip(backward.run(seeds), flat_sources)]
        separated = iter(separate(grads, [seed for _, seed in seeds]))
        return tuple(
            rebuild([next(separated) for _ in leaves]) for rebuild, leaves in zip(rebuilds, sources)
        )

    return rebuild_out([_plain(leaf) for leaf in out_leaves]), pullback


def _refuse_foreign_arrays(f: Callable, values: list, verb: str) -> None:
    """A Dask array (or another array type taking part in NumPy's dispatch) does the
    arithmetic with the tape's values itself, so the tape sees none of it: refuse."""
    for value in values:
        for leaf in flatten(value)[0]:
            if not is_foreign_array(leaf):
                continue
            function = getattr(f, "__func__", f)
            code = getattr(function, "__code__", None)
            location = where(code.co_filename, code.co_firstlineno) if code else repr(f)
            kind = f"{type(leaf).__module__}.{type(leaf).__qualname__}"
            error = UnsupportedError(
                f"{location}: {getattr(function, '__qualname__', function)} {verb} a {kind}, "
                "which the tape cannot record (it follows NumPy arrays); pass np.asarray(...) "
                "of it, or use mode='s2s': the generated code runs on Dask arrays, lazily"
            )
            error.tape_cannot_either = True
            raise error


def _refuse_generators(f: Callable) -> None:
    """What a generator function yields is computed only when read, after recording."""
    function = getattr(f, "__func__", f)
    asynchronous = inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function)
    if asynchronous or inspect.isgeneratorfunction(function):
        code = function.__code__
        made_from = statement_origin(code.co_filename, code.co_firstlineno)
        location = made_from or where(code.co_filename, code.co_firstlineno)
        refusal = asynchronous_error if asynchronous else generator_error
        error = refusal(location, function.__qualname__)
        if made_from is not None:  # a local generator kept in the code s2s generated, taped
            # as the generated code called it: the tape runs the user's own function whole,
            # generators and all (mode "auto")
            error.whole_function_on_tape = True
            error.tape_cannot_either = False
        raise error


def _watched(tape: GradientTape, leaf: Any) -> Any:
    """A fresh tape value for a floating leaf, watched by ``tape``; other leaves as they are.

    Fresh, so that one array passed as two arguments gives two separate gradients.
    """
    if isinstance(leaf, TapeValue):
        if not _is_floating(leaf._value):
            return leaf
        copy = record_copy(leaf)
    elif isinstance(leaf, (float, complex, np.ndarray, np.inexact)) and _is_floating(leaf):
        copy = TapeValue(leaf)
    else:
        return leaf
    tape.watch(copy)
    return copy


def _is_floating(value: Any) -> bool:
    return np.result_type(value).kind in "fc"


def plain_leaves(tree: Any) -> Any:
    """``tree`` (what a function returned beside its output, ``has_aux``) with the values of a
    finished tape as the plain arrays they stand for; those an outer tape traces stay.

    Example::

        plain_leaves({"last": y})  # {'last': array([...])} for a tape value y
    """
    return map_leaves(_plain, tree)


def _write_back_entries(caller: dict, watched: dict, given: dict) -> None:
    """The entries ``f`` stored into (or deleted from) the tape's copy ``watched`` of the
    caller's differentiated dict, written into the caller's dict as plain values, as
    Python's call does (``p["cache"] = p["w"] * 2``; generated code does it too); the
    entries ``given`` (the tape's copy as the call began) left as the caller holds them."""
    for key, value in watched.items():
        if key not in given or value is not given[key]:
            leaves, rebuild = flatten(value)
            caller[key] = rebuild([_plain(leaf) for leaf in leaves])
    for key in given:
        if key not in watched:
            caller.pop(key, None)


def _plain(leaf: Any) -> Any:
    if isinstance(leaf, TapeValue) and not is_traced(leaf):
        return leaf._value
    return leaf


def _cotangent_leaves(cotangent: Any, out: Any) -> list:
    try:
        leaves = flatten_like(cotangent, out)
    except (ValueError, TypeError, KeyError, IndexError) as error:
        raise ValueError(
            f"{user_location()}: the cotangent must have the structure of the function's "
            f"output ({error}); use None for a part whose cotangent is zero."
        ) from None
    return [_unwrap_untraced(c) for c in leaves]


def _unwrap_untraced(c: Any) -> Any:
    return c._value if isinstance(c, TapeValue) and not is_traced(c) else c


def _gradient_leaf(g: Any, leaf: Any) -> Any:
    value = leaf._value if isinstance(leaf, TapeValue) else leaf
    if not isinstance(value, (int, float, complex, np.ndarray, np.generic)):
        return None  # a leaf that is not a number (a name, a callable) has no gradient
    if g is not None and is_traced(g):
        return match_traced(g, value)
    return plain_gradient(_unwrap_untraced(g), value)


def _returns() -> None:
    """What :func:`unwrap_stored_values` is asked of for the objects a call returned."""


def _is_object(value: Any) -> bool:
    return not isinstance(
        value, (np.ndarray, np.generic, int, float, complex, str, bytes, type(None), TapeValue)
    )


def unwrap_stored_values(
    f: Callable, args: Any, kwargs: dict, depth: int = 4, recorded_by: Any = None
) -> int:
    """Replace the tape values that running ``f`` stored on the objects it can reach (its
    arguments, closure cells, the globals its code names, the object of a bound method or
    callable) by their plain values: state a differentiated function keeps (a batch norm's
    running mean, a history list) must stay ordinary arrays after the call. With
    ``recorded_by``, only values that tape tracks: an outer tape's values that the caller
    passed in (a gradient of a gradient) are the caller's, and stay. Returns how many values
    it replaced.

    Example::

        unwrap_stored_values(loss, (x,), {})  # bn.moving_mean is an ndarray again
    """
    roots = [args, kwargs, getattr(f, "__self__", None)]
    if not isinstance(f, types.FunctionType | types.MethodType):
        roots.append(f)  # a callable object: its own attributes
    function = getattr(f, "__func__", f)
    code = getattr(function, "__code__", None)
    if code is not None:
        roots += [cell.cell_contents for cell in function.__closure__ or () if _filled(cell)]
        names = _names_used(code)
        scope = getattr(function, "__globals__", {})
        roots += [scope[name] for name in names if name in scope]
    # and the helpers' (sg.hessian(lambda x: loss(x)): the model loss names, reached there)
    for helper, _, _ in kept_states_of(f).codes:
        if helper is not function:
            roots += list(free_values_of(helper))
    seen: set[int] = set()
    serial = None if recorded_by is None else recorded_by._serial
    return sum(_unwrap_inside(root, depth, seen, serial) for root in roots)


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _names_used(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _names_used(constant)
    return names


_OPAQUE_TYPES = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)


def _unwrap_inside(value: Any, depth: int, seen: set[int], serial: int | None) -> int:
    """Unwrap tape values held in ``value``'s attributes and in its lists and dicts (those
    tracked by tape ``serial``, when given); return how many."""
    if depth == 0 or id(value) in seen or isinstance(value, (*_OPAQUE_TYPES, TapeValue)):
        return 0
    seen.add(id(value))
    count = 0
    if isinstance(value, list):
        items: Any = enumerate(value)
    elif isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, tuple):
        return sum(_unwrap_inside(item, depth - 1, seen, serial) for item in value)
    elif type(value).__module__ not in ("builtins", "numpy") and hasattr(value, "__dict__"):
        value = vars(value)
        items = list(value.items())
    else:
        return 0
    for key, item in items:
        if not isinstance(item, TapeValue):
            count += _unwrap_inside(item, depth - 1, seen, serial)
        elif serial is None or serial in item._tapes:
            value[key] = _plain_value(item)
            count += 1
    return count


def _plain_value(value: TapeValue) -> Any:
    while isinstance(value, TapeValue):
        value = value._value
    return value
