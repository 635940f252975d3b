"""Text written from a value being differentiated (``str(x)``, ``repr(x)``, an f-string).

Text carries no derivative, so reading a number back out of it (``float(str(x[0]))``) lost
the derivative: every mode returned the gradient of a constant, without a word. It is now
refused at the user's line in every mode, while text only printed or logged (the common
case) is still differentiated around. ``bytes(x)`` of a value on the tape crashed inside
NumPy; it is refused too.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_gradient_in_every_mode, call_twice, numeric_grad

import s2sgrad as sg

HERE = "test_text_of_differentiated_values.py"
MODES = ("s2s", "auto", "tape")


def read_back_from_str(x):
    return float(str(x[0])) * x[1]


def read_back_from_fstring(x):
    text = f"{x[0]:.12f}"
    return float(text) * x[1] + x[2]


def read_back_through_a_helper(x):
    return x[1] * as_number(describe(x[0]))


def describe(v):
    return "value " + str(v)


def as_number(text):
    return float(text.split()[-1])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [read_back_from_str, read_back_from_fstring])
def test_reading_a_number_back_from_text_is_refused(f, mode):
    x = np.array([0.3, -1.2, 0.8])
    with pytest.raises(sg.NonDifferentiableError, match=r"text") as refused:
        sg.grad(f, mode=mode)(x)
    assert f"{HERE}:" in str(refused.value)


@pytest.mark.parametrize("mode", ("s2s", "auto"))
def test_text_read_back_inside_a_helper_is_refused(mode):
    x = np.array([0.3, -1.2, 0.8])
    with pytest.raises(sg.NonDifferentiableError, match=r"text"):
        sg.grad(read_back_through_a_helper, mode=mode)(x)


def logs_its_loss(x):
    y = np.sum(np.sin(x) * x)
    log = [f"loss {y:.3f}"]
    log.append(str(y) + " " + repr(y))
    message = f"x = {x}"
    log.append(message)
    print("\n".join(log))
    return y * 2.0


def test_text_only_logged_leaves_the_gradient_right_in_every_mode(capsys):
    x = np.array([0.3, -1.2, 0.8])
    expected = numeric_grad(logs_its_loss, [x], 0)
    capsys.readouterr()
    for mode in MODES:
        assert_close(call_twice(sg.grad(logs_its_loss, mode=mode), x), expected)
        printed = capsys.readouterr().out.splitlines()
        assert float(printed[0].split()[1]) == pytest.approx(np.sum(np.sin(x) * x), abs=1e-3)


HISTORY: list = []


def keeps_a_history(x):
    y = np.sum(x**2)
    line = f"{y:.4f}"
    HISTORY.append(line)
    notes = {"loss": line}
    notes["again"] = str(y)
    if np.isnan(y):
        warnings.warn(f"loss is nan: {y}", stacklevel=2)
    sys.stdout.write(f"loss={y:.3f}\n")
    return y


@pytest.mark.parametrize("mode", MODES)
def test_text_kept_outside_or_written_out_leaves_the_gradient_right(mode, capsys):
    x = np.array([0.3, -1.2, 0.8])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # mode "auto" does not fall back to the tape
        assert_close(call_twice(sg.grad(keeps_a_history, mode=mode), x), 2 * x)
    assert float(HISTORY[-1]) == pytest.approx(np.sum(x**2), abs=1e-4)
    assert "loss=" in capsys.readouterr().out


def reads_back_its_own_history(x):
    y = np.sum(x**2)
    HISTORY.append(f"{y:.12f}")
    return float(HISTORY[-1]) * x[0]


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_text_read_back_from_a_list_it_was_kept_in_is_refused(mode):
    with pytest.raises(sg.S2SGradError):
        sg.grad(reads_back_its_own_history, mode=mode)(np.array([0.3, -1.2, 0.8]))


def prints_its_values(x):
    y = np.tanh(x) @ x
    print("y is", y, f"{y:.2f}")
    return y


def test_printed_values_second_order():
    x = np.array([0.3, -1.2, 0.8])
    assert_gradient_in_every_mode(prints_its_values, [x])
    v = np.array([1.0, -0.5, 2.0])
    expected = numeric_grad(lambda z: sg.grad(prints_its_values)(z) @ v, [x], 0, step=1e-5)
    for mode in MODES:
        inner = sg.grad(prints_its_values, mode=mode)
        hvp = sg.grad(lambda z, inner=inner: inner(z) @ v, mode=mode)(x)
        assert_close(hvp, expected, rtol=1e-5, atol=1e-7)


def as_bytes(x):
    raw = bytes(x)
    print(raw[:2])
    return np.sum(x**2)


def test_bytes_of_a_value_on_the_tape_is_refused_not_crashed():
    x = np.array([0.3, -1.2, 0.8])
    with pytest.raises(sg.NonDifferentiableError, match=r"bytes\(\)") as refused:
        sg.grad(as_bytes, mode="tape")(x)
    assert f"{HERE}:" in str(refused.value)
    assert_close(call_twice(sg.grad(as_bytes, mode="s2s"), x), 2 * x)


def test_text_of_a_tape_value_prints_as_numpy_text():
    seen = []

    def f(x):
        seen.append((str(x), f"{x[0]:.2f}"))
        return np.sum(x)

    sg.grad(f, mode="tape")(np.array([1.5, 2.0]))
    assert seen == [(str(np.array([1.5, 2.0])), "1.50")]


def read_back_from_bytes(x):
    return np.frombuffer(bytes(x), dtype=x.dtype)[0] * x[1]


@pytest.mark.parametrize("mode", MODES)
def test_reading_numbers_back_from_bytes_is_refused(mode):
    x = np.array([0.3, -1.2, 0.8])
    with pytest.raises(sg.NonDifferentiableError, match=r"bytes") as refused:
        sg.grad(read_back_from_bytes, mode=mode)(x)
    assert f"{HERE}:" in str(refused.value)


def read_back_from_percent_formatting(x):
    return float("%.12f" % x[0]) * x[1]  # noqa: UP031 (as users write it)


def read_back_from_format_method(x):
    return float("{:.12f}".format(x[0])) * x[1]  # noqa: UP032


def read_back_through_a_template(x):
    template = "{:.12f}"
    return float(template.format(x[0])) * x[1]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f",
    [
        read_back_from_percent_formatting,
        read_back_from_format_method,
        read_back_through_a_template,
    ],
)
def test_formatted_text_read_back_is_refused(f, mode):
    x = np.array([0.3, -1.2, 0.8])
    with pytest.raises(sg.S2SGradError) as refused:
        sg.grad(f, mode=mode)(x)
    assert f"{HERE}:" in str(refused.value)


def logs_with_percent_and_format(x):
    y = np.sum(x**3)
    print("loss %.3f" % y, "loss {:.3f}".format(y))  # noqa: UP031, UP032
    return y


def test_percent_and_format_logging_is_differentiated_around():
    x = np.array([0.3, -1.2, 0.8])
    for mode in ("s2s", "auto"):
        assert_close(call_twice(sg.grad(logs_with_percent_and_format, mode=mode), x), 3 * x**2)


def entries_named_by_index(x):
    out = {}
    for i, v in enumerate(x):
        out[f"x{i}"] = v * 2
    return sum(out[f"x{i}"] ** 2 for i in range(len(x)))


@pytest.mark.parametrize("mode", MODES)
def test_text_made_from_indices_in_a_derivative_is_a_constant(mode):
    """The derivative of ``entries_named_by_index`` restores ``t3 = f"x{i}"`` from its stack
    (so ``t3`` is varied there), yet this f-string reads only the index: differentiated
    again, it is a constant, not text read back."""
    x = np.array([0.3, -1.2, 0.8])
    v = np.array([1.0, 0.5, -2.0])
    inner = sg.grad(entries_named_by_index, mode=mode)
    assert_close(call_twice(inner, x), 8 * x)
    hvp = sg.grad(lambda z: inner(z) @ v, mode=mode)(x)
    assert_close(hvp, 8 * v)
