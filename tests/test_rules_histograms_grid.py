"""np.histogram2d and np.histogramdd (s2sgrad/rules/histograms_grid.py): linear in weights
(with density too), checked to second order, reverse and forward, in s2s, tape and auto on a
first and a later call against central differences; zero by design in the sample points
where the edges are fixed (proved: moving the points a little changes no count, and the
gradient is exactly zero); refused in the points where the edges come from them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import check_grads_on_two_calls

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")
HERE = __file__.rsplit("/", 1)[-1]
GENERATOR = np.random.default_rng(12)
X = GENERATOR.uniform(0.0, 1.0, 40)
Y = GENERATOR.uniform(0.0, 1.0, 40)
POINTS = np.stack([X, Y, X * Y], axis=1)
UNIT = [[0.0, 1.0], [0.0, 1.0]]


def counts_in_a_square(w):
    return np.sum(np.histogram2d(X, Y, bins=3, range=UNIT, weights=w)[0] ** 2)


def density_on_given_edges(w):
    edges = [np.linspace(0.0, 1.0, 4), np.array([0.0, 0.3, 1.0])]
    return np.sum(np.sin(np.histogram2d(X, Y, bins=edges, density=True, weights=w)[0]))


def one_array_of_edges_for_both(w):
    return np.sum(np.histogram2d(X, Y, np.linspace(0.0, 1.0, 5), weights=w)[0] ** 3)


def three_axes(w):
    return np.sum(np.histogramdd(POINTS, bins=(2, 3, 2), range=[(0, 1)] * 3, weights=w)[0] ** 3)


def three_axes_density(w):
    ranges = [(0.0, 1.0), (0.0, 1.0), (0.0, 0.5)]  # some points outside the last
    return np.sum(np.histogramdd(POINTS, bins=2, range=ranges, density=True, weights=w)[0] ** 2)


def axes_as_a_tuple(w):
    counts = np.histogramdd((X, Y), bins=[2, np.array([0.0, 0.5, 0.8, 1.0])], range=UNIT, weights=w)
    return np.sum(np.exp(counts[0] / 10.0))


PROGRAMS = [
    counts_in_a_square,
    density_on_given_edges,
    one_array_of_edges_for_both,
    three_axes,
    three_axes_density,
    axes_as_a_tuple,
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_in_weights_against_differences(f, mode):
    w = np.random.default_rng(len(f.__name__)).uniform(0.5, 2.0, 40)
    check_grads_on_two_calls(f, (w,), mode)


def points_and_weights_2d(x, y, w):
    return np.sum(np.histogram2d(x, y, bins=4, range=UNIT, weights=w)[0] ** 2)


def points_and_weights_dd(p, w):
    return np.sum(np.histogramdd(p, bins=3, range=[(0, 1)] * 3, weights=w)[0] ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_zero_by_design_in_the_points_where_the_edges_are_fixed(mode):
    w = np.random.default_rng(3).uniform(0.5, 2.0, 40)
    for moved in (1e-7, -1e-7, 1e-9):  # a point moving a little changes no count
        np.testing.assert_array_equal(
            np.histogram2d(X + moved, Y - moved, bins=4, range=UNIT, weights=w)[0],
            np.histogram2d(X, Y, bins=4, range=UNIT, weights=w)[0],
        )
        np.testing.assert_array_equal(
            np.histogramdd(POINTS + moved, bins=3, range=[(0, 1)] * 3, weights=w)[0],
            np.histogramdd(POINTS, bins=3, range=[(0, 1)] * 3, weights=w)[0],
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        for _ in range(2):
            gx, gy, gw = sg.grad(points_and_weights_2d, wrt=(0, 1, 2), mode=mode)(X, Y, w)
            assert np.all(gx == 0.0) and np.all(gy == 0.0) and np.any(gw != 0.0)
            gp, gw = sg.grad(points_and_weights_dd, wrt=(0, 1), mode=mode)(POINTS, w)
            assert gp.shape == POINTS.shape and np.all(gp == 0.0) and np.any(gw != 0.0)
    _, tangent = sg.jvp(points_and_weights_2d, (X, Y, w), (np.ones(40), np.ones(40), 0.0 * w))
    assert tangent == 0.0


def edges_from_the_points(x, w):
    return np.sum(np.histogram2d(x, Y, bins=3, weights=w)[0])  # the refused line


def edges_from_the_points_dd(p):
    return np.sum(np.histogramdd(p, bins=[2, 2, np.linspace(0, 1, 3)])[0])  # the refused line


@pytest.mark.parametrize("mode", MODES)
def test_points_are_refused_where_the_edges_move_with_them(mode):
    w = np.ones(40)
    with pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+: np.histogram2d is differentiated"):
        sg.grad(edges_from_the_points, wrt=(0, 1), mode=mode)(X, w)
    with pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+: np.histogramdd is differentiated"):
        sg.grad(edges_from_the_points_dd, mode=mode)(POINTS)
    # only the weights differentiated: the edges may come from the points
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradient = sg.grad(edges_from_the_points, wrt=1, mode=mode)(X, w)
    np.testing.assert_array_equal(gradient, np.ones(40))
