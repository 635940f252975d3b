"""``has_aux=True`` in every mode: the function returns a pair ``(output, aux)`` in any
form (a literal pair, a name bound to one, a helper's result, a pair in each branch), and
anything else is refused with the user's file and line.

Found by probing: a function returning a number rather than a pair got its gradient
without an aux in mode="s2s" (silently off the contract), a literal triple crashed the
transformer with ``KeyError: 'ctx'``, a pair in each of two branches was taken for a
vector output, and the tape raised Python's unpacking errors.
"""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.errors import AuxOutputError

MODES = ("s2s", "auto", "tape")
X = np.array([0.4, -1.3, 0.8])


def literal_pair(x):
    return np.sum(np.sin(x) * x), {"n": x.size}


def named_pair(x):
    pair = (np.sum(np.sin(x) * x), {"n": x.size})
    return pair


def _make_pair(x):
    return np.sum(np.sin(x) * x), {"n": x.size}


def helper_pair(x):
    return _make_pair(x)


def pair_in_each_branch(x):
    if np.sum(x) > 10.0:
        return np.sum(x**2), {"n": -1}
    return np.sum(np.sin(x) * x), {"n": x.size}


def loss_only(x):
    return np.sum(np.sin(x) * x)


def triple(x):
    return np.sum(np.sin(x) * x), 1, 2


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [literal_pair, named_pair, helper_pair, pair_in_each_branch])
def test_every_form_of_pair_gives_the_gradient_and_the_aux(f, mode):
    expected = numeric_grad(loss_only, (X,), 0)
    for _ in range(2):
        gradient, aux = sg.grad(f, has_aux=True, mode=mode)(X)
        assert_close(gradient, expected)
        assert aux == {"n": 3}
        (value, aux), gradient = sg.value_and_grad(f, has_aux=True, mode=mode)(X)
        assert_close(value, loss_only(X))
        assert_close(gradient, expected)
        assert aux == {"n": 3}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [loss_only, triple])
def test_a_function_not_returning_a_pair_is_refused_naming_its_line(f, mode):
    with pytest.raises(AuxOutputError, match=r"test_aux_outputs\.py:\d+: .*pair"):
        sg.grad(f, has_aux=True, mode=mode)(X)
    with pytest.raises(TypeError):  # a TypeError, as a wrong call is, and an S2SGradError
        sg.grad(f, has_aux=True, mode=mode)(X)
    assert issubclass(AuxOutputError, sg.S2SGradError)
