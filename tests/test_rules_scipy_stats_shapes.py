"""scipy.stats' lognorm and weibull_min (logpdf, pdf, cdf, logcdf, sf, logsf in x, the shape,
loc and scale) and binom (logpmf, pmf, cdf, logcdf, sf, logsf in p), from
s2sgrad/rules/scipy_stats_shapes.py: to second order, reverse and forward, in s2s, tape and
auto on a first and a later call, over broadcasting shapes, against central differences;
below loc the slopes are 0; binom's integers are refused at the user's line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, check_grads_on_two_calls, numeric_grad
from rulecheck import assert_every_rule_is_tested, rules_defined_in

import s2sgrad as sg

stats = pytest.importorskip("scipy.stats")

MODES = ("s2s", "tape", "auto")
HERE = __file__.rsplit("/", 1)[-1]
METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")


def lognorm_densities(x, s, loc, scale):
    return np.sum(stats.lognorm.logpdf(x, s, loc, scale) + stats.lognorm.pdf(x, s, loc, scale))


def lognorm_distribution(x, s, loc, scale):
    return np.sum(stats.lognorm.cdf(x, s, loc, scale) ** 2 + stats.lognorm.sf(x, s, loc, scale))


def lognorm_logarithms(x, s, loc, scale):
    return np.sum(stats.lognorm.logcdf(x, s, loc, scale) * stats.lognorm.logsf(x, s, loc, scale))


def lognorm_by_keyword(x, s, loc, scale):
    return np.sum(stats.lognorm.logpdf(x, s, scale=scale) + stats.lognorm.cdf(x, s=s, loc=loc))


def weibull_densities(x, c, loc, scale):
    return np.sum(
        stats.weibull_min.logpdf(x, c, loc, scale) + stats.weibull_min.pdf(x, c, loc, scale) ** 2
    )


def weibull_distribution(x, c, loc, scale):
    return np.sum(
        stats.weibull_min.cdf(x, c, loc, scale) ** 2
        + np.sin(stats.weibull_min.sf(x, c, loc, scale))
    )


def weibull_logarithms(x, c, loc, scale):
    return np.sum(
        stats.weibull_min.logcdf(x, c, loc, scale) + stats.weibull_min.logsf(x, c, loc, scale) ** 2
    )


def weibull_by_keyword(x, c, loc, scale):
    return np.sum(stats.weibull_min.logpdf(x, c, scale=scale) + stats.weibull_min.sf(x, c, loc=loc))


CONTINUOUS = [
    lognorm_densities,
    lognorm_distribution,
    lognorm_logarithms,
    lognorm_by_keyword,
    weibull_densities,
    weibull_distribution,
    weibull_logarithms,
    weibull_by_keyword,
]
SHAPES = [((2, 3), (3,), (2, 1), ()), ((4,), (), (), (4,))]


def continuous_arguments(shapes, seed):
    generator = np.random.default_rng(seed)
    x_shape, shape_shape, loc_shape, scale_shape = shapes
    return (
        generator.uniform(1.2, 3.0, x_shape),
        generator.uniform(0.6, 2.0, shape_shape),
        generator.uniform(-0.5, 1.0, loc_shape),
        generator.uniform(0.5, 2.0, scale_shape),
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", SHAPES, ids=["broadcast", "vectors"])
@pytest.mark.parametrize("f", CONTINUOUS, ids=lambda f: f.__name__)
def test_second_order_reverse_and_forward_against_differences(f, shapes, mode):
    check_grads_on_two_calls(f, continuous_arguments(shapes, len(f.__name__)), mode)


@pytest.mark.parametrize("f", CONTINUOUS, ids=lambda f: f.__name__)
def test_gradient_in_every_argument_against_central_differences(f):
    args = continuous_arguments(SHAPES[0], 7)
    expected = [numeric_grad(f, args, i) for i in range(4)]
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            gradient = sg.grad(f, wrt=(0, 1, 2, 3), mode=mode)
            for _ in range(2):
                for actual, wanted in zip(gradient(*args), expected):
                    assert_close(actual, wanted, rtol=1e-6, atol=1e-8)


def distribution_functions_below_loc(x, s, loc, scale):
    return np.sum(
        stats.lognorm.cdf(x, s, loc, scale)
        + stats.lognorm.sf(x, s, loc, scale)
        + stats.weibull_min.cdf(x, s, loc, scale)
        + stats.weibull_min.sf(x, s, loc, scale)
        + stats.weibull_min.logsf(x, s, loc, scale)
    )


@pytest.mark.parametrize("mode", MODES)
def test_below_loc_the_distribution_functions_are_flat(mode):
    x = np.array([-1.0, 0.5, 1.5])
    args = (x, np.array(1.3), np.array(1.0), np.array(2.0))  # the first two below loc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradient = sg.grad(distribution_functions_below_loc, wrt=(0, 1, 2, 3), mode=mode)(*args)
    expected = [numeric_grad(distribution_functions_below_loc, args, i) for i in range(4)]
    for actual, wanted in zip(gradient, expected):
        assert np.all(np.isfinite(actual))
        assert_close(actual, wanted, rtol=1e-6, atol=1e-8)
    assert np.all(gradient[0][:2] == 0.0)


def binomial_masses(p):
    k = np.array([0.0, 2.0, 3.0, 6.0])
    return np.sum(stats.binom.logpmf(k, 6, p) + stats.binom.pmf(k, 6, p) ** 2)


def binomial_distribution(p):
    k = np.array([[0.0], [2.5], [4.0]])
    return np.sum(stats.binom.cdf(k, 7, p) ** 2 + stats.binom.sf(k, 7, p))


def binomial_logarithms(p):
    k = np.array([1.0, 3.0, 4.0, 2.0])
    return np.sum(stats.binom.logcdf(k, 5, p) + stats.binom.logsf(k, 5, p, loc=1))


BINOMIAL = [binomial_masses, binomial_distribution, binomial_logarithms]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(), (4,), (3, 1)])
@pytest.mark.parametrize("f", BINOMIAL, ids=lambda f: f.__name__)
def test_binomial_in_p_to_second_order(f, shape, mode):
    if f is not binomial_distribution and shape == (3, 1):
        shape = (2, 1)
    p = np.random.default_rng(len(shape)).uniform(0.15, 0.85, shape)
    check_grads_on_two_calls(f, (p,), mode)


def binomial_in_its_count(k, p):
    return np.sum(stats.binom.logpmf(k, 6, p))  # the refused line


@pytest.mark.parametrize("mode", MODES)
def test_binomial_count_is_refused_at_the_users_line(mode):
    with pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+: scipy.stats.binom: the count k"):
        sg.grad(binomial_in_its_count, mode=mode)(np.array([1.0, 2.0]), np.array(0.3))


def test_every_rule_is_tested():
    module = "s2sgrad.rules.scipy_stats_shapes"
    wanted = [getattr(stats.lognorm, m) for m in METHODS]
    wanted += [getattr(stats.weibull_min, m) for m in METHODS]
    wanted += [getattr(stats.binom, m) for m in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf")]
    defined = rules_defined_in([module])
    assert len(defined) == len(wanted)
    assert all(any(p == w for w in wanted) for p in defined)
    assert_every_rule_is_tested([module], defined)
