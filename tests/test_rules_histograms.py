"""np.histogram (s2sgrad/rules/histograms.py): linear in weights (with density=True too), to
second order, reverse and forward, in s2s, tape and auto on a first and a later call,
against central differences; zero in the data where the edges are fixed (proved: the
output does not change as a sample moves within its bin); refused, naming the line, where
the edges come from the data and in bins and range themselves."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, check_grads_on_two_calls, numeric_grad, numeric_jvp

import s2sgrad as sg

HERE = __file__
MODES = ("s2s", "tape", "auto")
rng = np.random.default_rng(2930)
DATA = rng.uniform(0.0, 1.0, 20)
EDGES = np.array([0.0, 0.2, 0.5, 0.7, 1.0])


def counted(w, s):
    hist = np.histogram(DATA, bins=4, range=(0.0, 1.0), weights=w * s[0])[0]
    return np.sum(hist**2 * np.arange(1.0, 5.0))


def given_edges(w, s):
    return np.sum(np.sin(np.histogram(DATA, EDGES, weights=w**2)[0])) * s[1]


def edges_from_the_constant_data(w, s):
    # bins=3 without range: the edges come from DATA, which is not differentiated
    hist, edges = np.histogram(DATA, 3, weights=w)
    return np.sum(hist**2 * s) + np.sum(edges)


def density(w, s):
    hist = np.histogram(DATA, EDGES, density=True, weights=w)[0]
    return np.sum(hist**2 * np.arange(1.0, 5.0)) + s[0]


def density_with_range(w, s):
    shifted = DATA * 1.2 - 0.1  # some samples outside the range
    hist = np.histogram(shifted, 5, range=(0.0, 1.0), density=True, weights=w * s[1])[0]
    return np.sum(hist**3)


def stacked_weights(w, s):
    hist = np.histogram(np.reshape(DATA, (4, 5)), EDGES, weights=np.reshape(w, (4, 5)))[0]
    return np.sum(hist * s[0] * np.arange(4.0))


def weights_of_the_data(x, s):
    # the samples move within their bins: only the weights sin(x) count
    return np.sum(np.histogram(x, EDGES, weights=np.sin(x) * s[0])[0] ** 2)


CASES = [
    (counted, rng.normal(size=20), rng.uniform(0.5, 1.5, 3)),
    (given_edges, rng.normal(size=20), rng.uniform(0.5, 1.5, 3)),
    (edges_from_the_constant_data, rng.normal(size=20), rng.uniform(0.5, 1.5, 3)),
    (density, rng.uniform(0.5, 1.5, 20), rng.uniform(0.5, 1.5, 3)),
    (density_with_range, rng.uniform(0.5, 1.5, 20), rng.uniform(0.5, 1.5, 3)),
    (stacked_weights, rng.normal(size=20), rng.uniform(0.5, 1.5, 3)),
    (weights_of_the_data, DATA * 0.0 + np.linspace(0.05, 0.95, 20), rng.uniform(0.5, 1.5, 3)),
]
IDS = [case[0].__name__ for case in CASES]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("f", "a", "b"), CASES, ids=IDS)
def test_second_order_reverse_and_forward_against_differences(f, a, b, mode):
    check_grads_on_two_calls(f, (a, b), mode)


@pytest.mark.parametrize(("f", "a", "b"), CASES, ids=IDS)
def test_gradient_and_jvp_against_central_differences(f, a, b):
    expected = numeric_grad(f, (a, b), 0)
    tangent = rng.normal(size=np.shape(a))
    along = numeric_jvp(f, (a, b), 0, tangent)
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            gradient = sg.grad(f, mode=mode)
            for _ in range(2):
                assert_close(gradient(a, b), expected, rtol=1e-6, atol=1e-8)
        if mode != "auto":
            assert_close(sg.jvp(f, (a, b), (tangent, np.zeros(3)), mode=mode)[1], along)


def test_the_counts_do_not_move_with_a_sample_inside_its_bin():
    # the zero the rule gives the data where the edges are fixed
    x = np.linspace(0.05, 0.95, 20)
    for step in (1e-3, -1e-3, 1e-4):
        for bins, kwargs in ((EDGES, {}), (4, {"range": (0.0, 1.0)})):
            before = np.histogram(x, bins, weights=np.ones(20), **kwargs)
            after = np.histogram(x + step, bins, weights=np.ones(20), **kwargs)
            assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])


def edges_from_differentiated_data(x):
    return np.sum(np.histogram(x, 4, weights=x)[0] ** 2)


def differentiated_edges(e):
    return np.sum(np.histogram(DATA, np.cumsum(e), weights=DATA)[0] ** 2)


def differentiated_range(r):
    return np.sum(np.histogram(DATA, 3, range=(r[0], r[1]))[0] ** 2)


REFUSED = [
    (edges_from_differentiated_data, np.linspace(0.05, 0.95, 20), "edges computed from a"),
    (differentiated_edges, np.array([0.0, 0.3, 0.3, 0.4]), "bin edges"),
    # the tape meets range's arithmetic inside NumPy's code first, and refuses it there
    (differentiated_range, np.array([0.0, 1.0]), "(range=|no derivative)"),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("f", "x", "match"), REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_what_is_not_differentiated_is_refused_naming_the_line(f, x, match, mode):
    refused = pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+: .*{match}")
    with refused, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sg.grad(f, mode=mode)(x)
