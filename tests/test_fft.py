"""``numpy.fft``: every transform with ``n``/``s``, ``axis``/``axes`` and each ``norm``, odd
and even lengths, real and complex inputs; reverse mode against central differences that
move real and imaginary parts separately (docs/complex.md), forward mode against a
directional difference, second order through the transforms; both engines, twice."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad.errors import FallbackWarning
from tests.oracle import numeric_complex_grad

MODES = ("s2s", "tape", "auto")
NORMS = (None, "backward", "ortho", "forward")
rng = np.random.default_rng(11)


def _data(shape, complex_):
    x = rng.normal(size=shape)
    return x + 1j * rng.normal(size=shape) if complex_ else x


def _loss_weights(out):
    """Weights that make a (complex) result a real loss, nonlinear for second order."""
    return _data(np.shape(out), np.iscomplexobj(out)), rng.uniform(0.1, 0.5, np.shape(out))


def one_axis(transform, x, n, axis, norm):
    w, v = _loss_weights(transform(x, n=n, axis=axis, norm=norm))

    def f(x):
        y = transform(x, n=n, axis=axis, norm=norm)
        return np.sum(np.real(y * np.conj(w))) + np.sum(np.abs(y) ** 2 * v)

    return f


def several_axes(transform, x, s, axes, norm):
    w, v = _loss_weights(transform(x, s=s, axes=axes, norm=norm))

    def f(x):
        y = transform(x, s=s, axes=axes, norm=norm)
        return np.sum(np.real(y * np.conj(w))) + np.sum(np.abs(y) ** 2 * v)

    return f


def check(f, x, modes=MODES):
    expected = numeric_complex_grad(f, (x,), 0)
    for mode in modes:
        with warnings.catch_warnings():
            warnings.simplefilter("error", FallbackWarning)
            gradient = sg.grad(f, mode=mode)
            first = gradient(x)
            second = gradient(x)
        assert first.dtype == x.dtype, mode
        np.testing.assert_allclose(first, expected, rtol=1e-5, atol=1e-6, err_msg=mode)
        np.testing.assert_allclose(second, first, rtol=1e-12, atol=1e-12, err_msg=mode)
    direction = _data(np.shape(x), np.iscomplexobj(x))
    step = 1e-6
    along = (f(x + step * direction) - f(x - step * direction)) / (2 * step)
    for mode in modes:
        _, tangent = sg.jvp(f, (x,), (direction,), mode=mode)
        np.testing.assert_allclose(tangent, along, rtol=1e-5, atol=1e-6, err_msg=mode)


ONE_AXIS = [
    (transform, n, norm, complex_)
    for transform, complex_ in (
        (np.fft.fft, True),
        (np.fft.ifft, True),
        (np.fft.fft, False),
        (np.fft.rfft, False),
        (np.fft.irfft, True),
    )
    for n in (None, 4, 7)
    for norm in NORMS
]


@pytest.mark.parametrize(
    ("transform", "n", "norm", "complex_"),
    ONE_AXIS,
    ids=[f"{t.__name__}-n{n}-{norm}-{'c' if c else 'r'}" for t, n, norm, c in ONE_AXIS],
)
def test_one_axis_transforms(transform, n, norm, complex_):
    x = _data((5, 3), complex_)
    check(one_axis(transform, x, n, 0, norm), x)


SEVERAL_AXES = [
    (transform, s, axes, norm, complex_)
    for transform, complex_ in (
        (np.fft.fftn, True),
        (np.fft.ifftn, True),
        (np.fft.fft2, True),
        (np.fft.ifft2, False),
        (np.fft.rfftn, False),
        (np.fft.rfft2, False),
        (np.fft.irfftn, True),
        (np.fft.irfft2, True),
    )
    for s, axes in ((None, None), ((3, 5), (0, 2)), ((4, 3), (-1, -2)))
    for norm in (None, "ortho", "forward")
]


@pytest.mark.parametrize(
    ("transform", "s", "axes", "norm", "complex_"),
    SEVERAL_AXES,
    ids=[
        f"{t.__name__}-s{s}-axes{a}-{norm}-{'c' if c else 'r'}" for t, s, a, norm, c in SEVERAL_AXES
    ],
)
def test_several_axes_transforms(transform, s, axes, norm, complex_):
    x = _data((2, 3, 4), complex_)
    if axes is None and transform in (np.fft.fft2, np.fft.ifft2, np.fft.rfft2, np.fft.irfft2):
        axes = (-2, -1)  # passing None would mean every axis
    check(several_axes(transform, x, s, axes, norm), x)


def shifted(x):
    y = np.fft.fftshift(x, axes=1) * np.arange(1.0, 16.0).reshape(3, 5)
    return np.sum(np.real(np.fft.ifftshift(y) * np.conj(y))) + np.sum(
        np.fft.fftshift(x)[0, :2] ** 3
    )


def test_shifts():
    check(shifted, _data((3, 5), False))
    check(shifted, _data((3, 5), True))


def spectrum_power(x):
    """A real loss of a real input through complex intermediates."""
    spectrum = np.fft.rfft(x * x, n=7, norm="ortho")
    back = np.fft.irfft(spectrum * np.conj(spectrum), n=6)
    return np.sum(np.abs(np.fft.fft(x)) ** 3) + np.sum(back * np.arange(6.0))


@pytest.mark.parametrize("mode", MODES)
def test_second_order(mode):
    x = rng.normal(size=5)
    v = rng.normal(size=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        (got,) = sg.hvp(spectrum_power, (x,), (v,), mode=mode)
        hessian = sg.hessian(spectrum_power, mode=mode)(x)

    def directional(y):
        return np.sum(sg.grad(spectrum_power, mode="tape")(y) * v)

    expected = numeric_complex_grad(directional, (x,), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(hessian @ v, expected, rtol=1e-5, atol=1e-5)


def test_single_precision_is_kept():
    x = _data((6,), False).astype(np.float32)
    for mode in MODES:
        assert sg.grad(spectrum_power, mode=mode)(x).dtype == np.float32
