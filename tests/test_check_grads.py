"""sg.check_grads: it passes right derivatives and catches wrong ones, in every engine."""

import numpy as np
import pytest

import s2sgrad as sg

rng = np.random.default_rng(7)


def layer(x, W):
    return np.tanh(x @ W)


def weighted(params, power):
    return np.sum(params["a"] ** power) + params["b"][0] * params["b"][1]


def sine_energy(x):
    return np.sum(np.sin(x) ** 2)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize(
    "function, args",
    [
        (layer, (rng.normal(size=(2, 3)), rng.normal(size=(3, 4)))),
        (sine_energy, (0.3,)),
        (sine_energy, (rng.normal(size=(2, 1, 3)),)),
        (weighted, ({"a": rng.normal(size=3), "b": [1.0, 2.0]}, 3)),
    ],
)
def test_right_derivatives_pass_to_first_order(mode, function, args):
    sg.check_grads(function, *args, order=1, mode=mode)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_right_derivatives_pass_to_second_order(mode):
    sg.check_grads(layer, rng.normal(size=(2, 3)), rng.normal(size=(3, 2)), order=2, mode=mode)
    sg.check_grads(sine_energy, rng.normal(size=4), order=2, mode=mode)


@sg.custom_gradient
def sine_with_wrong_derivative(x):
    return np.sin(x), lambda g: g * 2.0


def uses_wrong_derivative(x):
    return np.sum(sine_with_wrong_derivative(x))


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_a_wrong_derivative_is_caught_with_its_worst_entry(mode):
    with pytest.raises(AssertionError, match=r"entry \(\d*,?\): derivative"):
        sg.check_grads(
            uses_wrong_derivative, np.array([0.5, -0.2, 1.0]), modes=("rev",), order=1, mode=mode
        )


@sg.custom_gradient
def root_wrong_in_its_last_entry(x):
    right = 0.5 / np.sqrt(np.maximum(x, 1e-300))
    return np.sqrt(x), lambda g: g * np.where(np.arange(3) == 2, 7.0, right)


def uses_root_wrong_in_its_last_entry(x):
    return np.sum(root_wrong_in_its_last_entry(x))


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_the_worst_entry_named_is_a_wrong_one_not_one_differences_cannot_measure(mode):
    """At 0 the square root's central differences are NaN (no evidence either way); the
    entry named is the one whose derivative is wrong."""
    wrong = pytest.raises(AssertionError, match=r"entry \(2,\): derivative")
    with wrong, np.errstate(invalid="ignore"):
        x = np.array([0.0, 0.3, 0.4])
        sg.check_grads(uses_root_wrong_in_its_last_entry, x, modes=("rev",), order=1, mode=mode)


_backward_calls = []


@sg.custom_gradient
def sine_right_only_on_its_first_call(x):
    def backward(g):
        _backward_calls.append(1)
        return g * np.cos(x) * (1.0 if len(_backward_calls) == 1 else 1.5)

    return np.sin(x), backward


def uses_drifting_derivative(x):
    return np.sum(sine_right_only_on_its_first_call(x))


def test_a_derivative_wrong_on_later_calls_is_caught():
    """Later calls run the code specialised to the arguments' shapes, which the first call
    does not: check_grads calls the derivative twice and names the call that is wrong."""
    _backward_calls.clear()
    with pytest.raises(AssertionError, match="later call"):
        sg.check_grads(
            uses_drifting_derivative,
            np.array([0.5, -0.2, 1.0]),
            modes=("rev",),
            order=1,
            mode="tape",
        )


def test_integer_arguments_are_held_fixed():
    sg.check_grads(weighted, {"a": np.array([0.3, 1.2]), "b": [0.5, 2.0]}, 4, order=1)


def test_a_custom_derivative_without_forward_rule_is_refused_in_forward_mode():
    with pytest.raises(sg.NonDifferentiableError, match="jvp="):
        sg.check_grads(uses_wrong_derivative, np.ones(2), modes=("fwd",), order=1, mode="s2s")


def test_needs_a_float_argument_and_known_modes():
    with pytest.raises(TypeError, match="floats"):
        sg.check_grads(lambda n: n * 2, 3)
    with pytest.raises(ValueError, match="modes"):
        sg.check_grads(sine_energy, 0.3, modes=("backward",))


def spectrum(x):
    return np.fft.fft2(x)


def phase_ramp(x):
    return np.exp(1j * x) * x


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("function", [spectrum, phase_ramp])
def test_complex_results_are_checked_to_second_order(mode, function):
    sg.check_grads(function, rng.normal(size=(2, 3)), order=2, mode=mode)


@sg.custom_gradient
def phase_with_conjugated_derivative(x):
    value = np.exp(1j * x)
    return value, lambda g: np.real(g * np.conj(1j * value))


def uses_conjugated_derivative(x):
    return phase_with_conjugated_derivative(x) * 2.0


def test_a_wrong_derivative_of_a_complex_result_is_caught():
    with pytest.raises(AssertionError, match="reverse mode"):
        sg.check_grads(uses_conjugated_derivative, np.array([0.5, -0.2]), order=1, mode="tape")


@sg.custom_gradient
def cosine_with_wrong_derivative(x):
    return np.cos(x), lambda g: g * np.cos(x)  # -sin(x) is right


@sg.custom_gradient
def sine_right_to_first_order_only(x):
    return np.sin(x), lambda g: g * cosine_with_wrong_derivative(x)


def uses_wrong_second_derivative(x, y):
    return np.sum(sine_right_to_first_order_only(x) * y) + np.sum(x * y**2)


def test_a_wrong_second_derivative_is_caught_in_reverse_mode():
    """To second order the VJP of the gradient is compared with differences of the gradient
    along the cotangent (the Hessian is symmetric): a wrong entry of the Hessian, here on
    its diagonal, is still named, while the first order passes. (The tape: source
    transformation refuses a custom derivative's derivative.)"""
    x, y = rng.normal(size=3), rng.normal(size=3)
    sg.check_grads(uses_wrong_second_derivative, x, y, modes=("rev",), order=1, mode="tape")
    with pytest.raises(AssertionError, match=r"reverse mode, argument 0, first call, leaf 0"):
        sg.check_grads(uses_wrong_second_derivative, x, y, modes=("rev",), order=2, mode="tape")
