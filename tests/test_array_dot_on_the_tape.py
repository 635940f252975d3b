"""``X.dot(W)`` with a plain array ``X`` (CS231n's ``scores = X.dot(W)``): NumPy converts
``W`` with ``__array__`` and never shows the tape the call, so the tape refuses it. The
refusal used to speak of ``np.asarray() / np.array()``, which the user never wrote; it names
``a.dot(b)`` now and says to write ``a @ b``. The source transformer differentiates it.
"""

import inspect

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

R = np.random.default_rng(2208)


def scores_loss(W, X):
    scores = X.dot(W)
    return np.sum(np.tanh(scores) ** 2)


def weights_first(W, X):
    return np.sum(np.tanh(W.T.dot(X.T)) ** 2)


def test_plain_array_dot_is_refused_on_the_tape_naming_the_line():
    W, X = R.normal(size=(3, 2)), R.normal(size=(4, 3))
    with pytest.raises(sg.NonDifferentiableError) as caught:
        sg.grad(scores_loss, mode="tape")(W, X)
    message = str(caught.value)
    line = inspect.getsourcelines(scores_loss)[1] + 1
    assert f"test_array_dot_on_the_tape.py:{line}" in message
    assert "a.dot(b)" in message and "a @ b" in message and "asarray()" not in message


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_plain_array_dot_is_differentiated_by_transformation(mode):
    W, X = R.normal(size=(3, 2)), R.normal(size=(4, 3))
    assert_close(sg.grad(scores_loss, mode=mode)(W, X), numeric_grad(scores_loss, [W, X], 0))


def test_dot_of_the_value_being_differentiated_is_recorded():
    W, X = R.normal(size=(3, 2)), R.normal(size=(4, 3))
    expected = numeric_grad(weights_first, [W, X], 0)
    assert_close(sg.grad(weights_first, mode="tape")(W, X), expected)
