"""Derivative rules of ``numpy.fft``, for the convention of docs/complex.md.

Every transform is linear. The discrete Fourier matrix is symmetric, so the VJP of a
complex transform is the same transform of the cotangent (same ``norm``), cut or padded
back to the input's length where ``n`` (or ``s``) padded or cut it (``fit_to``), and
reduced to its real part for a real input.

* ``rfft`` keeps the first ``n // 2 + 1`` entries of ``fft``: its VJP is ``fft`` of the
  cotangent padded with zeros to length ``n``, real part.
* ``irfft`` reads a half spectrum as the whole Hermitian one (the imaginary parts of the
  constant and Nyquist terms are ignored): its VJP is the conjugate of ``rfft`` of the
  cotangent, scaled as the inverse transform scales (``inverse_norm``), with the entries
  that stand for two counted twice (``half_spectrum_weights``).
* ``rfftn``/``irfftn`` combine these along the last axis with ``fftn``/``ifftn`` along the
  others; ``fftshift`` and ``ifftshift`` undo each other.

JVP rules apply the transform to the tangent.
"""

import numpy as np

from s2sgrad.rules.registry import complex_ready, complex_source, jvp_rule, vjp_rule
from s2sgrad.runtime import (
    fft_axes,
    fft_length,
    fft_lengths,
    fit_to,
    half_spectrum_weights,
    inverse_norm,
)

# ---------------------------------------------------------------------------- complex


@vjp_rule(np.fft.fft)
def _fft(g, ans, a, n=None, axis=-1, norm=None):
    return fit_to(np.fft.fft(g, axis=axis, norm=norm), a, (axis,))


@jvp_rule(np.fft.fft)
def _fft_jvp(t, ans, a, n=None, axis=-1, norm=None):
    return np.fft.fft(t, n, axis, norm)


@vjp_rule(np.fft.ifft)
def _ifft(g, ans, a, n=None, axis=-1, norm=None):
    return fit_to(np.fft.ifft(g, axis=axis, norm=norm), a, (axis,))


@jvp_rule(np.fft.ifft)
def _ifft_jvp(t, ans, a, n=None, axis=-1, norm=None):
    return np.fft.ifft(t, n, axis, norm)


@vjp_rule(np.fft.fftn)
def _fftn(g, ans, a, s=None, axes=None, norm=None):
    over = fft_axes(a, s, axes)
    return fit_to(np.fft.fftn(g, axes=over, norm=norm), a, over)


@jvp_rule(np.fft.fftn)
def _fftn_jvp(t, ans, a, s=None, axes=None, norm=None):
    return np.fft.fftn(t, s, fft_axes(a, s, axes), norm)


@vjp_rule(np.fft.ifftn)
def _ifftn(g, ans, a, s=None, axes=None, norm=None):
    over = fft_axes(a, s, axes)
    return fit_to(np.fft.ifftn(g, axes=over, norm=norm), a, over)


@jvp_rule(np.fft.ifftn)
def _ifftn_jvp(t, ans, a, s=None, axes=None, norm=None):
    return np.fft.ifftn(t, s, fft_axes(a, s, axes), norm)


# ---------------------------------------------------------------------------- real


@vjp_rule(np.fft.rfft)
def _rfft(g, ans, a, n=None, axis=-1, norm=None):
    return fit_to(np.fft.fft(g, fft_length(a, n, axis), axis, norm), a, (axis,))


@jvp_rule(np.fft.rfft)
def _rfft_jvp(t, ans, a, n=None, axis=-1, norm=None):
    return np.fft.rfft(t, n, axis, norm)


@vjp_rule(np.fft.irfft)
def _irfft(g, ans, a, n=None, axis=-1, norm=None):
    weights = half_spectrum_weights(np.shape(ans)[axis], axis, np.ndim(ans), g)
    half = np.conj(np.fft.rfft(g, axis=axis, norm=inverse_norm(norm))) * weights
    return fit_to(half, a, (axis,))


@jvp_rule(np.fft.irfft)
def _irfft_jvp(t, ans, a, n=None, axis=-1, norm=None):
    return np.fft.irfft(t, n, axis, norm)


@vjp_rule(np.fft.rfftn)
def _rfftn(g, ans, a, s=None, axes=None, norm=None):
    over = fft_axes(a, s, axes)
    return fit_to(np.fft.fftn(g, fft_lengths(a, s, over), over, norm), a, over)


