"""Second order of a loss that logs itself (``history.append(float(loss))``,
``LOSSES[step] = loss``): its gradient is generated with the log kept, and forward mode
over that gradient met the log as a call of unknown code (``opaque(history.append)``) and
refused it, in mode "s2s" and, falling back to the tape (which refuses ``float()`` of its
values), in mode "auto". A method of a list or dict of the code around is a library call:
the log is written once per call, with the plain value."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

HISTORY: list = []
LOSSES: dict = {}


def appends_its_loss(x):
    loss = np.sum(np.sin(x) ** 2 * x) + np.prod(np.cos(x))
    HISTORY.append(float(loss))
    return loss


def enters_its_loss(x, step=3):
    loss = np.sum(np.tanh(x) * x**2)
    LOSSES[step] = loss
    return loss


def _plain_gradient(f):
    return lambda y: numeric_grad(f, [y], 0)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("f", [appends_its_loss, enters_its_loss], ids=lambda f: f.__name__)
def test_hvp_hessian_and_jvp_of_grad_of_a_logging_loss(f, mode):
    rng = np.random.default_rng(41)
    for shape in [(3,), (2, 2)]:
        x = rng.normal(size=shape)
        v = rng.normal(size=shape)
        expected = numeric_jvp(_plain_gradient(f), [x], 0, v, step=1e-4)
        with warnings.catch_warnings():
            warnings.simplefilter("error", sg.S2SGradWarning)  # no fallback to the tape
            for _ in range(2):  # the first call, and a call of what it built
                (product,) = sg.hvp(f, (x,), (v,), mode=mode)
                assert_close(product, expected, rtol=1e-4, atol=1e-6)
                _, tangent = sg.jvp(sg.grad(f, mode=mode), (x,), (v,), mode=mode)
                assert_close(tangent, expected, rtol=1e-4, atol=1e-6)
                hessian = sg.hessian(f, mode=mode)(x).reshape(x.size, x.size)
                assert_close(hessian @ v.ravel(), expected.ravel(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_the_log_holds_the_plain_loss_once_per_call(mode):
    x = np.random.default_rng(42).normal(size=4)
    v = np.ones(4)
    for transform in (
        lambda: sg.hvp(appends_its_loss, (x,), (v,), mode=mode),
        lambda: sg.hessian(appends_its_loss, mode=mode)(x),
    ):
        HISTORY[:] = []
        transform()
        assert len(HISTORY) == 1
        assert isinstance(HISTORY[0], float)
        assert HISTORY[0] == pytest.approx(_plain_loss(x))


def _plain_loss(x):
    return float(np.sum(np.sin(x) ** 2 * x) + np.prod(np.cos(x)))


def reads_its_log_back(x):
    loss = np.sum(np.sin(x) * x)
    HISTORY.append(float(loss))
    return loss * HISTORY[-1]


def test_a_log_read_back_stays_refused_by_source():
    x = np.random.default_rng(43).normal(size=3)
    with pytest.raises(sg.UnsupportedError) as refused:
        sg.hvp(reads_its_log_back, (x,), (np.ones(3),), mode="s2s")
    assert __file__ in str(refused.value)
