"""Binomial checkpointing: the split points against an exhaustive search, and reversed
loops against plain reverse mode and finite differences."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from s2sgrad.runtime.revolve import (
    CheckpointedLoop,
    default_snapshots,
    optimal_split,
    recomputed_steps,
)


@functools.cache
def least_forward_steps(steps, snapshots):
    """Exhaustive search: the fewest forward steps that reverse ``steps`` steps."""
    if steps <= 1:
        return 0
    if snapshots == 1:
        return steps * (steps - 1) // 2
    return min(
        m + least_forward_steps(steps - m, snapshots - 1) + least_forward_steps(m, snapshots)
        for m in range(1, steps)
    )


def splits_that_are_optimal(steps, snapshots):
    best = least_forward_steps(steps, snapshots)
    return [
        m
        for m in range(1, steps)
        if m + least_forward_steps(steps - m, snapshots - 1) + least_forward_steps(m, snapshots)
        == best
    ]


def test_the_closed_form_and_the_split_match_an_exhaustive_search():
    for snapshots in range(1, 6):
        for steps in range(1, 90):
            assert recomputed_steps(steps, snapshots) == least_forward_steps(steps, snapshots)
            if snapshots >= 2 and steps >= 2:
                assert optimal_split(steps, snapshots) in splits_that_are_optimal(steps, snapshots)


# A small recurrent step: h ← tanh(W h + x_t), with W carried in the state.
def step(state, t):
    h, w, xs = state
    return np.tanh(w @ h + xs[t]), w, xs


def step_vjp(state, t):
    h, w, xs = state
    new_h = np.tanh(w @ h + xs[t])
    return (new_h, w, xs), (h, w, new_h, t, xs)


def step_backward(saved, cotangent):
    h, w, new_h, t, xs = saved
    dh_new, dw, dxs = cotangent
    dz = dh_new * (1 - new_h**2)
    dxs = dxs.copy()
    dxs[t] += dz
    return w.T @ dz, dw + np.outer(dz, h), dxs


def final_loss_gradient(h0, w, xs, snapshots):
    steps = len(xs)
    loop = CheckpointedLoop(step, step_vjp, step_backward, steps, snapshots)
    h, _, _ = loop.forward((h0, w, xs))
    d = loop.backward((2 * h, np.zeros_like(w), np.zeros_like(xs)))  # d sum(h**2)
    return d, loop


def problem(seed, steps, size=4):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=size),
        0.5 * rng.normal(size=(size, size)),
        rng.normal(size=(steps, size)),
    )


@pytest.mark.parametrize(
    "steps, snapshots", [(1, 1), (2, 1), (7, 1), (30, 2), (30, 3), (50, 7), (40, 40), (100, None)]
)
def test_checkpointed_reversal_equals_plain_reversal(steps, snapshots):
    h0, w, xs = problem(steps, steps)
    (dh, dw, dxs), loop = final_loss_gradient(h0, w, xs, snapshots)
    (ph, pw, pxs), _ = final_loss_gradient(h0, w, xs, steps)  # a snapshot at every step
    assert np.allclose(dh, ph, rtol=1e-12, atol=1e-12)
    assert np.allclose(dw, pw, rtol=1e-12, atol=1e-12)
    assert np.allclose(dxs, pxs, rtol=1e-12, atol=1e-12)
    snapshots = snapshots or default_snapshots(steps)
    chain = loop.first_chain()
    assert loop.stats["taped"] == steps
    assert loop.stats["forward"] == steps + recomputed_steps(steps, snapshots) - (
        chain[-1] if chain else 0
    )
    assert loop.stats["most_snapshots"] <= snapshots


def test_checkpointed_gradient_matches_finite_differences():
    h0, w, xs = problem(1, 25)

    def loss(w):
        h = h0
        for t in range(len(xs)):
            h, _, _ = step((h, w, xs), t)
        return np.sum(h**2)

    (_, dw, _), _ = final_loss_gradient(h0, w, xs, 3)
    numeric = np.zeros_like(w)
    for index in np.ndindex(w.shape):
        e = np.zeros_like(w)
        e[index] = 1e-6
        numeric[index] = (loss(w + e) - loss(w - e)) / 2e-6
    assert np.allclose(dw, numeric, rtol=1e-6, atol=1e-8)


def test_snapshots_are_safe_from_a_body_that_writes_in_place():
    def step_in_place(state, t):
        state[0] *= 1.5  # changes the array it was given
        return state

    def vjp(state, t):
        return step_in_place(state.copy(), t), None

    def backward(saved, d):
        d = d.copy()
        d[0] *= 1.5
        return d

    loop = CheckpointedLoop(step_in_place, vjp, backward, steps=12, snapshots=3)
    start = np.ones(2)
    final = loop.forward(start.copy())
    assert np.allclose(final, [1.5**12, 1.0])
    assert np.allclose(loop.backward(np.ones(2)), [1.5**12, 1.0])


def test_bad_snapshot_counts_are_refused():
    with pytest.raises(ValueError, match="at least 1"):
        CheckpointedLoop(step, step_vjp, step_backward, 10, snapshots=0)
