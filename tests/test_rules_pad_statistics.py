"""np.pad with the statistical modes maximum, minimum, mean and median, with and without
stat_length (s2sgrad/rules/pad_statistics.py, called by np.pad's rules): to second order,
reverse and forward, in s2s, tape and auto on a first and a later call, over one, two and
three axes and several forms of pad_width, against central differences; ties of the
maximum share the derivative equally; the helpers are each other's transpose."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, check_grads_on_two_calls

import s2sgrad as sg
from s2sgrad.rules.pad_statistics import (
    STATISTICAL_MODES,
    pad_by_statistic_tangent,
    unpad_by_statistic,
)

MODES = ("s2s", "tape", "auto")


def maximum_border(x):
    return np.sum(np.sin(np.pad(x, 2, mode="maximum", stat_length=2)) ** 2)


def minimum_border(x):
    return np.sum(np.exp(np.pad(x, 1, mode="minimum")))


def mean_border(x):
    return np.sum(np.pad(x, 2, mode="mean", stat_length=3) ** 3)


def median_border(x):
    padded = np.pad(x, (1, 2), "median", stat_length=3)
    return np.sum(np.cos(padded) * np.pad(x, (1, 2), "median"))


def uneven_widths_and_lengths(x):
    widths = [(0, 2)] + [(1, 1)] * (np.ndim(x) - 1)
    return np.sum(np.tanh(np.pad(x, widths, mode="mean", stat_length=(1, 2))) * 2.0)


def border_times_itself(x):
    return np.sum(np.pad(x, 1, mode="maximum") * np.pad(x, 1, mode="median", stat_length=2))


PROGRAMS = [
    maximum_border,
    minimum_border,
    mean_border,
    median_border,
    uneven_widths_and_lengths,
    border_times_itself,
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(5,), (4, 5), (3, 4, 2)], ids=["1d", "2d", "3d"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_reverse_and_forward_against_differences(f, shape, mode):
    x = np.random.default_rng(len(f.__name__) + len(shape)).standard_normal(shape)
    check_grads_on_two_calls(f, (x,), mode)


def maximum_of_ties(x):
    return np.sum(np.pad(x, (0, 1), mode="maximum"))


@pytest.mark.parametrize("mode", MODES)
def test_a_tied_maximum_shares_the_derivative_equally(mode):
    x = np.array([1.0, 3.0, 2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        for _ in range(2):
            gradient = sg.grad(maximum_of_ties, mode=mode)(x)
            assert_close(gradient, np.array([1.0, 1.5, 1.0, 1.5]), rtol=0, atol=1e-15)


CASES = [
    ((5,), (2, 3), None),
    ((4, 5), ((1, 2), (2, 1)), 2),
    ((3, 4, 5), 1, ((1, 2), (3, 1), (2, 2))),
    ((4, 6), ((0, 2), (3, 0)), ((3, 1), (2, 4))),
    ((4, 6), 2, 9),
]


@pytest.mark.parametrize("statistic", STATISTICAL_MODES)
@pytest.mark.parametrize(("shape", "widths", "lengths"), CASES)
def test_the_helpers_are_the_tangent_and_its_transpose(statistic, shape, widths, lengths):
    generator = np.random.default_rng(len(shape))
    x, t = generator.standard_normal(shape), generator.standard_normal(shape)
    step = 1e-6

    def padded(a):
        return np.pad(a, widths, mode=statistic, stat_length=lengths)

    differences = (padded(x + step * t) - padded(x - step * t)) / (2 * step)
    tangent = pad_by_statistic_tangent(t, x, widths, statistic, lengths)
    assert_close(tangent, differences, rtol=1e-6, atol=1e-8)
    g = generator.standard_normal(padded(x).shape)
    cotangent = unpad_by_statistic(g, x, widths, statistic, lengths)
    assert np.shape(cotangent) == shape
    assert_close(np.sum(cotangent * t), np.sum(g * tangent), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("statistic", STATISTICAL_MODES)
def test_float32_stays_float32(statistic, mode):
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)

    def padded(a):
        return np.sum(np.pad(a, (1, 2), mode=statistic) ** 2)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        assert sg.grad(padded, mode=mode)(x).dtype == np.float32
        assert sg.jvp(padded, (x,), (x,), mode=mode)[1].dtype == np.float32
