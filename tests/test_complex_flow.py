"""Which steps of a function that computes with complex numbers may meet complex values.

A step whose rule is not known to be right for complex values (``np.sort``, ``np.max``,
``np.bincount``, ``np.cov``) used to refuse the whole function in mode="s2s" as soon as the
function made a complex value anywhere, even on real values beside it, and mode="auto"
raised the same refusal instead of taking the tape, which was right. Now the transformer
follows which names may hold complex values (``complex_values._first_on_complex_values``):
a step on real values keeps its real rule; a step that may meet a complex value is refused
naming its line, and mode="auto" tapes the function.

A helper that made complex values hid them from its caller: ``np.cov(rot(x), w)`` and
``np.linalg.svdvals`` (NumPy 2) of a matrix built from ``rot(x)`` gave silently wrong
gradients in mode="s2s" and mode="auto". A caller of a function that makes complex values
is refused at its first step that is not complex-ready (``complex_values.with_callees``);
the test takes ``np.cov`` and ``np.median``, which every supported NumPy has.
"""

import warnings

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_grad_jvp_and_hvp,
    call_twice,
    numeric_grad,
    numeric_jvp,
)

import s2sgrad as sg

R = np.random.default_rng(17)
WEIGHTS = np.array([1.0, 2.0, 0.5])


def sort_before_complex(x):
    s = np.sort(x) * x**2
    z = x + 1j * s
    return np.sum(np.real(z * np.conj(z)) + np.angle(z + 2.0))


def counts_beside_a_spectrum(x):
    counted = np.bincount(np.arange(x.size) % 2, weights=x)[np.arange(x.size) % 2] + x**2
    power = np.abs(np.fft.rfft(x))[:2].sum() + counted
    return np.sum(np.tanh(power) * x)


def largest_of_real_parts(x):
    z = np.exp(1j * x) * x
    parts = z.real + 0.5 * z.imag
    return np.max(parts) * np.sum(np.cos(x)) + np.sum(parts**2)


def in_a_loop_on_real_values(x):
    total = x * 1.0
    for _ in range(2):
        total = np.maximum(total, 0.1) + np.abs(np.fft.fft(total))[: x.size]
    return np.sum(total**2)


@pytest.mark.parametrize(
    "f",
    [
        sort_before_complex,
        counts_beside_a_spectrum,
        largest_of_real_parts,
        in_a_loop_on_real_values,
    ],
)
@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("size", [3, 5])
def test_steps_on_real_values_keep_their_rules(f, mode, size):
    x = R.uniform(-1.2, 1.2, size=size) + np.arange(size) * 0.37  # no ties
    if mode == "auto":  # second order: the tape where the derivative's own code is refused
        assert_grad_jvp_and_hvp(f, x, R.normal(size=size), mode)
        return
    assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))
    direction = R.normal(size=size)
    assert_close(sg.jvp(f, (x,), (direction,), mode=mode)[1], numeric_jvp(f, [x], 0, direction))


def sort_of_a_complex_value(x):
    z = x + 1j * x**2
    return np.sum(np.abs(np.sort(z)) ** 2)


def complex_carried_back_by_a_loop(x):
    v = x * 1.0
    total = 0.0
    for _ in range(2):
        total = total + np.sum(np.sort(v).real)
        v = v * np.exp(1j * x)
    return total


def complex_kept_in_a_list(x):
    items = [x * 1.0]
    items.append(x * 1j)
    return np.sum(np.abs(np.sort(items[-1])))


@pytest.mark.parametrize(
    "f, step",
    [
        (sort_of_a_complex_value, "np.sort(z)"),
        (complex_carried_back_by_a_loop, "np.sort(v)"),
        (complex_kept_in_a_list, "np.sort(items[-1])"),
    ],
)
def test_a_step_that_may_meet_a_complex_value_is_refused_naming_its_line(f, step):
    first = f.__code__.co_firstlineno
    with open(__file__) as source:
        lines = source.read().splitlines()
    line = next(n for n in range(first, first + 12) if step in lines[n - 1])
    with pytest.raises(sg.UnsupportedError, match=rf"test_complex_flow\.py:{line}: .*complex"):
        sg.grad(f, mode="s2s")(R.normal(size=3))


def test_auto_takes_the_tape_where_source_transformation_refuses():
    # the tape looks at each value: np.sort of real values is right there
    x = R.normal(size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = sg.grad(complex_carried_back_by_a_loop, mode="auto")
        with pytest.raises(sg.UnsupportedError, match="np.sort meets a complex value"):
            gradient(x)  # the second pass sorts a complex value: the tape refuses it too


def rotated(x):
    return np.exp(1j * x) * (x + 2.0)


def covariance_of_a_helper_result(x):
    return np.real(np.sum(np.cov(rotated(x), WEIGHTS)))


def median_of_a_helper_result(x):
    return np.real(np.median(rotated(x) * WEIGHTS))


def maximum_after_a_helper_spectrum(x):
    spectrum = np.abs(rotated(x)) ** 2  # real: but the helper makes complex values
    return np.max(spectrum) + np.sum(spectrum)


@pytest.mark.parametrize("f", [covariance_of_a_helper_result, median_of_a_helper_result])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_helpers_complex_result_reaching_a_step_without_complex_rule_is_refused(f, mode):
    # these gave silently wrong gradients in mode="s2s" and mode="auto"
    with warnings.catch_warnings(), pytest.raises(sg.UnsupportedError, match="complex"):
        warnings.simplefilter("ignore")
        sg.grad(f, mode=mode)(np.array([0.3, -0.8, 1.1]))


def test_a_caller_of_a_helper_making_complex_values_falls_back_in_auto():
    x = np.array([0.3, -0.8, 1.1])
    with pytest.raises(sg.UnsupportedError, match=r"complex"):
        sg.grad(maximum_after_a_helper_spectrum, mode="s2s")(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(maximum_after_a_helper_spectrum, mode="auto")(x)
    assert_close(got, numeric_grad(maximum_after_a_helper_spectrum, [x], 0))
