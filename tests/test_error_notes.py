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
