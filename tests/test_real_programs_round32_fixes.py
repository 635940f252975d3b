"""What the programs of round 32 found, each checked on its own.

* ``scipy.signal.lfilter`` (an IIR filter: audio, LPC, exponential smoothing) had no rule:
  the transformer refused it and on the tape it failed inside SciPy with "could not convert
  b, a, and x to a common type". It is differentiated now in ``b``, ``a`` and ``x``.
* A library's compiled code that fails with a ``ValueError`` on a value being
  differentiated reached the user as that ``ValueError``; it is a refusal naming the call.
* A library converting a value being differentiated with ``np.asarray`` (``solve_toeplitz``)
  was refused as if the user had written ``np.array([...])``; the refusal names the library
  function.
* A factory helper that makes an object and stores differentiated values on its attributes
  (``model.slope = theta[0]``, a ``@classmethod`` constructor), whose method the caller
  then calls, gave a zero gradient in modes "s2s" and "auto": the method's cotangent of the
  object had nowhere to go. The method call is refused in "s2s"; "auto" tapes the function.
* ``acc.add(v)`` of an object of the user's own class was refused as a set's ``add`` ("use
  a new set").
* Forward mode through ``np.vectorize(f)(x)`` transformed NumPy's own code and named
  NumPy's file; it is refused at the user's line as reverse mode refuses it.
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp
from scipy import signal

import s2sgrad as sg
from s2sgrad.tape.rerouting import original_of

MODES = ["s2s", "auto", "tape"]
R = np.random.default_rng(3219)
NOISE = R.normal(size=(2, 9))


def _check(f, x, mode):
    """Gradient (two calls), jvp and hvp of ``f`` at ``x`` against central differences."""
    v = R.normal(size=np.shape(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = numeric_grad(f, [x], 0)
        assert_close(call_twice(sg.grad(f, mode=mode), x), expected, rtol=1e-5, atol=1e-6)
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        assert_close(float(tangent), float(numeric_jvp(f, [x], 0, v)), rtol=1e-5, atol=1e-6)
        gradient = sg.grad(f, mode="tape")
        assert_close(gradient(x), expected, rtol=1e-5, atol=1e-6)
        (product,) = sg.hvp(f, (x,), (v,), mode=mode)
        assert_close(product, numeric_jvp(gradient, [x], 0, v, step=1e-5), rtol=1e-4, atol=1e-6)


# --- scipy.signal.lfilter ----------------------------------------------------------------------


def fir_part(b):
    return np.sum(signal.lfilter(b, [1.0, -0.5, 0.2], NOISE) ** 2)


def feedback_part(a):
    return np.sum(np.sin(signal.lfilter([0.5, 0.3], a, NOISE[0])))


def filtered_signal(x):
    return np.sum(signal.lfilter([0.5, 0.3], [2.0, -0.5], x, axis=0) ** 3)


def every_argument(p):
    b, a = p[:2], np.concatenate([[1.0], p[2:4]])
    return np.sum(signal.lfilter(b, a, p[4:] * NOISE[0, :6]) ** 2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f, x",
    [
        (fir_part, R.normal(size=3) * 0.5),
        (feedback_part, np.array([1.2, -0.3, 0.1])),
        (filtered_signal, R.normal(size=(5, 3))),
        (every_argument, R.normal(size=10) * 0.3),
    ],
    ids=["b", "a", "x along axis 0", "all three"],
)
def test_lfilter_is_differentiated_in_each_argument(f, x, mode):
    """Refused by the transformer and a ValueError from SciPy on the tape before."""
    _check(f, x, mode)


def with_initial_state(a):
    y, _ = signal.lfilter([1.0], a, NOISE[0], zi=np.zeros(1))
    return np.sum(y**2)


@pytest.mark.parametrize("mode", MODES)
def test_lfilter_with_initial_conditions_is_refused(mode):
    with pytest.raises(sg.NonDifferentiableError, match=f"{__file__}:[0-9]+: .*zi=None"):
        sg.grad(with_initial_state, mode=mode)(np.array([1.0, -0.5]))


def filtered_without_a_rule(b):
    """lfilter's own code, as it was before the tape routed its calls through the rule: a
    library function without a rule, whose compiled part raises ValueError on a tape
    value (on the tape, its calls are routed while it records)."""
    unrouted = original_of(signal.lfilter)
    return np.sum(unrouted(b, [1.0, -0.5, 0.2], NOISE[0]) ** 2)


def test_a_library_failing_on_a_tape_value_with_a_value_error_is_refused():
    """ValueError("could not convert b, a, and x to a common type") reached the user."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(
            sg.S2SGradError,
            match=f"{__file__}:[0-9]+: scipy.signal.lfilter failed on a value being "
            "differentiated .*common type.*@s2sgrad.derivative",
        ):
            sg.grad(filtered_without_a_rule, mode="tape")(np.array([0.3, 0.2, 0.1]))


