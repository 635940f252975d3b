"""Python's own conversions of a value being differentiated, on the tape: pickling it
(``pickle.dumps``, whose bytes carry no derivative: mode "auto" dispatched it to the tape
and the gradient came out zero; mode "tape" failed in pickle), and builtins that want a
plain buffer (``memoryview(x)``, ``np.ndarray(buffer=x)``; ``divmod`` has a rule),
which raised a TypeError naming s2sgrad's ``TapeValue``, and an object whose ``__array__``
returns one (NumPy's ValueError). Each is refused with the user's line, in every mode.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad.errors import NonDifferentiableError

HERE = __file__


def pickles(x):
    return np.sum(pickle.loads(pickle.dumps(x * 2.0)) ** 2)


def takes_a_memoryview(x):
    return np.sum(np.asarray(memoryview(x * 2.0)) ** 2)


def wraps_a_buffer(x):
    return np.sum(np.ndarray(shape=(3,), dtype=float, buffer=x * 2.0) ** 2)


class Holder:
    def __init__(self, value):
        self.value = value

    def __array__(self, dtype=None, copy=None):
        return self.value


def converts_a_holder(x):
    return np.sum(np.asarray(Holder(x * 2.0)) ** 2)


@pytest.mark.parametrize("mode", ["auto", "tape"])
@pytest.mark.parametrize(
    "f",
    [pickles, takes_a_memoryview, wraps_a_buffer, converts_a_holder],
    ids=lambda f: f.__name__,
)
def test_a_plain_conversion_is_refused_at_the_users_line(f, mode):
    x = np.array([0.3, -0.7, 1.2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(NonDifferentiableError) as refused:
            sg.grad(f, mode=mode)(x)
    message = str(refused.value)
    assert f"{HERE}:" in message and "TapeValue" not in message


def test_a_tape_value_outside_a_tape_still_pickles():
    for value in (sg.constant(np.ones(2)), sg.Variable(np.ones(2))):
        restored = pickle.loads(pickle.dumps(value))
        assert type(restored) is type(value)
        np.testing.assert_array_equal(np.asarray(restored.numpy()), np.ones(2))
