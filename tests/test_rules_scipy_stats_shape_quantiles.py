"""ppf, isf and logsf of scipy.stats' t, beta, gamma and chi2
(s2sgrad/rules/scipy_stats_shape_quantiles.py) in q (x), loc and scale over broadcasting
shapes: to second order, reverse and forward, in s2s, tape and auto on a first and a later
call, against central differences; a shape parameter is refused at the user's line."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import check_grads_on_two_calls
from rulecheck import assert_every_rule_is_tested, rules_defined_in

import s2sgrad as sg

stats = pytest.importorskip("scipy.stats")

MODES = ("s2s", "tape", "auto")
HERE = __file__.rsplit("/", 1)[-1]
FAMILIES = ("t", "beta", "gamma", "chi2")


def t_functions(q, loc, scale):
    x = stats.t.ppf(q, 3.5, loc, scale)
    return np.sum(x**2 + stats.t.isf(q, 2.5, loc, scale) + stats.t.logsf(x, 4.0, loc, scale))


def beta_functions(q, loc, scale):
    x = stats.beta.ppf(q, 2.0, 3.0, loc, scale)
    return np.sum(
        x**2 + stats.beta.isf(q, 1.5, 2.5, loc, scale) + stats.beta.logsf(x, 2.0, 3.0, loc, scale)
    )


def gamma_functions(q, loc, scale):
    x = stats.gamma.ppf(q, 2.5, loc, scale)
    return np.sum(
        x**2 + stats.gamma.isf(q, 1.5, loc, scale) + stats.gamma.logsf(x, 2.0, loc, scale)
    )


def chi2_functions(q, loc, scale):
    x = stats.chi2.ppf(q, 3.0, loc, scale)
    return np.sum(
        np.sin(x) + stats.chi2.isf(q, 4.0, loc, scale) * stats.chi2.logsf(x, 3.0, loc, scale)
    )


def by_keyword(q, loc, scale):
    return np.sum(stats.gamma.ppf(q, a=2.0, scale=scale) + stats.t.isf(q, df=3.0, loc=loc))


PROGRAMS = [t_functions, beta_functions, gamma_functions, chi2_functions, by_keyword]
SHAPES = [((2, 3), (3,), (2, 1)), ((4,), (), ())]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", SHAPES, ids=["broadcast", "numbers"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_reverse_and_forward_against_differences(f, shapes, mode):
    generator = np.random.default_rng(len(f.__name__))
    q = generator.uniform(0.15, 0.85, shapes[0])
    loc = generator.normal(size=shapes[1])
    scale = generator.uniform(0.5, 2.0, shapes[2])
    check_grads_on_two_calls(f, (q, loc, scale), mode)


def gamma_quantile_in_its_shape(q, a):
    return np.sum(stats.gamma.ppf(q, a))  # the refused line


@pytest.mark.parametrize("mode", MODES)
def test_a_shape_parameter_is_refused_at_the_users_line(mode):
    with pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+: .*gamma.ppf in the shape parameter a"):
        sg.grad(gamma_quantile_in_its_shape, wrt=1, mode=mode)(np.array([0.3, 0.6]), np.array(2.0))


def test_every_rule_is_tested():
    module = "s2sgrad.rules.scipy_stats_shape_quantiles"
    wanted = [getattr(getattr(stats, d), m) for d in FAMILIES for m in ("ppf", "isf", "logsf")]
    defined = rules_defined_in([module])
    assert len(defined) == len(wanted)
    assert all(any(p == w for w in wanted) for p in defined)
    assert_every_rule_is_tested([module], defined)
