"""Helpers the rules of ``numpy.fft`` use in generated code (see s2sgrad/rules/fft.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from s2sgrad.rules.registry import complex_ready, jvp_rule, nondifferentiable, vjp_rule
from s2sgrad.runtime.core import is_complex

__all__ = [
    "fft_axes",
    "fft_length",
    "fft_lengths",
    "fit_to",
    "inverse_norm",
    "half_spectrum_weights",
]


def fft_axes(a: Any, s: Any, axes: Any) -> tuple[int, ...]:
    """The axes an n-dimensional transform of ``a`` works on, as NumPy chooses them: all
    axes, or the last ``len(s)`` when only ``s`` is given.

    Example::

        fft_axes(np.ones((2, 3, 4)), (3, 4), None)  # (1, 2)
    """
    ndim = np.ndim(a)
    if axes is None:
        axes = range(ndim) if s is None else range(-len(s), 0)
    return tuple(int(axis) % ndim for axis in axes)


def fft_lengths(a: Any, s: Any, axes: tuple[int, ...]) -> tuple[int, ...]:
    """The transform lengths along ``axes``: ``s``, or the sizes of ``a``.

    Example::

        fft_lengths(np.ones((2, 3)), None, (0, 1))  # (2, 3)
    """
    if s is not None:
        return tuple(int(n) for n in s)
    shape = np.shape(a)
    return tuple(shape[axis] for axis in axes)


def fft_length(a: Any, n: int | None, axis: int) -> int:
    """The transform length along ``axis``: ``n``, or the size of ``a``.

    Example::

        fft_length(np.ones((2, 3)), None, -1)  # 3
    """
    return np.shape(a)[axis] if n is None else int(n)


def fit_to(g: Any, like: Any, axes: tuple[int, ...]) -> Any:
    """``g`` cut or padded with zeros along ``axes`` to the sizes of ``like``, and its real
    part when ``like`` is real: the adjoint of the cutting or padding a transform's ``n``
    (or ``s``) does.

    Example::

        fit_to(np.ones(5, complex), np.zeros(3), (0,))  # array([1., 1., 1.])
    """
    shape = np.shape(like)
    g_shape = np.shape(g)
    index = [slice(None)] * len(g_shape)
    widths = [(0, 0)] * len(g_shape)
    for axis in axes:
        index[axis] = slice(0, shape[axis])
        widths[axis] = (0, max(shape[axis] - g_shape[axis], 0))
    if any(g_shape[axis] > shape[axis] for axis in axes):
        g = g[tuple(index)]
    if any(width != (0, 0) for width in widths):
        g = np.pad(g, widths)
    if is_complex(g) and not is_complex(like):
        g = np.real(g)
    return g


@vjp_rule(fit_to)
def _fit_to_vjp(g, ans, g_in, like, axes):
    return fit_to(g, g_in, axes), None, None


@jvp_rule(fit_to)
def _fit_to_jvp(t, ans, g_in, like, axes):
    return fit_to(t, like, axes), None, None


complex_ready(fit_to)

_INVERSE = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def inverse_norm(norm: str | None) -> str:
    """The ``norm`` that scales the forward transform as ``norm`` scales the inverse one.

    Example::

        inverse_norm(None)  # 'forward'
    """
    return _INVERSE[norm]


def half_spectrum_weights(n: int, axis: int, ndim: int, like: Any) -> np.ndarray:
    """How many times each entry of a half spectrum counts in a real signal of length
    ``n``: once for the constant term (and the Nyquist term of an even ``n``), twice for
    the others, whose conjugates stand for the missing half. Shaped to broadcast along
    ``axis`` of an ``ndim``-dimensional array, in the real dtype of ``like``.

    Example::

        half_spectrum_weights(4, 0, 1, np.zeros(3))  # array([1., 2., 1.])
    """
    dtype = np.finfo(np.dtype(getattr(like, "dtype", np.float64))).dtype
    weights = np.full(n // 2 + 1, 2.0, dtype=dtype)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    shape = [1] * ndim
    shape[axis] = n // 2 + 1
    return np.reshape(weights, shape)


nondifferentiable(fft_axes, fft_length, fft_lengths, inverse_norm, half_spectrum_weights)
