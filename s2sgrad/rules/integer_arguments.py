"""Arguments NumPy takes as integers: shapes, axes, counts, offsets, shifts, indices.

A value computed from differentiated values may reach one, as in ``n = rows(h)`` with a
helper returning ``h.shape[0]``, or ``out, n = layer(x)``. NumPy refuses anything but an
integer there (or reads it only through comparisons with integers), so the output is
piecewise constant in it: its derivative there is zero by design
(:func:`~s2sgrad.rules.registry.zero_by_design`), and both engines differentiate the call
instead of refusing it. ``tests/test_integer_arguments.py`` proves each declaration: a
non-integer there is refused by NumPy, or moves the output nowhere.

Example::

    zero_is_right(np.reshape, get_rule(np.reshape), 1)  # True: 'shape'
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad.rules.registry import get_rule, zero_by_design

_AXIS = ("axis",)
# function -> the names of its parameters (as its rule names them) that take integers
INTEGER_ARGUMENTS: dict[Any, tuple[str, ...]] = {
    np.reshape: ("shape",),
    np.ndarray.reshape: ("shape",),
    np.broadcast_to: ("shape",),
    np.roll: ("shift", "axis"),
    np.rot90: ("k", "axes"),
    np.repeat: ("repeats", "axis"),
    np.ndarray.repeat: ("repeats", "axis"),
    np.tile: ("reps",),
    np.split: ("indices_or_sections", "axis"),
    np.array_split: ("indices_or_sections", "axis"),
    np.hsplit: ("indices_or_sections",),
    np.vsplit: ("indices_or_sections",),
    np.take: ("indices", "axis"),
    np.ndarray.take: ("indices", "axis"),
    np.take_along_axis: ("indices", "axis"),
    np.sum: _AXIS,
    np.ndarray.sum: _AXIS,
    np.mean: _AXIS,
    np.ndarray.mean: _AXIS,
    np.prod: _AXIS,
    np.max: _AXIS,
    np.min: _AXIS,
    np.cumsum: _AXIS,
    np.cumprod: _AXIS,
    np.std: _AXIS,
    np.var: _AXIS,
    np.median: _AXIS,
    np.ptp: _AXIS,
    np.average: _AXIS,
    np.nansum: _AXIS,
    np.sort: _AXIS,
    np.partition: ("kth", "axis"),
    np.flip: _AXIS,
    np.concatenate: _AXIS,
    np.stack: _AXIS,
    np.expand_dims: _AXIS,
    np.squeeze: _AXIS,
    np.diff: ("n", "axis"),
    np.transpose: ("axes",),
    np.ndarray.transpose: ("axes",),
    np.moveaxis: ("source", "destination"),
    np.swapaxes: ("axis1", "axis2"),
    np.ndarray.swapaxes: ("axis1", "axis2"),
    np.diagonal: ("offset", "axis1", "axis2"),
    np.ndarray.diagonal: ("offset", "axis1", "axis2"),
    np.trace: ("offset", "axis1", "axis2"),
    np.triu: ("k",),
    np.tril: ("k",),
    np.diag: ("k",),
    np.linspace: ("num", "axis"),
    np.pad: ("pad_width",),
    np.linalg.matrix_power: ("n",),
    np.linalg.norm: _AXIS,
    np.fft.fft: ("n", "axis"),
    np.fft.ifft: ("n", "axis"),
    np.fft.rfft: ("n", "axis"),
    np.fft.irfft: ("n", "axis"),
    np.fft.fftshift: ("axes",),
}


def positions_of(function: Callable, names: tuple[str, ...]) -> tuple[int, ...]:
    """The positions (after ``g`` and ``ans``) of the parameters ``names`` in
    ``function``'s rule.

    Example::

        positions_of(np.roll, ("shift",))  # (1,)
    """
    rule = get_rule(function)
    written = None if rule is None else rule.vjp or rule.jvp
    if written is None:
        raise LookupError(f"{function!r} has no rule whose integer arguments to declare")
    parameters = list(inspect.signature(written).parameters)[2:]
    return tuple(parameters.index(name) for name in names)


def _declare() -> None:
    for function, names in INTEGER_ARGUMENTS.items():
        zero_by_design(function, *positions_of(function, names))


_declare()
