"""``sg.hvp`` of a loss that logs itself (``history.append(float(loss))``): source
transformation keeps the logged value apart (modes "s2s" and "auto" give the product and
log once); the tape cannot tell a float only logged from one computed with, so it refuses
``float()`` there and says how to log (``float(sg.stop_gradient(loss))``, or mode "s2s"),
and logging the plain value that way works on the tape too."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_jvp

import s2sgrad as sg

HISTORY: list = []


def logged_loss(x):
    loss = np.sum(np.sin(x) * x**2)
    HISTORY.append(float(loss))
    return loss


def logged_plainly(x):
    loss = np.sum(np.sin(x) * x**2)
    HISTORY.append(float(sg.stop_gradient(loss)))
    return loss


def _plain(x):
    return np.sum(np.sin(x) * x**2)


def _hvp_oracle(x, v):
    return numeric_jvp(lambda t: sg.grad(_plain, mode="tape")(t), [x], 0, v)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_source_transformation_logs_once_and_differentiates(mode):
    rng = np.random.default_rng(31)
    x, v = rng.normal(size=4), rng.normal(size=4)
    HISTORY.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (found,) = sg.hvp(logged_loss, (x,), (v,), mode=mode)
    assert_close(found, _hvp_oracle(x, v), rtol=1e-5)
    assert [pytest.approx(_plain(x))] == HISTORY


def test_the_tape_refuses_the_float_and_says_how_to_log():
    rng = np.random.default_rng(32)
    x, v = rng.normal(size=3), rng.normal(size=3)
    line = logged_loss.__code__.co_firstlineno + 2
    with pytest.raises(sg.S2SGradError, match=rf"{__file__}:{line}: float\(\)") as refused:
        sg.hvp(logged_loss, (x,), (v,), mode="tape")
    message = str(refused.value)
    assert "history.append(float(loss))" in message
    assert "float(s2sgrad.stop_gradient(loss))" in message
    assert "mode='s2s'" in message


def test_the_tape_logs_a_value_taken_plainly():
    rng = np.random.default_rng(33)
    x, v = rng.normal(size=3), rng.normal(size=3)
    HISTORY.clear()
    (found,) = sg.hvp(logged_plainly, (x,), (v,), mode="tape")
    assert_close(found, _hvp_oracle(x, v), rtol=1e-5)
    assert [pytest.approx(_plain(x))] == HISTORY
