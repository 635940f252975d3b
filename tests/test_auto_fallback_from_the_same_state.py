"""Mode "auto" takes the tape when generated code is refused part way through a run (a
method reading what a helper stored on an object): the tape's run must start from the state
the refused run started from. It counted a module dict's counter twice (the gradient came
out doubled), and ran on an argument the refused run had already changed."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

CALLS = {"n": 0}


class Model:
    def predict(self, x):
        return np.sum(np.sin(self.slope * x))


def _made(theta):
    model = Model()
    model.slope = theta[0] * theta[1]
    return model


def counts_then_predicts(theta, x):
    CALLS["n"] += 1
    return _made(theta).predict(x) * CALLS["n"]


@dataclasses.dataclass
class Affine:
    w: np.ndarray
    b: float

    def predict(self, x):
        return np.sum(np.sin(self.w * x)) + self.b


def _scaled_in_place(p, x):
    p.w = p.w * x
    return np.sum(p.w)


def changes_its_argument_then_predicts(p, x):
    s = _scaled_in_place(p, x)
    return s + p.predict(x)


def _quietly(transformed, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        return transformed(*args)


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_a_counter_counts_one_call_when_auto_takes_the_tape(mode):
    rng = np.random.default_rng(41)
    x = rng.normal(size=4)
    gradient = sg.grad(counts_then_predicts, mode=mode)
    CALLS["n"] = 0
    for call in (1, 2):
        theta = rng.normal(size=2)
        found = _quietly(gradient, theta, x)
        assert CALLS["n"] == call
        expected = numeric_grad(lambda t, c=call: np.sum(np.sin(t[0] * t[1] * x)) * c, [theta], 0)
        assert_close(found, expected)


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_an_argument_changed_by_the_refused_run_is_put_back(mode):
    rng = np.random.default_rng(42)
    x = rng.normal(size=3)

    def plain(w):
        scaled = w * x
        return np.sum(scaled) + np.sum(np.sin(scaled * x)) + 0.5

    for _ in range(2):
        w = rng.normal(size=3)
        p = Affine(w.copy(), 0.5)
        found = _quietly(sg.grad(changes_its_argument_then_predicts, mode=mode), p, x)
        assert_close(found.w, numeric_grad(plain, [w], 0))


@pytest.mark.parametrize("mode", ["tape", "auto"])
@pytest.mark.parametrize("how", ["vjp", "value_and_grad", "jacfwd"])
def test_other_transforms_start_the_tape_from_the_same_arguments(how, mode):
    rng = np.random.default_rng(43)
    x = rng.normal(size=3)

    def plain(w):
        scaled = w * x
        return np.sum(scaled) + np.sum(np.sin(scaled * x)) + 0.5

    f = changes_its_argument_then_predicts
    for _ in range(2):
        w = rng.normal(size=3)
        p = Affine(w.copy(), 0.5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            if how == "vjp":
                found = sg.vjp(f, p, x, mode=mode)[1](1.0)[0].w
            elif how == "value_and_grad":
                found = sg.value_and_grad(f, mode=mode)(p, x)[1].w
            else:
                found = sg.jacfwd(lambda w: f(Affine(w, 0.5), x), mode=mode)(w)
        assert_close(found, numeric_grad(plain, [w], 0))
        np.testing.assert_array_equal(p.w, w)  # the caller's object as it was
