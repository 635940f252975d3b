"""``y.real = v``, ``y.imag = v`` and ``y.flat = v`` write into ``y`` in place. On the tape
they raised ``AttributeError`` (a property without a setter) from s2sgrad's own value class;
they are refused now, naming the user's line, in every mode."""

import os
import warnings

import numpy as np
import pytest

import s2sgrad as sg

HERE = os.path.basename(__file__)


def real_part_assigned(z):
    y = z * 1.0
    y.real = np.real(y) * 2.0
    return np.sum(np.abs(y) ** 2)


def imaginary_part_assigned(z):
    y = z * 1.0
    y.imag = np.imag(y) * 2.0
    return np.sum(np.abs(y) ** 2)


def flat_assigned(x):
    y = x * 1.0
    y.flat = np.sum(x)
    return np.sum(y**2)


COMPLEX = np.array([1.0 + 2.0j, -0.5 + 0.3j, 0.2 - 1.0j])
REAL = np.array([0.3, -1.2, 2.0, 0.7])


@pytest.mark.parametrize(
    "f, x",
    [(real_part_assigned, COMPLEX), (imaginary_part_assigned, COMPLEX), (flat_assigned, REAL)],
    ids=["real", "imag", "flat"],
)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_assigning_a_part_is_refused_at_the_users_line(f, x, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.S2SGradError) as refused:
            sg.grad(f, mode=mode)(x.copy())
    assert f"{HERE}:" in str(refused.value)
    assert "in place" in str(refused.value)
