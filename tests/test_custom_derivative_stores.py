"""A function with a custom derivative (``@sg.derivative(of=f)``, ``@sg.custom_gradient``, a
``jvp=`` companion) that stores what it computes around it, read back by its caller: the
custom derivative either runs ``f`` plainly (the value read back carries no derivative) or
does not run it (the caller reads a stale value, or none: IndexError). Every mode gave a
wrong gradient and Hessian-vector product; both are refused, naming ``f``'s line. A count
or a text stored, and a record of the call's own arguments, stay allowed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_grad_jvp_and_hvp, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "tape", "auto"]
HISTORY: list = []
CALLS = {"n": 0}


class Probe:
    def __init__(self) -> None:
        self.last = None


PROBE = Probe()


def sine_left_out(x):  # its derivative computes the sine without calling it
    y = np.sin(x)
    HISTORY.append(y)
    return y


@sg.derivative(of=sine_left_out)
def _sine_left_out_derivative(x):
    y = np.sin(x)
    return y, lambda g: g * np.cos(x)


def sine_run_plainly(x):  # its derivative calls it: the stored sine is a plain number
    y = np.sin(x)
    HISTORY.append(y)
    return y


@sg.derivative(of=sine_run_plainly)
def _sine_run_plainly_derivative(x):
    y = sine_run_plainly(x)
    return y, lambda g: g * np.cos(x)


def sine_on_an_object(x):
    y = np.sin(x)
    PROBE.last = y
    return y


@sg.derivative(of=sine_on_an_object)
def _sine_on_an_object_derivative(x):
    y = np.sin(x)
    return y, lambda g: g * np.cos(x)


@sg.custom_gradient
def sine_with_its_gradient(x):
    y = np.sin(x)
    HISTORY.append(y)
    return y, lambda g: g * np.cos(x)


def reads_back_the_history(x):
    return np.sum(sine_left_out(x) * HISTORY[-1])


def reads_back_the_plain_history(x):
    return np.sum(sine_run_plainly(x) * HISTORY[-1])


def reads_back_the_attribute(x):
    return np.sum(sine_on_an_object(x) * PROBE.last)


def reads_back_the_custom_gradients_history(x):
    return np.sum(sine_with_its_gradient(x) * HISTORY[-1])


READING_BACK = [
    reads_back_the_history,
    reads_back_the_plain_history,
    reads_back_the_attribute,
    reads_back_the_custom_gradients_history,
]
_REFUSED = "stores (numbers|values) around it"


def _fresh_state():
    HISTORY[:] = []
    PROBE.last = None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", READING_BACK, ids=lambda f: f.__name__)
def test_a_stored_value_read_back_is_refused_in_grad_and_hvp(f, mode):
    x = np.random.default_rng(5).normal(size=3)
    # (s2s's forward mode over a gradient refuses any custom pullback, before it runs)
    second = _REFUSED + ("|differentiates that pullback again" if mode == "s2s" else "")
    for transform, refusal in (
        (lambda: sg.grad(f, mode=mode)(x), _REFUSED),
        (lambda: sg.hvp(f, (x,), (np.ones(3),), mode=mode), second),
    ):
        for _ in range(2):  # the first call and a call of what the first built
            _fresh_state()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sg.S2SGradWarning)
                with pytest.raises(sg.UnsupportedError, match=refusal) as refused:
                    transform()
            assert __file__ in str(refused.value)  # f's line, in this file


def square_recorded(x):
    return x**2


def _square_recorded_jvp(primals, tangents):  # computes the square without calling it
    return primals[0] ** 2, 2 * primals[0] * tangents[0]


@sg.derivative(of=square_recorded, jvp=_square_recorded_jvp)
def _square_recorded_derivative(x):
    return square_recorded(x), lambda g: 2 * x * g


def square_logged(x):
    y = x**2
    HISTORY.append(y)
    return y


def _square_logged_jvp(primals, tangents):
    return primals[0] ** 2, 2 * primals[0] * tangents[0]


@sg.derivative(of=square_logged, jvp=_square_logged_jvp)
def _square_logged_derivative(x):
    y = x**2
    return y, lambda g: 2 * x * g


@pytest.mark.parametrize("mode", MODES)
def test_forward_mode_refuses_a_companion_leaving_out_the_store(mode):
    x = np.random.default_rng(6).normal(size=3)
    _fresh_state()
    with pytest.raises(sg.UnsupportedError, match="does not call square_logged") as refused:
        sg.jvp(lambda v: square_logged(v) * HISTORY[-1], (x,), (np.ones(3),), mode=mode)
    assert __file__ in str(refused.value)


def square_counted(x):
    CALLS["n"] += 1
    return x**2


def _square_counted_jvp(primals, tangents):
    return square_counted(primals[0]), 2 * primals[0] * tangents[0]


@sg.derivative(of=square_counted, jvp=_square_counted_jvp)
def _square_counted_derivative(x):
    y = square_counted(x)  # the count happens, as in a plain call
    return y, lambda g: 2 * x * g


def counts_its_squares(x):
    return np.sum(np.sin(square_counted(x)) * x)


@pytest.mark.parametrize("mode", MODES)
def test_a_count_stored_by_the_function_stays_differentiated(mode):
    x = np.random.default_rng(7).normal(size=(2, 3))
    v = np.random.default_rng(17).normal(size=(2, 3))
    before = CALLS["n"]
    if mode != "s2s":  # (s2s's hvp refuses a custom pullback: see above)
        assert_grad_jvp_and_hvp(counts_its_squares, x, v, mode)
    expected = numeric_grad(counts_its_squares, [x], 0)
    assert_close(call_twice(sg.grad(counts_its_squares, mode=mode), x), expected)
    _, tangent = sg.jvp(counts_its_squares, (x,), (v,), mode=mode)
    assert_close(tangent, numeric_jvp(counts_its_squares, [x], 0, v))
    assert CALLS["n"] > before


def records_nothing_but_calls(x):
    return np.sum(np.cos(square_recorded(x)) * x)


@pytest.mark.parametrize("mode", MODES)
def test_a_function_keeping_nothing_stays_differentiated_at_broadcast_shapes(mode):
    rng = np.random.default_rng(8)
    for shape in [(), (3,), (2, 1, 3)]:
        x = rng.normal(size=shape)
        expected = numeric_grad(records_nothing_but_calls, [x], 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            for _ in range(2):
                assert_close(sg.grad(records_nothing_but_calls, mode=mode)(x), expected)


SINK: list = []


def sine_into_the_sink(x):
    y = np.sin(x)
    SINK.append(y)
    return y


@sg.derivative(of=sine_into_the_sink)
def _sine_into_the_sink_derivative(x):
    y = sine_into_the_sink(x)
    return y, lambda g: g * np.cos(x)


def reads_the_sink(x):
    return np.sum(sine_into_the_sink(x) * SINK[-1])


@pytest.mark.parametrize("mode", MODES)
def test_a_sink_rebound_between_calls_is_the_one_checked(mode):
    """The states are walked once per function: a global rebound to a new list must be
    seen (fresh), not the list the first call walked."""
    global SINK
    x = np.random.default_rng(9).normal(size=3)
    for _ in range(2):
        SINK = []
        with pytest.raises(sg.UnsupportedError, match="stores numbers around it"):
            sg.grad(reads_the_sink, mode=mode)(x)


def test_kept_states_are_walked_once_and_again_when_a_global_is_rebound():
    from s2sgrad.runtime.kept_states import kept_states_of

    global SINK
    first = kept_states_of(sine_into_the_sink)
    assert kept_states_of(sine_into_the_sink) is first
    SINK = []
    second = kept_states_of(sine_into_the_sink)
    assert second is not first
    assert any(held is SINK for held in second.containers.values())


def _logs_its_square(x):
    y = np.sum(x**2)
    HISTORY.append(y)
    return y


logs_its_square = sg.checkpoint(_logs_its_square)


def reads_the_checkpoints_log(x):
    return logs_its_square(x) * HISTORY[-1]


def _counts_its_block(x):
    CALLS["n"] += 1
    return np.sum(np.tanh(x) * x)


counts_its_block = sg.checkpoint(_counts_its_block)


def through_the_counting_block(x):
    return counts_its_block(x) * 2.0


@pytest.mark.parametrize("mode", MODES)
def test_forward_mode_of_a_checkpoint_storing_a_number_is_refused(mode):
    """Reverse mode refused it already; forward mode (a checkpoint's jvp) stored the plain
    value, and the caller read it back without its tangent."""
    x = np.random.default_rng(10).normal(size=3)
    v = np.random.default_rng(11).normal(size=3)
    _fresh_state()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        with pytest.raises(sg.UnsupportedError, match="stores numbers around it"):
            sg.jvp(reads_the_checkpoints_log, (x,), (v,), mode=mode)
        _, tangent = sg.jvp(through_the_counting_block, (x,), (v,), mode=mode)
    assert_close(tangent, numeric_jvp(through_the_counting_block, [x], 0, v))