def a_value_error_of_plain_arrays(b):
    signal.lfilter(np.ones((2, 2)), [1.0], NOISE[0])  # SciPy's own complaint, b unused
    return np.sum(b**2)


def test_a_libraries_own_value_error_is_left_as_it_is():
    with pytest.raises(ValueError, match="non-empty 1d array|too small depth|too deep"):
        sg.grad(a_value_error_of_plain_arrays, mode="tape")(np.ones(2))


def toeplitz_solution(r):
    from scipy.linalg import solve_toeplitz

    return np.sum(solve_toeplitz(r[:3], r[1:]))


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_a_library_converting_a_tape_value_is_named(mode):
    """Was: "np.asarray() / np.array() of a value ... (for a list of values use np.stack)"."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(
            sg.NonDifferentiableError,
            match=f"{__file__}:[0-9]+: scipy.linalg.solve_toeplitz converts a value being "
            r"differentiated .*@s2sgrad.derivative\(of=scipy.linalg.solve_toeplitz\)",
        ):
            sg.grad(toeplitz_solution, mode=mode)(np.array([2.0, 0.5, 0.2, 0.1]))


# --- objects a helper stores differentiated values on ------------------------------------------

GRID = np.linspace(0.0, 1.0, 5)


class Line:
    @classmethod
    def from_vector(cls, theta):
        line = cls()
        line.slope, line.intercept = theta[0], theta[1]
        return line

    def predict(self, x):
        return self.slope * x + self.intercept


def make_line(theta):
    line = Line()
    line.slope = theta[0] * 2.0
    line.intercept = theta[1]
    return line


def by_a_classmethod(theta):
    return np.sum(np.sin(Line.from_vector(theta).predict(GRID)))


def by_a_factory(theta):
    line = make_line(theta)
    return np.sum(line.predict(GRID) ** 2)


@pytest.mark.parametrize("f", [by_a_classmethod, by_a_factory])
def test_a_method_reading_what_a_helper_stored_is_refused_not_zero(f):
    """The gradient was zero in modes "s2s" and "auto"."""
    theta = np.array([0.3, -0.2])
    with pytest.raises(
        sg.UnsupportedError, match=f"{__file__}:[0-9]+: reads Line.slope .*{__file__}:[0-9]+"
    ):
        sg.grad(f, mode="s2s")(theta)
    expected = numeric_grad(f, [theta], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mode in ("auto", "tape"):
            assert_close(call_twice(sg.grad(f, mode=mode), theta), expected, rtol=1e-6)
            v = np.array([0.4, -0.7])
            (product,) = sg.hvp(f, (theta,), (v,), mode=mode)
            gradient = sg.grad(f, mode="tape")
            assert_close(product, numeric_jvp(gradient, [theta], 0, v, step=1e-5), rtol=1e-5)


class Accumulator:
    def __init__(self):
        self.total = 0.0

    def add(self, value):
        self.total += value


def summed_by_an_object(w):
    acc = Accumulator()
    for v in w:
        acc.add(v**2)
    return acc.total


def test_a_method_named_like_a_sets_is_not_taken_for_one():
    """Was: ".add() writes into 'acc' in place, ...; use a new set"."""
    with pytest.raises(sg.UnsupportedError, match=f"{__file__}:[0-9]+: .*method .add()") as refused:
        sg.grad(summed_by_an_object, mode="s2s")(np.array([0.5, -1.0]))
    assert "set" not in str(refused.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(sg.grad(summed_by_an_object)(np.array([0.5, -1.0])), np.array([1.0, -2.0]))


def a_set_of_values(w):
    seen = set()
    seen.add(w[0])
    return w[0] * len(seen)


def test_a_sets_add_is_still_refused_as_one():
    with pytest.raises(sg.UnsupportedError, match=f"{__file__}:[0-9]+: .*use a new set"):
        sg.grad(a_set_of_values, mode="s2s")(np.array([0.5, -1.0]))


# --- np.vectorize in forward mode -----------------------------------------------------------


def vectorized(w):
    ramp = np.vectorize(lambda v: v**2 if v > 0 else 0.1 * v)
    return np.sum(ramp(w))


def test_forward_mode_through_np_vectorize_is_refused_at_the_users_line():
    """Was refused at NumPy's own file (its _function_base_impl.py)."""
    with pytest.raises(
        sg.NonDifferentiableError, match=f"{__file__}:[0-9]+: np.vectorize has no derivative"
    ):
        sg.jvp(vectorized, (np.ones(3),), (np.ones(3),), mode="s2s")
