"""Lists made by one unpacking (``means, covs = [], []``) and filled with an argument's
arrays do not change that argument.

A Kalman smoother keeps its filtered states in lists made that way, starting from the
prior mean it was given; appending to the lists must not count as changing the prior
(which made source transformation refuse forward mode and second order of the call).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_hvp_matches_differences, numeric_grad, numeric_jvp

import s2sgrad as sg
from s2sgrad.compiler.passes.mutation import mutated_parameters

MODES = ("s2s", "auto", "tape")


def smoother(q, ys, m0, P0):
    F = np.array([[1.0, 0.1], [0.0, 0.9]])
    H = np.array([[1.0, 0.0]])
    means, covariances, predicted, predicted_covariances = [], [], [], []
    m, P = m0, P0
    for y in ys:
        mp = F @ m
        Pp = F @ P @ F.T + q * np.eye(2)
        K = Pp @ H.T / (H @ Pp @ H.T + 0.3)
        m = mp + K @ (y - H @ mp)
        P = (np.eye(2) - K @ H) @ Pp
        means.append(m)
        covariances.append(P)
        predicted.append(mp)
        predicted_covariances.append(Pp)
    smoothed = means[-1]
    total = np.sum(smoothed**2)
    for t in range(len(ys) - 2, -1, -1):
        G = covariances[t] @ F.T @ np.linalg.inv(predicted_covariances[t + 1])
        smoothed = means[t] + G @ (smoothed - predicted[t + 1])
        total = total + np.sum(smoothed**2)
    return total


def loss(q, ys, m0, P0):
    return smoother(q, ys, m0, P0) + q**2


def keeps_the_first(x, first):
    kept, other = [], {}
    kept.append(first)
    other["a"] = first
    for _ in range(2):
        x = x * 1.5
        kept.append(x)
    return kept[0] * kept[-1]


def test_unpacked_lists_do_not_change_the_values_they_hold():
    assert mutated_parameters(smoother) == frozenset()
    assert mutated_parameters(keeps_the_first) == frozenset()


def test_an_unpacked_list_rebound_to_an_argument_still_counts():
    def appends_to_argument(items, x):
        kept, _spare = [], []
        kept = items
        kept.append(x)
        return x

    assert "items" in mutated_parameters(appends_to_argument)


def _args(n):
    rng = np.random.default_rng(n)
    return [0.2, rng.normal(size=(n, 1)), rng.normal(size=2), np.eye(2) * 0.5]


@pytest.mark.parametrize("n", [2, 5])
def test_gradient_in_every_mode(n):
    args = _args(n)
    expected = [numeric_grad(loss, args, i) for i in (0, 1, 2)]
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = sg.grad(loss, wrt=(0, 1, 2), mode=mode)
            for _ in range(2):
                for got, want in zip(g(*args), expected):
                    assert_close(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_forward_mode_through_the_helper(mode):
    q, ys, m0, P0 = _args(4)
    dys, dm = np.ones_like(ys), np.array([0.5, -1.0])

    def call(ys, m0):
        return smoother(q, ys, m0, P0)

    expected = numeric_jvp(lambda t: call(ys + t * dys, m0 + t * dm), [0.0], 0, 1.0)
    for _ in range(2):
        value, tangent = sg.jvp(call, (ys, m0), (dys, dm), mode=mode)
        assert_close(tangent, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_hessian_vector_product_through_the_helper(mode):
    q, ys, m0, P0 = _args(3)

    def call(ys, m0):
        return smoother(q, ys, m0, P0)

    assert_hvp_matches_differences(call, [ys, m0], mode)
