"""scipy.stats' zscore, skew, kurtosis, variation and sem (s2sgrad/rules/scipy_stats_moments.py):
to second order, reverse and forward, in s2s, tape and auto on a first and a later call,
over axes, keepdims and the unbiased forms, against central differences;
``nan_policy='omit'`` is refused at the user's line."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import check_grads_on_two_calls
from rulecheck import assert_every_rule_is_tested, rules_defined_in

import s2sgrad as sg

stats = pytest.importorskip("scipy.stats")

MODES = ("s2s", "tape", "auto")
HERE = __file__.rsplit("/", 1)[-1]
WEIGHTS = np.array([0.5, -1.0, 1.5, 0.25])


def standardised(a):
    return np.sum(stats.zscore(a) ** 3 * WEIGHTS)


def standardised_rows(a):
    return np.sum(np.tanh(stats.zscore(a, axis=1, ddof=1)) * WEIGHTS)


def standardised_whole(a):
    return np.sum(np.sin(stats.zscore(a, axis=None)))


def skewness(a):
    return np.sum(stats.skew(a) * WEIGHTS)


def skewness_unbiased_rows(a):
    return np.sum(stats.skew(a, axis=1, bias=False, keepdims=True) ** 2)


def kurtosis_fisher(a):
    return np.sum(stats.kurtosis(a) * WEIGHTS)


def kurtosis_pearson_unbiased(a):
    return np.sum(stats.kurtosis(a, axis=None, fisher=False, bias=False))


def variation_of_positive(a):
    return np.sum(stats.variation(a + 4.0, axis=1, ddof=1) ** 2)


def standard_error(a):
    return np.sum(stats.sem(a) * WEIGHTS) + stats.sem(a, axis=None, ddof=0)


PROGRAMS = [
    standardised,
    standardised_rows,
    standardised_whole,
    skewness,
    skewness_unbiased_rows,
    kurtosis_fisher,
    kurtosis_pearson_unbiased,
    variation_of_positive,
    standard_error,
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_reverse_and_forward_against_differences(f, mode):
    sample = np.random.default_rng(len(f.__name__)).normal(size=(5, 4))
    check_grads_on_two_calls(f, (sample,), mode)


def omitting(a):
    return stats.skew(a, nan_policy="omit")  # the refused line


@pytest.mark.parametrize("mode", MODES)
def test_omitting_nans_is_refused_at_the_users_line(mode):
    with pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+: scipy.stats.skew with nan_policy"):
        sg.grad(omitting, mode=mode)(np.array([0.5, 1.0, -0.2, 2.0]))


def test_every_rule_is_tested():
    module = "s2sgrad.rules.scipy_stats_moments"
    tested = [stats.zscore, stats.skew, stats.kurtosis, stats.variation, stats.sem]
    assert set(rules_defined_in([module])) == set(tested)
    assert_every_rule_is_tested([module], tested)
