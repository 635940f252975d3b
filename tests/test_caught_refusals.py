"""A function whose own code catches the tape's refusal, or asks the tape's value what
only a NumPy array answers, and goes on along another branch than NumPy's values take.

``try: v = float(x[0]) except Exception: v = 0.0`` on the tape: ``float`` of a value being
differentiated is refused, the ``except`` caught it, and the gradient was that of
``0.0 * x[1]`` (silently zero where the program's is ``x[1]``). The refusal is now raised
again when the function returns. So are ``hasattr(x, "base")`` (True for an array), and a
comparison of ``type(x).__name__`` or ``str(type(x))``; ``repr(x)`` reads as NumPy's.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg


def falls_back_from_float(x):
    try:
        v = float(x[0])
    except Exception:
        v = 0.0
    return v * x[1] + x[2]


def falls_back_from_tolist(x):
    try:
        items = x.tolist()
    except Exception:
        items = [0.0, 0.0, 0.0]
    return sum(items) + np.sum(x**2)


def asks_for_base(x):
    return np.sum(x**2) * (2.0 if hasattr(x, "base") else 3.0)


def compares_the_type_name(x):
    return (2.0 if type(x).__name__ == "ndarray" else 3.0) * np.sum(x**2)


@pytest.mark.parametrize(
    "f",
    [falls_back_from_float, falls_back_from_tolist, asks_for_base, compares_the_type_name],
    ids=lambda f: f.__name__,
)
def test_another_branch_than_numpys_is_refused_on_the_tape(f):
    x = np.array([0.3, -0.7, 1.2])
    with pytest.raises(sg.S2SGradError) as refused:
        sg.grad(f, mode="tape")(x)
    assert f"{__file__}:" in str(refused.value)
    with warnings.catch_warnings():  # auto: source transformation (NumPy's values), or refused
        warnings.simplefilter("ignore")
        try:
            got = sg.grad(f, mode="auto")(x)
        except sg.S2SGradError as error:
            assert f"{__file__}:" in str(error)
        else:
            assert_close(got, numeric_grad(f, (x,), 0), rtol=1e-5)


def reads_its_repr(x):
    return (2.0 if repr(x).startswith("array") else 3.0) * np.sum(x**2)


def catches_nothing_of_the_tapes(x):
    try:
        v = x[0] * 2.0
    except Exception:
        v = 0.0
    return v * x[1]


@pytest.mark.parametrize(
    "f", [reads_its_repr, catches_nothing_of_the_tapes], ids=lambda f: f.__name__
)
def test_what_numpy_would_do_runs_on(f):
    x = np.array([0.3, -0.7, 1.2])
    assert_close(call_twice(sg.grad(f, mode="tape"), x), numeric_grad(f, (x,), 0), rtol=1e-5)
