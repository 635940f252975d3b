"""Runs of user code for one answer must see the same state and the same random draws.
Found by probing stateful programs: two draws from one generator in a function
(``a = rng.normal(); b = rng.normal()``) were merged into one by the optimiser (a method of
NumPy's generator was taken for a pure NumPy function: a wrong gradient in s2s and auto);
``vmap`` computed its examples alone with new draws; and a class attribute, a function's
own attribute and a counter in a dict an object holds were not kept, so a tape Hessian's
or forward Jacobian's columns each computed with another count."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close

import s2sgrad as sg

RNG = np.random.default_rng(0)


def two_draws(x):
    a = RNG.normal()
    b = RNG.normal()
    return np.sum(np.sin(a * x) + b * x)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_two_draws_from_one_generator_stay_two(mode):
    x = np.random.default_rng(51).uniform(0.2, 1.2, size=(2, 3))
    for _ in range(2):
        state = RNG.bit_generator.state
        a, b = RNG.normal(), RNG.normal()
        RNG.bit_generator.state = state
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            gradient = sg.grad(two_draws, mode=mode)(x)
        assert_close(gradient, a * np.cos(a * x) + b)
        RNG.bit_generator.state = state
        _, tangent = sg.jvp(two_draws, (x,), (np.ones_like(x),), mode=mode)
        assert_close(tangent, np.sum(a * np.cos(a * x) + b))


def noisy(x):
    return np.sum(x * RNG.normal(size=3))


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_vmap_examples_see_the_draws_of_the_batched_run(mode):
    xs = np.random.default_rng(52).normal(size=(4, 3))
    state = RNG.bit_generator.state
    noise = RNG.normal(size=3)
    RNG.bit_generator.state = state
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradients = sg.vmap(sg.grad(noisy, mode=mode))(xs)
    assert_close(gradients, np.broadcast_to(noise, xs.shape))


class Scaled:
    calls = 0


def counts_on_its_class(x):
    Scaled.calls += 1
    return np.sum(np.sin(x * (Scaled.calls % 4 + 1)))


def counts_on_itself(x):
    counts_on_itself.calls = getattr(counts_on_itself, "calls", 0) + 1
    return np.sum(np.sin(x * (counts_on_itself.calls % 4 + 1)))


class Holder:
    def __init__(self) -> None:
        self.counts = {"n": 0}


HOLDER = Holder()


def counts_in_a_held_dict(x):
    HOLDER.counts["n"] += 1
    return np.sum(np.sin(x * (HOLDER.counts["n"] % 4 + 1)))


COUNTS = {
    counts_on_its_class: lambda: Scaled.calls,
    counts_on_itself: lambda: getattr(counts_on_itself, "calls", 0),
    counts_in_a_held_dict: lambda: HOLDER.counts["n"],
}


@pytest.mark.parametrize("mode", ["tape", "auto"])
@pytest.mark.parametrize("f", list(COUNTS), ids=lambda f: f.__name__)
def test_a_hessian_and_a_forward_jacobian_count_one_call(f, mode):
    x = np.random.default_rng(53).normal(size=3)
    count = COUNTS[f]
    for transform, exact in (
        (sg.hessian, lambda k: np.diag(-(k**2) * np.sin(x * k))),
        (sg.jacfwd, lambda k: k * np.cos(x * k)),
    ):
        for _ in range(2):
            scale = (count() + 1) % 4 + 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sg.S2SGradWarning)
                assert_close(transform(f, mode=mode)(x), exact(scale))
