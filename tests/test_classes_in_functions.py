"""A class defined inside a differentiated function.

Its body's assignments are the class's attributes, read later through the class: the
optimiser must keep them (it dropped ``k = 2.0`` as an unread local, and ``C.k`` then
raised AttributeError). A class whose body or methods read a value being differentiated
(``class C: k = x * 2``) would hold it where no sweep looks, and the gradient came out
zero: source transformation refuses it, and mode "auto" gives the function to the tape.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import (
    assert_gradient_in_every_mode,
    assert_refused_in_s2s_and_taped_in_auto,
)

import s2sgrad as sg

HERE = __file__


def uses_a_local_class(x):
    class Scaled:
        k = 2.0

        def times_three(self, v):
            return v * 3.0

    return np.sum(Scaled.k * Scaled().times_three(x) ** 2)


def test_a_local_class_keeps_its_attributes():
    x = np.array([0.3, -0.7, 1.2])
    assert_gradient_in_every_mode(uses_a_local_class, (x,))
    assert "k = 2.0" in sg.source(sg.grad(uses_a_local_class, mode="s2s"))


def class_body_reads_x(x):
    class Holder:
        k = x * 2.0

    return np.sum(Holder.k**2)


def method_reads_x(x):
    class Scaler:
        def apply(self, v):
            return v * x

    return np.sum(Scaler().apply(3.0) ** 2)


@pytest.mark.parametrize("f", [class_body_reads_x, method_reads_x], ids=lambda f: f.__name__)
def test_a_local_class_reading_a_differentiated_value_is_refused_and_taped(f):
    x = np.array([0.3, -0.7, 1.2])
    assert_refused_in_s2s_and_taped_in_auto(f, (x,), "does not follow into a class", HERE)
