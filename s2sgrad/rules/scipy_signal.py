"""Derivative rules of ``scipy.signal.convolve``, ``correlate`` and ``fftconvolve``, in every
mode and any number of dimensions, and of ``convolve2d`` with zeros past the edges
(``boundary="fill"``, ``fillvalue=0``; other boundaries are refused when differentiated),
and of ``lfilter`` (an IIR filter, without initial conditions ``zi``).

``convolve(in1, in2, mode)`` is a window of the full convolution, whose length along each
axis is ``n1 + n2 - 1``: from 0 (``full``), from ``(n1 + n2 - 1 - n1) // 2`` (``same``, as
long as ``in1``) or from ``min(n1, n2) - 1`` (``valid``). It is linear in each argument.
Reverse mode puts the cotangent back in its window of zeros and correlates it with the
other argument (a convolution with the other argument flipped, in ``valid`` mode, which has
the argument's own shape); forward mode convolves the tangent.
"""

from __future__ import annotations

import numpy as np
from scipy import signal

from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.rules.scipy_common import refuse

_BOUNDARY = (
    "scipy.signal.convolve2d is differentiated with zeros past the edges only "
    "(boundary='fill', fillvalue=0); pad the input yourself (np.pad) and use mode='valid'"
)
_LFILTER_ZI = (
    "scipy.signal.lfilter is differentiated without initial conditions (zi=None) only; "
    "prepend the samples the state stands for to x instead"
)
_FFT_AXES = (
    "scipy.signal.fftconvolve is differentiated over all axes only (axes=None); use "
    "scipy.signal.convolve, or convolve each slice"
)


def _spread(g, ans, in1, in2, mode):
    """The cotangent ``g`` of ``ans`` put back in its window of the full convolution."""
    full = np.add(np.shape(in1), np.shape(in2)) - 1
    if mode == "full":
        start = full - full
    elif mode == "same":
        start = (full - np.shape(in1)) // 2
    else:
        start = np.minimum(np.shape(in1), np.shape(in2)) - 1
    return np.pad(g, np.stack([start, full - start - np.shape(ans)], axis=1))


@vjp_rule(signal.convolve)
def _convolve(g, ans, in1, in2, mode="full", method="auto"):
    spread = _spread(g, ans, in1, in2, mode)
    return (
        signal.convolve(spread, np.flip(in2), mode="valid", method=method),
        signal.convolve(spread, np.flip(in1), mode="valid", method=method),
    )


@jvp_rule(signal.convolve)
def _convolve_jvp(t, ans, in1, in2, mode="full", method="auto"):
    return (
        signal.convolve(t, in2, mode=mode, method=method),
        signal.convolve(in1, t, mode=mode, method=method),
    )


# correlate(in1, in2) is convolve(in1, flip(in2)) for real inputs (SciPy computes it so), in
# every mode: the cotangent of flip(in2) is flipped back


@vjp_rule(signal.correlate)
def _correlate(g, ans, in1, in2, mode="full", method="auto"):
    spread = _spread(g, ans, in1, in2, mode)
    return (
        signal.convolve(spread, in2, mode="valid", method=method),
        np.flip(signal.convolve(spread, np.flip(in1), mode="valid", method=method)),
    )


@jvp_rule(signal.correlate)
def _correlate_jvp(t, ans, in1, in2, mode="full", method="auto"):
    return (
        signal.correlate(t, in2, mode=mode, method=method),
        signal.correlate(in1, t, mode=mode, method=method),
    )


@vjp_rule(signal.fftconvolve)
def _fftconvolve(g, ans, in1, in2, mode="full", axes=None):
    if axes is not None:
        refuse(_FFT_AXES)
    spread = _spread(g, ans, in1, in2, mode)
    return (
        signal.fftconvolve(spread, np.flip(in2), mode="valid"),
        signal.fftconvolve(spread, np.flip(in1), mode="valid"),
    )


@jvp_rule(signal.fftconvolve)
def _fftconvolve_jvp(t, ans, in1, in2, mode="full", axes=None):
    if axes is not None:
        refuse(_FFT_AXES)
    return (
        signal.fftconvolve(t, in2, mode=mode),
        signal.fftconvolve(in1, t, mode=mode),
    )


@vjp_rule(signal.convolve2d)
def _convolve2d(g, ans, in1, in2, mode="full", boundary="fill", fillvalue=0):
    if boundary != "fill" or fillvalue != 0:
        refuse(_BOUNDARY)
    spread = _spread(g, ans, in1, in2, mode)
    return (
        signal.convolve2d(spread, np.flip(in2), mode="valid"),
        signal.convolve2d(spread, np.flip(in1), mode="valid"),
    )


@jvp_rule(signal.convolve2d)
def _convolve2d_jvp(t, ans, in1, in2, mode="full", boundary="fill", fillvalue=0):
    if boundary != "fill" or fillvalue != 0:
        refuse(_BOUNDARY)
    return (
        signal.convolve2d(t, in2, mode=mode),
        signal.convolve2d(in1, t, mode=mode),
    )


# lfilter(b, a, x) is y with A(z) Y = B(z) X, A and B the polynomials in z^-1 of a and b
# (SciPy divides both by a[0]). It is linear in x and in b; differentiating A Y = B X in a_k
# gives A dY = -z^-k Y, so dY = -z^-k Y / A: a filtering of y by 1/A, delayed by k. The
# adjoint of a causal filter runs it backwards in time.


def _lags(g, u, count):
    """``sum_n g[..., n] * u[..., n - k]`` (over the other axes too) for ``k < count``."""
    n = np.shape(g)[-1]
    return np.stack([np.sum(g[..., k:] * u[..., : max(n - k, 0)]) for k in range(count)])


@vjp_rule(signal.lfilter)
def _lfilter(g, ans, b, a, x, axis=-1, zi=None):
    if zi is not None:
        refuse(_LFILTER_ZI)
    g_last = np.moveaxis(g, axis, -1)
    back = np.flip(signal.lfilter(b, a, np.flip(g_last, -1), axis=-1), -1)
    inputs = signal.lfilter([1.0], a, np.moveaxis(x, axis, -1), axis=-1)
    outputs = signal.lfilter([1.0], a, np.moveaxis(ans, axis, -1), axis=-1)
    return (
        _lags(g_last, inputs, np.size(b)),
        -_lags(g_last, outputs, np.size(a)),
        np.moveaxis(back, -1, axis),
    )


@jvp_rule(signal.lfilter)
def _lfilter_jvp(t, ans, b, a, x, axis=-1, zi=None):
    if zi is not None:
        refuse(_LFILTER_ZI)
    return (
        signal.lfilter(t, a, x, axis=axis),
        -signal.lfilter(t, a, ans, axis=axis),
        signal.lfilter(b, a, t, axis=axis),
    )
