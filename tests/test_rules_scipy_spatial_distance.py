"""scipy.spatial.distance's cdist, pdist and squareform (s2sgrad/rules/scipy_spatial_distance.py)
with the metrics euclidean, sqeuclidean, cityblock, cosine and minkowski: to second order,
reverse and forward, in s2s, tape and auto on a first and a later call, against central
differences; the derivative at a zero distance follows np.linalg.norm's (0); other metrics
and weights are refused at the user's line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, check_grads_on_two_calls
from rulecheck import assert_every_rule_is_tested, rules_defined_in

import s2sgrad as sg

distance = pytest.importorskip("scipy.spatial.distance")

MODES = ("s2s", "tape", "auto")
HERE = __file__.rsplit("/", 1)[-1]


def euclidean_between(a, b):
    return np.sum(np.sin(distance.cdist(a, b)))


def squared_between(a, b):
    return np.sum(np.cos(distance.cdist(a, b, "sqeuclidean")))


def cityblock_between(a, b):
    return np.sum(distance.cdist(a, b, metric="cityblock") ** 2)


def cosine_between(a, b):
    return np.sum(np.exp(distance.cdist(a, b, "cosine")))


def minkowski_between(a, b):
    return np.sum(np.sqrt(distance.cdist(a, b, "minkowski", p=3.0)))


def minkowski_one_and_a_half(a, b):
    return np.sum(distance.cdist(a, b, "minkowski", p=1.5) ** 2)


def euclidean_within(a, b):
    return np.sum(np.sin(distance.pdist(a))) + np.sum(distance.pdist(b) ** 3)


def squared_within(a, b):
    return np.sum(np.sin(distance.pdist(a, "sqeuclidean"))) * np.sum(
        distance.pdist(b, "sqeuclidean")
    )


def cityblock_within(a, b):
    return np.sum(distance.pdist(a, "cityblock") ** 2) + np.sum(distance.pdist(b, "cityblock"))


def cosine_within(a, b):
    return np.sum(np.exp(distance.pdist(a, "cosine"))) + np.sum(distance.pdist(b, "cosine") ** 2)


def minkowski_within(a, b):
    return np.sum(distance.pdist(a, "minkowski", p=1.5) ** 2) + np.sum(
        np.sin(distance.pdist(b, "minkowski", p=4.0))
    )


def kernel_matrix(a, b):
    full = distance.squareform(distance.pdist(a, "sqeuclidean"))
    return np.sum(np.exp(-full) @ a) * np.sum(b**2)


def back_to_a_vector(a, b):
    square = a @ a.T + distance.squareform(distance.pdist(a * b[:1]))
    return np.sum(np.sin(distance.squareform(square, checks=False)))


PROGRAMS = [
    euclidean_between,
    squared_between,
    cityblock_between,
    cosine_between,
    minkowski_between,
    minkowski_one_and_a_half,
    euclidean_within,
    squared_within,
    cityblock_within,
    cosine_within,
    minkowski_within,
    kernel_matrix,
    back_to_a_vector,
]
SHAPES = [((4, 3), (5, 3)), ((5, 2), (5, 2)), ((3, 1), (2, 1))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", SHAPES, ids=["3d", "2d", "1d"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_reverse_and_forward_against_differences(f, shapes, mode):
    generator = np.random.default_rng(len(f.__name__) + shapes[0][0])
    a = generator.standard_normal(shapes[0])
    b = generator.standard_normal(shapes[1])
    check_grads_on_two_calls(f, (a, b), mode)


def total_length(x):
    return np.sum(distance.pdist(x))


def total_length_to(x, y):
    return np.sum(distance.cdist(x, y))


def _pairwise_unit_vectors(x):
    """The analytic gradient of the sum of pairwise distances, 0 for a pair at distance 0."""
    gradient = np.zeros_like(x)
    for i in range(len(x)):
        for j in range(len(x)):
            length = np.linalg.norm(x[i] - x[j])
            if i != j and length > 0.0:
                gradient[i] += (x[i] - x[j]) / length
    return gradient


@pytest.mark.parametrize("mode", MODES)
def test_a_zero_distance_has_the_norms_derivative_zero(mode):
    generator = np.random.default_rng(5)
    x = generator.standard_normal((4, 3))
    x[2] = x[0]  # two equal points: a distance of 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        for _ in range(2):
            gradient = sg.grad(total_length, mode=mode)(x)
            assert np.all(np.isfinite(gradient))
            assert_close(gradient, _pairwise_unit_vectors(x), rtol=1e-10, atol=1e-12)
            # the same as np.linalg.norm's derivative of the zero vector
            by_norm = sg.grad(
                lambda z: sum(np.linalg.norm(z[i] - z[j]) for i in range(4) for j in range(i)),
                mode="tape",
            )(x)
            assert_close(gradient, by_norm, rtol=1e-10, atol=1e-12)
            between = sg.grad(total_length_to, mode=mode)(x, x[:2])
            assert np.all(np.isfinite(between))
    tangent = generator.standard_normal(x.shape)
    value, moved = sg.jvp(total_length, (x,), (tangent,))
    assert_close(moved, np.sum(_pairwise_unit_vectors(x) * tangent), rtol=1e-10, atol=1e-12)


def correlation_distance(x):
    return np.sum(distance.pdist(x, "correlation"))  # the refused line


def weighted_distance(x, y):
    return np.sum(distance.cdist(x, y, "minkowski", p=2.0, w=np.ones(3)))  # the refused line


@pytest.mark.parametrize("mode", MODES)
def test_other_metrics_and_weights_are_refused_at_the_users_line(mode):
    x = np.random.default_rng(2).standard_normal((4, 3))
    with pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+: .*'euclidean', 'sqeuclidean'"):
        sg.grad(correlation_distance, mode=mode)(x)
    with pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+: .*without w="):
        sg.grad(weighted_distance, mode=mode)(x, x)


def test_every_rule_is_tested():
    module = "s2sgrad.rules.scipy_spatial_distance"
    tested = [distance.cdist, distance.pdist, distance.squareform]
    assert sorted(map(repr, rules_defined_in([module]))) == sorted(map(repr, tested))
    assert_every_rule_is_tested([module], tested)
