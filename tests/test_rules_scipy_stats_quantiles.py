"""The quantile functions ppf and isf of scipy.stats' cauchy, laplace, logistic, gumbel_r,
expon and uniform (s2sgrad/rules/scipy_stats_quantiles.py), in q, loc and scale over
broadcasting shapes: to second order, reverse and forward, in s2s, tape and auto on a first
and a later call, against central differences."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, check_grads_on_two_calls, numeric_grad
from rulecheck import assert_every_rule_is_tested, rules_defined_in

import s2sgrad as sg

stats = pytest.importorskip("scipy.stats")

MODES = ("s2s", "tape", "auto")
FAMILIES = ("cauchy", "laplace", "logistic", "gumbel_r", "expon", "uniform")


def cauchy_quantiles(q, loc, scale):
    return np.sum(stats.cauchy.ppf(q, loc, scale) ** 2 + stats.cauchy.isf(q, loc, scale))


def laplace_quantiles(q, loc, scale):
    return np.sum(stats.laplace.ppf(q, loc, scale) ** 2 + stats.laplace.isf(q, loc, scale))


def logistic_quantiles(q, loc, scale):
    return np.sum(stats.logistic.ppf(q, loc, scale) ** 2 + stats.logistic.isf(q, loc, scale))


def gumbel_quantiles(q, loc, scale):
    return np.sum(stats.gumbel_r.ppf(q, loc, scale) ** 2 + stats.gumbel_r.isf(q, loc, scale))


def exponential_quantiles(q, loc, scale):
    return np.sum(stats.expon.ppf(q, loc, scale) ** 2 + stats.expon.isf(q, loc, scale))


def uniform_quantiles(q, loc, scale):
    return np.sum(stats.uniform.ppf(q, loc, scale) ** 2 + stats.uniform.isf(q, loc, scale))


def quantiles_by_keyword(q, loc, scale):
    return np.sum(stats.logistic.ppf(q, scale=scale) * stats.expon.isf(q, loc=loc))


PROGRAMS = [
    cauchy_quantiles,
    laplace_quantiles,
    logistic_quantiles,
    gumbel_quantiles,
    exponential_quantiles,
    uniform_quantiles,
    quantiles_by_keyword,
]
SHAPES = [((2, 3), (3,), (2, 1)), ((4,), (), ())]


def arguments(shapes, seed):
    generator = np.random.default_rng(seed)
    q_shape, loc_shape, scale_shape = shapes
    q = generator.uniform(0.1, 0.9, q_shape)
    q = np.where(np.abs(q - 0.5) < 0.05, 0.3, q)  # away from laplace's kink at the median
    return q, generator.normal(size=loc_shape), generator.uniform(0.5, 2.0, scale_shape)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", SHAPES, ids=["broadcast", "numbers"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_reverse_and_forward_against_differences(f, shapes, mode):
    args = arguments(shapes, 3)
    check_grads_on_two_calls(f, args, mode)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_gradient_against_central_differences(f):
    args = arguments(SHAPES[0], 4)
    expected = [numeric_grad(f, args, i) for i in range(3)]
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            gradient = sg.grad(f, wrt=(0, 1, 2), mode=mode)
            for _ in range(2):
                for actual, wanted in zip(gradient(*args), expected):
                    assert_close(actual, wanted, rtol=1e-6, atol=1e-8)


def test_every_rule_is_tested():
    module = "s2sgrad.rules.scipy_stats_quantiles"
    wanted = [getattr(getattr(stats, d), m) for d in FAMILIES for m in ("ppf", "isf")]
    # bound methods are new objects at each access, equal to the ones the rules are keyed by
    tested = [p for p in rules_defined_in([module]) if any(p == w for w in wanted)]
    assert len(tested) == len(wanted)
    assert_every_rule_is_tested([module], tested)
