"""An in-place update of an array that source transformation cannot prove new (``t1`` may
be what a helper returned unchanged, in a branch) is refused by source transformation, and
mode "auto" differentiates it on the tape, which checks views and aliases itself (at run
time and on the source): "auto" refused such code before though the tape gets it right.
Where the tape finds the array shared too, "auto" still refuses."""

import os
import warnings

import numpy as np
import pytest
from oracle import assert_refused_in_s2s_and_taped_in_auto, numeric_grad

import s2sgrad as sg

HERE = os.path.basename(__file__)
SHAPES = [(3,), (4,), (6,)]


def accumulated(a, b, times):
    h = a
    for _ in range(times):
        h = h + np.tanh(b) * h
    return h


def rebound_in_a_branch(x):
    t1 = np.zeros(x.shape) + 0.0 * np.sum(x)
    t1[1:] = t1[1:] + np.tanh(np.mean(x)) * x[1:]
    if np.sum(x) > -100.0:
        t1 = accumulated(x * 1.0, t1, 2)
    return np.sum(np.sin(t1) ** 2)


def rebound_in_a_loop(x):
    t1 = np.zeros(x.shape) + x
    k = 0
    while k < 3:
        k += 1
        t1[1:] = t1[1:] * 0.5 + x[:-1]
        if np.sum(x) > -100.0:
            t1 = accumulated(x * 2.0, t1, k)
    return np.sum(t1**2)


@pytest.mark.parametrize("f", [rebound_in_a_branch, rebound_in_a_loop], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_possibly_shared_update_is_taped_in_auto(f, shape):
    x = np.random.default_rng(len(shape) + shape[0]).normal(size=shape)
    assert_refused_in_s2s_and_taped_in_auto(f, [x], "may share memory", HERE)


def writes_into_its_argument(x):
    t1 = np.zeros(x.shape) + x
    k = 0
    while k < 3:
        k += 1
        t1[1:] = t1[1:] * 2  # at k = 2, t1 is x itself
        if np.sum(x) > -50.0:
            t1 = accumulated(x, t1, k - 1)
    return np.sum(t1**2) + np.sum(x**2)


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_an_update_of_a_view_of_the_argument_is_followed_by_the_tape(mode):
    # the tape follows the write through the view into the array it lies in (cov13): the
    # gradient of the function, the caller's array left as it was
    x = np.random.default_rng(0).normal(size=4)
    before = x.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(writes_into_its_argument, mode=mode)(x)
    np.testing.assert_array_equal(x, before)
    expected = numeric_grad(lambda v: writes_into_its_argument(v.copy()), [before.copy()], 0)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)
