"""A checkpointed function runs plainly in the forward pass (its intermediates are
recomputed later), so a number it stores around it (a loss appended to a global list, an
array set on its layer object) carried no derivative where its caller read it back: every
mode gave a wrong gradient. Such a store is refused; counting calls or logging text stays
differentiated."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

MODES = ["s2s", "tape", "auto"]
LOSSES: list = []
CALLS = {"n": 0}
MESSAGES: list = []
# (source transformation refuses reading LAYER.last before anything runs)
_REFUSED = "stores numbers around it|not carried through an object's attributes"


def _appends_its_loss(x):
    loss = np.sum(np.sin(x) ** 2)
    LOSSES.append(loss)
    return loss


appends_its_loss = sg.checkpoint(_appends_its_loss)


def reads_the_appended_loss(x):
    loss = appends_its_loss(x)
    return LOSSES[-1] * np.sum(x) + loss


class Layer:
    def __init__(self, w) -> None:
        self.w = w
        self.last = None

    def __call__(self, x):
        self.last = np.tanh(x * self.w)
        return np.sum(self.last**2)


LAYER = Layer(np.array([0.5, -1.0, 2.0]))
CHECKPOINTED_LAYER = sg.checkpoint(LAYER)


def reads_the_layers_activation(x):
    loss = CHECKPOINTED_LAYER(x)
    return np.sum(LAYER.last * x) + loss


def _counts_and_reports(x):
    CALLS["n"] += 1
    MESSAGES.append(f"call {CALLS['n']}")
    return np.sum(np.cos(x) * x)


counts_and_reports = sg.checkpoint(_counts_and_reports)


def through_a_counting_block(x):
    return counts_and_reports(x) * 2.0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [reads_the_appended_loss, reads_the_layers_activation])
def test_a_number_stored_by_a_checkpointed_function_is_refused(f, mode):
    x = np.random.default_rng(61).normal(size=3)
    LOSSES[:] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        with pytest.raises(sg.UnsupportedError, match=_REFUSED) as refused:
            sg.grad(f, mode=mode)(x)
    assert __file__ in str(refused.value)


@pytest.mark.parametrize("mode", MODES)
def test_counting_calls_and_logging_text_stay_differentiated(mode):
    x = np.random.default_rng(62).normal(size=3)
    expected = numeric_grad(through_a_counting_block, [x], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        for _ in range(2):
            assert_close(sg.grad(through_a_counting_block, mode=mode)(x), expected)
    assert CALLS["n"] > 0 and MESSAGES
