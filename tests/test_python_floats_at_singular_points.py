"""Derivatives of Python-float code at a point where they are infinite (``math.sqrt`` and
``x ** 0.5`` at 0.0).

Python's float arithmetic raises there (``ZeroDivisionError``) where NumPy gives inf. On the
tape the error came from inside s2sgrad's rules; the tape now computes such a rule again
with NumPy floats, and gives inf as it does for ``np.sqrt``. Generated code raises the
error with a note that names the user's function and says what it means.
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np
import pytest

import s2sgrad as sg


def root(x):
    return math.sqrt(x) * 2.0


def half_power(x):
    return x**0.5 + 1.0


@pytest.mark.parametrize("f", [root, half_power])
def test_the_tape_gives_numpys_infinity(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert sg.grad(f, mode="tape")(0.0) == np.inf
    assert sg.grad(f, mode="tape")(4.0) == pytest.approx(0.25 * (2.0 if f is root else 1.0))


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes: 3.11+")
@pytest.mark.parametrize("f", [root, half_power])
def test_generated_code_explains_the_error(f):
    with pytest.raises(ZeroDivisionError) as raised:
        sg.grad(f, mode="s2s")(0.0)
    notes = "\n".join(raised.value.__notes__)
    assert "test_python_floats_at_singular_points.py" in notes
    assert "infinite or undefined here" in notes


def user_divides_by_zero(x):
    return 1.0 / x


def test_the_users_own_error_is_raised_as_it_is():
    for mode in ("s2s", "tape"):
        with pytest.raises(ZeroDivisionError):
            sg.grad(user_divides_by_zero, mode=mode)(0.0)
