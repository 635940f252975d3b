"""np.interp with period= (s2sgrad/rules/scientific.py): x % period among xp % period,
sorted and extended by a period at each end, as NumPy computes it; differentiated in x and
fp (left and right are not used), to second order, reverse and forward, in s2s, tape and
auto on a first and a later call, against central differences. The period itself and xp
stay refused, naming the line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, check_grads_on_two_calls, numeric_grad, numeric_jvp

import s2sgrad as sg

HERE = __file__
MODES = ("s2s", "tape", "auto")
XP = np.array([0.3, 1.9, 0.9, 3.4, -0.7])  # unsorted, and not within one period
rng = np.random.default_rng(2931)


def in_x(x, fp):
    return np.sum(np.interp(x, XP, fp, period=2.5) ** 2 * np.arange(1.0, 7.0))


def in_fp_with_a_negative_period(x, fp):
    return np.sum(np.sin(np.interp(x * 3.0, XP, fp**2, period=-2.5)))


def ends_not_used(x, fp):
    return np.sum(np.interp(x, XP, fp, left=fp[0], right=fp[1], period=2.5) ** 3)


def angles(x, fp):
    # a table over one turn, read at any angle
    turn = np.linspace(0.0, 2.0 * np.pi, 5, endpoint=False)
    return np.sum(np.interp(x, turn, fp * np.cos(turn), period=2.0 * np.pi) * x)


CASES = [in_x, in_fp_with_a_negative_period, ends_not_used, angles]


def arguments(seed):
    generator = np.random.default_rng(seed)
    return generator.uniform(-4.0, 4.0, 6), generator.normal(size=5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_second_order_reverse_and_forward_against_differences(f, mode):
    x, fp = arguments(1)
    check_grads_on_two_calls(f, (x, fp), mode)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_and_jvp_against_central_differences(f):
    x, fp = arguments(2)
    expected = [numeric_grad(f, (x, fp), i) for i in (0, 1)]
    tangents = (rng.normal(size=6), rng.normal(size=5))
    along = numeric_jvp(f, (x, fp), 0, tangents[0]) + numeric_jvp(f, (x, fp), 1, tangents[1])
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            gradient = sg.grad(f, wrt=(0, 1), mode=mode)
            for _ in range(2):
                for actual, wanted in zip(gradient(x, fp), expected):
                    assert_close(actual, wanted, rtol=1e-6, atol=1e-8)
        if mode != "auto":
            assert_close(sg.jvp(f, (x, fp), tangents, mode=mode)[1], along)


def in_the_period(p):
    return np.sum(np.interp(np.array([0.5, 1.5]), XP, np.ones(5), period=p[0]))


def in_xp(xp):
    return np.sum(np.interp(np.array([0.5, 1.5]), xp, np.arange(5.0), period=2.5))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [in_the_period, in_xp], ids=lambda f: f.__name__)
def test_the_period_and_xp_are_refused_naming_the_line(f, mode):
    x = np.array([2.5]) if f is in_the_period else XP
    refused = pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+: ")
    with refused, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sg.grad(f, mode=mode)(x)
