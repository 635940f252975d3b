"""``GradientTape``: record NumPy operations on watched values, then differentiate them.

The semantics are TensorFlow's (``persistent``, ``watch``, ``watch_accessed_variables``,
``stop_recording``, ``reset``, nested tapes, ``jacobian``, ``batch_jacobian``) over plain
NumPy code.
"""

from __future__ import annotations

import contextlib
import math
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from s2sgrad.runtime import as_gradient, is_complex, unbroadcast, zeros_like_structure
from s2sgrad.tape import conversions, runtime_calls
from s2sgrad.tape.backward import Backward
from s2sgrad.tape.display import describe_recording
from s2sgrad.tape.library_calls import route_library_calls
from s2sgrad.tape.recording import RECORDING, is_traced, new_serial
from s2sgrad.tape.structures import flatten, flatten_like
from s2sgrad.tape.values import TapeValue, user_location, value_of
from s2sgrad.tape.variables import Variable

__all__ = ["GradientTape"]


class GradientTape:
    """Records operations on watched values inside a ``with`` block, for reverse-mode AD.

    Example::

        x = constant(3.0)
        with GradientTape() as tape:
            tape.watch(x)
            y = x * x
        tape.gradient(y, x)  # 6.0

    ``persistent=True`` allows several ``gradient``/``jacobian`` calls on one recording.
    ``watch_accessed_variables=False`` watches only what is passed to :meth:`watch`.
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._serial = new_serial()
        self._entries: list = []
        self._variables: dict[int, Variable] = {}
        self._used = False
        self._entered = False

    def __repr__(self) -> str:
        state = "recording" if self._recording else "not recording"
        return f"<GradientTape {state}, {len(self._entries)} operations recorded>"

    def show(self, file: Any = None) -> None:
        """Print the recorded operations in the order they ran.

        Example::

            with GradientTape() as tape:
                tape.watch(x)
                y = np.sum(x * x)
            tape.show()
            # GradientTape: 2 operations
            #   v2 = multiply(v1, v1)  # shape (3,)
            #   v3 = sum(v2)           # shape ()
        """
        print(describe_recording(self._entries, "GradientTape"), file=file or sys.stdout)

    # Recording -------------------------------------------------------------------------

    def __enter__(self) -> GradientTape:
        if self._entered:
            raise RuntimeError("this GradientTape is already inside a `with` block")
        self._entered = True
        self._start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._entered = False
        self._stop()

    @property
    def _recording(self) -> bool:
        return self._serial in RECORDING

    def _start(self) -> None:
        route_library_calls()  # SciPy's Python functions with rules, once
        if not RECORDING:  # np.array([a, b]) and runtime helpers record while tapes do
            conversions.install()
            runtime_calls.install()
        RECORDING[self._serial] = self

    def _stop(self) -> None:
        RECORDING.pop(self._serial, None)
        if not RECORDING:
            conversions.uninstall()
            runtime_calls.uninstall()

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """A context in which operations are not recorded on this tape.

        Raises ``RuntimeError`` if the tape is not recording.

        Example::

            with GradientTape() as tape:
                tape.watch(x)
                y = x * x
                with tape.stop_recording():
                    z = y * y        # not recorded: tape.gradient(z, y) is None
        """
        if not self._recording:
            raise RuntimeError(
                f"{user_location()}: GradientTape.stop_recording() is only valid while the tape "
                "is recording (inside its `with` block, and not already stopped)."
            )
        self._stop()
        try:
            yield
        finally:
            if self._entered:
                self._start()

    def reset(self) -> None:
        """Forget everything recorded and watched so far, as if the tape were new.

        Example::

            with GradientTape() as tape:
                y_sq = y * y
                tape.reset()             # y_sq's computation is forgotten
                z = x * x + y_sq
            tape.gradient(z, {"x": x, "y": y})  # {'x': 2x, 'y': None}
        """
        recording = self._recording
        self._stop()
        self._serial = new_serial()
        self._entries = []
        self._variables = {}
        self._used = False
        if recording:
            self._start()

    # Watching --------------------------------------------------------------------------

    def watch(self, tensor: Any) -> None:
        """Track ``tensor`` (a tape value, a Variable, or a nested structure of them).

        Example::

            tape.watch({"w": w, "b": b})
        """
        for leaf in flatten(tensor)[0]:
            if not isinstance(leaf, TapeValue):
                raise ValueError(  # the type TensorFlow raises here
                    f"{user_location()}: GradientTape.watch takes tape values and Variables, "
                    f"not {type(leaf).__name__}; wrap plain values with s2sgrad.constant(...)."
                )
            if np.result_type(leaf._value).kind not in "fc":
                warnings.warn(
                    f"GradientTape.watch: the watched value has dtype {leaf.dtype}; only "
                    "floating values have gradients, so this one is not watched.",
                    stacklevel=2,
                )
            elif isinstance(leaf, Variable):
                self._variables.setdefault(id(leaf), leaf)
            elif self._serial not in leaf._tapes:
                leaf._tapes = (*leaf._tapes, self._serial)

    def watched_variables(self) -> tuple:
        """The Variables this tape watches, in the order it started watching them.

        Example::

            with GradientTape() as tape:
                loss = np.sum(w * w)
            tape.watched_variables()  # (w,)
        """
        return tuple(self._variables.values())

    def _tracks(self, x: Any) -> bool:
        if isinstance(x, Variable):
            return id(x) in self._variables
        return isinstance(x, TapeValue) and self._serial in x._tapes

    def _would_watch(self, variable: Variable) -> bool:
        return id(variable) in self._variables or (self._watch_accessed and variable.trainable)

    def _watches_on_read(self, variable: Variable) -> bool:
        """Whether a read of ``variable`` is recorded here; starts watching it if automatic."""
        if id(variable) in self._variables:
            return True
        if self._watch_accessed and variable.trainable and _is_floating(variable._value):
            self._variables[id(variable)] = variable
            return True
        return False

    # Differentiating -------------------------------------------------------------------

    def gradient(
        self,
        target: Any,
        sources: Any,
        output_gradients: Any = None,
        unconnected_gradients: str = "none",
    ) -> Any:
        """The gradient of ``target`` with respect to ``sources``, mirroring their structure.

        A non-scalar target is differentiated as its sum, unless ``output_gradients`` (same
        structure as ``target``) gives the cotangent to pull back. Sources the target does
        not depend on get ``None`` (or zeros with ``unconnected_gradients="zero"``).

        Example::

            tape.gradient(loss, {"w": w, "b": b})  # {'w': array(...), 'b': array(...)}
        """
        zero = _zero_unconnected(unconnected_gradients)
        self._begin("gradient")
        seeds = _seeds(target, output_gradients)
        sources, rebuild = flatten(sources)
        _check_sources(sources)
        grads = Backward(self._entries, sources, self._tracks).run(seeds)
        self._end()
        results = [_result(g, s, zero) for g, s in zip(grads, sources)]
        return rebuild(separate(results, [seed for _, seed in seeds]))

    def jacobian(self, target: Any, sources: Any, unconnected_gradients: str = "none") -> Any:
        """The Jacobian of ``target``: shape ``target.shape + source.shape`` for each source.

        Built with one backward pass per element of ``target``. A nested target (list,
        tuple, dict) gives its structure of Jacobians, each mirroring ``sources``.

        Example::

            tape.jacobian(y, x)  # y of shape (7, 10), x of shape (5, 10) → (7, 10, 5, 10)
            tape.jacobian([y, s], x)  # [(7, 10, 5, 10), s.shape + (5, 10)]
        """
        zero = _zero_unconnected(unconnected_gradients)
        self._begin("jacobian")
        sources, rebuild = flatten(sources)
        _check_sources(sources)
        backward = Backward(self._entries, sources, self._tracks)
        targets, rebuild_target = flatten(target)
        jacobians = []
        for leaf in targets:
            value = value_of(leaf)
            shape = np.shape(value)
            rows: list[list] = [[] for _ in sources]
            for i in range(math.prod(shape)):
                grads = backward.run([(leaf, _one_hot(value, i))])
                for row, g in zip(rows, grads):
                    row.append(g)
            stacked = [_stack(row, shape, s, zero) for row, s in zip(rows, sources)]
            jacobians.append(rebuild(stacked))
        self._end()
        return rebuild_target(jacobians)

    def batch_jacobian(self, target: Any, source: Any, unconnected_gradients: str = "none") -> Any:
        """Per-example Jacobians: shape ``(batch,) + target.shape[1:] + source.shape[1:]``.

        Assumes example ``i`` of ``target`` depends only on example ``i`` of ``source`` (as in
        a network applied to a batch); one backward pass per element of ``target[0]``.

        Example::

            tape.batch_jacobian(y, x)  # x of shape (7, 5), y of shape (7, 6) → (7, 6, 5)
        """
        zero = _zero_unconnected(unconnected_gradients)
        self._begin("batch_jacobian")
        _check_sources([source])
        value = value_of(target)
        shape = np.shape(value)
        source_shape = np.shape(value_of(source))
        if not shape or not source_shape or shape[0] != source_shape[0]:
            raise ValueError(
                f"{user_location()}: batch_jacobian needs target and source with the same first "
                f"(batch) dimension; got shapes {shape} and {source_shape}."
            )
        backward = Backward(self._entries, [source], self._tracks)
        columns = []
        per_example = math.prod(shape[1:])
        for j in range(per_example):
            seed = np.zeros((shape[0], per_example), dtype=_float_dtype(value))
            seed[:, j] = 1
            columns.append(backward.run([(target, seed.reshape(shape))])[0])
        self._end()
        if all(c is None for c in columns):
            dtype = _float_dtype(value_of(source))
            return np.zeros(shape + source_shape[1:], dtype=dtype) if zero else None
        columns = [_result(c, source, True) for c in columns]
        stacked = np.stack(columns, axis=1)
        return np.reshape(stacked, shape + source_shape[1:])

    def _begin(self, what: str) -> None:
        if self._used and not self._persistent:
            raise RuntimeError(
                f"{user_location()}: a non-persistent GradientTape can compute only one set of "
                f"gradients (or jacobians); create it with GradientTape(persistent=True) to "
                f"call {what} more than once."
            )
        if self._recording:
            if self._persistent:
                warnings.warn(
                    f"GradientTape.{what} called inside the tape's own `with` block: the "
                    "computation is recorded on the tape too, which is slower and uses more "
                    "memory. Call it after the block unless you differentiate the result again.",
                    stacklevel=3,
                )
            else:  # nothing could use what a spent tape records
                self._stop()
        self._used = True

    def _end(self) -> None:
        if not self._persistent:
            self._entries = []


def _is_floating(value: Any) -> bool:
    return np.result_type(value).kind in "fc"


def _float_dtype(value: Any) -> np.dtype:
    dtype = np.result_type(value)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _zero_unconnected(unconnected_gradients: Any) -> bool:
    name = str(getattr(unconnected_gradients, "value", unconnected_gradients)).lower()
    if name not in ("none", "zero"):
        raise ValueError(
            f'unconnected_gradients must be "none" or "zero", not {unconnected_gradients!r}'
        )
    return name == "zero"


def _check_sources(sources: list) -> None:
    for s in sources:
        if s is not None and not isinstance(s, TapeValue):
            raise TypeError(
                f"{user_location()}: gradient sources must be tape values or Variables, not "
                f"{type(s).__name__}; wrap plain values with s2sgrad.constant(...) and watch them."
            )


def _seeds(target: Any, output_gradients: Any) -> list:
    """(target, cotangent) pairs; a missing cotangent is ones (the gradient of the sum)."""
    targets = flatten(target)[0]
    try:
        cotangents = flatten_like(output_gradients, target)
    except (ValueError, TypeError, KeyError, IndexError) as error:
        raise ValueError(
            f"{user_location()}: output_gradients must have the structure of the target "
            f"({error}); use None for a part whose cotangent is ones."
        ) from None
    seeds = []
    for target, g in zip(targets, cotangents):
        if isinstance(target, Variable):
            raise ValueError(  # as TensorFlow: a Variable is a source, not a result
                f"{user_location()}: the target of the gradient is a Variable; differentiate "
                "a value computed from it (v.value(), or an expression such as v * 1.0)"
            )
        if not isinstance(target, TapeValue):
            continue
        if g is None:
            g = _ones_like(target._value)
        elif isinstance(g, TapeValue) and not is_traced(g):
            g = g._value
        seeds.append((target, g))
    return seeds


def _ones_like(value: Any) -> Any:
    if isinstance(value, (float, int)):
        return 1.0
    return np.ones(np.shape(value), dtype=_float_dtype(value))


def _one_hot(value: Any, index: int) -> Any:
    if isinstance(value, (float, int)):
        return 1.0
    seed = np.zeros(np.size(value), dtype=_float_dtype(value))
    seed[index] = 1
    return seed.reshape(np.shape(value))


def _result(g: Any, source: Any, zero: bool) -> Any:
    """A source's cotangent as returned to the user: plain and shaped like the source, or a
    tape value when a recording tape differentiates it further."""
    if source is None:
        return None
    value = source._value
    if g is None:
        return zeros_like_structure(value) if zero else None
    if is_traced(g):
        return match_traced(g, value)
    return plain_gradient(value_of(g), value)


def separate(results: list, seeds: list) -> list:
    """``results`` with no array returned twice, and none of the caller's cotangents returned.

    A rule may pass its cotangent through unchanged (``x + y`` gives both arguments the
    same array), and a returned gradient must be the caller's own to modify.

    Example::

        g = np.ones(2)
        a, b = separate([g, g], [])  # b is a copy of a
    """
    seen = {id(seed) for seed in seeds}
    separated = []
    for result in results:
        if isinstance(result, np.ndarray):
            if id(result) in seen:
                result = result.copy()
            seen.add(id(result))
        separated.append(result)
    return separated


def plain_gradient(g: Any, value: Any) -> Any:
    """``as_gradient(g, value)``, with a shortcut for the usual case of a ready array.

    Example::

        plain_gradient(np.ones(2), np.zeros(2))  # array([1., 1.])
    """
    if (
        type(g) is np.ndarray
        and type(value) is np.ndarray
        and g.dtype == value.dtype
        and g.shape == value.shape
        and g.dtype.kind in "fc"
        and g.flags.writeable
        and g.flags.owndata
    ):
        return g
    return as_gradient(g, value)


def match_traced(g: Any, value: Any) -> Any:
    """Give a recorded cotangent the shape and floating dtype of ``value``, recording the fix.

    Example::

        match_traced(g, np.zeros(3, np.float32))  # g summed/cast as needed, still recorded
    """
    shape = np.shape(value)
    if np.shape(g) != shape:
        g = unbroadcast(g, value) if np.ndim(g) >= len(shape) else np.broadcast_to(g, shape)
    if is_complex(g) and not is_complex(value):
        g = np.real(g)  # the gradient wrt a real value is real (docs/complex.md)
    if not isinstance(value, float) and np.result_type(g._value) != _float_dtype(value):
        g = g.astype(_float_dtype(value))
    return g


def _stack(rows: list, shape: tuple, source: Any, zero: bool) -> Any:
    """One source's Jacobian from its rows (one per element of the target)."""
    if source is None:
        return None
    value = source._value
    if all(r is None for r in rows):
        return np.zeros(shape + np.shape(value), dtype=_float_dtype(value)) if zero else None
    rows = [_result(r, source, True) for r in rows]
    return np.reshape(np.stack(rows), shape + np.shape(value))
