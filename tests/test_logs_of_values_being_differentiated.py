"""A list or dict of the code around a function that the function only writes into is a
log (``history.append(float(loss))``, ``LOSSES[step] = loss``): source transformation
differentiates the function and the log gets the plain values, in reverse and forward mode.
One the function, a helper or a method reads back in the same call is still refused by
source (mode "auto" tapes it)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

HISTORY: list = []
BY_STEP: dict = {}


def logs_a_float(x):
    loss = np.sum(np.sin(x) ** 2)
    HISTORY.append(float(loss))
    return loss


def logs_an_item_per_step(x):
    total = 0.0
    for step in range(3):
        total = total + np.sum(np.tanh(x * (step + 1)))
        HISTORY.append(total.item())
        BY_STEP[step] = total
    return total


def logs_the_value_itself(x):
    loss = np.sum(np.cos(x) * x)
    HISTORY.append(loss)
    HISTORY.append(loss * 2.0)
    return loss


def _mean_so_far():
    return np.mean(HISTORY) if HISTORY else 0.0


class Monitor:
    def last(self):
        return HISTORY[-1]


MONITOR = Monitor()


def reads_it_back(x):
    loss = np.sum(np.sin(x) ** 2)
    HISTORY.append(loss)
    return HISTORY[-1] * np.sum(x)


def a_helper_reads_it(x):
    loss = np.sum(np.sin(x) ** 2)
    HISTORY.append(loss)
    return _mean_so_far() * np.sum(x) + loss


def a_method_reads_it(x):
    loss = np.sum(np.sin(x) ** 2)
    HISTORY.append(loss)
    return MONITOR.last() * np.sum(x) + loss


def counts_it(x):
    loss = np.sum(np.sin(x) ** 2)
    HISTORY.append(loss)
    return loss * len(HISTORY)


LOGS = [logs_a_float, logs_an_item_per_step, logs_the_value_itself]
READERS = [reads_it_back, a_helper_reads_it, a_method_reads_it, counts_it]


def _reset():
    HISTORY[:] = [0.5, 0.25]
    BY_STEP.clear()


def _from_the_start(f):
    """``f`` run from the log as it was, for the finite differences."""

    def run(x):
        _reset()
        return f(x)

    return run


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("f", LOGS)
def test_a_log_is_differentiated_by_source(f, mode):
    rng = np.random.default_rng(51)
    x, v = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    expected = numeric_grad(_from_the_start(f), [x], 0)
    tangent = numeric_jvp(_from_the_start(f), [x], 0, v)
    _reset()
    plain = f(x)
    logged = list(HISTORY)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # no fallback in auto
        for _ in range(2):
            _reset()
            assert_close(sg.grad(f, mode=mode)(x), expected)
            assert len(HISTORY) == len(logged)
            assert_close(np.array(HISTORY, dtype=float), np.array(logged, dtype=float))
            _reset()
            value, found = sg.jvp(f, (x,), (v,), mode=mode)
            assert_close(value, plain)
            assert_close(found, tangent)


@pytest.mark.parametrize("f", [logs_the_value_itself])
def test_the_tape_logs_the_plain_value_too(f):
    x = np.random.default_rng(52).normal(size=(2, 3))
    _reset()
    assert_close(sg.grad(f, mode="tape")(x), numeric_grad(_from_the_start(f), [x], 0))
    assert all(type(v) is not object and np.ndim(v) == 0 for v in HISTORY)


@pytest.mark.parametrize("f", READERS)
def test_a_log_read_back_in_the_same_call_is_refused_by_source_and_taped(f):
    x = np.random.default_rng(53).normal(size=3)
    expected = numeric_grad(_from_the_start(f), [x], 0)
    _reset()
    with pytest.raises(sg.UnsupportedError, match="which belongs to the code around"):
        sg.grad(f, mode="s2s")(x)
    with pytest.raises(sg.UnsupportedError, match="belongs to the code around"):
        sg.jvp(f, (x,), (x,), mode="s2s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        _reset()
        assert_close(sg.grad(f, mode="auto")(x), expected)


def _logs_inside(x):
    loss = np.sum(np.sin(x) ** 2)
    HISTORY.append(loss)
    return loss


CALLEES = [_logs_inside]


def reads_what_its_callee_logged(x):
    loss = _logs_inside(x)
    return HISTORY[-1] * np.sum(x) + loss


def reads_what_a_callee_from_a_list_logged(x, callees):
    loss = callees[0](x)
    return HISTORY[-1] * np.sum(x) + loss


@pytest.mark.parametrize("differentiated_first", [True, False])
@pytest.mark.parametrize(
    "f", [reads_what_its_callee_logged, reads_what_a_callee_from_a_list_logged]
)
def test_a_callee_that_logs_is_refused_by_source(f, differentiated_first):
    """The callee cannot see that its caller reads the log back: its derivative, made for
    itself (first) or for the caller, is never called by another derivative."""
    x, v = np.random.default_rng(54).normal(size=(2, 3))
    args = (x, CALLEES) if f is reads_what_a_callee_from_a_list_logged else (x,)
    if differentiated_first:
        _reset()
        sg.grad(_logs_inside, mode="s2s")(x)

    def from_the_start(y):
        _reset()
        return f(y, *args[1:])

    expected = numeric_grad(from_the_start, [x], 0)
    with pytest.raises(sg.UnsupportedError, match="could read them back"):
        _reset()
        sg.grad(f, mode="s2s")(*args)
    with pytest.raises(sg.UnsupportedError, match="could read them back"):
        _reset()
        sg.jvp(f, args, (v, *[None] * (len(args) - 1)), mode="s2s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        _reset()
        assert_close(sg.grad(f, mode="auto")(*args), expected)
        _reset()
        _, tangent = sg.jvp(f, args, (v, *[None] * (len(args) - 1)), mode="auto")
    assert_close(tangent, numeric_jvp(from_the_start, [x], 0, v))
