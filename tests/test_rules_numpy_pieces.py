"""Rules of np.frexp, np.choose, np.unique and np.fft.hfft / ihfft (rules/numpy_pieces.py),
against central differences at random points, first and second order, forward and reverse,
in every mode, each transform called twice (check_grads)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def mantissa_and_exponent(x):
    m, e = np.frexp(x * 3.0)
    return np.sum(m**2 * e) + np.sum(np.frexp(x)[0])


def chosen(x):
    return np.sum(np.choose(np.arange(x.size) % 2, [x, np.sin(x)]) ** 2)


def chosen_with_broadcast_choices(x):
    picks = (np.arange(x.size) % 3).reshape(x.shape)
    return np.sum(np.choose(picks, [x, x**2, np.ones(1) * x[0]]) * x)


def unique_values(x):
    u = np.unique(np.concatenate([x, x[:2]]))
    return np.sum(u**3)


def unique_with_inverse_and_counts(x):
    u, inverse, counts = np.unique(np.concatenate([x, x]), return_inverse=True, return_counts=True)
    return np.sum(np.sin(u[inverse]) * counts[inverse])


def hermitian_spectrum(x):
    return np.sum(np.fft.hfft(x) ** 2) + np.sum(np.fft.hfft(x * 1j + x, 6, norm="ortho") * x[0])


def inverse_hermitian_spectrum(x):
    half = np.fft.ihfft(x)
    return np.sum(np.abs(half) ** 2) + np.sum(np.real(np.fft.ihfft(x, norm="forward")) * x[0])


PROGRAMS = [
    mantissa_and_exponent,
    chosen,
    chosen_with_broadcast_choices,
    unique_values,
    unique_with_inverse_and_counts,
    hermitian_spectrum,
    inverse_hermitian_spectrum,
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", [4, 5])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_the_rule_matches_differences(f, size, mode):
    x = np.random.default_rng(size).uniform(0.2, 1.7, size=size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        sg.check_grads(f, x, order=2, mode=mode)


def test_frexp_gives_the_mantissa_its_scale():
    x = np.array([3.0, 0.2, -5.5])
    gradient = sg.grad(lambda x: np.sum(np.frexp(x)[0]), mode="s2s")(x)
    np.testing.assert_allclose(gradient, 2.0 ** -np.frexp(x)[1])


def test_unique_shares_the_cotangent_of_a_value_among_its_ties():
    x = np.array([2.0, 1.0, 2.0])
    gradient = sg.grad(lambda x: np.sum(np.unique(x) * np.array([3.0, 5.0])))(x)
    np.testing.assert_allclose(gradient, [2.5, 3.0, 2.5])


def test_unique_along_an_axis_is_refused_naming_the_line():
    x = np.random.default_rng(0).normal(size=(2, 3))

    def along_rows(x):
        return np.sum(np.unique(x, axis=0))

    for mode in MODES:
        with pytest.raises(sg.S2SGradError, match=rf"{__file__}:\d+: np.unique\(x, axis="):
            sg.grad(along_rows, mode=mode)(x)
