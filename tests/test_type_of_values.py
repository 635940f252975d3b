"""``type(x)``, ``hasattr(x, ...)`` and ``callable(x)`` of a value being differentiated:
their results are classes and flags, with no derivative. Forward mode refused (s2s) or
crashed (auto, TypeError) on them; the tape sees its own class for ``type(x)``, so reading
the class's name (``type(x).__name__``, ``str(type(x))``) took another branch silently,
giving a zero gradient: refused now, naming the line."""

from __future__ import annotations

import functools

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


def _applied(function, x):
    return function(x)


def class_compared_with_a_partial_resolved_late(x):
    if type(x) is np.ndarray:
        return np.sum(_applied(functools.partial(np.tanh), x))
    return 0.0


def test_a_gradient_run_on_the_tape_refuses_class_comparisons():
    # the Hessian in mode "auto" runs grad's generated code on tape values where forward
    # mode cannot serve a call resolved at run time (a partial), and there type(x) is the
    # tape's class: it gave a zero Hessian
    with pytest.raises(sg.UnsupportedError, match="tape's own class"):
        sg.hessian(class_compared_with_a_partial_resolved_late, mode="auto")(X)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_the_hessian_through_a_rule_resolved_late_is_source_transformed(mode):
    # forward mode over the dispatched call of np.tanh: no tape, so NumPy's class
    hessian = sg.hessian(class_compared_with_a_call_resolved_late, mode=mode)(X)
    assert np.allclose(hessian, np.diag(-2.0 * np.tanh(X) * (1.0 - np.tanh(X) ** 2)))
