"""``log.info("loss %.4f", loss)`` inside a differentiated function, as training code writes
it. Source transformation refused the call ("the result of log.info is not used, so it can
only matter by what it changes"), so mode "auto" fell back to the tape with a warning, and
on the tape logging's own ``msg % args`` asked ``float()`` of the value being
differentiated: the tape refused it, logging printed "--- Logging error ---" and the
message was lost. Logging's functions, like ``print``, only write their arguments out.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

LOG = logging.getLogger("s2sgrad.tests.training")


def logged_loss(w, x):
    z = np.tanh(x @ w)
    loss = np.mean(z**2)
    LOG.info("loss %.4f at %s", loss, w)
    logging.debug("norm %f", np.linalg.norm(w))
    return loss


W = np.array([0.3, -0.7, 1.1])
X = np.array([[1.0, 0.5, -0.2], [0.3, -1.0, 0.8]])


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_logged_values_are_logged_and_differentiated(mode, caplog):
    expected = numeric_grad(logged_loss, [W, X], 0)
    with caplog.at_level(logging.DEBUG), warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning, no logging error
        got = call_twice(sg.grad(logged_loss, mode=mode), W, X)
    assert_close(got, expected)
    messages = [r.getMessage() for r in caplog.records if r.name == LOG.name]
    assert messages and messages[0].startswith(f"loss {logged_loss(W, X):.4f}")


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_forward_mode_and_second_order(mode):
    tangent = np.array([1.0, 0.5, -2.0])
    _, derivative = sg.jvp(lambda w: logged_loss(w, X), (W,), (tangent,), mode=mode)
    assert_close(derivative, numeric_jvp(lambda w: logged_loss(w, X), [W], 0, tangent))
    inner = sg.grad(logged_loss, mode=mode)
    hvp = sg.grad(lambda w: inner(w, X) @ tangent, mode=mode)(W)
    expected = numeric_grad(lambda w: sg.grad(logged_loss)(w, X) @ tangent, [W], 0, step=1e-5)
    assert_close(hvp, expected, rtol=1e-5, atol=1e-7)


def reads_back_through_logging_text(w):
    loss = np.sum(w**2)
    return float("%.10f" % loss) * w[0]  # noqa: UP031 (as users write it)


def test_a_float_of_percent_text_outside_logging_is_still_refused_on_the_tape():
    with pytest.raises(sg.NonDifferentiableError, match=r"float\(\)"):
        sg.grad(reads_back_through_logging_text, mode="tape")(W)
