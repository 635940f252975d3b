"""``Variable`` (a named, assignable tape value) and ``constant``.

A Variable is tracked by identity: a tape that watches it (explicitly, or automatically when
a trainable Variable is read inside the tape's ``with`` block) records every read as a copy
of the value at that moment, so ``tape.gradient(loss, var)`` adds up the cotangents of all
reads and a later ``assign`` does not change what was recorded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from s2sgrad.errors import NonDifferentiableError
from s2sgrad.tape.recording import IDENTITY, RECORDING, is_traced
from s2sgrad.tape.values import TapeValue, user_location, value_of

__all__ = ["Variable", "constant"]


def constant(value: Any, dtype: Any = None) -> TapeValue:
    """A tape value holding ``value`` (a Python float stays a float; lists become arrays);
    a tape value (not a Variable) is returned as it is (converted to ``dtype``).

    Tapes track it only once they ``watch`` it.

    Example::

        x = constant(3.0)
        with GradientTape() as tape:
            tape.watch(x)
            y = x * x
        tape.gradient(y, x)  # 6.0
    """
    if type(value) is TapeValue:
        # a value a tape records (being differentiated by an outer transform, say): itself,
        # as TensorFlow's constant of a tensor is, so that derivatives keep flowing through
        # it rather than stopping silently
        return value if dtype is None or np.dtype(dtype) == value.dtype else value.astype(dtype)
    return TapeValue(_plain(value, dtype))


def _plain(value: Any, dtype: Any = None) -> Any:
    value = value_of(value)
    if (
        dtype is None
        and isinstance(value, (float, int, np.generic))
        and not isinstance(value, bool)
    ):
        return value
    return np.array(value, dtype=dtype)


class Variable(TapeValue):
    """A named value that is updated in place with ``assign`` and watched automatically.

    Inside a ``GradientTape`` (with ``watch_accessed_variables=True``, the default) reading
    a trainable Variable makes the tape watch it.

    Example::

        w = Variable(np.ones(3), name="w")
        with GradientTape() as tape:
            loss = np.sum(w * w)
        w.assign_sub(0.1 * tape.gradient(loss, w))   # w is now [0.8, 0.8, 0.8]
    """

    # copy.copy and copy.deepcopy copy the Variable itself, not a recorded read of it
    __copy__ = __deepcopy__ = None  # type: ignore[assignment]

    __slots__ = ("trainable", "name")

    def __init__(self, value: Any, trainable: bool = True, name: str | None = None) -> None:
        _refuse_traced(value, "sg.Variable(...)")
        super().__init__(_plain(value))
        self.trainable = bool(trainable)
        self.name = name

    def __repr__(self) -> str:
        name = "" if self.name is None else f"name={self.name!r}, "
        return f"Variable({name}value={self._value!r}, trainable={self.trainable})"

    def numpy(self) -> Any:
        """A copy of the current value.

        Example::

            Variable(2.0).numpy()  # 2.0
        """
        return super().numpy()

    def value(self) -> TapeValue:
        """The current value as a tape value (a read, recorded like any other use)."""
        read, _, _ = self._read()
        return read if isinstance(read, TapeValue) else TapeValue(read)

    def assign(self, value: Any) -> Variable:
        """Replace the value (same shape; converted to the Variable's dtype); returns ``self``.

        Example::

            v = Variable(np.zeros(2)); v.assign([1.0, 2.0])  # Variable(value=array([1., 2.]), …)
        """
        _refuse_traced(value, ".assign(...) of a Variable")
        new = value_of(value)
        old = self._value
        if np.shape(new) != np.shape(old):
            raise ValueError(
                f"{user_location()}: cannot assign a value of shape {np.shape(new)} to a "
                f"Variable of shape {np.shape(old)}."
            )
        if isinstance(old, np.ndarray):
            self._value = np.array(new, dtype=old.dtype)
        elif isinstance(old, np.generic):
            self._value = old.dtype.type(new)
        else:
            self._value = type(old)(new)
        return self

    def assign_add(self, delta: Any) -> Variable:
        """Add ``delta`` to the value; returns ``self``.

        Example::

            Variable(1.0).assign_add(2.0).numpy()  # 3.0
        """
        _refuse_traced(delta, ".assign_add(...) of a Variable")
        return self.assign(self._value + value_of(delta))

    def assign_sub(self, delta: Any) -> Variable:
        """Subtract ``delta`` from the value; returns ``self``.

        Example::

            Variable(1.0).assign_sub(2.0).numpy()  # -1.0
        """
        _refuse_traced(delta, ".assign_sub(...) of a Variable")
        return self.assign(self._value - value_of(delta))

    # How the tapes see a Variable --------------------------------------------------------

    def _read(self) -> tuple[Any, Any, tuple]:
        """(what to record, plain value, serials) for one use of the Variable in an operation.

        A recording tape that watches the Variable (or watches it now, because it is read)
        records a copy linked back to the Variable; otherwise the plain value is used.
        """
        value = self._value
        if not RECORDING:
            return value, value, ()
        serials = tuple(s for s, tape in RECORDING.items() if tape._watches_on_read(self))
        if not serials:
            return value, value, ()
        read = TapeValue(value, serials)
        entry = (IDENTITY, (self,), None, read)
        for serial in serials:
            RECORDING[serial]._entries.append(entry)
        return read, value, serials

    def _refuse_plain(self, what: str) -> None:
        if any(tape._would_watch(self) for tape in RECORDING.values()):
            raise NonDifferentiableError(
                f"{user_location()}: {what} of a Variable that a GradientTape is watching "
                "would drop its derivative. Use it in NumPy operations directly, or take the "
                "plain value on purpose with .numpy()."
            )


def _refuse_traced(value: Any, what: str) -> None:
    """Refuse ``what`` given a value a recording tape tracks (one being differentiated, by
    an outer transform say): a Variable holds a plain copy, where the derivative would stop
    without a word.

    Example::

        _refuse_traced(np.ones(2), "sg.Variable(...)")  # a plain value: nothing to refuse
    """
    leaves = value if type(value) in (list, tuple) else [value]
    if isinstance(value, dict):
        leaves = list(value.values())
    if any(is_traced(leaf) for leaf in leaves):
        raise NonDifferentiableError(
            f"{user_location()}: {what} of a value being differentiated would keep a plain "
            "copy of it, and the derivative would stop there; compute with the value itself "
            "(sg.constant(x) is x for such a value), or make it constant on purpose with "
            "sg.stop_gradient(x)"
        )
