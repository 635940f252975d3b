"""``type(x)``, ``hasattr(x, ...)`` and ``callable(x)`` of a value being differentiated:
their results are classes and flags, with no derivative. Forward mode refused (s2s) or
crashed (auto, TypeError) on them; the tape sees its own class for ``type(x)``, so reading
the class's name (``type(x).__name__``, ``str(type(x))``) took another branch silently,
giving a zero gradient: refused now, naming the line."""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

X = np.array([0.3, -0.7, 1.2])


def class_compared(x):
    if type(x) is np.ndarray and hasattr(x, "shape") and not callable(x):
        return np.sum(np.tanh(x))
    return 0.0


def class_name_read(x):
    name = type(x).__name__
    return np.sum(x**2) if name == "ndarray" else 0.0


def class_text_read(x):
    text = str(type(x))
    return np.sum(x**2) if "ndarray" in text else 0.0


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_forward_mode_through_class_tests(mode):
    v = np.array([1.0, 0.5, -2.0])
    _, tangent = sg.jvp(class_compared, (X,), (v,), mode=mode)
    assert np.isclose(tangent, np.sum((1.0 - np.tanh(X) ** 2) * v))
    _, tangent = sg.jvp(class_name_read, (X,), (v,), mode=mode)
    assert np.isclose(tangent, np.sum(2.0 * X * v))
    hessian = sg.hessian(class_text_read, mode=mode)(X)
    assert np.allclose(hessian, 2.0 * np.eye(3))


@pytest.mark.parametrize("f", [class_name_read, class_text_read])
def test_the_tape_refuses_reading_the_class(f):
    with pytest.raises(sg.UnsupportedError, match="tape's own class") as refused:
        sg.grad(f, mode="tape")(X)
    assert "test_type_of_values.py:" in str(refused.value)


def class_compared_with_a_call_resolved_late(x):
    if type(x) is np.ndarray:
        return np.sum(getattr(np, "tanh")(x))  # noqa: B009 - a call resolved as it runs
    return 0.0


def test_a_hessian_through_class_comparisons_and_a_call_resolved_late():
    # the Hessian in mode "auto" ran grad's generated code on tape values, where type(x) is
    # the tape's class (a zero Hessian, then refused); forward mode over the call resolved
    # as it runs now keeps it to source transformation, where x is an array
    hessian = sg.hessian(class_compared_with_a_call_resolved_late, mode="auto")(X)
    slope = np.tanh(X)
    assert np.allclose(hessian, np.diag(-2.0 * slope * (1.0 - slope**2)))
