"""A list or tuple of differentiated values repeated by ``*`` ([h] * 2): refused by the
source transformer (whose sweeps would take ``*`` for a product of arrays and give a wrong
derivative), differentiated by the tape, and by mode="auto" through its fallback."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg
from s2sgrad.errors import UnsupportedError

HERE = __file__.rsplit("/", 1)[-1]


def repeated_list(h):
    s = [h] * 2
    return s[0] * s[1] ** 2


def repeated_pair_on_the_left(h):
    s = 2 * [h, h * h]
    return s[0] * s[3]


def repeated_tuple(h):
    s = (h,) * 3
    return s[0] * s[2] + s[1]


REPEATED = [repeated_list, repeated_pair_on_the_left, repeated_tuple]


@pytest.mark.parametrize("f", REPEATED, ids=lambda f: f.__name__)
def test_a_repeated_list_is_refused_in_s2s_at_the_users_line(f):
    with pytest.raises(UnsupportedError, match=rf"{HERE}:\d+: a list .* repeated with \*"):
        sg.grad(f, mode="s2s")(1.3)
    with pytest.raises(UnsupportedError, match=rf"{HERE}:\d+: a list .* repeated with \*"):
        sg.jvp(f, (1.3,), (1.0,), mode="s2s")


@pytest.mark.parametrize("mode", ["tape", "auto"])
@pytest.mark.parametrize("f", REPEATED, ids=lambda f: f.__name__)
def test_a_repeated_list_is_differentiated_on_the_tape(f, mode):
    expected = numeric_grad(f, (1.3,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(sg.grad(f, mode=mode)(1.3), expected, rtol=1e-6)
        _, tangent = sg.jvp(f, (1.3,), (1.0,), mode=mode)
    np.testing.assert_allclose(tangent, expected, rtol=1e-6)


def list_times_array(x):
    return np.sum([x[0], x[1]] * x)


def test_a_list_times_an_array_is_a_product_and_stays_differentiated_in_s2s():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(sg.grad(list_times_array, mode="s2s")(x), [2.0, 4.0])
