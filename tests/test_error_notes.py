"""An exception that is not s2sgrad's own, raised in generated code (most likely the user's
function raising for the arguments it was given), gets a note naming the function's file
and line and the generated line that raised: the traceback shows only generated code."""

import sys

import numpy as np
import pytest

import s2sgrad as sg

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes: 3.11+")


def first_row_squared(x):
    if x.ndim == 1:
        return np.sum(x**3)
    return np.sum(x[0] ** 2) + np.sum(x.T @ x)


def notes(error) -> str:
    return "\n".join(getattr(error, "__notes__", []))


@pytest.mark.parametrize(
    "transform",
    [
        lambda: sg.grad(first_row_squared, mode="s2s"),
        lambda: sg.value_and_grad(first_row_squared, mode="auto"),
        lambda: sg.hessian(first_row_squared, mode="s2s"),
    ],
)
def test_an_error_of_the_users_function_in_generated_code_says_where(transform):
    derivative = transform()
    derivative(np.ones(3))  # a call that works first: the next one runs cached code
    for _ in range(2):  # the first call of the signature, then its cached code
        with pytest.raises(IndexError) as raised:
            derivative(np.array(2.0))
        written = notes(raised.value)
        assert f"test_error_notes.py:{first_row_squared.__code__.co_firstlineno}" in written
        assert "[0]" in written and written.count("s2sgrad:") == 1


def decorated(function):
    return function


@decorated
def shapes_that_do_not_fit(x, w):
    h = np.tanh(x)
    scores = h @ w  # raises for a w of the wrong length
    return np.sum(scores**2)


class Model:
    def loss(self, x, w):
        h = np.sin(x) * 2.0
        return np.sum((h @ w) ** 2)  # raises for a w of the wrong length


def _line_of(function, text: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_the_note_names_the_statement_the_failing_line_was_generated_from(mode):
    x, wrong = np.ones(3), np.ones(4)
    line = _line_of(shapes_that_do_not_fit, "scores = h @ w")
    derivative = sg.grad(shapes_that_do_not_fit, mode=mode)
    derivative(x, np.ones(3))  # right, then the later call with other shapes raises
    for _ in range(2):
        with pytest.raises(ValueError) as raised:
            derivative(x, wrong)
        written = notes(raised.value)
        assert f"generated from {__file__}:{line}: scores = h @ w" in written
        assert written.count("s2sgrad:") == 1


def test_the_statement_of_a_method_and_of_forward_mode():
    x, wrong = np.ones(3), np.ones(5)
    line = _line_of(Model.loss, "return np.sum((h @ w) ** 2)")
    with pytest.raises(ValueError) as raised:
        sg.grad(Model().loss, mode="s2s")(x, wrong)
    assert f"generated from {__file__}:{line}: return np.sum((h @ w) ** 2)" in notes(raised.value)
    with pytest.raises(ValueError) as raised:
        sg.jvp(lambda w: Model().loss(x, w), (wrong,), (wrong,), mode="s2s")
    assert "s2sgrad: raised in the code generated" in notes(raised.value)
