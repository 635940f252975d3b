"""``sg.vmap`` of a function that changes state as it runs (a model counting its calls, a
global counter): every example sees the state the call started from, as one batched run
sees it, however vmap computes the batch (one batched run checked against two examples,
or one run per example)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

MODES = ["s2s", "tape", "auto"]
COUNTS = {"calls": 0}


class CountingModel:
    def __init__(self, weights) -> None:
        self.calls = 0
        self.weights = weights

    def loss(self, x):
        self.calls += 1
        return np.sum(np.sin(x * self.weights)) * self.calls

    def branchy_loss(self, x):
        """Not batchable (a branch on a value): vmap runs it once per example."""
        self.calls += 1
        scale = 2.0 if x.sum() > 0 else 0.5
        return np.sum(np.sin(x * self.weights)) * self.calls * scale


def counted(x):
    COUNTS["calls"] += 1
    return np.tanh(x) * COUNTS["calls"]


def _oracle(method, weights, calls):
    """The model's method as one call with ``calls`` counted computes it."""

    def one_call(x):
        scale = 1.0 if method == "loss" else 2.0 if x.sum() > 0 else 0.5
        return np.sum(np.sin(x * weights)) * calls * scale

    return one_call


def _mapped(transformed, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # vmap's note that it runs once per example
        return sg.vmap(transformed)(*args)


@pytest.mark.parametrize("method", ["loss", "branchy_loss"])
def test_every_example_sees_the_count_one_call_would(method):
    rng = np.random.default_rng(21)
    model = CountingModel(rng.normal(size=3))
    for call in (1, 2):
        xs = rng.normal(size=(5, 3))
        found = _mapped(getattr(model, method), xs)
        assert model.calls == call
        expected = [_oracle(method, model.weights, call)(x) for x in xs]
        assert_close(found, np.array(expected))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", ["loss", "branchy_loss"])
def test_per_example_gradients_of_a_counting_model(method, mode):
    rng = np.random.default_rng(22)
    model = CountingModel(rng.normal(size=3))
    for call in (1, 2):
        xs = rng.normal(size=(4, 3))
        kept = xs.copy()
        found = _mapped(sg.grad(getattr(model, method), mode=mode), xs)
        assert model.calls == call or mode != "tape"  # generated code counts in a variable
        model.calls = call
        for x, row in zip(xs, found):
            assert_close(row, numeric_grad(_oracle(method, model.weights, call), [x], 0))
        np.testing.assert_array_equal(xs, kept)


def test_a_global_counter_counts_one_call_of_the_batch():
    rng = np.random.default_rng(23)
    COUNTS["calls"] = 0
    mapped = sg.vmap(counted)
    for call in (1, 2):
        xs = rng.normal(size=(3, 2))
        assert_close(mapped(xs), np.tanh(xs) * call)
        assert COUNTS["calls"] == call
