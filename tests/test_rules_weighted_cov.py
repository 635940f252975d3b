"""np.cov with fweights= and aweights= (s2sgrad/rules/statistics.py), differentiated in the
variables: to second order, reverse and forward, in s2s, tape and auto on a first and a
later call, with ddof, bias, rowvar and a second set of variables y, against central
differences; a differentiated weight is refused at the user's line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, check_grads_on_two_calls, numeric_grad

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")
HERE = __file__.rsplit("/", 1)[-1]
ANALYTIC = np.array([0.5, 2.0, 1.0, 1.5, 0.7])
FREQUENCIES = np.array([1, 2, 1, 3, 1])


def analytic_weights(x, y):
    return np.sum(np.sin(np.cov(x, aweights=ANALYTIC)))


def frequency_weights_with_y(x, y):
    return np.sum(np.cov(x, y, fweights=FREQUENCIES) ** 2)


def both_weights_ddof_and_bias(x, y):
    first = np.cov(x, aweights=ANALYTIC, fweights=FREQUENCIES, ddof=0)
    return np.sum(first * np.cov(y, aweights=ANALYTIC, bias=True))


def observations_in_rows(x, y):
    return np.sum(np.cov(x.T, rowvar=False, aweights=ANALYTIC, ddof=2) ** 2)


def weights_of_a_variable(x, y):
    return np.sum(np.exp(np.cov(y, x, aweights=ANALYTIC * FREQUENCIES)))


PROGRAMS = [
    analytic_weights,
    frequency_weights_with_y,
    both_weights_ddof_and_bias,
    observations_in_rows,
    weights_of_a_variable,
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_reverse_and_forward_against_differences(f, mode):
    generator = np.random.default_rng(len(f.__name__))
    args = generator.standard_normal((3, 5)), generator.standard_normal(5)
    check_grads_on_two_calls(f, args, mode)


def test_the_weighted_covariance_is_numpys_and_its_gradient_the_differences():
    generator = np.random.default_rng(8)
    args = generator.standard_normal((2, 5)), generator.standard_normal(5)
    expected = [numeric_grad(both_weights_ddof_and_bias, args, i) for i in range(2)]
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            gradient = sg.grad(both_weights_ddof_and_bias, wrt=(0, 1), mode=mode)
            for _ in range(2):
                for actual, wanted in zip(gradient(*args), expected):
                    assert_close(actual, wanted, rtol=1e-6, atol=1e-8)


def covariance_in_its_weights(w):
    data = np.arange(10.0).reshape(2, 5) ** 1.5
    return np.sum(np.cov(data, aweights=w))  # the refused line


@pytest.mark.parametrize("mode", MODES)
def test_a_differentiated_weight_is_refused_at_the_users_line(mode):
    with pytest.raises(
        sg.S2SGradError, match=rf"{HERE}:\d+: np.cov has no derivative in .*aweights"
    ):
        sg.grad(covariance_in_its_weights, mode=mode)(ANALYTIC)