@jvp_rule(np.fft.rfftn)
def _rfftn_jvp(t, ans, a, s=None, axes=None, norm=None):
    return np.fft.rfftn(t, s, fft_axes(a, s, axes), norm)


@vjp_rule(np.fft.irfftn)
def _irfftn(g, ans, a, s=None, axes=None, norm=None):
    over = fft_axes(a, s, axes)
    last = over[-1]
    weights = half_spectrum_weights(np.shape(ans)[last], last, np.ndim(ans), g)
    half = np.conj(np.fft.rfft(g, axis=last, norm=inverse_norm(norm))) * weights
    if len(over) > 1:
        half = np.fft.ifftn(half, axes=over[:-1], norm=norm)
    return fit_to(half, a, over)


@jvp_rule(np.fft.irfftn)
def _irfftn_jvp(t, ans, a, s=None, axes=None, norm=None):
    return np.fft.irfftn(t, s, fft_axes(a, s, axes), norm)


# ---------------------------------------------------------------------------- 2-D (the
# n-dimensional rules with NumPy's default axes)


@vjp_rule(np.fft.fft2)
def _fft2(g, ans, a, s=None, axes=(-2, -1), norm=None):
    over = fft_axes(a, s, axes)
    return fit_to(np.fft.fftn(g, axes=over, norm=norm), a, over)


@jvp_rule(np.fft.fft2)
def _fft2_jvp(t, ans, a, s=None, axes=(-2, -1), norm=None):
    return np.fft.fftn(t, s, fft_axes(a, s, axes), norm)


@vjp_rule(np.fft.ifft2)
def _ifft2(g, ans, a, s=None, axes=(-2, -1), norm=None):
    over = fft_axes(a, s, axes)
    return fit_to(np.fft.ifftn(g, axes=over, norm=norm), a, over)


@jvp_rule(np.fft.ifft2)
def _ifft2_jvp(t, ans, a, s=None, axes=(-2, -1), norm=None):
    return np.fft.ifftn(t, s, fft_axes(a, s, axes), norm)


@vjp_rule(np.fft.rfft2)
def _rfft2(g, ans, a, s=None, axes=(-2, -1), norm=None):
    over = fft_axes(a, s, axes)
    return fit_to(np.fft.fftn(g, fft_lengths(a, s, over), over, norm), a, over)


@jvp_rule(np.fft.rfft2)
def _rfft2_jvp(t, ans, a, s=None, axes=(-2, -1), norm=None):
    return np.fft.rfftn(t, s, fft_axes(a, s, axes), norm)


@vjp_rule(np.fft.irfft2)
def _irfft2(g, ans, a, s=None, axes=(-2, -1), norm=None):
    over = fft_axes(a, s, axes)
    last = over[-1]
    weights = half_spectrum_weights(np.shape(ans)[last], last, np.ndim(ans), g)
    half = np.conj(np.fft.rfft(g, axis=last, norm=inverse_norm(norm))) * weights
    if len(over) > 1:
        half = np.fft.ifftn(half, axes=over[:-1], norm=norm)
    return fit_to(half, a, over)


@jvp_rule(np.fft.irfft2)
def _irfft2_jvp(t, ans, a, s=None, axes=(-2, -1), norm=None):
    return np.fft.irfftn(t, s, fft_axes(a, s, axes), norm)


# ---------------------------------------------------------------------------- shifts


@vjp_rule(np.fft.fftshift)
def _fftshift(g, ans, x, axes=None):
    return np.fft.ifftshift(g, axes)


@jvp_rule(np.fft.fftshift)
def _fftshift_jvp(t, ans, x, axes=None):
    return np.fft.fftshift(t, axes)


@vjp_rule(np.fft.ifftshift)
def _ifftshift(g, ans, x, axes=None):
    return np.fft.fftshift(g, axes)


@jvp_rule(np.fft.ifftshift)
def _ifftshift_jvp(t, ans, x, axes=None):
    return np.fft.ifftshift(t, axes)


_TRANSFORMS = (
    np.fft.fft, np.fft.ifft, np.fft.fft2, np.fft.ifft2, np.fft.fftn, np.fft.ifftn,
    np.fft.rfft, np.fft.irfft, np.fft.rfft2, np.fft.irfft2, np.fft.rfftn, np.fft.irfftn,
)  # fmt: skip
complex_ready(*_TRANSFORMS, np.fft.fftshift, np.fft.ifftshift)
complex_source(*(f for f in _TRANSFORMS if f not in (np.fft.irfft, np.fft.irfft2, np.fft.irfftn)))
